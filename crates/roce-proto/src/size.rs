//! Byte counts as people write them: `4096`, `16K`, `5KB`, `1.5MiB`, `2G`.
//!
//! One parser for every CLI option and scenario field that takes a size. The suffixes, any
//! case, with an optional `B` and optional space before them:
//!
//! | suffix            | multiplier |
//! |-------------------|------------|
//! | none, `B`         | 1          |
//! | `K`, `KiB`        | 1024       |
//! | `KB`              | 1000       |
//! | `M`, `MiB`        | 1024²      |
//! | `MB`              | 1000²      |
//! | `G`, `GiB`        | 1024³      |
//! | `GB`              | 1000³      |
//!
//! A bare letter counts in 1024s as perftest's and iproute2's sizes do (`-s 16K`); `KB`/`MB`/`GB`
//! are the SI units switch datasheets use for buffers and ECN thresholds. A fraction is allowed
//! when the result is a whole number of bytes (`1.5K` is 1536, `0.5B` is refused).

use serde::de::{self, Deserializer, Visitor};
use std::fmt;

/// Why a text is not a byte count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// No number, or a unit that is not one of the table's.
    #[error("`{0}` is not a byte count like 4096, 16K, 5KB or 1MiB")]
    Syntax(String),
    /// A fraction of a byte (`1.5B`, `0.1K`).
    #[error("`{0}` is not a whole number of bytes")]
    Fraction(String),
    /// More than `u64::MAX` bytes.
    #[error("`{0}` is too large")]
    Overflow(String),
}

/// The multiplier of a unit (without the number), or `None` if it is not one.
fn multiplier(unit: &str) -> Option<u64> {
    let u = unit.to_ascii_lowercase();
    let (letter, rest) = match u.char_indices().next() {
        None => return Some(1),
        Some((_, c)) => (c, &u[c.len_utf8()..]),
    };
    let power = match letter {
        'b' if rest.is_empty() => return Some(1),
        'k' => 1,
        'm' => 2,
        'g' => 3,
        _ => return None,
    };
    let base: u64 = match rest {
        "" | "ib" => 1024,
        "b" => 1000,
        _ => return None,
    };
    Some(base.pow(power))
}

/// Parses a byte count (see the module's table of suffixes).
pub fn parse_bytes(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let syntax = || SizeError::Syntax(text.to_string());
    let mult = multiplier(unit.trim_start()).ok_or_else(syntax)?;
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') || frac.len() > 18 {
        return Err(syntax());
    }
    let digits = |s: &str| -> Result<u128, SizeError> {
        if s.is_empty() {
            return Ok(0);
        }
        s.parse::<u128>()
            .map_err(|_| SizeError::Overflow(text.to_string()))
    };
    let scale = 10u128.pow(frac.len() as u32);
    let scaled = digits(int)?
        .checked_mul(scale)
        .and_then(|v| v.checked_add(digits(frac).ok()?))
        .and_then(|v| v.checked_mul(u128::from(mult)))
        .ok_or_else(|| SizeError::Overflow(text.to_string()))?;
    if scaled % scale != 0 {
        return Err(SizeError::Fraction(text.to_string()));
    }
    u64::try_from(scaled / scale).map_err(|_| SizeError::Overflow(text.to_string()))
}

/// Parses a byte count into a narrower integer (`u32` sizes of messages): as [`parse_bytes`],
/// with [`SizeError::Overflow`] when it does not fit. Usable as a clap `value_parser`.
pub fn parse_bytes_as<T: TryFrom<u64>>(text: &str) -> Result<T, SizeError> {
    T::try_from(parse_bytes(text)?).map_err(|_| SizeError::Overflow(text.to_string()))
}

/// Serde adapter for a `u64` byte-count field that also takes a string with a suffix
/// (`buffer_bytes = "12MB"` as well as `buffer_bytes = 12000000`).
pub fn deserialize_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = u64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a byte count (an integer, or a string like \"16K\", \"5KB\", \"1MiB\")")
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom(format!("byte count {v} is negative")))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
            parse_bytes(v).map_err(E::custom)
        }
    }
    d.deserialize_any(V)
}

/// Serde adapter for an optional byte-count field (see [`deserialize_bytes`]).
pub fn deserialize_opt_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    deserialize_bytes(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suffix_counts_what_its_table_row_says() {
        let cases = [
            ("4096", 4096),
            ("4096B", 4096),
            ("16K", 16 * 1024),
            ("16k", 16 * 1024),
            ("16KiB", 16 * 1024),
            ("16 kib", 16 * 1024),
            ("5KB", 5000),
            ("5kb", 5000),
            ("1M", 1 << 20),
            ("1MiB", 1 << 20),
            ("1MB", 1_000_000),
            ("2G", 2 << 30),
            ("2GiB", 2 << 30),
            ("2GB", 2_000_000_000),
            ("1.5K", 1536),
            ("0.5MB", 500_000),
            (" 12MB ", 12_000_000),
            ("0", 0),
        ];
        for (text, want) in cases {
            assert_eq!(parse_bytes(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn non_sizes_are_refused_with_the_reason() {
        for text in ["", "K", "big", "16X", "16KX", "1.2.3K", "-5K", "16 K B"] {
            assert!(
                matches!(parse_bytes(text), Err(SizeError::Syntax(_))),
                "{text}"
            );
        }
        assert!(matches!(parse_bytes("0.5B"), Err(SizeError::Fraction(_))));
        assert!(matches!(parse_bytes("0.1K"), Err(SizeError::Fraction(_))));
        assert_eq!(
            parse_bytes_as::<u32>("4G"),
            Err(SizeError::Overflow("4G".into()))
        );
        assert_eq!(parse_bytes_as::<u32>("1M"), Ok(1 << 20));
        assert!(matches!(
            parse_bytes("99999999999G"),
            Err(SizeError::Overflow(_))
        ));
    }
}
