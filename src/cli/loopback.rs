//! `roce loopback`: two endpoints in one process over an in-memory link or two DPDK net_ring
//! ports (optionally lossy), moving messages with the chosen operations and verifying every
//! destination byte, every completion and every atomic result.
//!
//! Virtual time on both links: the run is deterministic for a given `--seed`.

mod flows;
mod link;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use serde::Serialize;

use roce::stats::StatsReport;
use roce_proto::connect::RcOptions;
use roce_proto::counters::{EndpointCounters, RdmaCounters};
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::fault::{FaultConfig, FaultCounters};
use roce_proto::loopback::{loopback_pair, EndpointPair};
use roce_proto::port::Port;
use roce_proto::psn::Psn;
use roce_proto::qp::RequesterConfig;
use roce_proto::size::parse_bytes_as;
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::Mtu;
use roce_proto::wire::EthernetAddress;

use super::faults::FaultArgs;
use super::ops::Op;
use super::output::{write_json, Json};
use super::recovery::RecoveryArgs;
use flows::{Flow, Schedule, Verified};
use link::{Capture, LinkPort};

/// Options of `roce loopback`. The fault flags say what they do to the link between the two
/// endpoints, and the seed is the injector's alone (the PSNs are `--start-psn`).
#[derive(Args, Debug)]
#[command(
    mut_arg("loss", |a| a.help("Fraction of frames dropped, each direction (0..1)")),
    mut_arg("dup", |a| a.help("Fraction of frames duplicated")),
    mut_arg("reorder", |a| a.help("Fraction of frames held back behind later ones")),
    mut_arg("corrupt", |a| a.help("Fraction of frames with a flipped bit")),
    mut_arg("seed", |a| a.help("Seed of the fault injector").default_value("1")),
)]
pub struct LoopbackArgs {
    /// Link between the endpoints: `memory` (in-process queues) or `ring` (two DPDK net_ring
    /// ports joined back to back).
    #[arg(long, default_value = "memory")]
    port: String,
    /// Extra EAL arguments (with `--port ring`).
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    eal: String,
    /// Operations, cycled message by message: write, read, send, send-imm, write-imm, atomic.
    #[arg(
        long,
        default_value = "write,read,send,send-imm,write-imm,atomic",
        value_delimiter = ','
    )]
    ops: Vec<String>,
    /// Message size in bytes, suffixes as everywhere (4096, 16K, 1M, 5KB; atomics always move 8).
    #[arg(long, default_value = "4096", value_parser = parse_bytes_as::<u32>)]
    size: u32,
    /// Messages per QP (at least 1).
    #[arg(long, default_value_t = 1000)]
    count: u32,
    /// Queue pairs.
    #[arg(long, default_value_t = 1)]
    qps: u32,
    /// Path MTU: 256, 512, 1024, 2048 or 4096.
    #[arg(long, default_value_t = 1024)]
    mtu: u32,
    /// First PSN of every QP (try 16777200 to cross the 24-bit wrap).
    #[arg(long, default_value_t = 0)]
    start_psn: u32,
    /// Fault injection on the link.
    #[command(flatten)]
    faults: FaultArgs,
    /// Loss recovery.
    #[command(flatten)]
    recovery: RecoveryArgs,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Write every frame sent (before faults) to this pcapng file; a frame the fault injector
    /// dropped, duplicated, reordered or corrupted carries a comment saying so (Wireshark:
    /// `frame.comment`; `roce pcap check` prints it).
    #[arg(long)]
    pcap: Option<PathBuf>,
}

#[derive(Serialize)]
struct Summary {
    verified: bool,
    port: String,
    messages: u64,
    bytes_verified: u64,
    virtual_time_us: f64,
    retransmissions: u64,
    naks: u64,
    rnr_naks: u64,
    timeouts: u64,
    faults_a_to_b: FaultCounters,
    faults_b_to_a: FaultCounters,
    errors: Vec<String>,
    counters_a: EndpointCounters,
    counters_b: EndpointCounters,
    /// Both endpoints' counters summed, under the mlx5 / rxe names.
    counters: RdmaCounters,
    /// Per port (`a/1`, `b/1`) and per QP, under the same names (`roce stats` reads it).
    stats: StatsReport,
}

/// Runs `roce loopback`, the summary written to `out`.
pub fn run(args: LoopbackArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let plan = check(&args)?;
    match args.port.as_str() {
        "memory" => {
            let (pa, pb) = loopback_pair(9000, 1 << 16);
            run_on(&args, &plan, pa, pb, out)
        }
        "ring" => run_on_ring(&args, &plan, out),
        other => bail!("--port {other:?} is not one of memory, ring"),
    }
}

#[cfg(not(feature = "dpdk"))]
fn run_on_ring(_: &LoopbackArgs, _: &Plan, _: &mut dyn Write) -> anyhow::Result<()> {
    bail!("--port ring needs DPDK: this roce was built without the `dpdk` feature")
}

