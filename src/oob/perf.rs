//! `roce perf`'s own exchange, when both sides are roce: one JSON line per step, client first
//! (parameters, keys, barriers, results), and an `{"error": "..."}` line in place of an answer
//! a side refuses. Every value read from the peer is bounded here ([`Hello::check`]) before
//! anything is allocated for it, and every line is at most [`MAX_LINE`] bytes. Messages, checks
//! and decoding only; the steps run in the CLI.

use std::fmt;
use std::net::Ipv6Addr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::error::Category;

use super::{printable, DecodeError};

/// The longest line either side reads (the keys of 64 QPs take about 8 KiB).
pub const MAX_LINE: usize = 64 * 1024;
/// The largest message size.
pub const MAX_SIZE: u64 = 1 << 23;
/// The most sizes one run goes through (`-a` has 23).
pub const MAX_SIZES: usize = 32;
/// The most iterations per size.
pub const MAX_ITERS: u64 = 1 << 32;
/// The longest `-D` run, seconds.
pub const MAX_DURATION_S: u64 = 86_400;
/// The most QPs.
pub const MAX_QPS: u32 = 64;
/// The default bound on the buffers one side registers (`--max-memory`), bytes.
pub const DEFAULT_MAX_MEMORY: u64 = 1 << 30;
/// Room past the largest message in each buffer: perftest's requester moves its remote address
/// through a cycle buffer (4 KiB) past the start.
pub const CYCLE_SLACK: u64 = 8192;
/// Buffers per QP (source and destination).
pub const BUFFERS_PER_QP: u64 = 2;

/// A perftest test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    /// ib_write_bw.
    WriteBw,
    /// ib_read_bw.
    ReadBw,
    /// ib_send_bw.
    SendBw,
    /// ib_write_lat.
    WriteLat,
    /// ib_read_lat.
    ReadLat,
    /// ib_send_lat.
    SendLat,
    /// ib_atomic_lat (fetch-and-add).
    AtomicLat,
}

impl Test {
    /// A bandwidth test (several QPs, `-D`, `-b` allowed).
    pub fn is_bw(self) -> bool {
        matches!(self, Test::WriteBw | Test::ReadBw | Test::SendBw)
    }

    /// The name on the command line and in the exchange (`write-bw`).
    pub fn name(self) -> &'static str {
        match self {
            Test::WriteBw => "write-bw",
            Test::ReadBw => "read-bw",
            Test::SendBw => "send-bw",
            Test::WriteLat => "write-lat",
            Test::ReadLat => "read-lat",
            Test::SendLat => "send-lat",
            Test::AtomicLat => "atomic-lat",
        }
    }

    /// perftest's title line.
    pub fn title(self) -> &'static str {
        match self {
            Test::WriteBw => "RDMA_Write BW Test",
            Test::ReadBw => "RDMA_Read BW Test",
            Test::SendBw => "Send BW Test",
            Test::WriteLat => "RDMA_Write Latency Test",
            Test::ReadLat => "RDMA_Read Latency Test",
            Test::SendLat => "Send Latency Test",
            Test::AtomicLat => "Atomic FETCH_AND_ADD Latency Test",
        }
    }

    /// The receiver posts receives (SEND tests).
    pub fn uses_recv(self) -> bool {
        matches!(self, Test::SendBw | Test::SendLat)
    }
}

/// What the client tells the server: the test and its parameters (the server answers with the
/// same, its MTU if smaller).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The test.
    pub test: Test,
    /// Message sizes, one run each.
    pub sizes: Vec<u64>,
    /// Iterations per size and QP.
    pub iters: u64,
    /// Seconds per size instead of iterations (bandwidth tests; 0: none).
    pub duration: u64,
    /// QPs.
    pub qps: u32,
    /// Path MTU, bytes.
    pub mtu: u32,
    /// Both sides send (bandwidth tests).
    #[serde(default)]
    pub bidir: bool,
    /// Every QP recovers by selective repeat (roce's extension, docs/selective-repeat.md). The
    /// client asks; the server answers with it only if it was started with it too. A server that
    /// does not know the field answers without it, and both sides stay go-back-N.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub selective_repeat: bool,
}

