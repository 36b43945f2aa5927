//! The HPCC simulator's config file (`mix/config_*.txt`, written by its `run.py`): one key
//! and its values per line, read as `scratch/third.cc` reads it.
//!
//! Keys that change what the simulator simulates are kept typed (the runner models each or
//! names why not); keys that change nothing it simulates (its trace and queue-monitor outputs,
//! `DATA_RATE`/`LINK_DELAY`, which the topology file overrides, and HPCC-PINT's) are accepted
//! and listed in [`HpccConfig::ignored`]; an unknown key or a value that does not parse is an
//! error naming the file and the line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::tokens::Tokens;
use super::{parse_rate, HpccError};
use crate::limits::bounds::{excerpt, MAX_CONFIG_BYTES, MAX_CONFIG_LINE_BYTES};

/// The longest `SIMULATOR_STOP_TIME`, s: a scenario's longest run,
/// [`crate::limits::bounds::MAX_DURATION_US`] (the run samples its time series every millisecond, at
/// most [`crate::limits::bounds::MAX_SAMPLES`] times).
pub const MAX_STOP_TIME_S: f64 = crate::limits::bounds::MAX_DURATION_US / 1e6;

/// The largest `BUFFER_SIZE`, MB (64 GiB of switch buffer; switches have tens of MB).
pub const MAX_BUFFER_MB: u64 = 65_536;

/// `CC_MODE`: the controller the simulator runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcMode {
    /// 1: DCQCN.
    Dcqcn,
    /// 3: HPCC.
    Hpcc,
    /// 7: TIMELY.
    Timely,
    /// 8: DCTCP.
    Dctcp,
    /// 10: HPCC-PINT.
    HpccPint,
    /// Any other number (kept; the runner refuses it).
    Other(u32),
}

impl CcMode {
    /// The mode of the number `CC_MODE` gives.
    pub fn from_number(n: u32) -> Self {
        match n {
            1 => CcMode::Dcqcn,
            3 => CcMode::Hpcc,
            7 => CcMode::Timely,
            8 => CcMode::Dctcp,
            10 => CcMode::HpccPint,
            n => CcMode::Other(n),
        }
    }
}

/// Keys the simulator reads that change nothing it simulates: `DATA_RATE` and `LINK_DELAY`
/// (`third.cc` reads them, then takes every link's rate and delay from the topology file), its
/// trace and queue-monitor outputs, and HPCC-PINT's parameters (`CC_MODE 10` only, which is
/// refused).
const IGNORED: &[&str] = &[
    "DATA_RATE",
    "LINK_DELAY",
    "TRACE_FILE",
    "TRACE_OUTPUT_FILE",
    "ENABLE_TRACE",
    "QLEN_MON_FILE",
    "QLEN_MON_START",
    "QLEN_MON_END",
    "PINT_LOG_BASE",
    "PINT_PROB",
];

/// A `LINK_DOWN time_us a b` event (the simulator takes the link down at 2 s + time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkDown {
    /// Microseconds after 2 s.
    pub after_us: u64,
    /// One node.
    pub a: usize,
    /// The other node.
    pub b: usize,
}

