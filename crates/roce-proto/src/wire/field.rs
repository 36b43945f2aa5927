//! The boilerplate shared by the header views: a `Packet<T>`-style wrapper whose `new_checked`
//! runs the view's `check_len`, so its accessors cannot panic. Fixed-length headers get their
//! length check, accessors and `Repr` from one field table (`fixed_header!`); variable-length
//! headers (Ethernet, IPv4, IPv6, UDP, INT, ARP) write their own `check_len`.

/// Defines `pub struct $name<T>` with `new_unchecked`, `new_checked` (which calls the view's own
/// `check_len`, returning `$err`) and `into_inner`.
macro_rules! header_view {
    ($name:ident, $err:ty, $what:literal) => {
        #[doc = concat!("A read/write view of ", $what, " in a byte buffer.")]
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Wraps a buffer without checking its length (accessors may then panic).
            pub const fn new_unchecked(buffer: T) -> Self {
                $name { buffer }
            }

            /// Wraps a buffer after [`check_len`](Self::check_len).
            pub fn new_checked(buffer: T) -> Result<Self, $err> {
                let packet = Self::new_unchecked(buffer);
                packet.check_len()?;
                Ok(packet)
            }

            /// The wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            /// The buffer's length, or `Err(Truncated)` when it is shorter than `min`.
            #[allow(dead_code)]
            fn len_at_least(&self, min: usize) -> Result<usize, $err> {
                let len = self.buffer.as_ref().len();
                if len < min {
                    Err(<$err>::Truncated)
                } else {
                    Ok(len)
                }
            }
        }
    };
}

/// Defines `pub struct Packet<T>` (see `header_view!`) with `check_len` and `header_bytes`,
/// checking against the module's `HEADER_LEN`.
macro_rules! fixed_header_view {
    ($what:literal) => {
        header_view!(Packet, $crate::wire::WireError, $what);

        impl<T: AsRef<[u8]>> Packet<T> {
            /// `Err(Truncated)` when the buffer is shorter than [`HEADER_LEN`].
            pub fn check_len(&self) -> Result<(), $crate::wire::WireError> {
                self.len_at_least(HEADER_LEN).map(drop)
            }

            /// The header bytes (the first [`HEADER_LEN`] bytes of the buffer).
            pub fn header_bytes(&self) -> &[u8] {
                &self.buffer.as_ref()[..HEADER_LEN]
            }
        }
    };
}

