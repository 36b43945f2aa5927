//! Named, typed, printable controller parameters: what `--set name=value` and `roce cc show` use.
//!
//! Each controller declares its parameter struct with [`cc_params!`](crate::cc_params), which
//! generates field-by-name assignment and a listing with units and one-line docs. Not a general
//! configuration system: values are plain numbers (or booleans), units are fixed per parameter.

use core::fmt;

use super::{Controller, Rate};
use crate::time::Duration;

/// One parameter as printed by `roce cc show`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ParamInfo {
    /// The parameter's name (mlx5 names where one exists).
    pub name: &'static str,
    /// Its current value, as `--set` would accept it.
    pub value: String,
    /// The unit of the value (`us`, `Mbit/s`, `bytes`, `1/1024`, ...), empty when unitless.
    pub unit: &'static str,
    /// What it does.
    pub doc: &'static str,
}

impl fmt::Display for ParamInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = if self.unit.is_empty() {
            self.value.clone()
        } else {
            format!("{} {}", self.value, self.unit)
        };
        write!(f, "{:<32} {:<18} {}", self.name, value, self.doc)
    }
}

/// Why a single parameter could not be set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamError {
    /// No parameter has this name.
    Unknown,
    /// The value does not parse as the parameter's type.
    BadValue {
        /// What the parameter accepts.
        expected: &'static str,
    },
}

/// A value type a parameter can have.
pub trait ParamValue: Sized {
    /// What the type accepts, for error messages.
    const EXPECTED: &'static str;
    /// Parses a `--set` value.
    fn parse_value(s: &str) -> Option<Self>;
    /// Prints the value so that [`ParamValue::parse_value`] reads it back.
    fn show_value(&self) -> String;
}

/// Integers parse and print as themselves.
macro_rules! integer_param {
    ($($ty:ty = $expected:literal),*) => {$(
        impl ParamValue for $ty {
            const EXPECTED: &'static str = $expected;
            fn parse_value(s: &str) -> Option<Self> {
                s.trim().parse().ok()
            }
            fn show_value(&self) -> String {
                self.to_string()
            }
        }
    )*};
}

integer_param!(
    u32 = "an unsigned integer (0..=4294967295)",
    u64 = "an unsigned integer"
);

impl ParamValue for f64 {
    const EXPECTED: &'static str = "a finite number";
    fn parse_value(s: &str) -> Option<Self> {
        s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
    }
    fn show_value(&self) -> String {
        self.to_string()
    }
}

impl ParamValue for bool {
    const EXPECTED: &'static str = "0, 1, true or false";
    fn parse_value(s: &str) -> Option<Self> {
        match s.trim() {
            "1" | "true" => Some(true),
            "0" | "false" => Some(false),
            _ => None,
        }
    }
    fn show_value(&self) -> String {
        u8::from(*self).to_string()
    }
}

/// A parameter struct: assignment by name and a printable listing.
pub trait ParamSet {
    /// Every parameter name, in declaration order (a shared base set first).
    fn names(&self) -> Vec<&'static str>;
    /// Sets one parameter from its textual value.
    fn set(&mut self, name: &str, value: &str) -> Result<(), ParamError>;
    /// Every parameter with its current value.
    fn list(&self) -> Vec<ParamInfo>;
}

/// A controller's parameter set that can build the controller: what a [`CcEntry`](super::registry::CcEntry) hands out.
///
/// Implemented next to each controller, on its [`cc_params!`](crate::cc_params) struct. Only
/// [`build`](Self::build) is required.
pub trait CcKind: ParamSet + CloneKind + core::fmt::Debug + Send + Sync + 'static {
    /// A fresh controller for one QP starting at `line_rate`.
    fn build(&self, line_rate: Rate) -> Controller;
    /// Checks relations a single value's type cannot express, after a `--set`:
    /// `Err((param, expected))`.
    fn check(&self) -> Result<(), (&'static str, &'static str)> {
        Ok(())
    }
    /// The CNP interval of the notification point this controller is designed with (the
    /// receivers' `min_time_between_cnps`). 50 us (the SIGCOMM'15 N) unless overridden.
    fn cnp_interval(&self) -> Duration {
        Duration::from_micros(50)
    }
    /// How long after a flow starts the controller's slowest loop takes to forget its initial
    /// state (one time constant of it): figures measured before it describe start-up, not the
    /// controller settled. Zero for controllers whose loops close within a few RTTs.
    fn settle_time(&self) -> Duration {
        Duration::ZERO
    }
    /// Whether the controller reacts to in-band telemetry: its QP must send INT shims, switches
    /// must stamp them and the receiver echo them.
    fn uses_int(&self) -> bool {
        false
    }
    /// The units multiplier of the byte fields of its QPs' INT records
    /// ([`crate::wire::int::Repr::units`]); 1 unless the controller sets one.
    fn int_units(&self) -> u8 {
        1
    }
    /// Whether the controller is defined with a step marker (every ECT packet that finds at
    /// least K queued is marked: DCTCP's AQM) rather than RED's ramp from Kmin to Kmax.
    fn step_marking(&self) -> bool {
        false
    }
    /// Replaces the defaults that the published settings scale with the line rate (additive
    /// steps, floors) by their values for a port of `line_rate`. [`CcConfig::new`](super::CcConfig::new)
    /// calls it before any `--set`, so explicit values win; a parameter struct's `Default` holds
    /// the 100 Gbit/s values (what `roce cc list` shows).
    fn scale_to(&mut self, _line_rate: Rate) {}
}

