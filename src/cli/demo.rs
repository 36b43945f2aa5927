//! `roce demo`: senders and a receiver in one process, each an RC [`Endpoint`] on its own DPDK
//! virtual port, wired through a real-time software switch whose port toward the receiver is a
//! rate-limited bottleneck with RED/ECN marking. WRITE, SEND and READ flows run for a while on a
//! monotonic clock, one thread polling hosts and switch in turn; ECN marks, CNPs and DCQCN rate
//! cuts happen for real, and every message is verified byte for byte.
//!
//! Not here: the switch, payloads and reports ([`roce::report`]); real NICs (see `roce perf`).

use std::path::PathBuf;
use std::sync::Arc;

use std::io::Write;

use anyhow::{bail, Context};
use clap::Args;

use roce::pcap::CaptureWriter;
use roce::report::demo::{HostPause, Series};
use roce::report::text;
use roce::report::text::Files;
use roce_dpdk::clock::{Clock, MonotonicClock};
use roce_dpdk::runtime::{Runtime, RuntimeConfig};
use roce_dpdk::{
    ring_pair, DpdkPort, Eal, EalConfig, Mbuf, Mempool, MempoolConfig, PortConfig, PortSpec,
};
use roce_fabric::rt_switch::{RtSwitch, RtSwitchConfig};
use roce_fabric::EcnConfig;
use roce_fabric::PfcConfig;
use roce_proto::cc::{CcConfig, Rate};
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::port::{FrameBuf, Port};
use roce_proto::size::parse_bytes;
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::Mtu;
use roce_proto::wire::EthernetAddress;

use crate::cli::metrics::MetricsArgs;
use crate::cli::ops::Op;
use crate::cli::output::{write_json, Json};
use crate::cli::progress::{parse_interval, Progress};
use roce::metrics::{Exposition, MetricsHub, Publisher};

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

