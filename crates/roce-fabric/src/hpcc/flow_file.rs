//! The HPCC simulator's flow file (`mix/flow.txt`, written by `traffic_gen/traffic_gen.py`):
//! the number of flows, then one `src dst pg dport size start_time` line per flow, the start
//! in seconds. Like `third.cc`, only the announced number of flows is read: the repository's
//! own `mix/flow.txt` has more lines and a description after them.

use std::fmt::Write as _;
use std::path::Path;

use super::tokens::Tokens;
use super::HpccError;
use crate::limits::bounds::{Limits, MAX_LINE_BYTES};

/// One flow line.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowLine {
    /// Sending node id.
    pub src: usize,
    /// Receiving node id.
    pub dst: usize,
    /// Priority group (3 in every generated file).
    pub pg: u8,
    /// Destination port (100 in generated files; `fct_analysis.py` selects on it).
    pub dport: u16,
    /// Bytes.
    pub size: u64,
    /// Start, seconds.
    pub start_s: f64,
}

impl FlowLine {
    /// Start in ns, rounded as ns-3's `Seconds()` does to its ns resolution.
    pub fn start_ns(&self) -> u64 {
        (self.start_s * 1e9).round().max(0.0) as u64
    }
}

/// Parses the flow text of the file named `file`.
pub fn parse(file: &str, text: &str) -> Result<Vec<FlowLine>, HpccError> {
    read(Tokens::of_text(file, text), &Limits::default())
}

/// Reads the flow file at `path` (lines of at most [`MAX_LINE_BYTES`]), refusing more flows
/// than `limits` allow before reading them.
pub fn load(path: &Path, limits: &Limits) -> Result<Vec<FlowLine>, HpccError> {
    read(Tokens::new(super::lines(path, MAX_LINE_BYTES)?), limits)
}

fn read(mut t: Tokens, limits: &Limits) -> Result<Vec<FlowLine>, HpccError> {
    let (line, n) = t.value("the number of flows", |s| s.parse::<u64>().ok())?;
    limits.flows(n).map_err(|limit| HpccError::Limit {
        file: t.file().to_owned(),
        line,
        limit,
    })?;
    // Only lines that are there take memory: the count is checked, not trusted.
    let mut flows = Vec::with_capacity(n.min(1 << 16) as usize);
    for _ in 0..n {
        let line = t.line()?;
        let src = t.num("a source node id")?;
        let dst = t.num("a destination node id")?;
        let pg = t.num("a priority group (0..7)")?;
        let dport = t.num("a destination port")?;
        let size = t.num("a size in bytes")?;
        let start_s: f64 = t.num("a start time in seconds")?;
        if pg > 7 || size == 0 || src == dst || !(start_s.is_finite() && start_s >= 0.0) {
            return Err(t.error(
                line,
                "a flow needs src != dst, pg 0..7, size > 0 and a start >= 0",
            ));
        }
        flows.push(FlowLine {
            src,
            dst,
            pg,
            dport,
            size,
            start_s,
        });
    }
    Ok(flows)
}

/// Writes flows in the format, as `traffic_gen.py` does (`%d %d %d %d %d %.9f`).
pub fn write(flows: &[FlowLine]) -> String {
    let mut s = format!("{}\n", flows.len());
    for f in flows {
        let _ = writeln!(
            s,
            "{} {} {} {} {} {:.9}",
            f.src, f.dst, f.pg, f.dport, f.size, f.start_s
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_announced_flows_and_ignores_what_follows() {
        let text = "2\n2 1 3 100 200000000 2\n3 1 3 100 5000 2.000001\n4 1 3 100 9 2\n\nFirst line: # of flows\n";
        let f = parse("flow.txt", text).unwrap();
        assert_eq!(
            f,
            [
                FlowLine {
                    src: 2,
                    dst: 1,
                    pg: 3,
                    dport: 100,
                    size: 200_000_000,
                    start_s: 2.0
                },
                FlowLine {
                    src: 3,
                    dst: 1,
                    pg: 3,
                    dport: 100,
                    size: 5000,
                    start_s: 2.000001
                },
            ]
        );
        assert_eq!(f[1].start_ns(), 2_000_001_000);
        assert_eq!(parse("flow.txt", &write(&f)).unwrap(), f);
        assert_eq!(write(&f[1..]), "1\n3 1 3 100 5000 2.000001000\n");
    }

    #[test]
    fn malformed_flow_lines_name_file_and_line() {
        crate::hpcc::assert_malformed(
            |t| parse("mix/flow.txt", t),
            &[
                (
                    "2\n0 1 3 100 1000 2\n0 1 3 100 1e3 2\n",
                    "mix/flow.txt:3: \"1e3\" is not a size in bytes",
                ),
                (
                    "2\n0 1 3 100 1000 2\n",
                    "mix/flow.txt:2: file ends where a source node id was expected",
                ),
                (
                    "1\n1 1 3 100 1000 2\n",
                    "mix/flow.txt:2: a flow needs src != dst, pg 0..7, size > 0 and a start >= 0",
                ),
                (
                    "many\n",
                    "mix/flow.txt:1: \"many\" is not the number of flows",
                ),
            ],
        );
    }
}