/// Boxed copies of a [`CcKind`]; implemented for every `CcKind + Clone`.
pub trait CloneKind {
    /// A boxed copy.
    fn clone_kind(&self) -> Box<dyn CcKind>;
}

impl<T: CcKind + Clone> CloneKind for T {
    fn clone_kind(&self) -> Box<dyn CcKind> {
        Box::new(self.clone())
    }
}

/// Declares a parameter struct whose fields can be set by name and listed with units and docs.
///
/// ```text
/// cc_params! {
///     /// Doc of the struct.
///     pub struct FooParams {
///         /// Doc of the field.
///         bar: u32 = "us",
///     }
/// }
/// ```
///
/// A set may start with `base name: OtherParams,` (after its docs): the other set's parameters
/// become this set's too (by their own names, listed first), so two controllers share one
/// declaration of what they have in common.
#[macro_export]
macro_rules! cc_params {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( #[doc = $bdoc:literal] )+ base $base:ident : $bty:ty,
            $( $( #[doc = $doc:literal] )+ $field:ident : $ty:ty = $unit:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize)]
        pub struct $name {
            $( #[doc = $bdoc] )+
            #[serde(flatten)]
            pub $base: $bty,
            $( $( #[doc = $doc] )+ pub $field: $ty, )*
        }
        $crate::cc_params!(@impl $name { $base } $( [$field : $ty = $unit; $($doc)+] )*);
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $( #[doc = $doc:literal] )+ $field:ident : $ty:ty = $unit:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize)]
        pub struct $name {
            $( $( #[doc = $doc] )+ pub $field: $ty, )*
        }
        $crate::cc_params!(@impl $name { } $( [$field : $ty = $unit; $($doc)+] )*);
    };
    (@impl $name:ident { $($base:ident)? } $( [$field:ident : $ty:ty = $unit:literal; $($doc:literal)+] )*) => {
        impl $crate::cc::params::ParamSet for $name {
            fn names(&self) -> Vec<&'static str> {
                #[allow(unused_mut)]
                let mut names: Vec<&'static str> = Vec::new();
                $( names.extend(self.$base.names()); )?
                names.extend([$(stringify!($field)),*]);
                names
            }
            fn set(&mut self, name: &str, value: &str) -> Result<(), $crate::cc::params::ParamError> {
                use $crate::cc::params::{ParamError, ParamValue};
                match name {
                    $( stringify!($field) => {
                        self.$field = <$ty as ParamValue>::parse_value(value)
                            .ok_or(ParamError::BadValue { expected: <$ty as ParamValue>::EXPECTED })?;
                        Ok(())
                    } )*
                    _ => {
                        $( if true {
                            return self.$base.set(name, value);
                        } )?
                        Err(ParamError::Unknown)
                    }
                }
            }
            fn list(&self) -> Vec<$crate::cc::params::ParamInfo> {
                use $crate::cc::params::{ParamInfo, ParamValue};
                #[allow(unused_mut)]
                let mut list: Vec<ParamInfo> = Vec::new();
                $( list.extend(self.$base.list()); )?
                list.extend([ $( ParamInfo {
                    name: stringify!($field),
                    value: ParamValue::show_value(&self.$field),
                    unit: $unit,
                    doc: concat!($($doc),+).trim_start(),
                } ),* ]);
                list
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::cc_params! {
        /// A test set.
        pub struct Demo {
            /// A timer.
            timer: u32 = "us",
            /// A gain.
            gain: f64 = "",
            /// A switch.
            on: bool = "",
        }
    }

    #[test]
    fn params_set_by_name_and_reject_bad_input() {
        let mut d = Demo {
            timer: 1,
            gain: 0.5,
            on: false,
        };
        assert_eq!(d.set("timer", "55"), Ok(()));
        assert_eq!(d.set("on", "true"), Ok(()));
        assert_eq!(d.timer, 55);
        assert!(d.on);
        assert_eq!(d.set("nope", "1"), Err(ParamError::Unknown));
        assert_eq!(
            d.set("gain", "NaN"),
            Err(ParamError::BadValue {
                expected: f64::EXPECTED
            })
        );
        assert_eq!(d.names(), ["timer", "gain", "on"]);
        let list = d.list();
        assert_eq!(list[0].value, "55");
        assert_eq!(list[0].unit, "us");
        assert_eq!(list[0].doc, "A timer.");
        assert_eq!(list[2].value, "1");
    }
}
