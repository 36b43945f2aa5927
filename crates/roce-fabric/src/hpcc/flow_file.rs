//! The HPCC simulator's flow file (`mix/flow.txt`, written by `traffic_gen/traffic_gen.py`):
//! the number of flows, then one `src dst pg dport size start_time` line per flow, the start
//! in seconds. Like `third.cc`, only the announced number of flows is read: the repository's
//! own `mix/flow.txt` has more lines and a description after them.
//!
//! [`FlowReader`] reads the flows one at a time, as `third.cc`'s `ScheduleFlowInputs` does
//! (it reads the next line when the clock reaches the current one's start): a file of a million
//! flows is never held whole. That reading needs starts in order, and so does ours: a start
//! before the previous flow's is refused (`third.cc` would schedule it in the past).

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

/// Parses the flow text of the file named `file` (whole: for small files and tests).
pub fn parse(file: &str, text: &str) -> Result<Vec<FlowLine>, HpccError> {
    FlowReader::new(Tokens::of_text(file, text), &Limits::default())?.collect()
}

/// Reads the flow file at `path` whole (see [`FlowReader::open`] to read it a flow at a time).
pub fn load(path: &Path, limits: &Limits) -> Result<Vec<FlowLine>, HpccError> {
    FlowReader::open(path, limits)?.collect()
}

/// The flows of a flow file, read one at a time in file (and start) order: an iterator of
/// [`FlowLine`]s that holds one line of the file, never the file.
pub struct FlowReader<'a> {
    tokens: Tokens<'a>,
    /// Flows the file announces.
    announced: u64,
    /// Flows read so far.
    read: u64,
    /// The previous flow's start, seconds.
    last_start_s: f64,
    /// Whether an error ended the reading.
    failed: bool,
}

impl FlowReader<'static> {
    /// Opens the flow file at `path` (lines of at most [`MAX_LINE_BYTES`]) and reads its count
    /// of flows, refusing more than `limits` allow before reading any.
    pub fn open(path: &Path, limits: &Limits) -> Result<Self, HpccError> {
        FlowReader::new(Tokens::new(super::lines(path, MAX_LINE_BYTES)?), limits)
    }
}

impl<'a> FlowReader<'a> {
    fn new(mut tokens: Tokens<'a>, limits: &Limits) -> Result<Self, HpccError> {
        let (line, n) = tokens.value("the number of flows", |s| s.parse::<u64>().ok())?;
        limits.flows(n).map_err(|limit| HpccError::Limit {
            file: tokens.file().to_owned(),
            line,
            limit,
        })?;
        Ok(FlowReader {
            tokens,
            announced: n,
            read: 0,
            last_start_s: 0.0,
            failed: false,
        })
    }

    /// The number of flows the file announces (checked against the limits, not trusted: a
    /// file with fewer is an error when the reading gets there).
    pub fn announced(&self) -> u64 {
        self.announced
    }

    fn next_flow(&mut self) -> Result<FlowLine, HpccError> {
        let t = &mut self.tokens;
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
        if start_s < self.last_start_s {
            return Err(t.error(
                line,
                format!(
                    "flow starts at {start_s} s, before the previous flow's {} s: flows must be \
                     in start order (third.cc reads them as its clock reaches them)",
                    self.last_start_s
                ),
            ));
        }
        self.last_start_s = start_s;
        Ok(FlowLine {
            src,
            dst,
            pg,
            dport,
            size,
            start_s,
        })
    }
}

impl Iterator for FlowReader<'_> {
    type Item = Result<FlowLine, HpccError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.read >= self.announced {
            return None;
        }
        self.read += 1;
        let flow = self.next_flow();
        self.failed = flow.is_err();
        Some(flow)
    }
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
                (
                    "3\n0 1 3 100 1000 2.5\n1 2 3 100 1000 2.5\n2 3 3 100 1000 2.4999\n",
                    "mix/flow.txt:4: flow starts at 2.4999 s, before the previous flow's 2.5 s: \
                     flows must be in start order (third.cc reads them as its clock reaches them)",
                ),
            ],
        );
    }
}