mod flows;
mod lcores;
mod summary;
use flows::{Eps, Flow};
use summary::{exposition, summarize, with_switch};

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
    ecn: EcnConfig,
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
    let ecn = EcnConfig {
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
    let mut eal_args = format!("--log-level=3 -m 256 {}", args.eal);
    if let Some(ifname) = &tap_if {
        eal_args.push_str(&format!(" --vdev=net_tap0,iface={ifname}"));
    }
    let eal = Eal::init(&EalConfig {
        require_ports: false,
        ..EalConfig::new(eal_args)
    })
    .context("starting DPDK")?;
    let hub = Arc::new(MetricsHub::new());
    let _metrics = args.metrics.start(&eal, &hub)?;
    let mut publisher = Publisher::default();
    let pool = Arc::new(
        Mempool::new(
            &eal,
            &MempoolConfig {
                size: 16383,
                ..MempoolConfig::default()
            },
        )
        .context("creating the mbuf pool")?,
    );
    let port_cfg = PortConfig {
        link_timeout: std::time::Duration::from_secs(2),
        ..PortConfig::default()
    };
    let clock = MonotonicClock::new();
    let bottleneck = Rate::from_bps_f64(args.bottleneck_gbps * 1e9);
    let mut switch = RtSwitch::new(RtSwitchConfig {
        buffer_bytes: args.buffer,
        ecn: Some(plan.ecn),
        seed: args.seed,
    });
    if args.pfc {
        switch = switch.with_pfc(demo_pfc(args.buffer, args.senders));
    }
    let runtime = RuntimeConfig {
        pfc_link_bps: args.pfc.then_some((args.host_gbps * 1e9) as u64),
        ..RuntimeConfig::default()
    };
    let mut hosts = Vec::new();
    for i in 0..=args.senders {
        let (host_id, sw_id) = ring_pair(&eal, &format!("demo{i}"), 1024)
            .with_context(|| format!("creating the ring ports of host {i}"))?;
        let host_port = DpdkPort::new(&eal, host_id, pool.clone(), &port_cfg)?;
        let sw_port = DpdkPort::new(&eal, sw_id, pool.clone(), &port_cfg)?;
        let (name, ip) = if i == 0 {
            ("r".to_owned(), [198, 18, 0, 1])
        } else {
            (format!("s{i}"), [198, 18, 0, 10 + i as u8])
        };
        let m = mac(i as u8 + 1);
        let rate = (i == 0).then_some(bottleneck);
        switch.add_port(sw_port, Some(m), rate);
        let mut cfg = EndpointConfig::ipv4(m, ip.into());
        cfg.udp_port_seed = i as u16;
        cfg.cnp_interval = Duration::from_micros(args.cnp_interval_us);
        hosts.push(Host {
            name,
            ep: Endpoint::new(cfg),
            rt: Runtime::new(host_port, &clock, runtime),
        });
    }
    let mut mirror = match &tap_if {
        Some(_) => {
            let id = eal
                .port_by_name("net_tap0")
                .context("finding the tap port")?;
            let cfg = PortConfig {
                link_timeout: std::time::Duration::ZERO,
                ..PortConfig::default()
            };
            Some(DpdkPort::new(&eal, id, pool.clone(), &cfg).context("starting the tap port")?)
        }
        None => None,
    };
    let cores = args.cores.clone();
    let flows = flows::connect(
        &mut hosts,
        &plan.ops,
        plan.size,
        args.depth,
        plan.mtu,
        &plan.cc,
        args.seed,
        cores.len() > 1,
    )?;
    let mut run = if cores.len() > 1 {
        Run::Lcores(lcores::ShardedHosts::start(
            &eal, &cores, hosts, flows, clock,
        )?)
    } else {
        Run::Inline { hosts, flows }
    };
    let mut progress = Progress::new("roce demo", Some(plan.duration), !args.json, plan.status);

    let mut series = Series::new(SAMPLE_EVERY, 0);
    let mut mirror_out: Vec<Mbuf> = Vec::new();
    let mut mirror_in: Vec<Mbuf> = Vec::new();
    let mut scratch = Vec::new();
    let start = clock.now();
    let end = start + Duration::from(plan.duration);
    let deadline = end + DRAIN_TIMEOUT;
    let mut next_sample = start + SAMPLE_EVERY;
    let mut drained_at = None;
    let mut timed_out = false;
    // Frames the lcores' hosts moved, and when that number last changed.
    let mut lcore_frames = (0u64, start);
    let mut idle_rounds = 0u32;
    let mut rounds = 0u64;
    loop {
        rounds += 1;
        let now = clock.now();
        let posting = now < end;
        let mut work = 0;
        let mut on_egress = |frame: &[u8]| {
            if let Some(w) = writer.as_mut() {
                let ts = std::time::Duration::from_nanos(clock.now().as_nanos());
                if let Err(e) = w.write_frame(ts, frame) {
                    tracing::warn!(error = %e, "pcap write failed");
                }
            }
            if mirror.is_some() {
                if let Some(mut m) = pool.alloc() {
                    if m.set_frame_len(frame.len()) {
                        m.frame_mut().copy_from_slice(frame);
                        mirror_out.push(m);
                    }
                }
            }
        };
        match &mut run {
            Run::Inline { hosts, flows } => {
                for i in 0..hosts.len() {
                    let Some(h) = hosts.get_mut(i) else { continue };
                    work += h.rt.poll_once(&mut h.ep);
                    flows::drive(i, hosts, flows, posting, &mut scratch, &clock);
                    work += switch.poll(clock.now(), &mut on_egress);
                }
            }
            Run::Lcores(l) => {
                if !posting {
                    l.stop_posting();
                }
                work += switch.poll(clock.now(), &mut on_egress);
            }
        }
        publisher.offer(&hub, || run.exposition(&switch, now));
        if let Some(m) = mirror.as_mut() {
            m.tx_burst(&mut mirror_out);
            mirror_out.clear();
            // Whatever the kernel sends into the mirror (router solicitations...) is dropped.
            let _ = m.rx_burst(&mut mirror_in, 32);
            mirror_in.clear();
        }
        if now >= next_sample && drained_at.is_none() {
            next_sample = now + SAMPLE_EVERY;
            let delivered: Vec<u64> = run
                .flows()
                .iter()
                .map(|f| f.verified * u64::from(plan.size))
                .collect();
            let cc: Vec<(usize, u32, f64, f64)> = (0..delivered.len())
                .filter_map(|i| {
                    let f = run.flow(i)?;
                    let m = run.cc(i);
                    Some((f.sender, f.src_qpn, m.rate.as_gbps_f64(), m.alpha))
                })
                .collect();
            series.sample(
                now.saturating_since(start).as_nanos(),
                &delivered,
                switch.queue_bytes(0),
                &cc,
            );
        }
        if drained_at.is_none() {
            let elapsed = now.saturating_since(start);
            progress.update(elapsed.into(), || {
                status_line(&mut run, &switch, &series, plan.size)
            });
        }
        let finished = run.finished();
        if !posting && finished && drained_at.is_none() {
            drained_at = Some(now);
        }
        if drained_at.is_some() {
            // Let CNPs and ACKs still in flight land before reading counters (on lcores they
            // may be in flight while the switch is idle: only the time counts there).
            idle_rounds = if work == 0 { idle_rounds + 1 } else { 0 };
            let settled =
                drained_at.is_some_and(|t| now.saturating_since(t) > Duration::from_millis(200));
            let quiet = match &run {
                Run::Inline { .. } => true,
                Run::Lcores(l) => {
                    let frames = l.frames();
                    if frames != lcore_frames.0 {
                        lcore_frames = (frames, now);
                    }
                    idle_rounds >= 1000
                        && now.saturating_since(lcore_frames.1) > Duration::from_millis(50)
                }
            };
            if (idle_rounds >= 1000 && matches!(run, Run::Inline { .. }))
                || (settled && quiet)
                || now > deadline + DRAIN_TIMEOUT
            {
                break;
            }
        } else if now > deadline {
            timed_out = true;
            break;
        }
    }
    progress.finish();
    let pauses = run.pauses(clock.now());
    let (hosts, mut flows) = run.finish()?;
    if timed_out {
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
    hub.publish(u64::MAX, exposition(&eps, &switch, clock.now()));
    let traffic_end = drained_at.unwrap_or_else(|| clock.now());
    tracing::debug!(rounds, "polling rounds");
    if let Some(w) = writer.take() {
        w.finish().context("finishing the pcap file")?;
    }

    let mut summary = summarize(
        &args,
        &plan,
        &eps,
        &flows,
        &switch,
        &series,
        (start, traffic_end),
    );
    summary.host_pauses = pauses;
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
        write_json(out, &summary, Json::Pretty)?;
    } else {
        let files = Files {
            pcap: args.pcap.clone(),
            out: args.out.clone(),
        };
        text::print(out, &summary, &series, &files)?;
        if args.stats {
            crate::cli::stats::print_report(out, &summary.stats, false, false)?;
        }
    }
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
    drop(mirror);
    drop(eps);
    drop(hosts);
    Ok(())
}