/// A parameter outside what roce runs: the flag and the JSON key that carry it, the value and
/// the rule it breaks. Says itself in the peer's terms (`"sizes" 1099511627776: ...`);
/// [`BadParam::flag_line`] says it in the command line's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct BadParam {
    /// The command-line flag (`-s`).
    pub flag: &'static str,
    /// The JSON key (`sizes`).
    pub key: &'static str,
    /// The value, when the rule is about one.
    pub value: Option<String>,
    /// What the value must be.
    pub rule: String,
}

impl BadParam {
    fn new(flag: &'static str, key: &'static str, value: Option<String>, rule: String) -> Self {
        BadParam {
            flag,
            key,
            value,
            rule,
        }
    }

    fn write(&self, f: &mut impl fmt::Write, name: &str) -> fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{name} {v}: {}", self.rule),
            None => write!(f, "{name} {}", self.rule),
        }
    }

    /// The problem in the command line's terms (`-s 0: the size must be 1..=8388608 bytes`).
    pub fn flag_line(&self) -> String {
        let mut s = String::new();
        let _ = self.write(&mut s, self.flag);
        s
    }
}

impl fmt::Display for BadParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, &format!("\"{}\"", self.key))
    }
}

/// The path MTUs, bytes.
pub const MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

impl Hello {
    /// The largest size (8 bytes at least: an atomic's).
    pub fn max_size(&self) -> u64 {
        self.sizes.iter().copied().max().unwrap_or(8).max(8)
    }

    /// Bytes of one buffer: the largest message plus the cycle slack.
    pub fn buffer_len(&self) -> u64 {
        self.max_size().saturating_add(CYCLE_SLACK)
    }

    /// Bytes of every buffer of the run (QPs x 2 x buffer), `None` past `u64`.
    pub fn buffer_bytes(&self) -> Option<u64> {
        u64::from(self.qps)
            .checked_mul(BUFFERS_PER_QP)?
            .checked_mul(self.buffer_len())
    }

    /// Checks every value against what roce runs, the buffers against `max_memory` bytes, before
    /// anything is allocated for them; the first problem found.
    pub fn check(&self, max_memory: u64) -> Result<(), BadParam> {
        let bw_only = |flag, key, value: Option<String>| {
            BadParam::new(
                flag,
                key,
                value,
                "is supported by the bandwidth tests only".into(),
            )
        };
        let n = self.sizes.len();
        if n == 0 || n > MAX_SIZES {
            return Err(BadParam::new(
                "-a",
                "sizes",
                Some(format!("({n} sizes)")),
                format!("a run has 1..={MAX_SIZES} sizes"),
            ));
        }
        if let Some(&size) = self.sizes.iter().find(|&&s| s == 0 || s > MAX_SIZE) {
            return Err(BadParam::new(
                "-s",
                "sizes",
                Some(size.to_string()),
                format!("the size must be 1..={MAX_SIZE} bytes"),
            ));
        }
        // The byte a write-lat size polls must lie past every byte an earlier size wrote: a peer
        // may start the next size at once (ib_write_lat does), so nothing is cleared between.
        if let Some(w) = self.sizes.windows(2).find(|w| w[1] <= w[0]) {
            return Err(BadParam::new(
                "-a",
                "sizes",
                Some(format!("{} then {}", w[0], w[1])),
                "each size must be larger than the one before".into(),
            ));
        }
        if self.duration > 0 && !self.test.is_bw() {
            return Err(bw_only("-D", "duration", None));
        }
        if self.duration > MAX_DURATION_S {
            return Err(BadParam::new(
                "-D",
                "duration",
                Some(self.duration.to_string()),
                format!("the duration must be at most {MAX_DURATION_S} s"),
            ));
        }
        if self.iters == 0 || self.iters > MAX_ITERS {
            return Err(BadParam::new(
                "-n",
                "iters",
                Some(self.iters.to_string()),
                "iterations must be 1..=2^32".into(),
            ));
        }
        if self.qps == 0 || self.qps > MAX_QPS {
            return Err(BadParam::new(
                "-q",
                "qps",
                Some(self.qps.to_string()),
                format!("1..={MAX_QPS} QPs"),
            ));
        }
        if self.qps > 1 && !self.test.is_bw() {
            return Err(bw_only("-q", "qps", None));
        }
        if self.bidir && !self.test.is_bw() {
            return Err(bw_only("-b", "bidir", None));
        }
        if !MTUS.contains(&self.mtu) {
            return Err(BadParam::new(
                "-m",
                "mtu",
                Some(self.mtu.to_string()),
                "the MTU must be 256, 512, 1024, 2048 or 4096".into(),
            ));
        }
        match self.buffer_bytes() {
            Some(bytes) if bytes <= max_memory => Ok(()),
            bytes => Err(BadParam::new(
                "-q x -s",
                "qps\" x \"sizes",
                Some(format!("{} x {}", self.qps, self.max_size())),
                format!(
                    "{} bytes of buffers, more than --max-memory allows ({} MiB)",
                    bytes.map_or_else(|| "2^64".into(), |b| b.to_string()),
                    max_memory >> 20
                ),
            )),
        }
    }
}

