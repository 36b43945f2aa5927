//! An HPCC simulator experiment as one of our scenarios: its config file's topology and flow
//! files, stop time, controller (`CC_MODE` and its parameters mapped onto ours), ECN
//! thresholds and buffer, run through the real RC endpoints; and its FCT file written back
//! with the standalone FCT its `third.cc` computes, and its PFC file.
//!
//! Where our model differs, [`HpccRun::not_modelled`] says so (the CLI lists it once).

use std::path::{Path, PathBuf};

use roce_proto::cc::DcqcnParams;
use roce_proto::time::Duration;

use crate::experiment::scenario::{LinkEvent, Scenario, SwitchSpec, TopologySpec};
use crate::experiment::summary::RunSummary;
use crate::flows::workload::Workload;
use crate::hpcc::config::{CcMode, HpccConfig};
use crate::hpcc::fct_file::{self, node_ip, standalone_fct_ns, FctRecord, FIRST_SPORT};
use crate::hpcc::flow_file::{self, FlowLine};
use crate::hpcc::pfc_file::{self, PfcRecord};
use crate::hpcc::topology_file::TopologyFile;
use crate::hpcc::HpccError;
use crate::limits::bounds::Limits;
use crate::switching::switch::{DynamicPfc, EcnThresholds, MarkPoint, PfcConfig, RateEcn};
use crate::PfcEvent;

