//! `roce loopback`: two endpoints in one process over an in-memory link or two DPDK net_ring
//! ports (optionally lossy), moving messages with the chosen operations and verifying every
//! destination byte, every completion and every atomic result.
//!
//! Virtual time on both links: the run is deterministic for a given `--seed`.

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::path::PathBuf;
use std::rc::Rc;

use anyhow::{bail, Context};
use clap::Args;
use serde::Serialize;

use roce::pcap::CaptureWriter;
use roce::stats::StatsReport;
use roce_proto::connect::{connect_rc, RcOptions, RcSide};
use roce_proto::counters::{EndpointCounters, RdmaCounters};
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::fault::{FaultConfig, FaultCounters, FaultPort};
use roce_proto::loopback::{loopback_pair, EndpointPair};
use roce_proto::mr::MrInfo;
use roce_proto::port::{FrameBuf, Port};
use roce_proto::psn::Psn;
use roce_proto::size::parse_bytes_as;

use super::faults::FaultArgs;
use super::ops::Op;
use super::output::{write_json, Json};
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::{AccessFlags, Mtu, RecvWr, SendWr, Sge, WcOpcode, WcStatus, WrOpcode};
use roce_proto::wire::EthernetAddress;

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
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Write every frame sent (before faults) to this pcapng file; a frame the fault injector
    /// dropped, duplicated, reordered or corrupted carries a comment saying so (Wireshark:
    /// `frame.comment`; `roce pcap check` prints it).
    #[arg(long)]
    pcap: Option<PathBuf>,
}

/// One end of the link as the run sees it: the fault injector over the real port, with every
/// frame the endpoint sends written to the capture (before the faults, so a dropped frame is
/// still there), each frame the injector touched carrying a comment that says what it did.
struct LinkPort<P: Port> {
    inner: FaultPort<P>,
    writer: Rc<RefCell<Option<CaptureWriter>>>,
    clock: Rc<Cell<Instant>>,
    /// Frames of the burst in flight, copied back to back before the injector takes them
    /// (one buffer reused for every burst), and where each ends.
    staged: Vec<u8>,
    staged_ends: Vec<usize>,
}

impl<P: Port> Port for LinkPort<P> {
    type Buf = P::Buf;
    roce_proto::port_caps_and_pool_of!(inner);
    fn rx_burst(&mut self, out: &mut Vec<P::Buf>, max: usize) -> usize {
        self.inner.rx_burst(out, max)
    }
    fn tx_burst(&mut self, bufs: &mut Vec<P::Buf>) -> usize {
        let mut writer = self.writer.borrow_mut();
        let Some(w) = writer.as_mut() else {
            return self.inner.tx_burst(bufs);
        };
        self.staged.clear();
        self.staged_ends.clear();
        for b in bufs.iter() {
            self.staged.extend_from_slice(b.frame());
            self.staged_ends.push(self.staged.len());
        }
        let sent = self.inner.tx_burst(bufs);
        let ts = std::time::Duration::from_nanos(self.clock.get().as_nanos());
        let fates = self.inner.take_fates();
        let starts = std::iter::once(0).chain(self.staged_ends.iter().copied());
        for (i, (start, end)) in starts.zip(self.staged_ends.iter().copied()).enumerate() {
            let frame = &self.staged[start..end];
            let comment = fates
                .get(i)
                .filter(|f| !f.is_clean())
                .map(ToString::to_string);
            if let Err(e) = w.write_annotated(ts, frame, comment.as_deref()) {
                tracing::warn!(error = %e, "pcap write failed");
            }
        }
        sent
    }
}