/// The hosts and flows, driven by the main thread or on lcores.
enum Run<'c> {
    /// One thread polls every host and runs the application after each.
    Inline {
        hosts: Vec<Host<'c>>,
        flows: Vec<Flow>,
    },
    /// Each host on an lcore, the application as in-lcore tasks.
    Lcores(lcores::ShardedHosts),
}

impl Run<'_> {
    /// The flows with their progress now.
    fn flows(&mut self) -> &[Flow] {
        match self {
            Run::Inline { flows, .. } => flows,
            Run::Lcores(l) => l.flows(),
        }
    }

    /// Flow `i` (as of the last [`Run::flows`]).
    fn flow(&self, i: usize) -> Option<&Flow> {
        match self {
            Run::Inline { flows, .. } => flows.get(i),
            Run::Lcores(l) => l.flow(i),
        }
    }

    /// The controller of flow `i`'s sending QP now.
    fn cc(&self, i: usize) -> roce_proto::cc::CcMetrics {
        match self {
            Run::Inline { hosts, flows } => flows
                .get(i)
                .map(|f| flows::cc_metrics(&views(hosts), f))
                .unwrap_or_default(),
            Run::Lcores(l) => l.cc(i),
        }
    }

    /// Every flow has nothing outstanding (and, on lcores, every WRITE is verified).
    fn finished(&mut self) -> bool {
        let on_lcores = matches!(self, Run::Lcores(_));
        self.flows()
            .iter()
            .all(|f| f.finished() && (!on_lcores || f.op != Op::Write || f.verified >= f.completed))
    }

    /// CNPs sent so far.
    fn cnps(&self) -> u64 {
        match self {
            Run::Inline { hosts, .. } => hosts.iter().map(|h| h.ep.counters().cnps_sent).sum(),
            Run::Lcores(l) => l.cnps(),
        }
    }

    /// The counters now, for the metrics.
    fn exposition(&self, switch: &RtSwitch<DpdkPort>, now: Instant) -> Exposition {
        match self {
            Run::Inline { hosts, .. } => exposition(&views(hosts), switch, now),
            Run::Lcores(l) => with_switch(l.ports(), None, switch),
        }
    }

    /// What PFC did to each host's transmitter up to `now` (hosts on the main thread only).
    fn pauses(&self, now: Instant) -> Vec<HostPause> {
        let Run::Inline { hosts, .. } = self else {
            return Vec::new();
        };
        hosts
            .iter()
            .filter_map(|h| {
                let p = h.rt.pause()?;
                Some(HostPause {
                    host: h.name.clone(),
                    rx_prio3_pause: p.frames(LOSSLESS),
                    rx_prio3_pause_duration_us: p.paused(LOSSLESS, now).as_nanos() / 1_000,
                    tx_pause_holds: h.rt.counters().tx_pause_holds,
                })
            })
            .collect()
    }

    /// The hosts' names and endpoints, and the flows, once traffic is over.
    fn finish(self) -> anyhow::Result<flows::Ended> {
        match self {
            Run::Inline { hosts, flows } => {
                Ok((hosts.into_iter().map(|h| (h.name, h.ep)).collect(), flows))
            }
            Run::Lcores(l) => l.finish(),
        }
    }
}

/// The status line: time is prefixed by [`Progress`]; goodput so far over all flows, marks, CNPs,
/// the lowest congestion-control rate now and the bottleneck queue.
fn status_line(run: &mut Run, switch: &RtSwitch<DpdkPort>, series: &Series, size: u32) -> String {
    let cnps = run.cnps();
    let rate = (0..run.flows().len())
        .map(|i| run.cc(i).rate.as_gbps_f64())
        .fold(f64::INFINITY, f64::min);
    let flows = run.flows();
    let bytes: u64 = flows.iter().map(|f| f.verified * u64::from(size)).sum();
    let msgs: u64 = flows.iter().map(|f| f.verified).sum();
    let secs = series.rec.rows.last().map_or(0.0, |r| r.t_ns as f64 / 1e9);
    format!(
        "{:.3} Gbit/s, ecn_marked {}, np_cnp_sent {cnps}, cc rate min {:.3} Gbit/s, queue {:.1} KB, {msgs} msgs verified",
        if secs > 0.0 { bytes as f64 * 8.0 / secs / 1e9 } else { 0.0 },
        switch.counters().ecn_marked,
        if rate.is_finite() { rate } else { 0.0 },
        switch.queue_bytes(0) as f64 / 1e3
    )
}