/// A fixed-length header from its field table: the view `Packet<T>` (`fixed_header_view!`),
/// one getter and one setter per field, and `Repr` (`Copy`, `Default`, ...) with `parse`,
/// `buffer_len` and `emit`.
/// Each field names its offset and the `fn(&[u8], usize) -> Ty` / `fn(&mut [u8], usize, Ty)`
/// pair that reads and writes it (`wire::read_u32` and the like are in scope); its doc serves
/// the getter and the `Repr` field. `Repr[len, "doc"]` also defines `HEADER_LEN`.
macro_rules! fixed_header {
    (
        $(#[$repr_attr:meta])*
        pub struct Repr[$len:expr, $len_doc:literal] { $($fields:tt)+ }
    ) => {
        #[doc = $len_doc]
        pub const HEADER_LEN: usize = $len;

        fixed_header! {
            $(#[$repr_attr])*
            pub struct Repr { $($fields)+ }
        }
    };
    (
        $(#[$repr_attr:meta])*
        pub struct Repr {
            $(
                #[doc = $doc:literal]
                pub $name:ident: $ty:ty {
                    at: $at:expr,
                    read: $read:ident,
                    write: $write:ident,
                    set: $set:ident $(,)?
                },
            )+
        }
    ) => {
        // The readers and writers the table names, unless the module brings its own.
        #[allow(unused_imports)]
        use $crate::wire::field_io::*;

        fixed_header_view!("this module's header (parsed: [`Repr`])");

        impl<T: AsRef<[u8]>> Packet<T> {
            $(
                #[doc = $doc]
                pub fn $name(&self) -> $ty {
                    $read(self.buffer.as_ref(), $at)
                }
            )+
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            $(
                #[doc = concat!("Sets [`", stringify!($name), "`](Self::", stringify!($name), ").")]
                pub fn $set(&mut self, value: $ty) {
                    $write(self.buffer.as_mut(), $at, value);
                }
            )+
        }

        $(#[$repr_attr])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
        pub struct Repr {
            $(
                #[doc = $doc]
                pub $name: $ty,
            )+
        }

        impl Repr {
            /// Parses a checked header.
            #[inline]
            pub fn parse<T: AsRef<[u8]> + ?Sized>(
                packet: &Packet<&T>,
            ) -> Result<Repr, $crate::wire::WireError> {
                packet.check_len()?;
                Ok(Repr {
                    $($name: packet.$name(),)+
                })
            }

            /// [`HEADER_LEN`]: the header has no variable part.
            pub const fn buffer_len(&self) -> usize {
                HEADER_LEN
            }

            /// Writes exactly `buffer_len()` bytes.
            pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
                $(packet.$set(self.$name);)+
            }
        }
    };
}

/// The two tests every fixed header takes: `$header` parses to `$repr`, and `$repr` emits
/// exactly `$header` (no byte past it) into a buffer that is then one byte too short to check.
/// A table of them, `module: header => repr;`, each in a test module named after its header's.
#[cfg(test)]
macro_rules! fixed_header_tests {
    ($($module:ident: $header:expr => $repr:expr;)+) => {$(
        mod $module {
            use $crate::wire::$module::*;

            fixed_header_tests!($header, $repr);
        }
    )+};
    ($header:expr, $repr:expr) => {
        #[test]
        fn parses_header() {
            let packet = Packet::new_checked(&$header[..]).unwrap();
            assert_eq!(Repr::parse(&packet).unwrap(), $repr);
        }

        #[test]
        fn emits_header() {
            $crate::wire::assert_emits(&$header, |b| $repr.emit(&mut Packet::new_unchecked(b)));
            assert_eq!(
                Packet::new_checked(&$header[..HEADER_LEN - 1]),
                Err($crate::wire::WireError::Truncated)
            );
        }
    };
}

/// Inside `impl Repr` of a header whose `to_bytes` gives all of it: `buffer_len` and an `emit`
/// (documented by `$emit_doc`) that copies those bytes into the view.
macro_rules! emit_via_to_bytes {
    ($emit_doc:literal) => {
        /// [`HEADER_LEN`]: this header is always emitted without options.
        pub const fn buffer_len(&self) -> usize {
            HEADER_LEN
        }

        #[doc = $emit_doc]
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
            packet.buffer.as_mut()[..HEADER_LEN].copy_from_slice(&self.to_bytes());
        }
    };
}

/// Inside a view's `impl`: one documented getter per `$name -> $ty = $get, $doc;` line, where
/// `$get` reads the buffer's bytes, named `$data`. The view's length check makes it safe.
macro_rules! getters {
    ($data:ident => $($(#[$attr:meta])* $name:ident -> $ty:ty = $get:expr, $doc:literal;)+) => {$(
        #[doc = $doc]
        $(#[$attr])*
        pub fn $name(&self) -> $ty {
            let $data = self.buffer.as_ref();
            $get
        }
    )+};
}

/// Inside a view's `impl ... AsMut`: one documented setter per `$name($value: $ty) = $set, $doc;`
/// line, where `$set` writes the buffer's bytes, named `$data`.
macro_rules! setters {
    ($data:ident => $($name:ident($value:ident: $ty:ty) = $set:expr, $doc:literal;)+) => {$(
        #[doc = $doc]
        pub fn $name(&mut self, $value: $ty) {
            let $data = self.buffer.as_mut();
            $set;
        }
    )+};
}

/// A header's zerocopy layout, `Header`, and its `field` module of byte offsets: per field,
/// `name: Ty => CONST` (the offset) or `name: Ty => [CONST]` (the byte range).
macro_rules! header_layout {
    (
        $(#[$attr:meta])*
        pub(crate) struct Header {
            $($(#[doc = $doc:literal])* $name:ident: $ty:ty => $konst:tt,)+
        }
    ) => {
        $(#[$attr])*
        #[derive(zerocopy::FromBytes, zerocopy::KnownLayout, zerocopy::Immutable, zerocopy::Unaligned)]
        #[repr(C)]
        pub(crate) struct Header {
            $($(#[doc = $doc])* pub(crate) $name: $ty,)+
        }

        /// Byte offsets, computed from [`Header`].
        pub(crate) mod field {
            #[allow(unused_imports)]
            use super::*;

            $(header_layout!(@const $konst $name $ty);)+
        }
    };
    (@const [$konst:ident] $name:ident $ty:ty) => {
        pub const $konst: core::ops::Range<usize> = core::mem::offset_of!(Header, $name)
            ..core::mem::offset_of!(Header, $name) + core::mem::size_of::<$ty>();
    };
    (@const $konst:ident $name:ident $ty:ty) => {
        pub const $konst: usize = core::mem::offset_of!(Header, $name);
    };
}
