//! How much a simulation may ask for: the fixed ceilings on what scenarios and the HPCC
//! simulator's files count (hosts, switches, cables, flows, samples), the estimate of what a
//! scenario holds in memory, and the excerpts errors quote of what they refuse.
//!
//! Configuration is trusted, but a typo (a node count of 4e9, `FLOW_FILE /dev/zero`, a
//! duration in ns where µs were meant) must end in one line naming it, not in an allocation
//! that eats the machine. Every count is checked here before anything is allocated for it.
//! The library knows no machine: a caller that does (the CLI reads `/proc/meminfo`) passes its
//! memory to `scenario_size::Footprint::check` or [`Limits::for_memory`].

/// Hosts a scenario may have: 6x the largest plan run so far (10,240 hosts). Each costs about
/// [`HOST_BYTES`] and a route entry in every switch.
pub const MAX_HOSTS: usize = 65_536;
/// Switches a scenario may have.
pub const MAX_SWITCHES: usize = 65_536;
/// Ports of one switch: a port is numbered in 16 bits.
pub const MAX_PORTS: usize = 65_536;
/// Cables a scenario may have (a 65,536-host fabric with 15 cables per host).
pub const MAX_CABLES: usize = 1 << 20;
/// Flows a scenario may have: 8x the million-flow files of the HPCC experiments, and every
/// flow keeps its own 24-bit QPN.
pub const MAX_FLOWS: usize = 1 << 23;
/// Virtual time a run may last, µs (10,000 s; runs of the HPCC experiments last seconds).
/// Once its flows are done a run takes its remaining samples at once, so the bound is on
/// what a typo asks for (a duration in ns where µs were meant, forever flows for years).
pub const MAX_DURATION_US: f64 = 1e10;
/// Samples of the time series a run may take (`duration_us / sample_us`): each is a row of
/// the recorder, and an idle stretch is kept as one row (see [`crate::record::series`]).
pub const MAX_SAMPLES: f64 = 1e7;
/// Telemetry bins a run may close (`duration_us / bin_us`): each keeps every port's counters.
pub const MAX_BINS: f64 = 1e5;
/// Entries of a collective's schedule (every member's sends and receives of every step): a
/// ring of 2,048 members, an all-to-all of 2,896.
pub const MAX_SCHEDULE_ENTRIES: u64 = 1 << 24;
/// Threads a fabric may run on (each partition copies the links and the flow meter; a
/// partition per switch is the most a split uses).
pub const MAX_THREADS: usize = 256;
/// Times one cable may flap (each flap schedules four link events).
pub const MAX_FLAPS: u64 = 1_000_000;
/// Bytes of a scenario file.
pub const MAX_SCENARIO_BYTES: u64 = 64 << 20;
/// Bytes of an HPCC config file (`run.py` writes 1.5 KB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The longest line of a flow, CDF, FCT or PFC file (their lines are a few numbers).
pub const MAX_LINE_BYTES: usize = 4096;
/// The longest line of an HPCC config file (a key and a path of up to `PATH_MAX`).
pub const MAX_CONFIG_LINE_BYTES: usize = 16 << 10;
/// The longest line of an HPCC topology file (its switch ids may all be on one line).
pub const MAX_TOPOLOGY_LINE_BYTES: usize = 1 << 20;
/// The longest excerpt of input an error quotes, in characters.
pub const MAX_QUOTE: usize = 64;

/// Memory a host holds (its engine, NIC and flow meter state), measured at 10.7 KB with the RC
/// engine on a 20,000-host star, rounded up.
pub const HOST_BYTES: u64 = 16 << 10;
/// Memory a cable holds (two ports with their queues and telemetry series, two links).
pub const CABLE_BYTES: u64 = 4 << 10;
/// Memory a flow holds with the RC engine (a QP at each end, their queues and regions, the
/// plan and the flow meter): measured at 18 KB a flow with 100,000 flows on a 100-host star, and 25
/// KB with the 165,856 flows of `scenarios/hpcc/fb_hadoop-50.toml` (4.1 GB at its peak).
pub const RC_FLOW_BYTES: u64 = 26 << 10;
/// Memory a flow holds with the stand-in engine, measured at 2 KB, rounded up.
pub const STAND_IN_FLOW_BYTES: u64 = 4 << 10;
/// Memory of one switch's route to one host (an ECMP group).
pub const ROUTE_BYTES: u64 = 48;