/// One QP's keys, as exchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dest {
    /// QP number.
    pub qpn: u32,
    /// First PSN.
    pub psn: u32,
    /// rkey of the destination buffer.
    pub rkey: u32,
    /// Address of the destination buffer.
    pub addr: u64,
    /// GID.
    pub gid: Ipv6Addr,
}

/// What a side sends instead of its answer when it refuses the peer's line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Refusal {
    error: String,
}

/// The line that refuses the peer's last message, saying why.
pub fn refusal_line(reason: &str) -> Vec<u8> {
    let mut line = serde_json::json!({ "error": reason })
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

/// Decodes one line of the exchange as `T` (`what` names it in errors); the peer's refusal
/// comes back as [`DecodeError::Refused`]. Bounded: lines past [`MAX_LINE`] are refused, and
/// what the peer wrote is quoted printable and short.
pub fn decode_line<T: DeserializeOwned>(what: &'static str, line: &[u8]) -> Result<T, DecodeError> {
    if line.len() > MAX_LINE {
        return Err(DecodeError::TooLong {
            what,
            max: MAX_LINE,
        });
    }
    if let Ok(r) = serde_json::from_slice::<Refusal>(line) {
        return Err(DecodeError::Refused {
            what,
            reason: printable(&r.error),
        });
    }
    serde_json::from_slice(line).map_err(|e| {
        let text = printable(&e.to_string());
        let json_shape = matches!(line.trim_ascii_start().first(), Some(b'{' | b'['));
        let reason = match e.classify() {
            // Not a JSON object or list: most likely a perftest tool's fixed-size messages.
            _ if !json_shape => format!(
                "{text} (not roce's JSON: is the peer a perftest tool? then use --peer-format \
                 perftest)"
            ),
            // A value of the wrong type or range: name its key.
            Category::Data => match key_before(line, e.line(), e.column()) {
                Some(key) => format!("\"{}\": {text}", printable(&key)),
                None => text,
            },
            Category::Syntax | Category::Eof | Category::Io => text,
        };
        DecodeError::Json { what, reason }
    })
}

/// The last object key before `column` of `line_no` in a JSON text (serde_json reports where a
/// bad value ends, not whose it is); `None` when there is none. For error messages only: a
/// crafted text may make it name the wrong key, never fail.
fn key_before(text: &[u8], line_no: usize, column: usize) -> Option<String> {
    let line = text.split(|&b| b == b'\n').nth(line_no.checked_sub(1)?)?;
    let prefix = line.get(..column.min(line.len()))?;
    let (mut in_string, mut escaped) = (false, false);
    let (mut current, mut last_string, mut key) = (Vec::new(), None, None);
    for &b in prefix {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => {
                    in_string = false;
                    last_string = Some(std::mem::take(&mut current));
                    continue;
                }
                _ => {}
            }
            if current.len() < 64 {
                current.push(b);
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b':' {
            key = last_string.take();
        }
    }
    key.map(|k| String::from_utf8_lossy(&k).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello() -> Hello {
        Hello {
            test: Test::WriteBw,
            sizes: vec![65536],
            iters: 5000,
            duration: 0,
            qps: 1,
            mtu: 1024,
            bidir: false,
            selective_repeat: false,
        }
    }

    #[test]
    fn a_plain_hello_passes_and_round_trips() {
        let h = hello();
        for t in [Test::WriteBw, Test::AtomicLat, Test::SendLat] {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.name()));
        }
        assert_eq!(h.check(DEFAULT_MAX_MEMORY), Ok(()));
        let line = serde_json::to_vec(&h).unwrap();
        assert_eq!(decode_line::<Hello>("parameters", &line), Ok(h));
    }

    #[test]
    fn out_of_range_values_name_their_key_and_flag() {
        let cases = [
            (
                Hello {
                    sizes: vec![1 << 40],
                    ..hello()
                },
                "\"sizes\" 1099511627776: the size must be 1..=8388608 bytes",
                "-s 1099511627776: the size must be 1..=8388608 bytes",
            ),
            (
                Hello {
                    duration: u64::MAX,
                    ..hello()
                },
                "\"duration\" 18446744073709551615: the duration must be at most 86400 s",
                "-D 18446744073709551615: the duration must be at most 86400 s",
            ),
            (
                Hello {
                    test: Test::SendLat,
                    bidir: true,
                    ..hello()
                },
                "\"bidir\" is supported by the bandwidth tests only",
                "-b is supported by the bandwidth tests only",
            ),
            (
                Hello {
                    qps: 64,
                    sizes: vec![MAX_SIZE],
                    ..hello()
                },
                "\"qps\" x \"sizes\" 64 x 8388608: 1074790400 bytes of buffers, more than \
                 --max-memory allows (1024 MiB)",
                "-q x -s 64 x 8388608: 1074790400 bytes of buffers, more than --max-memory \
                 allows (1024 MiB)",
            ),
        ];
        for (h, peer, flag) in cases {
            let e = h.check(DEFAULT_MAX_MEMORY).unwrap_err();
            assert_eq!(
                (e.to_string().as_str(), e.flag_line().as_str()),
                (peer, flag)
            );
        }
    }

    #[test]
    fn sizes_run_in_growing_order_only() {
        let all = Hello {
            test: Test::WriteLat,
            sizes: (1..=23).map(|i| 1u64 << i).collect(),
            ..hello()
        };
        assert_eq!(all.check(DEFAULT_MAX_MEMORY), Ok(()));
        for (sizes, value) in [(vec![4, 2], "4 then 2"), (vec![2, 8, 8], "8 then 8")] {
            let e = Hello {
                sizes,
                ..all.clone()
            }
            .check(DEFAULT_MAX_MEMORY)
            .unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("\"sizes\" {value}: each size must be larger than the one before")
            );
            assert_eq!(
                e.flag_line(),
                format!("-a {value}: each size must be larger than the one before")
            );
        }
    }

    #[test]
    fn key_before_names_the_key_of_the_value_at_a_column() {
        let line = br#"{"a":1,"b\":c":[2,{"d":3}],"e":"x:y"}"#;
        assert_eq!(key_before(line, 1, 6), Some("a".into()));
        assert_eq!(key_before(line, 1, 20), Some("b\\\":c".into()));
        assert_eq!(key_before(line, 1, 25), Some("d".into()));
        assert_eq!(key_before(line, 1, line.len()), Some("e".into()));
        assert_eq!(key_before(line, 2, 1), None);
        assert_eq!(key_before(b"[1,2]", 1, 4), None);
    }

    #[test]
    fn buffer_bytes_do_not_wrap() {
        let h = Hello {
            sizes: vec![u64::MAX],
            qps: u32::MAX,
            ..hello()
        };
        assert_eq!(h.buffer_len(), u64::MAX);
        assert_eq!(h.buffer_bytes(), None);
    }

    #[test]
    fn refusals_and_negative_values_are_errors() {
        let refused = refusal_line("\"sizes\" 0: the size must be 1..=8388608 bytes");
        assert_eq!(
            decode_line::<Hello>("parameters", &refused),
            Err(DecodeError::Refused {
                what: "parameters",
                reason: "\"sizes\" 0: the size must be 1..=8388608 bytes".into()
            })
        );
        let negative =
            br#"{"test":"write-bw","sizes":[-1],"iters":1,"duration":0,"qps":1,"mtu":1024}"#;
        let e = decode_line::<Hello>("parameters", negative).unwrap_err();
        assert_eq!(
            e.to_string(),
            "parameters: \"sizes\": invalid value: integer `-1`, expected u64 at line 1 column 30"
        );
        let wide = br#"{"test":"write-bw","sizes":[1],"iters":1,"duration":0,"qps":1099511627776,"mtu":1}"#;
        let e = decode_line::<Hello>("parameters", wide).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("parameters: \"qps\": invalid value"),
            "{e}"
        );
        let text = decode_line::<Hello>("parameters", b"6.06\0\0").unwrap_err();
        assert!(
            text.to_string().contains("--peer-format perftest"),
            "{text}"
        );
    }
}