/// Why a config cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum HpccRunError {
    /// A file does not read or parse.
    #[error(transparent)]
    File(#[from] HpccError),
    /// An output file could not be written.
    #[error("writing {file}: {source}")]
    Write {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// The config asks for something we do not model.
    #[error("{file}: {msg}")]
    Unsupported {
        /// The config file.
        file: String,
        /// What.
        msg: String,
    },
}

/// Payload sizes the RC transport can use (InfiniBand path MTUs).
const IB_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// A config file ready to run.
#[derive(Debug)]
pub struct HpccRun {
    /// The scenario that runs it.
    pub scenario: Scenario,
    /// The config.
    pub config: HpccConfig,
    /// Its topology file.
    pub topology: TopologyFile,
    /// Its flow file (flow `i` of the summary is its line `i`), read a flow at a time when
    /// the run is built and again when its FCT file is written: never held whole.
    pub flow_path: PathBuf,
    /// Where the FCT file goes.
    pub fct_output: PathBuf,
    /// Where the PFC file goes.
    pub pfc_output: PathBuf,
    /// Keys that do change the simulator's model but not ours, with why.
    pub not_modelled: Vec<String>,
}

/// `path` as the simulator (run from its `simulation/` directory) would find it: as given if
/// it exists, else next to the config, else next to the config's directory.
fn resolve(config: &Path, path: &Path) -> PathBuf {
    let dir = config.parent().unwrap_or(Path::new("."));
    [
        path.to_path_buf(),
        dir.join(path),
        dir.parent().unwrap_or(dir).join(path),
    ]
    .into_iter()
    .find(|p| p.exists())
    .unwrap_or_else(|| path.to_path_buf())
}

impl HpccRun {
    /// Reads the config at `path` and the files it names.
    pub fn load(path: &Path) -> Result<HpccRun, HpccRunError> {
        Self::load_within(path, &Limits::default())
    }

    /// Reads the config at `path` and the files it names, each within its bounds (see
    /// [`crate::limits::bounds`]), no more flows than `limits` allow.
    pub fn load_within(path: &Path, limits: &Limits) -> Result<HpccRun, HpccRunError> {
        let name = path.display().to_string();
        let config = HpccConfig::load(path)?;
        let unsupported = |msg: String| HpccRunError::Unsupported {
            file: name.clone(),
            msg,
        };
        let (Some(topo), Some(flow)) = (&config.topology_file, &config.flow_file) else {
            return Err(unsupported("needs TOPOLOGY_FILE and FLOW_FILE".into()));
        };
        let topo_path = resolve(path, topo);
        let flow_path = resolve(path, flow);
        let topology = TopologyFile::load(&topo_path)?;
        // Read through once, a flow at a time, so a malformed or unordered file is refused
        // before anything is built; the flows are read again when the run is built.
        for flow in flow_file::FlowReader::open(&flow_path, limits)? {
            flow?;
        }
        // The output files go where the inputs were found (the simulator's working directory).
        let base = topo_path
            .to_string_lossy()
            .strip_suffix(&*topo.to_string_lossy())
            .map(PathBuf::from)
            .unwrap_or_default();
        let fct_output = base.join(&config.fct_output_file);
        let pfc_output = base.join(&config.pfc_output_file);

        let nic = topology
            .nic_rate_bps()
            .ok_or_else(|| unsupported("the topology has no host link".into()))?;
        let mtu = IB_MTUS
            .into_iter()
            .find(|&m| m >= config.packet_payload_size)
            .ok_or_else(|| {
                unsupported(format!(
                    "PACKET_PAYLOAD_SIZE {} is above the largest RoCE MTU 4096",
                    config.packet_payload_size
                ))
            })?;
        let (cc, cc_params) =
            controller(&config, &topology).map_err(|e| unsupported(e.to_string()))?;
        let (switch, notes) = switch_spec(&config, &topology, nic);
        let mut link_events = Vec::new();
        if let Some(d) = config.link_down {
            let node = |id: usize| match topology.is_switch.get(id) {
                Some(true) => format!("sw{id}"),
                _ => format!("n{id}"),
            };
            link_events.push(LinkEvent {
                a: node(d.a),
                b: node(d.b),
                at_us: 2e6 + d.after_us as f64,
                up: false,
            });
        }
        let scenario = Scenario {
            name: path
                .file_stem()
                .map_or("hpcc".into(), |s| s.to_string_lossy().into_owned()),
            seed: 0,
            duration_us: (config.stop_time_s * 1e6).round(),
            warmup_us: Some(0.0),
            // Flows start at 2 s in the simulator's files: sample sparsely.
            sample_us: 1000.0,
            cc,
            engine: Default::default(),
            cc_params,
            mtu: mtu as usize,
            message_bytes: 1 << 20,
            // The ns-3 model echoes ECN on every ACK and its reaction point cuts at most once per
            // RATE_DECREASE_INTERVAL: the controller's own CNP interval is the closest match.
            cnp_interval_us: None,
            topology: TopologySpec::HpccFile {
                path: topo_path,
                loss: config.error_rate_per_link,
            },
            switch,
            workloads: vec![Workload::FlowFile {
                path: flow_path.clone(),
            }],
            link_events,
            failures: Vec::new(),
            routing: Default::default(),
            bin_us: None,
            monitor_host: None,
            spray: None,
            recovery: Default::default(),
            reorder_window_us: 0.0,
            controllers: Default::default(),
        };
        let mut not_modelled = notes;
        let mut note = |key: &str, why: &str| not_modelled.push(format!("{key}: {why}"));
        if config.packet_payload_size != mtu {
            note(
                "PACKET_PAYLOAD_SIZE",
                &format!(
                    "{} B packets become {mtu} B (a RoCE path MTU); the standalone FCT keeps {}",
                    config.packet_payload_size, config.packet_payload_size
                ),
            );
        }
        if config.has_win && !config.global_t {
            note(
                "GLOBAL_T",
                "0: every flow's window is the largest pair's BDP, not its own pair's",
            );
        }
        if config.ack_high_prio {
            note(
                "ACK_HIGH_PRIO",
                "1 lets the simulator's hosts send ACKs past a PFC pause of the data's class (its \
                 switches never prioritize ACKs); here ACKs share the data's class everywhere, \
                 which matters only while PFC pauses a host",
            );
        }
        for n in transport_notes(&config) {
            not_modelled.push(n);
        }
        Ok(HpccRun {
            scenario,
            config,
            topology,
            flow_path,
            fct_output,
            pfc_output,
            not_modelled,
        })
    }

    /// The PFC file's lines for the PFC frames the ports of a run's fabric received.
    pub fn pfc_records(&self, events: &[PfcEvent]) -> Vec<PfcRecord> {
        pfc_file::records(&self.topology, events)
    }

    /// The FCT file's lines for the finished flows of `summary` (see
    /// [`HpccRun::for_each_fct`]), collected.
    pub fn fct_records(&self, summary: &RunSummary) -> Result<Vec<FctRecord>, HpccError> {
        let mut out = Vec::new();
        self.for_each_fct(summary, |r| {
            out.push(r);
            Ok(())
        })
        .map_err(|e| match e {
            HpccRunError::File(e) => e,
            other => HpccError::Malformed {
                file: self.flow_path.display().to_string(),
                line: 0,
                msg: other.to_string(),
            },
        })?;
        Ok(out)
    }

    /// Writes the FCT file of `summary` to `out`, a line at a time as the flow file is read
    /// again (neither file is held whole); returns the lines written.
    pub fn write_fct(
        &self,
        summary: &RunSummary,
        out: &mut impl std::io::Write,
    ) -> Result<u64, HpccRunError> {
        let mut n = 0;
        self.for_each_fct(summary, |r| {
            n += 1;
            fct_file::write_record(out, &r)
        })?;
        out.flush().map_err(|source| HpccRunError::Write {
            file: self.fct_output.display().to_string(),
            source,
        })?;
        Ok(n)
    }

    /// Hands `sink` the FCT file's line of each finished flow of `summary`, in flow order, as
    /// `third.cc`'s `qp_finish` writes them: node addresses, source ports from 10000 per host
    /// in flow order, standalone FCT from its paths with `PACKET_PAYLOAD_SIZE` packets. The
    /// flow file is read again, a flow at a time.
    pub fn for_each_fct(
        &self,
        summary: &RunSummary,
        mut sink: impl FnMut(FctRecord) -> std::io::Result<()>,
    ) -> Result<(), HpccRunError> {
        let payload = self.config.packet_payload_size;
        let mut ports = std::collections::HashMap::new();
        let mut paths = std::collections::HashMap::new();
        let flows = flow_file::FlowReader::open(&self.flow_path, &Limits::default())?;
        for (f, r) in flows.zip(&summary.flows) {
            let f: FlowLine = f?;
            let sport = {
                let p = ports.entry(f.src).or_insert(FIRST_SPORT);
                let s = *p;
                *p = p.wrapping_add(1);
                s
            };
            let Some(fct_us) = r.completion_us else {
                continue;
            };
            let to_dst = paths
                .entry(f.dst)
                .or_insert_with(|| self.topology.paths_from(f.dst, payload));
            let Some(path) = to_dst.get(f.src).copied().flatten() else {
                continue;
            };
            let record = FctRecord {
                sip: node_ip(f.src),
                dip: node_ip(f.dst),
                sport,
                dport: f.dport,
                size: f.size,
                start_ns: f.start_ns(),
                fct_ns: Duration::from_micros_f64_rounded(fct_us).as_nanos(),
                standalone_ns: standalone_fct_ns(f.size, payload, path.base_rtt_ns(), path.bw_bps),
            };
            sink(record).map_err(|source| HpccRunError::Write {
                file: self.fct_output.display().to_string(),
                source,
            })?;
        }
        Ok(())
    }
}

/// The switches of the config as `third.cc` and its `SwitchMmu` set them up, and what differs.
///
/// - PFC: the simulator's switches always take dynamic thresholds (`SwitchMmu::
///   GetPfcThreshold`; `USE_DYNAMIC_PFC_THRESHOLD` only sets a `QbbNetDevice` attribute nothing
///   reads): alpha 1/8 (shift 3) for ports at the NIC rate, doubled per doubling of a port's
///   rate, resume 3 KiB below the threshold. Headroom is `rate * delay * 3 / 8` per port
///   there; ours is one figure for every port, so it takes the largest (no lossless drop that
///   the simulator would not have) and sets aside that much for each port.
/// - ECN: each port marks with its rate's `KMIN_MAP`/`KMAX_MAP`/`PMAX_MAP` entry (Kmin/Kmax in
///   KB of 1000 bytes), at dequeue from the depth the packet leaves behind, as
///   `SwitchNode::SwitchNotifyDequeue` does.
fn switch_spec(c: &HpccConfig, topo: &TopologyFile, nic: u64) -> (SwitchSpec, Vec<String>) {
    let mut notes = Vec::new();
    let ecn_at = |rate| {
        c.ecn_for(rate).map(|(kmin, kmax, pmax)| EcnThresholds {
            kmin_bytes: kmin,
            kmax_bytes: kmax,
            pmax,
            step_bytes: None,
        })
    };
    let mut rates: Vec<u64> = topo.links.iter().map(|l| l.rate_bps).collect();
    rates.sort_unstable();
    rates.dedup();
    let mut ecn_by_rate = Vec::new();
    if c.enable_qcn {
        for &rate in &rates {
            match ecn_at(rate) {
                Some(ecn) => ecn_by_rate.push(RateEcn {
                    gbps: rate as f64 / 1e9,
                    ecn,
                }),
                None => notes.push(format!(
                    "KMIN_MAP/KMAX_MAP/PMAX_MAP: no entry for {} Gbit/s (the simulator asserts \
                     one per port rate): those ports mark with the host-link entry",
                    rate / 1_000_000_000
                )),
            }
        }
    }
    let headroom = topo
        .links
        .iter()
        .map(|l| l.rate_bps.saturating_mul(l.delay_ns) / 8 / 1_000_000_000 * 3)
        .max()
        .unwrap_or(0);
    if !c.dynamic_pfc_threshold {
        notes.push(
            "USE_DYNAMIC_PFC_THRESHOLD: 0 changes nothing in the simulator's switches (its \
             SwitchMmu always computes dynamic thresholds), nor here"
                .into(),
        );
    }
    let spec = SwitchSpec {
        buffer_bytes: c.buffer_size_mb * 1024 * 1024,
        pfc_thresholds: Some(PfcConfig {
            headroom_bytes: headroom,
            dynamic: Some(DynamicPfc {
                nic_bps: nic,
                ..DynamicPfc::default()
            }),
            ..PfcConfig::default()
        }),
        ecn: ecn_at(nic).filter(|_| c.enable_qcn),
        ecn_by_rate,
        ecn_at: MarkPoint::Dequeue,
        ..SwitchSpec::default()
    };
    (spec, notes)
}

/// Why the config's controller cannot run here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
enum ControllerError {
    /// HPCC-PINT (10).
    #[error("CC_MODE 10 (HPCC-PINT) is not implemented here")]
    Pint,
    /// Any mode but 1, 3, 7, 8 and 10.
    #[error("CC_MODE {0} is not one of 1, 3, 7, 8")]
    Other(u32),
    /// An `INT_MULTI` that the INT records' one-byte units field cannot carry.
    #[error(
        "INT_MULTI {0} is not a units multiplier from 1 to 255 (the INT record's units field is \
         one byte)"
    )]
    IntMulti(u32),
}