/// A count above what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// Above the fixed ceiling of this build.
    #[error("{count} {what} is more than this build supports (at most {max})")]
    Ceiling {
        /// What was counted (`nodes`, `flows`).
        what: &'static str,
        /// How many were asked for.
        count: String,
        /// The ceiling.
        max: String,
    },
    /// More than the memory the caller has.
    #[error("{what} need about {need}, more than the {have} of memory here")]
    Memory {
        /// What needs it (`20000 hosts, 1000000 flows`).
        what: String,
        /// The estimate, e.g. `24.4 GB`.
        need: String,
        /// The memory, e.g. `16.0 GB`.
        have: String,
    },
}

/// Refuses `count` of `what` above `max`.
pub fn at_most(what: &'static str, count: u64, max: u64) -> Result<u64, LimitError> {
    if count > max {
        return Err(LimitError::Ceiling {
            what,
            count: count.to_string(),
            max: max.to_string(),
        });
    }
    Ok(count)
}

/// Refuses a float count (a duration over an interval) above `max`, or one that is not a
/// number.
pub fn at_most_f64(what: &'static str, count: f64, max: f64) -> Result<(), LimitError> {
    if count.is_nan() || count > max {
        // Whole numbers up to 2^53 as such, beyond in scientific notation (1e300, not 301
        // digits).
        let count = if count < 9e15 {
            format!("{count:.0}")
        } else {
            format!("{count:e}")
        };
        return Err(LimitError::Ceiling {
            what,
            count,
            max: format!("{max:.0}"),
        });
    }
    Ok(())
}

/// `bytes` for people: `512 B`, `3.2 MB`, `24.4 GB` (powers of 1000).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [(&str, f64); 4] = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)];
    let b = bytes as f64;
    UNITS.iter().find(|(_, u)| b >= *u).map_or_else(
        || format!("{bytes} B"),
        |(n, u)| format!("{:.1} {n}", b / u),
    )
}

/// Input as an error may quote it: at most [`MAX_QUOTE`] characters, control characters
/// escaped (no terminal escape sequence reaches the screen), `...` when cut; in quotes.
pub fn excerpt(text: &str) -> String {
    let mut out = String::from("\"");
    push_excerpt(&mut out, text);
    out.push('"');
    out
}

fn push_excerpt(out: &mut String, text: &str) {
    for (i, c) in text.chars().enumerate() {
        if i == MAX_QUOTE {
            out.push_str("...");
            break;
        }
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
}

/// A message from a parser that quotes input (`unknown field `KEY``, `invalid type: string
/// "VALUE"`), with every quoted part cut to an excerpt: a 50 MB key is shown as its first
/// [`MAX_QUOTE`] characters. Control characters outside quotes are escaped too.
pub fn clip_quoted(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len().min(1024));
    let mut rest = msg;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        if c != '`' && c != '"' {
            if c.is_control() && c != '\n' {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
            continue;
        }
        let end = closing(rest, c);
        let Some(end) = end else {
            // An unmatched quote: the rest is quoted input, cut it.
            out.push(c);
            push_raw_excerpt(&mut out, rest);
            return out;
        };
        out.push(c);
        push_raw_excerpt(&mut out, &rest[..end]);
        out.push(c);
        rest = &rest[end + c.len_utf8()..];
    }
    out
}

/// Where the quote `q` that `text` is inside of ends (a `"` after a backslash does not).
fn closing(text: &str, q: char) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            '\\' if q == '"' && !escaped => escaped = true,
            c if c == q && !escaped => return Some(i),
            _ => escaped = false,
        }
    }
    None
}

