//! The HPCC simulator's config file (`mix/config_*.txt`, written by its `run.py`): one key
//! and its values per line, read as `scratch/third.cc` reads it.
//!
//! Keys that describe the experiment are kept typed; keys that change nothing in our model
//! (trace and queue-monitor files, L2 chunking, PINT, ...) are accepted and listed in
//! [`HpccConfig::ignored`]; an unknown key or a value that does not parse is an error naming
//! the file and the line.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::tokens::Tokens;
use super::{parse_rate, HpccError};

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

/// Keys the simulator reads that change nothing in our model.
const IGNORED: &[&str] = &[
    "PAUSE_TIME",
    "DATA_RATE",
    "LINK_DELAY",
    "L2_CHUNK_SIZE",
    "L2_ACK_INTERVAL",
    "L2_BACK_TO_ZERO",
    "TRACE_FILE",
    "TRACE_OUTPUT_FILE",
    "GLOBAL_T",
    "MI_THRESH",
    "VAR_WIN",
    "FAST_REACT",
    "INT_MULTI",
    "RATE_BOUND",
    "ENABLE_TRACE",
    "QLEN_MON_FILE",
    "QLEN_MON_START",
    "QLEN_MON_END",
    "MULTI_RATE",
    "SAMPLE_FEEDBACK",
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

/// A parsed config file. Defaults are `third.cc`'s.
#[derive(Clone, Debug, PartialEq)]
pub struct HpccConfig {
    /// `TOPOLOGY_FILE`, as written (relative to where the simulator runs).
    pub topology_file: Option<PathBuf>,
    /// `FLOW_FILE`.
    pub flow_file: Option<PathBuf>,
    /// `FCT_OUTPUT_FILE` (default `fct.txt`).
    pub fct_output_file: PathBuf,
    /// `PFC_OUTPUT_FILE` (default `pfc.txt`).
    pub pfc_output_file: PathBuf,
    /// `SIMULATOR_STOP_TIME`, seconds.
    pub stop_time_s: f64,
    /// `CC_MODE`.
    pub cc_mode: CcMode,
    /// `ENABLE_QCN`: ECN marking in switches.
    pub enable_qcn: bool,
    /// `CLAMP_TARGET_RATE`: DCQCN sets the target rate to the current rate at every cut.
    pub clamp_target_rate: bool,
    /// `RATE_AI`, bit/s.
    pub rate_ai_bps: Option<u64>,
    /// `RATE_HAI`, bit/s.
    pub rate_hai_bps: Option<u64>,
    /// `MIN_RATE`, bit/s.
    pub min_rate_bps: u64,
    /// `DCTCP_RATE_AI`, bit/s.
    pub dctcp_rate_ai_bps: u64,
    /// `RP_TIMER`, µs.
    pub rp_timer_us: Option<f64>,
    /// `EWMA_GAIN` (DCQCN's g, DCTCP's g).
    pub ewma_gain: f64,
    /// `ALPHA_RESUME_INTERVAL`, µs.
    pub alpha_resume_interval_us: f64,
    /// `RATE_DECREASE_INTERVAL`, µs.
    pub rate_decrease_interval_us: f64,
    /// `FAST_RECOVERY_TIMES`.
    pub fast_recovery_times: u32,
    /// `U_TARGET` (HPCC's eta).
    pub u_target: f64,
    /// `HAS_WIN`: a BDP window on every flow.
    pub has_win: bool,
    /// `KMAX_MAP`: link rate (bit/s) to Kmax (KB, 1000 bytes).
    pub kmax_kb: BTreeMap<u64, u64>,
    /// `KMIN_MAP`: link rate (bit/s) to Kmin (KB).
    pub kmin_kb: BTreeMap<u64, u64>,
    /// `PMAX_MAP`: link rate (bit/s) to Pmax.
    pub pmax: BTreeMap<u64, f64>,
    /// `BUFFER_SIZE`, MB (2^20 bytes) per switch.
    pub buffer_size_mb: u64,
    /// `USE_DYNAMIC_PFC_THRESHOLD`.
    pub dynamic_pfc_threshold: bool,
    /// `PACKET_PAYLOAD_SIZE`, bytes.
    pub packet_payload_size: u32,
    /// `ACK_HIGH_PRIO`: ACKs on the highest priority.
    pub ack_high_prio: bool,
    /// `ERROR_RATE_PER_LINK`: packet loss probability of every link.
    pub error_rate_per_link: f64,
    /// `LINK_DOWN` (absent when its time is 0, as the simulator treats it).
    pub link_down: Option<LinkDown>,
    /// Keys given that change nothing in our model, each once, in file order.
    pub ignored: Vec<String>,
}

impl Default for HpccConfig {
    fn default() -> Self {
        HpccConfig {
            topology_file: None,
            flow_file: None,
            fct_output_file: "fct.txt".into(),
            pfc_output_file: "pfc.txt".into(),
            stop_time_s: 3.01,
            cc_mode: CcMode::Dcqcn,
            enable_qcn: true,
            clamp_target_rate: false,
            rate_ai_bps: None,
            rate_hai_bps: None,
            min_rate_bps: 100_000_000,
            dctcp_rate_ai_bps: 1_000_000_000,
            rp_timer_us: None,
            ewma_gain: 1.0 / 16.0,
            alpha_resume_interval_us: 55.0,
            rate_decrease_interval_us: 4.0,
            fast_recovery_times: 5,
            u_target: 0.95,
            has_win: true,
            kmax_kb: BTreeMap::new(),
            kmin_kb: BTreeMap::new(),
            pmax: BTreeMap::new(),
            buffer_size_mb: 16,
            dynamic_pfc_threshold: true,
            packet_payload_size: 1000,
            ack_high_prio: false,
            error_rate_per_link: 0.0,
            link_down: None,
            ignored: Vec::new(),
        }
    }
}

fn flag(t: &str) -> Option<bool> {
    t.parse::<u32>().ok().map(|v| v != 0)
}

impl HpccConfig {
    /// Parses the config text of the file named `file`.
    pub fn parse(file: &str, text: &str) -> Result<HpccConfig, HpccError> {
        let mut c = HpccConfig::default();
        let mut t = Tokens::new(file, text);
        while let Some((line, key)) = t.next() {
            let rate = |t: &mut Tokens| t.value("a data rate (e.g. 100Gb/s)", parse_rate);
            match key {
                "TOPOLOGY_FILE" => c.topology_file = Some(t.value("a path", path)?.1),
                "FLOW_FILE" => c.flow_file = Some(t.value("a path", path)?.1),
                "FCT_OUTPUT_FILE" => c.fct_output_file = t.value("a path", path)?.1,
                "PFC_OUTPUT_FILE" => c.pfc_output_file = t.value("a path", path)?.1,
                "SIMULATOR_STOP_TIME" => c.stop_time_s = t.num("a time in seconds")?,
                "CC_MODE" => c.cc_mode = CcMode::from_number(t.num("a CC_MODE number")?),
                "ENABLE_QCN" => c.enable_qcn = t.value("0 or 1", flag)?.1,
                "CLAMP_TARGET_RATE" => c.clamp_target_rate = t.value("0 or 1", flag)?.1,
                "RATE_AI" => c.rate_ai_bps = Some(rate(&mut t)?.1),
                "RATE_HAI" => c.rate_hai_bps = Some(rate(&mut t)?.1),
                "MIN_RATE" => c.min_rate_bps = rate(&mut t)?.1,
                "DCTCP_RATE_AI" => c.dctcp_rate_ai_bps = rate(&mut t)?.1,
                "RP_TIMER" => c.rp_timer_us = Some(t.num("a time in µs")?),
                "EWMA_GAIN" => c.ewma_gain = t.num("a gain")?,
                "ALPHA_RESUME_INTERVAL" => c.alpha_resume_interval_us = t.num("a time in µs")?,
                "RATE_DECREASE_INTERVAL" => c.rate_decrease_interval_us = t.num("a time in µs")?,
                "FAST_RECOVERY_TIMES" => c.fast_recovery_times = t.num("a count")?,
                "U_TARGET" => c.u_target = t.num("a utilisation (0..1)")?,
                "HAS_WIN" => c.has_win = t.value("0 or 1", flag)?.1,
                "KMAX_MAP" => c.kmax_kb = rate_map(&mut t, "Kmax in KB")?,
                "KMIN_MAP" => c.kmin_kb = rate_map(&mut t, "Kmin in KB")?,
                "PMAX_MAP" => c.pmax = rate_map(&mut t, "a probability")?,
                "BUFFER_SIZE" => c.buffer_size_mb = t.num("a size in MB")?,
                "USE_DYNAMIC_PFC_THRESHOLD" => c.dynamic_pfc_threshold = t.value("0 or 1", flag)?.1,
                "PACKET_PAYLOAD_SIZE" => c.packet_payload_size = t.num("a size in bytes")?,
                "ACK_HIGH_PRIO" => c.ack_high_prio = t.value("0 or 1", flag)?.1,
                "ERROR_RATE_PER_LINK" => c.error_rate_per_link = t.num("a probability")?,
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
                k => return Err(t.error(line, format!("unknown key {k:?}"))),
            }
        }
        if !(c.stop_time_s.is_finite() && c.stop_time_s > 0.0) {
            return Err(t.error(t.line(), "SIMULATOR_STOP_TIME must be positive"));
        }
        if c.packet_payload_size == 0 {
            return Err(t.error(t.line(), "PACKET_PAYLOAD_SIZE must be positive"));
        }
        Ok(c)
    }

    /// ECN thresholds for a link of `rate_bps`: (Kmin bytes, Kmax bytes, Pmax), when all three
    /// maps have the rate (the simulator asserts they do for every switch port).
    pub fn ecn_for(&self, rate_bps: u64) -> Option<(u64, u64, f64)> {
        Some((
            self.kmin_kb.get(&rate_bps)? * 1000,
            self.kmax_kb.get(&rate_bps)? * 1000,
            *self.pmax.get(&rate_bps)?,
        ))
    }
}

fn path(t: &str) -> Option<PathBuf> {
    Some(PathBuf::from(t))
}

/// `N rate value rate value ...` as the *_MAP keys write it.
fn rate_map<V: std::str::FromStr>(
    t: &mut Tokens,
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
                "L2_CHUNK_SIZE",
                "L2_ACK_INTERVAL",
                "L2_BACK_TO_ZERO",
                "GLOBAL_T",
                "VAR_WIN",
                "FAST_REACT",
                "MI_THRESH",
                "INT_MULTI",
                "MULTI_RATE",
                "SAMPLE_FEEDBACK",
                "PINT_LOG_BASE",
                "PINT_PROB",
                "RATE_BOUND",
                "ENABLE_TRACE",
                "QLEN_MON_FILE",
                "QLEN_MON_START",
                "QLEN_MON_END",
            ]
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