/// What the config asks of the simulator's transport that ours does differently (keys whose
/// values in run.py's configs are what we model, named when they are not).
fn transport_notes(c: &HpccConfig) -> Vec<String> {
    let mut notes = Vec::new();
    // The simulator's receiver resets its ACK milestone to the interval on every packet
    // (rdma-hw.cc ReceiveUdp), so it ACKs every packet once a flow's first L2_ACK_INTERVAL
    // bytes are in; with at most one packet's payload that is every packet, as here.
    if c.l2_ack_interval > c.packet_payload_size {
        notes.push(format!(
            "L2_ACK_INTERVAL: {n} (the simulator ACKs no packet within a flow's first {n} \
             bytes, then every packet); here ACKs start with the first packet",
            n = c.l2_ack_interval,
        ));
    }
    if c.l2_back_to_zero {
        notes.push(
            "L2_BACK_TO_ZERO: 1 (ACKs and retransmissions go back to an L2_CHUNK_SIZE boundary); \
             here a NAK or timeout goes back to the first unacknowledged packet"
                .into(),
        );
    }
    if !c.rate_bound {
        notes.push(
            "RATE_BOUND: 0 (the simulator paces every flow at the line rate, only its window \
             bounding it); here flows pace at their controller's rate"
                .into(),
        );
    }
    if c.pause_time <= 0.0 {
        notes.push(
            "PAUSE_TIME: 0 makes the simulator's PFC pauses resume at once (no PFC); here \
             pauses hold until their resume"
                .into(),
        );
    }
    notes
}