/// `text` (already quoted by its parser) cut to [`MAX_QUOTE`] characters, controls escaped.
fn push_raw_excerpt(out: &mut String, text: &str) {
    for (i, c) in text.chars().enumerate() {
        if i == MAX_QUOTE {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
}

/// The ceilings one run is held to: the fixed ones by default, and with
/// [`Limits::for_memory`] no more than a machine's memory holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Memory the run may take, bytes (`None`: the fixed ceilings only).
    pub memory_bytes: Option<u64>,
}

impl Limits {
    /// The fixed ceilings, and `memory_bytes` of memory.
    pub fn for_memory(memory_bytes: u64) -> Self {
        Limits {
            memory_bytes: Some(memory_bytes),
        }
    }

    /// The most flows allowed: [`MAX_FLOWS`], and no more than the memory holds with the RC
    /// engine's [`RC_FLOW_BYTES`] each.
    pub fn max_flows(&self) -> usize {
        let fit = self.memory_bytes.map_or(usize::MAX, |m| {
            usize::try_from(m / RC_FLOW_BYTES).unwrap_or(usize::MAX)
        });
        MAX_FLOWS.min(fit)
    }

    /// Refuses `count` flows above [`Limits::max_flows`], saying which bound it is.
    pub fn flows(&self, count: u64) -> Result<(), LimitError> {
        at_most("flows", count, MAX_FLOWS as u64)?;
        match self.memory_bytes {
            Some(have) if count > self.max_flows() as u64 => Err(LimitError::Memory {
                what: format!("{count} flows"),
                need: human_bytes(count.saturating_mul(RC_FLOW_BYTES)),
                have: human_bytes(have),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_cut_long_input_and_escape_controls() {
        assert_eq!(excerpt("FOO"), "\"FOO\"");
        let long = "K".repeat(50 << 20);
        assert_eq!(excerpt(&long), format!("\"{}...\"", "K".repeat(64)));
        assert_eq!(excerpt("a\u{1b}[2Jb\"c"), "\"a\\u{1b}[2Jb\\\"c\"");
        let msg = format!("unknown field `{long}`, expected one of `name`, `seed`");
        assert_eq!(
            clip_quoted(&msg),
            format!(
                "unknown field `{}...`, expected one of `name`, `seed`",
                "K".repeat(64)
            )
        );
        let msg = format!("invalid type: string \"{long}\\\"x\", expected f64");
        assert_eq!(
            clip_quoted(&msg),
            format!(
                "invalid type: string \"{}...\", expected f64",
                "K".repeat(64)
            )
        );
        assert_eq!(clip_quoted("cut `\u{7}abc"), "cut `\\u{7}abc");
    }

    #[test]
    fn ceilings_and_memory_name_what_is_too_much() {
        assert_eq!(at_most("nodes", 5, 5), Ok(5));
        assert_eq!(
            at_most("nodes", 4_000_000_000, 131_072)
                .unwrap_err()
                .to_string(),
            "4000000000 nodes is more than this build supports (at most 131072)"
        );
        assert_eq!(
            at_most_f64("samples", f64::INFINITY, MAX_SAMPLES)
                .unwrap_err()
                .to_string(),
            "inf samples is more than this build supports (at most 10000000)"
        );
        assert_eq!(Limits::for_memory(24 << 20).max_flows(), 945);
        assert_eq!(Limits::for_memory(u64::MAX).max_flows(), MAX_FLOWS);
        assert_eq!(Limits::default().max_flows(), MAX_FLOWS);
        assert_eq!(
            Limits::for_memory(24 << 20)
                .flows(2000)
                .unwrap_err()
                .to_string(),
            "2000 flows need about 53.2 MB, more than the 25.2 MB of memory here"
        );
        assert_eq!(
            Limits::for_memory(u64::MAX)
                .flows(1 << 30)
                .unwrap_err()
                .to_string(),
            "1073741824 flows is more than this build supports (at most 8388608)"
        );
    }
}