/// Declares [`HpccConfig`] from one table: each key the model uses once, as its field (with
/// `third.cc`'s default) and the parser of its values, so a key cannot be typed in one place
/// and forgotten in another.
macro_rules! hpcc_keys {
    ($(
        $(#[doc = $doc:literal])*
        $key:literal => $field:ident: $ty:ty = $default:expr, $parse:expr;
    )*) => {
        /// A parsed config file. Defaults are `third.cc`'s.
        #[derive(Clone, Debug, PartialEq)]
        pub struct HpccConfig {
            $($(#[doc = $doc])* pub $field: $ty,)*
            /// `LINK_DOWN` (absent when its time is 0, as the simulator treats it).
            pub link_down: Option<LinkDown>,
            /// Keys given that change nothing the simulator simulates, each once, in file order.
            pub ignored: Vec<String>,
        }

        impl Default for HpccConfig {
            fn default() -> Self {
                HpccConfig {
                    $($field: $default,)*
                    link_down: None,
                    ignored: Vec::new(),
                }
            }
        }

        impl HpccConfig {
            /// Reads the values of `key` into its field; `false` for a key not in the table.
            fn set(&mut self, key: &str, t: &mut Tokens<'_>) -> Result<bool, HpccError> {
                match key {
                    $($key => {
                        let parse: fn(&mut Tokens<'_>) -> Result<$ty, HpccError> = $parse;
                        self.$field = parse(t)?;
                    })*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }
    };
}

hpcc_keys! {
    /// `TOPOLOGY_FILE`, as written (relative to where the simulator runs).
    "TOPOLOGY_FILE" => topology_file: Option<PathBuf> = None, |t| path(t).map(Some);
    /// `FLOW_FILE`.
    "FLOW_FILE" => flow_file: Option<PathBuf> = None, |t| path(t).map(Some);
    /// `FCT_OUTPUT_FILE` (default `fct.txt`).
    "FCT_OUTPUT_FILE" => fct_output_file: PathBuf = "fct.txt".into(), path;
    /// `PFC_OUTPUT_FILE` (default `pfc.txt`).
    "PFC_OUTPUT_FILE" => pfc_output_file: PathBuf = "pfc.txt".into(), path;
    /// `SIMULATOR_STOP_TIME`, seconds.
    "SIMULATOR_STOP_TIME" => stop_time_s: f64 = 3.01, |t| t.num("a time in seconds");
    /// `CC_MODE`.
    "CC_MODE" => cc_mode: CcMode = CcMode::Dcqcn,
        |t| t.num("a CC_MODE number").map(CcMode::from_number);
    /// `ENABLE_QCN`: ECN marking in switches.
    "ENABLE_QCN" => enable_qcn: bool = true, flag;
    /// `CLAMP_TARGET_RATE`: DCQCN sets the target rate to the current rate at every cut.
    "CLAMP_TARGET_RATE" => clamp_target_rate: bool = false, flag;
    /// `RATE_AI`, bit/s.
    "RATE_AI" => rate_ai_bps: Option<u64> = None, |t| rate(t).map(Some);
    /// `RATE_HAI`, bit/s.
    "RATE_HAI" => rate_hai_bps: Option<u64> = None, |t| rate(t).map(Some);
    /// `MIN_RATE`, bit/s.
    "MIN_RATE" => min_rate_bps: u64 = 100_000_000, rate;
    /// `DCTCP_RATE_AI`, bit/s.
    "DCTCP_RATE_AI" => dctcp_rate_ai_bps: u64 = 1_000_000_000, rate;
    /// `RP_TIMER`, µs.
    "RP_TIMER" => rp_timer_us: Option<f64> = None, |t| t.num("a time in µs").map(Some);
    /// `EWMA_GAIN` (DCQCN's g, DCTCP's g).
    "EWMA_GAIN" => ewma_gain: f64 = 1.0 / 16.0, |t| t.num("a gain");
    /// `ALPHA_RESUME_INTERVAL`, µs.
    "ALPHA_RESUME_INTERVAL" => alpha_resume_interval_us: f64 = 55.0, |t| t.num("a time in µs");
    /// `RATE_DECREASE_INTERVAL`, µs.
    "RATE_DECREASE_INTERVAL" => rate_decrease_interval_us: f64 = 4.0, |t| t.num("a time in µs");
    /// `FAST_RECOVERY_TIMES`.
    "FAST_RECOVERY_TIMES" => fast_recovery_times: u32 = 5, |t| t.num("a count");
    /// `U_TARGET` (HPCC's eta).
    "U_TARGET" => u_target: f64 = 0.95, |t| t.num("a utilisation (0..1)");
    /// `HAS_WIN`: a BDP window on every flow.
    "HAS_WIN" => has_win: bool = true, flag;
    /// `VAR_WIN`: the window scales with the flow's rate.
    "VAR_WIN" => var_win: bool = false, flag;
    /// `GLOBAL_T`: one window (and HPCC's T) for every pair, from the largest base RTT.
    "GLOBAL_T" => global_t: bool = true, flag;
    /// `KMAX_MAP`: link rate (bit/s) to Kmax (KB, 1000 bytes).
    "KMAX_MAP" => kmax_kb: BTreeMap<u64, u64> = BTreeMap::new(), |t| rate_map(t, "Kmax in KB");
    /// `KMIN_MAP`: link rate (bit/s) to Kmin (KB).
    "KMIN_MAP" => kmin_kb: BTreeMap<u64, u64> = BTreeMap::new(), |t| rate_map(t, "Kmin in KB");
    /// `PMAX_MAP`: link rate (bit/s) to Pmax.
    "PMAX_MAP" => pmax: BTreeMap<u64, f64> = BTreeMap::new(), |t| rate_map(t, "a probability");
    /// `BUFFER_SIZE`, MB (2^20 bytes) per switch. A decimal counts its whole part, as
    /// `third.cc` reads it into an integer: run.py under Python 3 writes `16 * bw / 50` as
    /// `32.0`.
    "BUFFER_SIZE" => buffer_size_mb: u64 = 16, whole_mb;
    /// `USE_DYNAMIC_PFC_THRESHOLD`.
    "USE_DYNAMIC_PFC_THRESHOLD" => dynamic_pfc_threshold: bool = true, flag;
    /// `PACKET_PAYLOAD_SIZE`, bytes.
    "PACKET_PAYLOAD_SIZE" => packet_payload_size: u32 = 1000, |t| t.num("a size in bytes");
    /// `ACK_HIGH_PRIO`: ACKs on the highest priority.
    "ACK_HIGH_PRIO" => ack_high_prio: bool = false, flag;
    /// `ERROR_RATE_PER_LINK`: packet loss probability of every link.
    "ERROR_RATE_PER_LINK" => error_rate_per_link: f64 = 0.0, |t| t.num("a probability");
    /// `MI_THRESH`: HPCC's additive steps before a multiplicative one (0: always
    /// multiplicative).
    "MI_THRESH" => mi_thresh: u32 = 5, |t| t.num("a count");
    /// `FAST_REACT`: HPCC reacts on every ACK, not only once per RTT.
    "FAST_REACT" => fast_react: bool = true, flag;
    /// `MULTI_RATE`: HPCC keeps a rate per hop (`third.cc`'s default is on).
    "MULTI_RATE" => multi_rate: bool = true, flag;
    /// `SAMPLE_FEEDBACK`: HPCC's fast reaction skips hops whose queue reads empty.
    "SAMPLE_FEEDBACK" => sample_feedback: bool = false, flag;
    /// `INT_MULTI`: the units multiplier of the INT records' byte fields.
    "INT_MULTI" => int_multi: u32 = 1, |t| t.num("a multiplier");
    /// `RATE_BOUND`: senders pace at their controller's rate (0: at the line rate, only the
    /// window bounding them).
    "RATE_BOUND" => rate_bound: bool = true, flag;
    /// `L2_ACK_INTERVAL`: bytes of a flow the simulator's receiver takes in before its first
    /// ACK (it then ACKs every packet: its milestone is reset to this on every packet).
    "L2_ACK_INTERVAL" => l2_ack_interval: u32 = 0, |t| t.num("a size in bytes");
    /// `L2_CHUNK_SIZE`: an extra ACK at every chunk boundary, and the go-back point under
    /// `L2_BACK_TO_ZERO`.
    "L2_CHUNK_SIZE" => l2_chunk_size: u32 = 0, |t| t.num("a size in bytes");
    /// `L2_BACK_TO_ZERO`: ACKs and retransmissions go back to a chunk boundary.
    "L2_BACK_TO_ZERO" => l2_back_to_zero: bool = false, flag;
    /// `PAUSE_TIME`: the pause time of PFC frames (0 makes every pause a resume).
    "PAUSE_TIME" => pause_time: f64 = 5.0, |t| t.num("a time");
}

/// A `0` or `1` (any other whole number counts as on, as `third.cc` reads it).
fn flag(t: &mut Tokens<'_>) -> Result<bool, HpccError> {
    let on = |v: &str| v.parse::<u32>().ok().map(|v| v != 0);
    Ok(t.value("0 or 1", on)?.1)
}

/// A size in MB: a whole number, or a decimal (`32.0`) whose fraction is dropped.
fn whole_mb(t: &mut Tokens<'_>) -> Result<u64, HpccError> {
    let whole = |v: &str| {
        let (whole, fraction) = v.split_once('.').unwrap_or((v, ""));
        fraction
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| whole.parse().ok())
            .flatten()
    };
    Ok(t.value("a size in MB", whole)?.1)
}

/// A data rate as ns-3 writes it.
fn rate(t: &mut Tokens<'_>) -> Result<u64, HpccError> {
    Ok(t.value("a data rate (e.g. 100Gb/s)", parse_rate)?.1)
}

/// A path, as written.
fn path(t: &mut Tokens<'_>) -> Result<PathBuf, HpccError> {
    Ok(t.value("a path", |p| Some(PathBuf::from(p)))?.1)
}

impl HpccConfig {
    /// Parses the config text of the file named `file`.
    pub fn parse(file: &str, text: &str) -> Result<HpccConfig, HpccError> {
        Self::read(Tokens::of_text(file, text))
    }

    /// Reads the config file at `path`, within [`MAX_CONFIG_BYTES`] and lines of
    /// [`MAX_CONFIG_LINE_BYTES`].
    pub fn load(path: &Path) -> Result<HpccConfig, HpccError> {
        let lines = super::lines(path, MAX_CONFIG_LINE_BYTES)?.with_max_bytes(MAX_CONFIG_BYTES);
        Self::read(Tokens::new(lines))
    }

    fn read(mut t: Tokens<'_>) -> Result<HpccConfig, HpccError> {
        let mut c = HpccConfig::default();
        while let Some((line, key)) = t.next_owned()? {
            match key.as_str() {
                "LINK_DOWN" => {
                    let after_us: u64 = t.num("a time in µs")?;
                    let a = t.num("a node id")?;
                    let b = t.num("a node id")?;
                    c.link_down = (after_us > 0).then_some(LinkDown { after_us, a, b });
                }
                k if IGNORED.contains(&k) => {
                    // Every ignored key takes one value.
                    t.value("a value", |_| Some(()))?;
                    if !c.ignored.iter().any(|i| i == k) {
                        c.ignored.push(k.to_owned());
                    }
                }
                k => {
                    if !c.set(k, &mut t)? {
                        return Err(t.error(line, format!("unknown key {}", excerpt(k))));
                    }
                }
            }
        }
        let end = t.line()?;
        if !(c.stop_time_s.is_finite() && c.stop_time_s > 0.0) {
            return Err(t.error(end, "SIMULATOR_STOP_TIME must be positive"));
        }
        if c.stop_time_s > MAX_STOP_TIME_S {
            return Err(t.error(
                end,
                format!(
                    "SIMULATOR_STOP_TIME {} s is more than this build supports (at most {MAX_STOP_TIME_S} s)",
                    c.stop_time_s
                ),
            ));
        }
        if c.packet_payload_size == 0 {
            return Err(t.error(end, "PACKET_PAYLOAD_SIZE must be positive"));
        }
        if c.buffer_size_mb > MAX_BUFFER_MB {
            return Err(t.error(
                end,
                format!(
                    "BUFFER_SIZE {} MB is more than this build supports (at most {MAX_BUFFER_MB})",
                    c.buffer_size_mb
                ),
            ));
        }
        Ok(c)
    }

    /// ECN thresholds for a link of `rate_bps`: (Kmin bytes, Kmax bytes, Pmax), when all three
    /// maps have the rate (the simulator asserts they do for every switch port).
    pub fn ecn_for(&self, rate_bps: u64) -> Option<(u64, u64, f64)> {
        Some((
            self.kmin_kb.get(&rate_bps)?.saturating_mul(1000),
            self.kmax_kb.get(&rate_bps)?.saturating_mul(1000),
            *self.pmax.get(&rate_bps)?,
        ))
    }
}

/// `N rate value rate value ...` as the *_MAP keys write it.
fn rate_map<V: std::str::FromStr>(
    t: &mut Tokens<'_>,
    what: &str,
) -> Result<BTreeMap<u64, V>, HpccError> {
    let n: usize = t.num("the number of entries")?;
    let mut m = BTreeMap::new();
    for _ in 0..n {
        let rate = t.num("a link rate in bit/s")?;
        let v = t.num(what)?;
        m.insert(rate, v);
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run.py`'s template for `--cc dcqcn --bw 100 --topo fat --trace flow`.
    const DCQCN: &str = "ENABLE_QCN 1
USE_DYNAMIC_PFC_THRESHOLD 1

PACKET_PAYLOAD_SIZE 1000

TOPOLOGY_FILE mix/fat.txt
FLOW_FILE mix/flow.txt
TRACE_FILE mix/trace.txt
TRACE_OUTPUT_FILE mix/mix_fat_flow_dcqcn.tr
FCT_OUTPUT_FILE mix/fct_fat_flow_dcqcn.txt
PFC_OUTPUT_FILE mix/pfc_fat_flow_dcqcn.txt

SIMULATOR_STOP_TIME 4.00

CC_MODE 1
ALPHA_RESUME_INTERVAL 1
RATE_DECREASE_INTERVAL 4
CLAMP_TARGET_RATE 0
RP_TIMER 300
EWMA_GAIN 0.00390625
FAST_RECOVERY_TIMES 1
RATE_AI 20Mb/s
RATE_HAI 200Mb/s
MIN_RATE 1000Mb/s
DCTCP_RATE_AI 1000Mb/s

ERROR_RATE_PER_LINK 0.0000
L2_CHUNK_SIZE 4000
L2_ACK_INTERVAL 1
L2_BACK_TO_ZERO 0

HAS_WIN 0
GLOBAL_T 1
VAR_WIN 0
FAST_REACT 0
U_TARGET 0.95
MI_THRESH 0
INT_MULTI 1
MULTI_RATE 0
SAMPLE_FEEDBACK 0
PINT_LOG_BASE 1.01
PINT_PROB 1.0

RATE_BOUND 1

ACK_HIGH_PRIO 1

LINK_DOWN 0 0 0

ENABLE_TRACE 1

KMAX_MAP 2 100000000000 1600 400000000000 6400
KMIN_MAP 2 100000000000 400 400000000000 1600
PMAX_MAP 2 100000000000 0.20 400000000000 0.20
BUFFER_SIZE 32
QLEN_MON_FILE mix/qlen_fat_flow_dcqcn.txt
QLEN_MON_START 2000000000
QLEN_MON_END 3000000000
";

    #[test]
    fn run_py_dcqcn_config_reads_every_key() {
        let c = HpccConfig::parse("config.txt", DCQCN).unwrap();
        assert_eq!(c.topology_file, Some(PathBuf::from("mix/fat.txt")));
        assert_eq!(c.flow_file, Some(PathBuf::from("mix/flow.txt")));
        assert_eq!(
            c.fct_output_file,
            PathBuf::from("mix/fct_fat_flow_dcqcn.txt")
        );
        assert_eq!(
            c.pfc_output_file,
            PathBuf::from("mix/pfc_fat_flow_dcqcn.txt")
        );
        assert_eq!(c.stop_time_s, 4.0);
        assert_eq!(c.cc_mode, CcMode::Dcqcn);
        assert_eq!(c.alpha_resume_interval_us, 1.0);
        assert_eq!(c.rate_decrease_interval_us, 4.0);
        assert_eq!(c.rp_timer_us, Some(300.0));
        assert_eq!(c.ewma_gain, 0.00390625);
        assert_eq!(c.fast_recovery_times, 1);
        assert_eq!(c.rate_ai_bps, Some(20_000_000));
        assert_eq!(c.rate_hai_bps, Some(200_000_000));
        assert_eq!(c.min_rate_bps, 1_000_000_000);
        assert!(!c.has_win);
        assert!(!c.var_win);
        assert!(c.global_t);
        assert!(c.enable_qcn);
        assert!(!c.clamp_target_rate);
        assert!(c.ack_high_prio);
        assert!(c.dynamic_pfc_threshold);
        assert_eq!(c.link_down, None);
        assert_eq!(c.buffer_size_mb, 32);
        assert_eq!(c.packet_payload_size, 1000);
        assert_eq!(c.ecn_for(100_000_000_000), Some((400_000, 1_600_000, 0.2)));
        assert_eq!(
            c.ecn_for(400_000_000_000),
            Some((1_600_000, 6_400_000, 0.2))
        );
        assert_eq!(c.ecn_for(25_000_000_000), None);
        assert_eq!(
            c.ignored,
            [
                "TRACE_FILE",
                "TRACE_OUTPUT_FILE",
                "PINT_LOG_BASE",
                "PINT_PROB",
                "ENABLE_TRACE",
                "QLEN_MON_FILE",
                "QLEN_MON_START",
                "QLEN_MON_END",
            ]
        );
        assert_eq!(
            (c.l2_chunk_size, c.l2_ack_interval, c.l2_back_to_zero),
            (4000, 1, false)
        );
        assert_eq!((c.mi_thresh, c.fast_react, c.int_multi), (0, false, 1));
        assert!(!c.multi_rate && !c.sample_feedback && c.rate_bound);
    }

    #[test]
    fn a_decimal_buffer_size_counts_its_whole_part_as_third_cc_reads_it() {
        for (text, mb) in [("BUFFER_SIZE 32.0\n", 32), ("BUFFER_SIZE 12.8\n", 12)] {
            let c = HpccConfig::parse("c.txt", text).unwrap();
            assert_eq!(c.buffer_size_mb, mb, "{text}");
        }
        crate::hpcc::assert_malformed(
            |t| HpccConfig::parse("c.txt", t),
            &[
                ("BUFFER_SIZE -1\n", "c.txt:1: \"-1\" is not a size in MB"),
                (
                    "BUFFER_SIZE 32MB\n",
                    "c.txt:1: \"32MB\" is not a size in MB",
                ),
                ("BUFFER_SIZE 1e3\n", "c.txt:1: \"1e3\" is not a size in MB"),
                ("BUFFER_SIZE inf\n", "c.txt:1: \"inf\" is not a size in MB"),
            ],
        );
    }

    #[test]
    fn ignored_keys_are_listed_once_and_link_down_is_kept() {
        let c = HpccConfig::parse(
            "c.txt",
            "ENABLE_TRACE 1\nENABLE_TRACE 0\nLINK_DOWN 1000 320 340\nCC_MODE 3\nENABLE_QCN 0\n",
        )
        .unwrap();
        assert!(!c.enable_qcn);
        assert_eq!(c.ignored, ["ENABLE_TRACE"]);
        assert_eq!(
            c.link_down,
            Some(LinkDown {
                after_us: 1000,
                a: 320,
                b: 340
            })
        );
        assert_eq!(c.cc_mode, CcMode::Hpcc);
    }

    #[test]
    fn unknown_keys_and_malformed_values_name_file_and_line() {
        crate::hpcc::assert_malformed(
            |t| HpccConfig::parse("mix/config.txt", t),
            &[
                (
                    "CC_MODE 1\n\nFOO_BAR 3\n",
                    "mix/config.txt:3: unknown key \"FOO_BAR\"",
                ),
                (
                    "CC_MODE 1\nRATE_AI fast\n",
                    "mix/config.txt:2: \"fast\" is not a data rate (e.g. 100Gb/s)",
                ),
                (
                    "KMAX_MAP 2 100000000000 1600\nBUFFER_SIZE 32\n",
                    "mix/config.txt:2: \"BUFFER_SIZE\" is not a link rate in bit/s",
                ),
                (
                    "CC_MODE 1\nEWMA_GAIN",
                    "mix/config.txt:2: file ends where a gain was expected",
                ),
                (
                    "SIMULATOR_STOP_TIME 0\n",
                    "mix/config.txt:1: SIMULATOR_STOP_TIME must be positive",
                ),
            ],
        );
    }
}
