//! `roce demo`: senders and a receiver in one process, each an RC [`Endpoint`] on its own DPDK
//! virtual port, wired through a real-time software switch whose port toward the receiver is a
//! rate-limited bottleneck with RED/ECN marking. WRITE, SEND and READ flows run for a while on a
//! monotonic clock, one thread polling hosts and switch in turn; ECN marks, CNPs and DCQCN rate
//! cuts happen for real, and every message is verified byte for byte.
//!
//! Here: the flags and their checks ([`Plan`]), then the run: the ports, switch and hosts
//! ([`rig`]), the flows ([`flows`]), the polling loop ([`drive`], or [`lcores`] with `--cores`),
//! the summary ([`summary`]). Not here: the switch, payloads and reports ([`roce::report`]);
//! real NICs (see `roce perf`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;

use roce::pcap::CaptureWriter;
use roce::report::demo::{DemoSummary, Series};
use roce::report::text;
use roce::report::text::Files;
use roce_dpdk::clock::{Clock, MonotonicClock};
use roce_dpdk::runtime::Runtime;
use roce_dpdk::{DpdkPort, PortSpec};
use roce_fabric::EcnThresholds;
use roce_fabric::PfcConfig;
use roce_proto::cc::{CcConfig, Rate};
use roce_proto::endpoint::Endpoint;
use roce_proto::size::parse_bytes;
use roce_proto::time::Duration;
use roce_proto::verbs::Mtu;
use roce_proto::wire::EthernetAddress;

use crate::cli::metrics::MetricsArgs;
use crate::cli::ops::Op;
use crate::cli::output::{write_json, Json};
use crate::cli::progress::parse_interval;

/// Options of `roce demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Virtual ports: `ring` (net_ring pairs), or `tap[:IFNAME]` (rings plus a net_tap mirror of
    /// every frame crossing the switch, default interface roce-demo0, for tcpdump).
    #[arg(long, default_value = "ring")]
    port: String,
    /// Sending hosts (one receiver).
    #[arg(long, default_value_t = 2)]
    senders: usize,
    /// Operations: each sender runs one RC QP per operation (write, send, read).
    #[arg(long, default_value = "write,send,read", value_delimiter = ',')]
    ops: Vec<String>,
    /// Congestion control of the sending QPs (see `roce cc list`).
    #[arg(long, default_value = "dcqcn-paper")]
    cc: String,
    /// Congestion-control parameter overrides, `name=value` (see `roce cc show NAME`).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Rate of the switch port toward the receiver, Gbit/s.
    #[arg(long, default_value_t = 1.0)]
    bottleneck_gbps: f64,
    /// Host line rate (where congestion control starts), Gbit/s.
    #[arg(long, default_value_t = 2.0)]
    host_gbps: f64,
    /// How long traffic runs (e.g. 3s, 500ms).
    #[arg(long, default_value = "3s")]
    duration: String,
    /// Message size in bytes (suffixes as everywhere: 16K = 16384, 16KB = 16000, 1MiB).
    #[arg(long, default_value = "16K")]
    size: String,
    /// Messages outstanding per QP.
    #[arg(long, default_value_t = 8)]
    depth: u32,
    /// Path MTU: 256, 512 or 1024 (frames fit the ports' 1500-byte MTU).
    #[arg(long, default_value_t = 1024)]
    mtu: u32,
    /// RED: queue depth (bytes, suffixes as everywhere) below which nothing is marked.
    #[arg(long, default_value = "5KB", value_parser = parse_bytes)]
    kmin: u64,
    /// RED: queue depth (bytes, suffixes as everywhere) at and above which every ECT packet is
    /// marked.
    #[arg(long, default_value = "50KB", value_parser = parse_bytes)]
    kmax: u64,
    /// RED: marking probability at Kmax.
    #[arg(long, default_value_t = 0.2)]
    pmax: f64,
    /// Notification point: at most one CNP per QP per this many microseconds (mlx5
    /// `min_time_between_cnps`).
    #[arg(long, default_value_t = 50)]
    cnp_interval_us: u64,
    /// Shared switch buffer, bytes (suffixes as everywhere; tail drop beyond).
    #[arg(long, default_value = "1MB", value_parser = parse_bytes)]
    buffer: u64,
    /// Lossless RoCE: the switch sends 802.1Qbb PFC pause frames for priority 3 (DSCP 26) when
    /// one ingress port holds a quarter of its share of the buffer, and the hosts' transmitters hold
    /// that priority while paused (counted as `rx_prio3_pause` and `rx_prio3_pause_duration`).
    #[arg(long)]
    pfc: bool,
    /// Seed of payloads and marking decisions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print a machine-readable summary (JSON) instead of the tables.
    #[arg(long)]
    json: bool,
    /// Write every frame crossing the switch to this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Write CSV time series and an SVG plot into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print a one-line status to stderr every this often (e.g. 1s, 500ms), like perftest's
    /// `--run_infinitely` lines; printed also when stderr is not a terminal. Without it a
    /// progress bar shows on a terminal (never with --json).
    #[arg(long, value_name = "INTERVAL")]
    status: Option<String>,
    /// Also print the counters per port and per QP at the end (what `roce stats` shows).
    #[arg(long)]
    stats: bool,
    /// Extra EAL arguments.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    eal: String,
    /// Live metrics options (`--metrics ADDR:PORT`).
    #[command(flatten)]
    metrics: MetricsArgs,
    /// Lcores (a count, or CPUs like 0,2-3): with more than one, each host's endpoint runs on
    /// an lcore of its own (host i on lcore i mod N), the switch on the main thread.
    #[arg(long, alias = "lcores", default_value = "1")]
    cores: roce_dpdk::lcore::Cores,
}

