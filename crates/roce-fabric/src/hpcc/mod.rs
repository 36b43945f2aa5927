//! The HPCC ns-3 simulator's files (alibaba-edu/High-Precision-Congestion-Control, the
//! reference experiment of the DCQCN/HPCC/TIMELY literature): its config file
//! ([`config`]), topology file ([`topology_file`]), flow file ([`flow_file`]) and the
//! FCT and PFC output files ([`fct_file`], [`pfc_file`]), read and written as its
//! `scratch/third.cc` does.
//!
//! Readers take the text and the file's name (for errors) and do no I/O themselves except
//! the `load` helpers; they do not run anything ([`crate::experiment::hpcc_run`] runs an experiment; it sits
//! above the scenario, these readers below it).

pub mod config;
pub mod fct_file;
pub mod flow_file;
pub mod pfc_file;
mod tokens;
pub mod topology_file;

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use crate::limits::bounds::LimitError;
use crate::limits::input::{self, InputError, Lines};

/// An error reading one of the HPCC simulator's files: always names the file and the line.
#[derive(Debug, thiserror::Error)]
pub enum HpccError {
    /// A line that does not parse.
    #[error("{file}:{line}: {msg}")]
    Malformed {
        /// The file.
        file: String,
        /// 1-based line number (the last line for a file that ends early).
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// The file could not be read, or not within its bounds (a line too long, not text).
    #[error(transparent)]
    Input(#[from] InputError),
    /// A count above what is allowed (nodes, links, flows).
    #[error("{file}:{line}: {limit}")]
    Limit {
        /// The file.
        file: String,
        /// 1-based line number of the count.
        line: usize,
        /// Which limit (part of this error's one line, not a cause of its own).
        limit: LimitError,
    },
}

/// The lines of the file at `path`, each at most `max_line` bytes.
pub fn lines(path: &Path, max_line: usize) -> Result<Lines<BufReader<File>>, HpccError> {
    Ok(Lines::new(
        path.display().to_string(),
        input::open(path)?,
        max_line,
    ))
}

/// SI and IEC prefixes of ns-3 data rates.
const RATE_PREFIXES: [(&str, f64); 8] = [
    ("Ki", 1024.0),
    ("Mi", 1024.0 * 1024.0),
    ("Gi", 1024.0 * 1024.0 * 1024.0),
    ("k", 1e3),
    ("K", 1e3),
    ("M", 1e6),
    ("G", 1e9),
    ("T", 1e12),
];

/// ns-3 time units, in ns (`s` after the two-letter ones that end in it).
const TIME_UNITS: [(&str, f64); 7] = [
    ("ns", 1.0),
    ("us", 1e3),
    ("ms", 1e6),
    ("ps", 1e-3),
    ("min", 60e9),
    ("s", 1e9),
    ("h", 3600e9),
];

/// `v * factor` rounded, if finite and not negative.
fn scaled(v: f64, factor: f64) -> Option<u64> {
    let r = v * factor;
    (r.is_finite() && r >= 0.0).then(|| r.round() as u64)
}

/// A data rate as ns-3 writes it (`100Gbps`, `1000Mb/s`, `25Gb/s`, `10GB/s`, `800bps`), in
/// bit/s.
pub fn parse_rate(s: &str) -> Option<u64> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let (prefix, rest) = RATE_PREFIXES
        .iter()
        .find_map(|&(p, m)| unit.strip_prefix(p).map(|r| (m, r)))
        .unwrap_or((1.0, unit));
    let bits = match rest {
        "" | "bps" | "b/s" => 1.0,
        "Bps" | "B/s" => 8.0,
        _ => return None,
    };
    scaled(num.parse().ok()?, prefix * bits)
}

/// A time as ns-3 writes it (`1000ns`, `0.001ms`, `1us`, `2s`; a bare number is seconds), in ns.
pub fn parse_time_ns(s: &str) -> Option<u64> {
    let (num, unit_ns) = TIME_UNITS
        .iter()
        .find_map(|&(u, m)| s.strip_suffix(u).map(|n| (n, m)))
        .unwrap_or((s, 1e9));
    scaled(num.parse().ok()?, unit_ns)
}

/// Asserts `parse` fails on each case's text with exactly its message (the readers'
/// error tests).
#[cfg(test)]
fn assert_malformed<T: std::fmt::Debug>(
    parse: impl Fn(&str) -> Result<T, HpccError>,
    cases: &[(&str, &str)],
) {
    for &(text, want) in cases {
        assert_eq!(parse(text).unwrap_err().to_string(), want, "{text:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asserts `parse` gives each case's expected value.
    fn check(parse: fn(&str) -> Option<u64>, cases: &[(&str, Option<u64>)]) {
        for &(text, want) in cases {
            assert_eq!(parse(text), want, "{text}");
        }
    }

    #[test]
    fn rates_and_times_parse_as_ns3_writes_them() {
        let rates = [
            ("100Gbps", Some(100_000_000_000)),
            ("1000Mb/s", Some(1_000_000_000)),
            ("400Gb/s", Some(400_000_000_000)),
            ("1GB/s", Some(8_000_000_000)),
            ("800", Some(800)),
            ("1Kibps", Some(1024)),
            ("fast", None),
            ("10Gbit", None),
        ];
        check(parse_rate, &rates);
        let times = [
            ("1000ns", Some(1000)),
            ("0.001ms", Some(1000)),
            ("1us", Some(1000)),
            ("2", Some(2_000_000_000)),
            ("1.5s", Some(1_500_000_000)),
            ("soon", None),
        ];
        check(parse_time_ns, &times);
    }
}