/// Our controller and its parameters for the config's `CC_MODE`.
fn controller(
    c: &HpccConfig,
    topo: &TopologyFile,
) -> Result<(String, Vec<String>), ControllerError> {
    let mbps = |bps: u64| (bps / 1_000_000).max(1);
    // The largest base RTT between hosts (third.cc's maxRtt): HPCC's T, and the RTT of the
    // window's BDP (maxBdp) under `GLOBAL_T 1`. A path search from every host, so made once
    // and only when one of those asks for it.
    let max_rtt_cell = std::cell::OnceCell::new();
    let max_rtt = || {
        *max_rtt_cell.get_or_init(|| {
            let hosts = topo.hosts();
            hosts
                .iter()
                .flat_map(|&h| {
                    let paths = topo.paths_from(h, c.packet_payload_size);
                    hosts
                        .iter()
                        .filter_map(move |&o| paths.get(o).copied().flatten())
                        .map(|p| p.base_rtt_ns())
                        .collect::<Vec<_>>()
                })
                .max()
                .unwrap_or(10_000)
        })
    };
    let mut p = Vec::new();
    let name = match c.cc_mode {
        CcMode::Dcqcn => {
            // run.py's "dcqcn_paper" resumes alpha every 50 us and raises every 55 us; its
            // "dcqcn" (the NIC's settings) every 1 and 300 us.
            let paper = c.alpha_resume_interval_us >= 50.0;
            // Its RATE_AI/RATE_HAI are already per link rate (run.py scales them), so they are
            // set explicitly, which dcqcn-paper's rescaling leaves as given; without them the
            // preset's own steps apply unscaled.
            let preset = if paper {
                DcqcnParams::paper()
            } else {
                DcqcnParams::mlx()
            };
            let ai = c.rate_ai_bps.map_or(u64::from(preset.rpg_ai_rate), mbps);
            let hai = c.rate_hai_bps.map_or(u64::from(preset.rpg_hai_rate), mbps);
            p.push(format!("rpg_ai_rate={ai}"));
            p.push(format!("rpg_hai_rate={hai}"));
            if let Some(t) = c.rp_timer_us {
                p.push(format!("rpg_time_reset={}", t.round() as u64));
            }
            p.push(format!("rpg_min_rate={}", mbps(c.min_rate_bps)));
            p.push(format!("clamp_tgt_rate={}", c.clamp_target_rate));
            p.push(format!("rpg_threshold={}", c.fast_recovery_times));
            p.push(format!(
                "dce_tcp_rtt={}",
                c.alpha_resume_interval_us.round() as u64
            ));
            p.push(format!(
                "rate_reduce_monitor_period={}",
                c.rate_decrease_interval_us.round() as u64
            ));
            // ns-3: alpha = (1 - g) alpha + g; ours keeps G/1024 of the old alpha.
            p.push(format!(
                "dce_tcp_g={}",
                ((1.0 - c.ewma_gain) * 1024.0).round() as u64
            ));
            // The simulator's DCQCN raises rates on its timer only.
            p.push("rpg_byte_reset=0".into());
            // Its rate increase has no QCN target reset.
            p.push("target_reset=0".into());
            if paper {
                "dcqcn-paper"
            } else {
                "dcqcn-mlx"
            }
        }
        CcMode::Hpcc => {
            p.push(format!("eta={}", c.u_target));
            if let Some(ai) = c.rate_ai_bps {
                p.push(format!("w_ai={}", mbps(ai)));
            }
            p.push(format!("min_rate={}", mbps(c.min_rate_bps)));
            // HPCC's T is the largest base RTT between hosts (third.cc's maxRtt), in us.
            p.push(format!("base_rtt={}", max_rtt().max(1) as f64 / 1e3));
            p.push(format!("max_stage={}", c.mi_thresh));
            p.push(format!("fast_react={}", u8::from(c.fast_react)));
            p.push(format!("multi_rate={}", u8::from(c.multi_rate)));
            p.push(format!("sample_feedback={}", u8::from(c.sample_feedback)));
            if !(1..=255).contains(&c.int_multi) {
                return Err(ControllerError::IntMulti(c.int_multi));
            }
            p.push(format!("int_multi={}", c.int_multi));
            "hpcc"
        }
        CcMode::Timely => {
            if let Some(ai) = c.rate_ai_bps {
                p.push(format!("add_step={}", mbps(ai)));
            }
            p.push(format!("min_rate={}", mbps(c.min_rate_bps)));
            "timely"
        }
        CcMode::Dctcp => {
            p.push(format!("g={}", c.ewma_gain));
            p.push(format!("rate_ai={}", mbps(c.dctcp_rate_ai_bps)));
            p.push(format!("min_rate={}", mbps(c.min_rate_bps)));
            "dctcp"
        }
        CcMode::HpccPint => return Err(ControllerError::Pint),
        CcMode::Other(n) => return Err(ControllerError::Other(n)),
    };
    // The simulator runs a window under any CC mode when HAS_WIN is on, and none when off
    // (our DCTCP and HPCC have one by default, so off is said explicitly).
    if c.has_win {
        p.push(format!("win_rtt={}", max_rtt()));
        p.push(format!("var_win={}", u8::from(c.var_win)));
    } else {
        p.push("win_rtt=0".into());
    }
    Ok((name.to_owned(), p))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOPO: &str =
        "4 2 3\n2 3\n0 2 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n2 3 400Gbps 1us 0\n";

    /// The mapping, checked to be settings our controller takes.
    fn mapped(config: &str) -> Result<(String, Vec<String>), String> {
        let c = HpccConfig::parse("config.txt", config).map_err(|e| e.to_string())?;
        let t = TopologyFile::parse("topo.txt", TOPO).map_err(|e| e.to_string())?;
        let (name, params) = controller(&c, &t).map_err(|e| e.to_string())?;
        let line = roce_proto::cc::Rate::from_bps(100_000_000_000);
        let mut cc = roce_proto::cc::CcConfig::new(&name, line).unwrap();
        for p in &params {
            cc.apply(p).unwrap_or_else(|e| panic!("{name}: {p}: {e}"));
        }
        Ok((name, params))
    }

    #[test]
    fn transport_keys_we_do_not_model_are_named_only_when_their_value_asks_for_it() {
        let notes = |text: &str| {
            let c = HpccConfig::parse("config.txt", text).unwrap();
            transport_notes(&c)
                .iter()
                .map(|n| n.split(':').next().unwrap_or("").to_owned())
                .collect::<Vec<_>>()
        };
        // run.py's values: ACKs from the first packet, go-back-N, paced, PFC on.
        let run_py = "PACKET_PAYLOAD_SIZE 1000\nL2_ACK_INTERVAL 1\nL2_CHUNK_SIZE 4000\n\
                      L2_BACK_TO_ZERO 0\nRATE_BOUND 1\n";
        assert!(notes(run_py).is_empty());
        assert!(notes("").is_empty());
        assert_eq!(
            notes(
                "PACKET_PAYLOAD_SIZE 1000\nL2_ACK_INTERVAL 4000\nL2_BACK_TO_ZERO 1\n\
                 RATE_BOUND 0\nPAUSE_TIME 0\n"
            ),
            [
                "L2_ACK_INTERVAL",
                "L2_BACK_TO_ZERO",
                "RATE_BOUND",
                "PAUSE_TIME"
            ]
        );
    }

    #[test]
    fn cc_modes_map_to_our_controllers_with_their_parameters() {
        let (name, p) = mapped("CC_MODE 1\nALPHA_RESUME_INTERVAL 50\nRP_TIMER 55\n").unwrap();
        assert_eq!(name, "dcqcn-paper");
        assert!(p.contains(&"rpg_time_reset=55".to_owned()), "{p:?}");
        // HPCC: eta, AI, T = the largest base RTT (3 links: 6 us + 80 + 20 + 80 ns, not
        // rounded), and third.cc's defaults for the keys not given (MI_THRESH 5, FAST_REACT 1,
        // MULTI_RATE 1, SAMPLE_FEEDBACK 0, INT_MULTI 1). HAS_WIN is on by default: a window of
        // the largest BDP (6,180 ns), not scaled.
        let (name, p) = mapped("CC_MODE 3\nU_TARGET 0.9\nRATE_AI 40Mb/s\n").unwrap();
        assert_eq!(name, "hpcc");
        assert_eq!(
            p,
            [
                "eta=0.9",
                "w_ai=40",
                "min_rate=100",
                "base_rtt=6.18",
                "max_stage=5",
                "fast_react=1",
                "multi_rate=1",
                "sample_feedback=0",
                "int_multi=1",
                "win_rtt=6180",
                "var_win=0"
            ]
            .map(String::from)
        );
        // run.py's hp: MI_THRESH 0, FAST_REACT 1, MULTI_RATE 0, SAMPLE_FEEDBACK 0, INT_MULTI 4.
        let (_, p) = mapped(
            "CC_MODE 3\nMI_THRESH 0\nFAST_REACT 1\nMULTI_RATE 0\nSAMPLE_FEEDBACK 0\nINT_MULTI 4\n",
        )
        .unwrap();
        assert_eq!(
            p[2..8],
            [
                "base_rtt=6.18",
                "max_stage=0",
                "fast_react=1",
                "multi_rate=0",
                "sample_feedback=0",
                "int_multi=4"
            ]
            .map(String::from)
        );
        assert_eq!(
            mapped("CC_MODE 3\nINT_MULTI 256\n").unwrap_err(),
            "INT_MULTI 256 is not a units multiplier from 1 to 255 (the INT record's units \
             field is one byte)"
        );
        let (_, p) = mapped("CC_MODE 8\nVAR_WIN 1\n").unwrap();
        assert_eq!(
            p[p.len() - 2..],
            ["win_rtt=6180", "var_win=1"].map(String::from)
        );
        let (_, p) = mapped("CC_MODE 1\nHAS_WIN 0\nVAR_WIN 1\n").unwrap();
        assert_eq!(p.last().map(String::as_str), Some("win_rtt=0"));
        let (name, p) = mapped("CC_MODE 7\nRATE_AI 100Mb/s\n").unwrap();
        assert_eq!((name.as_str(), p[0].as_str()), ("timely", "add_step=100"));
        let (name, p) = mapped("CC_MODE 8\nEWMA_GAIN 0.0625\nDCTCP_RATE_AI 615Mb/s\n").unwrap();
        assert_eq!(name, "dctcp");
        assert_eq!(p[..2], ["g=0.0625", "rate_ai=615"].map(String::from));
        assert_eq!(
            mapped("CC_MODE 10\n").unwrap_err(),
            "CC_MODE 10 (HPCC-PINT) is not implemented here"
        );
        assert_eq!(
            mapped("CC_MODE 2\n").unwrap_err(),
            "CC_MODE 2 is not one of 1, 3, 7, 8"
        );
    }

    #[test]
    fn switches_get_dynamic_pfc_and_ecn_by_port_rate_as_in_third_cc() {
        let maps = "KMAX_MAP 2 100000000000 1600 400000000000 6400\n\
                    KMIN_MAP 2 100000000000 400 400000000000 1600\n\
                    PMAX_MAP 2 100000000000 0.2 400000000000 0.1\nBUFFER_SIZE 32\n";
        let t = TopologyFile::parse("topo.txt", TOPO).unwrap();
        let c = HpccConfig::parse("config.txt", maps).unwrap();
        let (spec, notes) = switch_spec(&c, &t, 100_000_000_000);
        assert_eq!(notes, Vec::<String>::new());
        assert_eq!(spec.buffer_bytes, 32 << 20);
        let ecn = |kmin_bytes, kmax_bytes, pmax| EcnThresholds {
            kmin_bytes,
            kmax_bytes,
            pmax,
            step_bytes: None,
        };
        assert_eq!(spec.ecn, Some(ecn(400_000, 1_600_000, 0.2)));
        assert_eq!(
            spec.ecn_by_rate,
            [
                RateEcn {
                    gbps: 100.0,
                    ecn: ecn(400_000, 1_600_000, 0.2)
                },
                RateEcn {
                    gbps: 400.0,
                    ecn: ecn(1_600_000, 6_400_000, 0.1)
                }
            ]
        );
        assert_eq!(spec.ecn_at, MarkPoint::Dequeue);
        // Headroom: the 400G link's 400 Gbit/s * 1 us * 3 / 8.
        let pfc = spec.pfc_thresholds.unwrap();
        assert_eq!(pfc.headroom_bytes, 150_000);
        assert_eq!(
            pfc.dynamic,
            Some(DynamicPfc {
                shift: 3,
                resume_offset_bytes: 3072,
                nic_bps: 100_000_000_000
            })
        );
        // A rate without an entry, and the flag at 0, are named.
        let c = HpccConfig::parse(
            "config.txt",
            "KMAX_MAP 1 100000000000 1600\nKMIN_MAP 1 100000000000 400\n\
             PMAX_MAP 1 100000000000 0.2\nUSE_DYNAMIC_PFC_THRESHOLD 0\n",
        )
        .unwrap();
        let (spec, notes) = switch_spec(&c, &t, 100_000_000_000);
        assert_eq!(spec.ecn_by_rate.len(), 1);
        assert!(spec.pfc_thresholds.unwrap().dynamic.is_some());
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("no entry for 400 Gbit/s"), "{notes:?}");
        assert!(
            notes[1].starts_with("USE_DYNAMIC_PFC_THRESHOLD"),
            "{notes:?}"
        );
    }
}