/// Two net_ring ports joined back to back in this process, one mbuf pool for both.
#[cfg(feature = "dpdk")]
fn run_on_ring(args: &LoopbackArgs, plan: &Plan, out: &mut dyn Write) -> anyhow::Result<()> {
    use roce_dpdk::PortConfig;
    use roce_dpdk::{ring_pair, DpdkPort, Eal, EalConfig, Mempool, MempoolConfig};
    let eal = Eal::init(&EalConfig {
        require_ports: false,
        ..EalConfig::new(format!("--log-level=3 -m 256 {}", args.eal))
    })
    .context("--port ring: starting DPDK")?;
    let pool = std::sync::Arc::new(
        Mempool::new(&eal, &MempoolConfig::for_frames(RING_MTU + 18, 8191))
            .context("--port ring: creating the mbuf pool")?,
    );
    let (ia, ib) =
        ring_pair(&eal, "loopback", 1024).context("--port ring: creating the ring ports")?;
    let cfg = PortConfig {
        mtu: Some(RING_MTU),
        link_timeout: std::time::Duration::from_secs(2),
        ..PortConfig::default()
    };
    let pa = DpdkPort::new(&eal, ia, pool.clone(), &cfg).context("--port ring: starting port A")?;
    let pb = DpdkPort::new(&eal, ib, pool.clone(), &cfg).context("--port ring: starting port B")?;
    run_on(args, plan, pa, pb, out)?;
    tracing::debug!(in_use = pool.in_use(), "mbufs still out after the run");
    Ok(())
}

/// L3 MTU of the ring ports: room for the largest path MTU plus every RoCE header.
#[cfg(feature = "dpdk")]
const RING_MTU: usize = 9000;

/// The checked arguments.
struct Plan {
    mtu: Mtu,
    ops: Vec<Op>,
    faults: FaultConfig,
    requester: RequesterConfig,
}