/// Per-QP plan and buffers.
struct Flow {
    a: RcSide,
    b: RcSide,
    a_src: MrInfo,
    a_dst: MrInfo,
    b_src: MrInfo,
    b_dst: MrInfo,
    counter: MrInfo,
    posted: u32,
    recvs_posted: u32,
    completed: u32,
    recvs_done: u32,
    errors: Vec<String>,
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

fn fill_pattern(ep: &mut Endpoint, mr: &MrInfo, seed: u8) {
    if let Some(m) = ep.mr_mut(mr.lkey) {
        for (i, b) in m.bytes_mut().iter_mut().enumerate() {
            *b = seed
                .wrapping_add((i as u8).wrapping_mul(31))
                .wrapping_add((i >> 8) as u8);
        }
    }
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
    Ok(Plan { mtu, ops, faults })
}

/// Runs the plan over two connected ports (`port_a` sends to `port_b` and back).
fn run_on<P: Port>(
    args: &LoopbackArgs,
    plan: &Plan,
    port_a: P,
    port_b: P,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let (mtu, ops, faults) = (plan.mtu, &plan.ops, plan.faults);
    let writer = match &args.pcap {
        Some(path) => Some(
            CaptureWriter::create_pcapng(path)
                .with_context(|| format!("cannot write {}", path.display()))?,
        ),
        None => None,
    };
    let writer = Rc::new(RefCell::new(writer));
    let clock = Rc::new(Cell::new(Instant::ZERO));
    let capturing = writer.borrow().is_some();
    let wrap = |p: P, seed: u64| {
        let mut inner = FaultPort::new(p, faults, seed);
        if capturing {
            inner.record_fates();
        }
        LinkPort {
            inner,
            writer: writer.clone(),
            clock: clock.clone(),
            staged: Vec::new(),
            staged_ends: Vec::new(),
        }
    };
    // Guests a and b: MACs 52:54:00:12:00:11 and :12, addresses 198.18.0.11 and .12.
    let [a, b] = [(0x11, 11), (0x12, 12)].map(|(mac, ip)| {
        Endpoint::new(EndpointConfig::ipv4(
            EthernetAddress([0x52, 0x54, 0, 0x12, 0, mac]),
            [198, 18, 0, ip].into(),
        ))
    });
    let mut pair: EndpointPair<LinkPort<P>> = EndpointPair::new(
        a,
        b,
        wrap(port_a, args.faults.injector_seed()),
        wrap(port_b, args.faults.injector_seed().wrapping_add(0x5eed)),
    );
    let depth = args.count.clamp(1, 128);
    let opts = RcOptions {
        mtu,
        a_psn: Psn::new(args.start_psn),
        b_psn: Psn::new(args.start_psn),
        max_send_wr: depth,
        max_recv_wr: depth,
        timeout: 10,
        ..RcOptions::default()
    };
    let span = u64::from(args.size.max(8)) * u64::from(args.count);
    let access = AccessFlags::all();
    let mut flows = Vec::new();
    for q in 0..args.qps {
        let (sa, sb) = connect_rc(&mut pair.a, &mut pair.b, &opts).context("connecting the QPs")?;
        let reg =
            |ep: &mut Endpoint, side: &RcSide, len: u64| ep.reg_mr(side.pd, len as usize, access);
        let a_src = reg(&mut pair.a, &sa, span);
        let a_dst = reg(&mut pair.a, &sa, span);
        let b_src = reg(&mut pair.b, &sb, span);
        let b_dst = reg(&mut pair.b, &sb, span);
        let counter = reg(&mut pair.b, &sb, 8);
        fill_pattern(&mut pair.a, &a_src, q as u8);
        fill_pattern(&mut pair.b, &b_src, q as u8 ^ 0x5a);
        flows.push(Flow {
            a: sa,
            b: sb,
            a_src,
            a_dst,
            b_src,
            b_dst,
            counter,
            posted: 0,
            recvs_posted: 0,
            completed: 0,
            recvs_done: 0,
            errors: vec![],
        });
    }
    let size = args.size;
    let count = args.count;
    let op_of = |i: u32| ops[i as usize % ops.len()];
    let consuming: Vec<u32> = (0..count).filter(|&i| op_of(i).consumes_recv()).collect();
    let recvs_wanted = consuming.len() as u32;
    let slot = |i: u32| u64::from(size.max(8)) * u64::from(i);
    let deadline = Instant::ZERO + Duration::from_secs(3600);
    let done = pair.run_until(deadline, |now, a, b| {
        clock.set(now);
        let mut all = true;
        for f in flows.iter_mut() {
            // Keep the receive queue stocked in message order.
            while f.recvs_posted < recvs_wanted && f.recvs_posted - f.recvs_done < depth {
                let i = consuming[f.recvs_posted as usize];
                let len = if op_of(i) == Op::WriteImm { 0 } else { size };
                let wr = RecvWr::new(
                    u64::from(i),
                    Sge {
                        addr: f.b_dst.addr + slot(i),
                        length: len,
                        lkey: f.b_dst.lkey,
                    },
                );
                if b.post_recv(f.b.qpn, wr).is_err() {
                    break;
                }
                f.recvs_posted += 1;
            }
            while f.posted < count && f.posted - f.completed < depth {
                let i = f.posted;
                let at = slot(i);
                let sge = |m: &MrInfo, len: u32| Sge {
                    addr: m.addr + at,
                    length: len,
                    lkey: m.lkey,
                };
                let (opcode, local) = match op_of(i) {
                    Op::Write => (
                        WrOpcode::RdmaWrite {
                            remote_addr: f.b_dst.addr + at,
                            rkey: f.b_dst.rkey,
                        },
                        sge(&f.a_src, size),
                    ),
                    Op::WriteImm => (
                        WrOpcode::RdmaWriteWithImm {
                            remote_addr: f.b_dst.addr + at,
                            rkey: f.b_dst.rkey,
                            imm: i,
                        },
                        sge(&f.a_src, size),
                    ),
                    Op::Read => (
                        WrOpcode::RdmaRead {
                            remote_addr: f.b_src.addr + at,
                            rkey: f.b_src.rkey,
                        },
                        sge(&f.a_dst, size),
                    ),
                    Op::Send => (WrOpcode::Send, sge(&f.a_src, size)),
                    Op::SendImm => (WrOpcode::SendWithImm { imm: i }, sge(&f.a_src, size)),
                    Op::Atomic => (
                        WrOpcode::AtomicFetchAndAdd {
                            remote_addr: f.counter.addr,
                            rkey: f.counter.rkey,
                            add: u64::from(i) + 1,
                        },
                        sge(&f.a_dst, 8),
                    ),
                };
                if a.post_send(f.a.qpn, SendWr::new(u64::from(i), opcode, local))
                    .is_err()
                {
                    break;
                }
                f.posted += 1;
            }
            while let Some(wc) = a.poll_cq_one(f.a.cq) {
                if wc.status != WcStatus::Success || wc.wr_id != u64::from(f.completed) {
                    f.errors.push(format!(
                        "qp {}: send completion {:?} for wr {} (expected wr {})",
                        f.a.qpn, wc.status, wc.wr_id, f.completed
                    ));
                }
                f.completed += 1;
            }
            while let Some(wc) = b.poll_cq_one(f.b.cq) {
                let want = consuming.get(f.recvs_done as usize).copied();
                let i = want.unwrap_or(u32::MAX);
                let (op, imm) = match op_of(i) {
                    Op::WriteImm => (WcOpcode::RecvRdmaWithImm, Some(i)),
                    Op::SendImm => (WcOpcode::Recv, Some(i)),
                    _ => (WcOpcode::Recv, None),
                };
                if wc.status != WcStatus::Success
                    || Some(wc.wr_id) != want.map(u64::from)
                    || wc.opcode != op
                    || wc.imm_data != imm
                    || wc.byte_len != size
                {
                    f.errors.push(format!(
                        "qp {}: receive completion {wc:?} (expected wr {want:?})",
                        f.b.qpn
                    ));
                }
                f.recvs_done += 1;
            }
            all &= f.completed >= count && f.recvs_done >= recvs_wanted;
        }
        all || flows.iter().any(|f| !f.errors.is_empty())
    });
    let mut errors: Vec<String> = flows.iter().flat_map(|f| f.errors.clone()).collect();
    if !done {
        errors.push("the run did not finish in an hour of virtual time".into());
    }
    let mut bytes_verified = 0u64;
    let mut messages = 0u64;
    for f in &flows {
        let view = |ep: &Endpoint, m: &MrInfo, at: u64, len: u64| {
            ep.mr(m.lkey)
                .and_then(|r| r.bytes().get(at as usize..(at + len) as usize))
                .map(<[u8]>::to_vec)
        };
        let mut expected_counter = 0u64;
        for i in 0..f.completed.min(count) {
            let at = slot(i);
            let len = u64::from(size);
            let ok = match op_of(i) {
                Op::Write | Op::WriteImm | Op::Send | Op::SendImm => {
                    view(&pair.a, &f.a_src, at, len) == view(&pair.b, &f.b_dst, at, len)
                }
                Op::Read => view(&pair.a, &f.a_dst, at, len) == view(&pair.b, &f.b_src, at, len),
                Op::Atomic => {
                    let orig = view(&pair.a, &f.a_dst, at, 8)
                        .and_then(|v| v.try_into().ok())
                        .map(u64::from_le_bytes);
                    let ok = orig == Some(expected_counter);
                    expected_counter += u64::from(i) + 1;
                    ok
                }
            };
            if ok {
                messages += 1;
                bytes_verified += if op_of(i) == Op::Atomic { 8 } else { len };
            } else {
                errors.push(format!(
                    "qp {}: message {i} ({:?}) has wrong bytes at its destination",
                    f.a.qpn,
                    op_of(i)
                ));
            }
        }
        let counter = view(&pair.b, &f.counter, 0, 8)
            .and_then(|v| v.try_into().ok())
            .map(u64::from_le_bytes);
        if counter != Some(expected_counter) {
            errors.push(format!("qp {}: atomic counter is {counter:?}, expected {expected_counter} (each atomic exactly once)", f.a.qpn));
        }
    }
    if let Some(w) = writer.borrow_mut().take() {
        w.finish().context("finishing the pcap file")?;
    }
    let (ca, cb) = (pair.a.counters(), pair.b.counters());
    let mut stats = StatsReport::default();
    stats.add_endpoint("a", &pair.a, flows.iter().map(|f| f.a.qpn));
    stats.add_endpoint("b", &pair.b, flows.iter().map(|f| f.b.qpn));
    let summary = Summary {
        verified: errors.is_empty() && done,
        port: args.port.clone(),
        messages,
        bytes_verified,
        virtual_time_us: pair.now.as_nanos() as f64 / 1e3,
        retransmissions: ca.qp.retransmitted_packets + cb.qp.retransmitted_packets,
        naks: ca.qp.naks_sent + cb.qp.naks_sent,
        rnr_naks: ca.qp.send_rnr_err + cb.qp.send_rnr_err,
        timeouts: ca.qp.local_ack_timeout_err + cb.qp.local_ack_timeout_err,
        faults_a_to_b: pair.port_a.inner.counters(),
        faults_b_to_a: pair.port_b.inner.counters(),
        errors: errors.iter().take(20).cloned().collect(),
        counters_a: ca,
        counters_b: cb,
        counters: stats.total(),
        stats,
    };
    if args.json {
        write_json(out, &summary, Json::Pretty)?;
    } else {
        write_summary(out, &summary)?;
    }
    if !summary.verified {
        bail!(
            "verification failed: {}",
            errors.first().map_or("incomplete run", String::as_str)
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