fn parse_size(s: &str) -> anyhow::Result<u32> {
    match parse_bytes(s) {
        Ok(v @ 1..=16_777_216) => Ok(v as u32),
        Ok(_) => bail!("--size `{s}` must be 1 byte to 16M"),
        Err(e) => bail!("--size {e}"),
    }
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration like 3s or 500ms"))?;
    let secs = match unit {
        "s" => v,
        "ms" => v / 1e3,
        "us" => v / 1e6,
        _ => return Err(format!("`{s}`: unit must be s, ms or us")),
    };
    if !(secs > 0.0 && secs <= 600.0) {
        return Err(format!("`{s}` must be more than 0 and at most 600 s"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// The mirror's kernel interface unless `--port tap:IFNAME` names one.
const TAP_IF: &str = "roce-demo0";
/// How long flows may take to finish after posting stops.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// Sampling interval of the time series.
const SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// The lossless priority: RoCE data at DSCP 26.
const LOSSLESS: usize = 3;

/// The demo switch's PFC thresholds. Each port's share of the buffer is split: XOFF at a quarter
/// of it (XON a tenth below), headroom of half of it for what is already in flight when the
/// pause lands (a host's ring burst), so a paused port never overflows its share.
fn demo_pfc(buffer: u64, senders: usize) -> PfcConfig {
    let share = buffer / (senders as u64 + 1);
    PfcConfig {
        xoff_bytes: share / 4,
        xon_bytes: share / 4 * 9 / 10,
        headroom_bytes: share / 2,
        ..PfcConfig::default()
    }
}

/// One host: an endpoint and the loop that drives it over its port.
struct Host<'c> {
    name: String,
    ep: Endpoint,
    rt: Runtime<DpdkPort, &'c MonotonicClock>,
}

mod drive;
mod flows;
mod lcores;
mod rig;
mod summary;
use drive::Run;
use flows::Eps;
use rig::Rig;
use summary::{exposition, summarize};

/// The hosts as the reports read them.
fn views<'a>(hosts: &'a [Host]) -> Vec<Eps<'a>> {
    hosts.iter().map(|h| (h.name.as_str(), &h.ep)).collect()
}

fn mac(i: u8) -> EthernetAddress {
    EthernetAddress([0x02, 0x52, 0x4f, 0x43, 0x45, i])
}

/// The mirror's interface name in tap mode.
fn tap_name(spec: &PortSpec) -> Option<String> {
    match spec {
        PortSpec::Tap(name) => Some(name.clone().unwrap_or_else(|| TAP_IF.into())),
        _ => None,
    }
}

/// The checked options.
struct Plan {
    spec: PortSpec,
    size: u32,
    duration: std::time::Duration,
    ops: Vec<Op>,
    cc: CcConfig,
    mtu: Mtu,
    ecn: EcnThresholds,
    status: Option<std::time::Duration>,
}

fn check(args: &DemoArgs) -> anyhow::Result<Plan> {
    let spec: PortSpec = args
        .port
        .parse()
        .map_err(|e| anyhow::anyhow!("--port: {e}"))?;
    if !matches!(spec, PortSpec::Ring | PortSpec::Tap(_)) {
        bail!("--port {spec}: the demo runs on virtual ports, `ring` or `tap[:IFNAME]`");
    }
    let ops = args
        .ops
        .iter()
        .map(|s| Op::parse_among(s, &[Op::Write, Op::Send, Op::Read]))
        .collect::<anyhow::Result<Vec<_>>>()
        .context("--ops")?;
    if ops.is_empty() {
        bail!("--ops needs at least one operation");
    }
    if !(1..=16).contains(&args.senders) {
        bail!("--senders {} must be in 1..=16", args.senders);
    }
    if args.pfc && args.cores.len() > 1 {
        bail!("--pfc runs the hosts on the main lcore: use it with --cores 1");
    }
    let size = parse_size(&args.size)?;
    let duration = parse_duration(&args.duration).map_err(|e| anyhow::anyhow!("--duration {e}"))?;
    if !(1..=128).contains(&args.depth) {
        bail!("--depth {} must be in 1..=128", args.depth);
    }
    let mtu = Mtu::from_bytes(args.mtu)
        .filter(|m| m.bytes() <= 1024)
        .with_context(|| format!("--mtu {} is not one of 256, 512, 1024", args.mtu))?;
    let finite_pos = |v: f64| v.is_finite() && v > 0.0;
    if !finite_pos(args.bottleneck_gbps) || args.bottleneck_gbps > 400.0 {
        bail!(
            "--bottleneck-gbps {} must be in (0, 400]",
            args.bottleneck_gbps
        );
    }
    if !finite_pos(args.host_gbps) || args.host_gbps > 400.0 {
        bail!("--host-gbps {} must be in (0, 400]", args.host_gbps);
    }
    if !(0.0..=1.0).contains(&args.pmax) || args.kmin >= args.kmax {
        bail!("RED needs --kmin < --kmax and --pmax in [0, 1]");
    }
    if args.buffer < 16 * 1024 {
        bail!(
            "--buffer {} is too small (at least 16384 bytes)",
            args.buffer
        );
    }
    let mut cc = CcConfig::new(&args.cc, Rate::from_bps_f64(args.host_gbps * 1e9))
        .map_err(|e| anyhow::anyhow!("--cc: {e}"))?;
    for s in &args.set {
        cc.apply(s).map_err(|e| anyhow::anyhow!("--set: {e}"))?;
    }
    let ecn = EcnThresholds {
        kmin_bytes: args.kmin,
        kmax_bytes: args.kmax,
        pmax: args.pmax,
        step_bytes: None,
    };
    Ok(Plan {
        spec,
        size,
        duration,
        ops,
        cc,
        mtu,
        ecn,
        status: args
            .status
            .as_deref()
            .map(parse_interval)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--status {e}"))?,
    })
}

/// Runs `roce demo`, the report written to `out`.
pub fn run(args: DemoArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let plan = check(&args)?;
    if let Some(dir) = &args.out {
        // Before the run, not after it: a bad directory costs the user nothing.
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--out {}: cannot create the directory", dir.display()))?;
    }
    let mut writer = match &args.pcap {
        Some(path) => Some(
            CaptureWriter::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?,
        ),
        None => None,
    };
    let tap_if = tap_name(&plan.spec);
    let mut rig = Rig::open(&args, &plan, tap_if.as_deref())?;
    let clock = MonotonicClock::new();
    let mut hosts = rig.hosts(&args, &clock)?;
    if tap_if.is_some() {
        rig.start_mirror()?;
    }
    let on_lcores = args.cores.len() > 1;
    let flows = flows::connect(
        &mut hosts, &plan.ops, plan.size, args.depth, plan.mtu, &plan.cc, args.seed, on_lcores,
    )?;
    let mut run = if on_lcores {
        Run::Lcores(lcores::ShardedHosts::start(
            &rig.eal,
            &args.cores,
            hosts,
            flows,
            clock,
        )?)
    } else {
        Run::Inline { hosts, flows }
    };
    let driven = drive::drive(&mut rig, &mut run, &clock, &mut writer, &plan, !args.json);
    let pauses = run.pauses(clock.now());
    let (hosts, mut flows) = run.finish()?;
    if driven.timed_out {
        for f in flows.iter_mut() {
            if f.completed < f.posted {
                f.errors.push(format!(
                    "{} of {} messages not completed {} s after the run",
                    f.posted - f.completed,
                    f.posted,
                    DRAIN_TIMEOUT.as_secs_f64()
                ));
            }
        }
    }
    let eps: Vec<Eps> = hosts.iter().map(|(n, ep)| (n.as_str(), ep)).collect();
    rig.hub
        .publish(u64::MAX, exposition(&eps, &rig.switch, clock.now()));
    let traffic_end = driven.drained_at.unwrap_or_else(|| clock.now());
    if let Some(w) = writer.take() {
        w.finish().context("finishing the pcap file")?;
    }
    let mut summary = summarize(
        &args,
        &plan,
        &eps,
        &flows,
        &rig.switch,
        &driven.series,
        (driven.start, traffic_end),
    );
    summary.host_pauses = pauses;
    report(out, &args, &summary, &driven.series)?;
    // The report is out before the metrics linger.
    out.flush()?;
    args.metrics.linger();
    if !summary.verified {
        let why = summary
            .flows
            .iter()
            .find_map(|f| f.errors.first().cloned())
            .unwrap_or_else(|| "transport errors (see counters)".into());
        bail!("verification failed: {why}");
    }
    Ok(())
}

/// The series files in `--out`, then the summary on `out`: JSON, or the tables (with `--stats`,
/// the per-QP counters after them).
fn report(
    out: &mut dyn Write,
    args: &DemoArgs,
    summary: &DemoSummary,
    series: &Series,
) -> anyhow::Result<()> {
    if let Some(dir) = &args.out {
        let names: Vec<String> = summary
            .flows
            .iter()
            .map(|f| format!("flow {} {} {}->{}", f.id, f.op, f.from, f.to))
            .collect();
        series
            .write(dir, &names)
            .map_err(|e| anyhow::anyhow!("--out: {e}"))?;
    }
    if args.json {
        write_json(out, summary, Json::Pretty)?;
    } else {
        let files = Files {
            pcap: args.pcap.clone(),
            out: args.out.clone(),
        };
        text::print(out, summary, series, &files)?;
        if args.stats {
            crate::cli::stats::print_report(out, &summary.stats, false, false)?;
        }
    }
    Ok(())
}