fn check(args: &LoopbackArgs) -> anyhow::Result<Plan> {
    let mtu = Mtu::from_bytes(args.mtu).with_context(|| {
        format!(
            "--mtu {} is not one of 256, 512, 1024, 2048, 4096",
            args.mtu
        )
    })?;
    let ops = args
        .ops
        .iter()
        .map(|s| Op::parse(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if ops.is_empty() {
        bail!("--ops needs at least one operation");
    }
    let faults = args.faults.config()?;
    if args.count == 0 {
        // Nothing sent is nothing verified: a run that moves no message cannot report success.
        bail!("--count 0: at least one message per QP (nothing sent is nothing verified)");
    }
    if args.qps == 0 || args.qps > 1024 {
        bail!("--qps {} must be in 1..=1024", args.qps);
    }
    if args.size > 1 << 30 || u64::from(args.size) * u64::from(args.count) > 1 << 32 {
        bail!("--size × --count is too large for memory (limit 4 GiB per buffer)");
    }
    if args.start_psn > 0xFF_FFFF {
        bail!("--start-psn {} is not a 24-bit PSN", args.start_psn);
    }
    let requester = args.recovery.requester()?;
    Ok(Plan {
        mtu,
        ops,
        faults,
        requester,
    })
}

/// Runs the plan over two connected ports (`port_a` sends to `port_b` and back), then checks
/// and reports.
fn run_on<P: Port>(
    args: &LoopbackArgs,
    plan: &Plan,
    port_a: P,
    port_b: P,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let capture = Capture::create(args.pcap.as_deref())?;
    let seed = args.faults.injector_seed();
    // Guests a and b: MACs 52:54:00:12:00:11 and :12, addresses 198.18.0.11 and .12.
    let [a, b] = [(0x11, 11), (0x12, 12)].map(|(mac, ip)| {
        Endpoint::new(EndpointConfig {
            requester: plan.requester,
            ..EndpointConfig::ipv4(
                EthernetAddress([0x52, 0x54, 0, 0x12, 0, mac]),
                [198, 18, 0, ip].into(),
            )
        })
    });
    let mut pair = EndpointPair::new(
        a,
        b,
        capture.wrap(port_a, plan.faults, seed),
        capture.wrap(port_b, plan.faults, seed.wrapping_add(0x5eed)),
    );
    let depth = args.count.clamp(1, 128);
    let sched = Schedule::new(&plan.ops, args.size, args.count, depth);
    let opts = RcOptions {
        mtu: plan.mtu,
        a_psn: Psn::new(args.start_psn),
        b_psn: Psn::new(args.start_psn),
        max_send_wr: depth,
        max_recv_wr: depth,
        timeout: 10,
        recovery: args.recovery.recovery(),
        ..RcOptions::default()
    };
    let mut flows = Vec::new();
    for q in 0..args.qps {
        flows.push(Flow::connect(&mut pair.a, &mut pair.b, q, &opts, &sched)?);
    }
    let deadline = Instant::ZERO + Duration::from_secs(3600);
    let done = pair.run_until(deadline, |now, a, b| {
        capture.set_time(now);
        let mut all = true;
        for f in flows.iter_mut() {
            all &= f.step(a, b, &sched);
        }
        all || flows.iter().any(|f| !f.errors.is_empty())
    });
    let mut errors: Vec<String> = flows.iter().flat_map(|f| f.errors.clone()).collect();
    if !done {
        errors.push("the run did not finish in an hour of virtual time".into());
    }
    let mut verified = Verified {
        errors,
        ..Verified::default()
    };
    for f in &flows {
        let v = f.verify(&pair.a, &pair.b, &sched);
        verified.messages += v.messages;
        verified.bytes += v.bytes;
        verified.errors.extend(v.errors);
    }
    capture.finish()?;
    let summary = summarize(args, &pair, &flows, verified, done);
    report(out, &summary, args.json)
}

/// The summary of a finished run over `pair`: what `verified` found, the faults, the counters.
fn summarize<P: Port>(
    args: &LoopbackArgs,
    pair: &EndpointPair<LinkPort<P>>,
    flows: &[Flow],
    verified: Verified,
    done: bool,
) -> Summary {
    let (ca, cb) = (pair.a.counters(), pair.b.counters());
    let mut stats = StatsReport::default();
    stats.add_endpoint("a", &pair.a, flows.iter().map(|f| f.a.qpn));
    stats.add_endpoint("b", &pair.b, flows.iter().map(|f| f.b.qpn));
    Summary {
        verified: verified.errors.is_empty() && done,
        port: args.port.clone(),
        messages: verified.messages,
        bytes_verified: verified.bytes,
        virtual_time_us: pair.now.as_nanos() as f64 / 1e3,
        retransmissions: ca.qp.retransmitted_packets + cb.qp.retransmitted_packets,
        naks: ca.qp.naks_sent + cb.qp.naks_sent,
        rnr_naks: ca.qp.send_rnr_err + cb.qp.send_rnr_err,
        timeouts: ca.qp.local_ack_timeout_err + cb.qp.local_ack_timeout_err,
        faults_a_to_b: pair.port_a.fault_counters(),
        faults_b_to_a: pair.port_b.fault_counters(),
        errors: verified.errors.iter().take(20).cloned().collect(),
        counters_a: ca,
        counters_b: cb,
        counters: stats.total(),
        stats,
    }
}

/// The summary on `out` (JSON or lines); a run that is not verified is an error naming the
/// first thing wrong.
fn report(out: &mut dyn Write, summary: &Summary, json: bool) -> anyhow::Result<()> {
    if json {
        write_json(out, summary, Json::Pretty)?;
    } else {
        write_summary(out, summary)?;
    }
    if !summary.verified {
        bail!(
            "verification failed: {}",
            summary
                .errors
                .first()
                .map_or("incomplete run", String::as_str)
        );
    }
    Ok(())
}

fn write_summary(out: &mut dyn Write, s: &Summary) -> std::io::Result<()> {
    writeln!(out, "verified          {}", s.verified)?;
    writeln!(out, "link              {}", s.port)?;
    writeln!(out, "messages          {}", s.messages)?;
    writeln!(out, "bytes verified    {}", s.bytes_verified)?;
    writeln!(out, "virtual time      {:.1} us", s.virtual_time_us)?;
    writeln!(out, "retransmissions   {}", s.retransmissions)?;
    writeln!(out, "NAKs sent         {}", s.naks)?;
    writeln!(out, "RNR NAKs sent     {}", s.rnr_naks)?;
    writeln!(out, "ACK timeouts      {}", s.timeouts)?;
    let f = |c: &FaultCounters| {
        format!(
            "{} frames: {} dropped, {} duplicated, {} reordered, {} corrupted, {} refused by the port",
            c.frames, c.dropped, c.duplicated, c.reordered, c.corrupted, c.refused
        )
    };
    writeln!(out, "faults A->B       {}", f(&s.faults_a_to_b))?;
    writeln!(out, "faults B->A       {}", f(&s.faults_b_to_a))?;
    let q = &s.counters_a.qp;
    writeln!(
        out,
        "requester A       packet_seq_err {} implied_nak_seq_err {} local_ack_timeout_err {} rnr_nak_retry_err {}",
        q.packet_seq_err, q.implied_nak_seq_err, q.local_ack_timeout_err, q.rnr_nak_retry_err
    )?;
    let r = &s.counters_b.qp;
    writeln!(
        out,
        "responder B       out_of_sequence {} duplicate_request {} rx_write {} rx_read {} rx_atomic {}",
        r.out_of_sequence, r.duplicate_request, r.rx_write_requests, r.rx_read_requests, r.rx_atomic_requests
    )?;
    let d = &s.counters_b.drops;
    writeln!(
        out,
        "drops at B        bad_icrc {} malformed {} bad_ip_checksum {} wrong_destination {}",
        d.bad_icrc, d.malformed, d.bad_ip_checksum, d.wrong_destination
    )?;
    for e in &s.errors {
        writeln!(out, "error             {e}")?;
    }
    Ok(())
}
