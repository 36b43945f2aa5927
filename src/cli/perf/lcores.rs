//! `roce perf` on several lcores (`--cores N`): the port gets a queue pair per lcore, each lcore
//! runs one shard (a [`ResolvingEndpoint`] numbering its QPs in its own range), and `-q` QPs are
//! spread over the shards round-robin. The traffic of a shard's QPs runs as an in-lcore task (a
//! cross-thread hop per work request would cost more than the request), the main thread only
//! talks TCP and gathers results; each side prints the total as perftest does and, on the
//! client, one line per lcore. Shard 0 answers ARP and resolves the peer for every shard.
//!
//! Not here: latency tests, `-b`, perftest peers and fault injection (one core: `--cores 1`).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use crossbeam::channel;

use roce::metrics::{Exposition, MetricsHub, PortMetrics};
use roce::oob::perf::{Dest, Hello, Test};
use roce_dpdk::lcore::dispatch::{shard_config, shard_ports, INBOX_FRAMES};
use roce_dpdk::lcore::shard::{EndpointSnapshot, VerbsShard};
use roce_dpdk::lcore::{LcoreConfig, Lcores, Shard, ShardHandle, SnapshotSource};
use roce_dpdk::TscClock;
use roce_proto::cc::CcConfig;
use roce_proto::connect::RcOptions;
use roce_proto::counters::RdmaCounters;
use roce_proto::endpoint::EndpointConfig;
use roce_proto::fault::FaultConfig;
use roce_proto::psn::Psn;
use roce_proto::resolving::{PeerQp, ResolvingEndpoint};
use roce_proto::time::Instant;
use roce_proto::verbs::{Mtu, WcOpcode, WcStatus};

use super::exchange::{agree, json_line, recv_checked, swap};
use super::report::print_banner;
use super::report::{Bw, BwMeter, RESULT_LINE};
use super::traffic::{refill, send_wr};
use super::{End, PeerFormat, PerfArgs, Qp};
use crate::cli::output;
use crate::cli::session::{self, Ask, Blocking, Oob, Req};

type Engine = VerbsShard<ResolvingEndpoint>;
type Handle = ShardHandle<Engine>;

/// What one shard's part of a size came to: its index, bandwidth and completions.
type ShardResult = Result<(usize, Bw, u64), String>;

/// Runs `test` with the QPs of `hello` over `args.port.cores` lcores.
pub(super) fn run(
    test: Test,
    args: &PerfArgs,
    hello: Hello,
    cc: Option<&CcConfig>,
    max_memory: u64,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    refuse_one_core_only(test, args, &hello)?;
    let mtu = session::parse_mtu(args.mtu)?;
    let connect = session::connect(args.server.as_deref(), args.tcp_port, &args.port)?;
    let is_client = args.server.is_some();
    let rig = Rig::start(args, mtu, connect)?;
    let mut b = Blocking;
    let hello = agree(&mut b, &rig.oob, is_client, hello, max_memory)?;
    let max_size = hello.max_size();
    let mr_len = usize::try_from(hello.buffer_len()).context("buffer size")?;
    let depth = args.tx_depth.clamp(1, 1024);
    let mut qps = rig.create_qps(args, hello.qps, cc, depth, mr_len)?;
    let mine: Vec<Dest> = qps.iter().map(|(_, q)| q.dest(rig.ip)).collect();
    if !is_client && hello.duration > 0 {
        let run = std::time::Duration::from_secs(hello.duration);
        b.ask(&rig.oob, Req::IoTimeout(rig.timeout.saturating_add(run)))?;
    }
    let theirs: Vec<Dest> = swap(&mut b, &rig.oob, is_client, &mine, "keys")?;
    rig.connect_qps(args, &mut qps, &theirs, &args.rc_options(&hello)?)?;
    let banner: Vec<Qp> = qps.iter().map(|(_, q)| Qp { ..*q }).collect();
    print_banner(out, test, &hello, depth, &banner, rig.ip, args.report_gbits)?;
    if test.uses_recv() {
        for (shard, q) in &qps {
            let mut q = Qp { ..*q };
            rig.handles[*shard]
                .call(move |e, _| refill(e.engine_mut(), &mut q, max_size, depth))??;
        }
    }
    let _: Vec<bool> = swap(&mut b, &rig.oob, is_client, &[true], "ready")?;
    let run = Sizes {
        test,
        hello: &hello,
        qps: &qps,
        depth,
        is_client,
        gbits: args.report_gbits,
    };
    for &size in &hello.sizes {
        run.size(&rig, size, out)?;
    }
    writeln!(out, "{RESULT_LINE}")?;
    rig.finish()
}

/// Refuses what runs on one core only: latency tests, perftest peers, `-b`, fault injection.
fn refuse_one_core_only(test: Test, args: &PerfArgs, hello: &Hello) -> anyhow::Result<()> {
    let cores = &args.port.cores;
    let one_core = |what: &str| anyhow!("--cores {cores}: {what} runs on one core (--cores 1)");
    if !test.is_bw() {
        return Err(one_core("a latency test"));
    }
    if args.peer_format == PeerFormat::Perftest {
        return Err(one_core("--peer-format perftest"));
    }
    if hello.bidir {
        return Err(one_core("-b"));
    }
    if args.port.faults.config()? != FaultConfig::default() {
        return Err(one_core(
            "fault injection (--loss, --dup, --reorder, --corrupt)",
        ));
    }
    Ok(())
}

/// The port split over the lcores, a shard on each, and the TCP exchange beside them.
struct Rig {
    // Field order is drop order: the exchange, the metrics, then the lcores (and their port
    // queues) before the pool before EAL.
    oob: Oob,
    handles: Vec<Handle>,
    _metrics: Option<roce::metrics::server::MetricsServer>,
    lcores: Lcores<Engine>,
    pool: Arc<roce_dpdk::Mempool>,
    eal: roce_dpdk::Eal,
    ip: std::net::Ipv4Addr,
    timeout: std::time::Duration,
}

impl Rig {
    /// Opens the port with a queue pair per lcore, spawns a shard on each (shard 0 announces
    /// us), serves their metrics, and starts the exchange over `connect`.
    fn start(args: &PerfArgs, mtu: Mtu, connect: session::Connect) -> anyhow::Result<Rig> {
        let cores = args.port.cores.clone();
        let n = cores.len();
        let timeout = std::time::Duration::from_secs(args.port.timeout.max(1));
        let dev = session::open_device(
            &args.port,
            mtu.bytes(),
            u16::try_from(n).unwrap_or(u16::MAX),
            connect.memif_role(),
        )?;
        let (eal, pool, mac, ip) = (dev.eal, dev.pool, dev.mac, dev.ip);
        let device = dev.port.info().name.clone();
        // How frames reach their lcore on this port, said once (as `roce port info --cores`
        // does).
        output::note(format_args!(
            "lcores: {n} on CPUs {cores}; steering={}",
            roce_dpdk::steer::Steering::probe(&dev.port)
        ));
        let mut shards = Vec::new();
        for (i, p) in shard_ports(dev.port.into_queues(), INBOX_FRAMES)
            .into_iter()
            .enumerate()
        {
            let cfg = shard_config(EndpointConfig::ipv4(mac, ip), i);
            shards.push(Shard {
                engine: VerbsShard::new(ResolvingEndpoint::new(cfg)),
                port: p,
                lcore: i,
            });
        }
        let lcores = Lcores::spawn(
            Some(&eal),
            &cores,
            shards,
            TscClock::new(&eal),
            LcoreConfig::default(),
        )?;
        let hub = Arc::new(MetricsHub::new());
        let source = lcores.snapshot_source();
        hub.set_source(Some(Box::new(move || exposition(&source, &device))));
        let metrics = args.port.metrics.start(&eal, &hub)?;
        let handles: Vec<Handle> = lcores.handles().to_vec();
        handles[0].call(|e, _| e.engine_mut().announce())?;
        Ok(Rig {
            oob: Oob::start(connect, timeout),
            handles,
            _metrics: metrics,
            lcores,
            pool,
            eal,
            ip,
            timeout,
        })
    }

    /// `count` QPs round-robin over the shards, each with `cc` if given.
    fn create_qps(
        &self,
        args: &PerfArgs,
        count: u32,
        cc: Option<&CcConfig>,
        depth: u32,
        mr_len: usize,
    ) -> anyhow::Result<Vec<(usize, Qp)>> {
        let mut psns = args.port.psns();
        let mut qps = Vec::new();
        for k in 0..count as usize {
            let shard = k % self.handles.len();
            let cc = cc.cloned();
            let psn = psns.next_psn();
            let q = self.handles[shard]
                .call(move |e, _| {
                    let ep = e.engine_mut().endpoint_mut();
                    let q = Qp::create(ep, depth, mr_len, psn)?;
                    if let Some(c) = cc {
                        ep.set_congestion_control(q.qpn, c.build(), 64 * 1024)?;
                    }
                    Ok::<_, roce_proto::qp::QpError>(q)
                })?
                .context("creating a QP")?;
            qps.push((shard, q));
        }
        Ok(qps)
    }

    /// Connects each QP to its peer's (`theirs`, in order) on its shard, with the peer's MAC
    /// from `--peer-mac` or resolved by shard 0.
    fn connect_qps(
        &self,
        args: &PerfArgs,
        qps: &mut [(usize, Qp)],
        theirs: &[Dest],
        opts: &RcOptions,
    ) -> anyhow::Result<()> {
        let peer_ip = theirs
            .first()
            .map(|d| session::gid_ip(d.gid))
            .ok_or_else(|| anyhow!("no QP"))?;
        let peer_mac = match args.port.peer_mac()? {
            Some(m) => m,
            None => resolve(&self.handles[0], peer_ip, self.timeout)?,
        };
        for ((shard, q), d) in qps.iter_mut().zip(theirs) {
            q.peer = *d;
            let peer = PeerQp {
                ip: session::gid_ip(d.gid),
                mac: Some(peer_mac),
                qpn: d.qpn,
                psn: Psn::new(d.psn),
            };
            let (qpn, psn, opts) = (q.qpn, q.psn, *opts);
            self.handles[*shard]
                .call(move |e, now| {
                    e.engine_mut()
                        .connect_qp(now, qpn, &peer, psn, &opts)
                        .map(|_| ())
                })?
                .context("connecting a QP")?;
        }
        Ok(())
    }

    /// The counters summed over the shards (stderr), then the lcores stopped before the pool
    /// and EAL go.
    fn finish(self) -> anyhow::Result<()> {
        let snaps = self.lcores.snapshots(std::time::Duration::from_secs(2));
        let mut port = RdmaCounters::default();
        for s in snaps.into_iter().flatten() {
            port.accumulate(&s.port);
        }
        output::note(counters_line(&port));
        let Rig {
            oob,
            handles,
            _metrics,
            lcores,
            pool,
            eal,
            ..
        } = self;
        // What the shards ended with is not needed: dropped before the pool and EAL.
        let stopped = lcores.stop().map(drop);
        drop(pool);
        drop(eal);
        drop((oob, handles, _metrics));
        Ok(stopped?)
    }
}

/// The sizes of a run: what each side does per size and prints.
struct Sizes<'a> {
    test: Test,
    hello: &'a Hello,
    qps: &'a [(usize, Qp)],
    depth: u32,
    is_client: bool,
    gbits: bool,
}

impl Sizes<'_> {
    /// One size: the client runs it on every shard and prints the total and a line per lcore;
    /// the server keeps receives posted until the client's results come and prints them.
    fn size(&self, rig: &Rig, size: u64, out: &mut dyn Write) -> anyhow::Result<()> {
        let (b, oob, h) = (&mut Blocking, &rig.oob, rig.handles.as_slice());
        let _: Vec<u64> = swap(b, oob, self.is_client, &[size], "start")?;
        let gbits = self.gbits;
        if self.is_client {
            let (total, per_shard) = client_size(
                h,
                self.qps,
                self.test,
                self.hello,
                size,
                self.depth,
                rig.timeout,
            )?;
            b.ask(oob, Req::Send("send results", json_line(&total)?))?;
            let _: End = recv_checked(b, oob, ("read results", "results"), |_: &End| Ok(()))?;
            if let Some(bw) = &total.bw {
                writeln!(out, "{}", bw.line(gbits))?;
            }
            for (i, bw) in per_shard.iter().enumerate() {
                writeln!(out, " lcore {i}:{}", bw.line(gbits))?;
            }
            return Ok(());
        }
        let max_size = self.hello.max_size();
        let (end, seen) = server_size(b, oob, h, self.qps, self.test, max_size, self.depth)?;
        let mine = End {
            bw: None,
            completed: seen,
        };
        b.ask(oob, Req::Send("send results", json_line(&mine)?))?;
        if let Some(bw) = &end.bw {
            writeln!(out, "{}", bw.line(gbits))?;
        }
        Ok(())
    }
}

/// The peer's MAC, resolved by shard 0 (the shard that receives ARP).
fn resolve(
    h0: &Handle,
    ip: std::net::IpAddr,
    timeout: std::time::Duration,
) -> anyhow::Result<roce_proto::wire::EthernetAddress> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(mac) = h0.call(move |e, now| e.engine_mut().resolve(now, ip))? {
            return Ok(mac);
        }
        if std::time::Instant::now() > deadline {
            bail!(
                "resolving the peer {ip} with ARP: nothing within {} s",
                timeout.as_secs()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// The client's part of one size: a task per lcore keeping a window of `depth` requests on each
/// of its QPs; returns the total and each lcore's result.
fn client_size(
    h: &[Handle],
    qps: &[(usize, Qp)],
    test: Test,
    hello: &Hello,
    size: u64,
    depth: u32,
    timeout: std::time::Duration,
) -> anyhow::Result<(End, Vec<Bw>)> {
    let work = ClientWork {
        test,
        size,
        depth,
        iters: hello.iters,
        duration: (hello.duration > 0).then(|| hello.duration.saturating_mul(1_000_000_000)),
        wait: u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX),
    };
    let (tx, rx) = channel::unbounded::<ShardResult>();
    for (shard, handle) in h.iter().enumerate() {
        let mine: Vec<Qp> = qps
            .iter()
            .filter(|(s, _)| *s == shard)
            .map(|(_, q)| Qp {
                posted: 0,
                done: 0,
                ..*q
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        handle.run_task(client_task(shard, mine, work, tx.clone()))?;
    }
    drop(tx);
    let mut shards: Vec<(usize, Bw, u64)> = Vec::new();
    for r in rx.iter() {
        shards.push(r.map_err(|e| anyhow!(e))?);
    }
    shards.sort_by_key(|s| s.0);
    let completed = shards.iter().map(|s| s.2).sum();
    let bws: Vec<Bw> = shards.into_iter().map(|s| s.1).collect();
    let total = bws.iter().copied().reduce(|a, b| Bw {
        iters: a.iters.min(b.iters),
        peak: a.peak + b.peak,
        avg: a.avg + b.avg,
        msg_rate: a.msg_rate + b.msg_rate,
        ..a
    });
    Ok((
        End {
            bw: total,
            completed,
        },
        bws,
    ))
}

/// What every shard's client task runs.
#[derive(Clone, Copy)]
struct ClientWork {
    test: Test,
    size: u64,
    depth: u32,
    /// Requests per QP (without a duration).
    iters: u64,
    /// How long to run, ns (`-D`).
    duration: Option<u64>,
    /// How long without a completion before the peer counts as gone, ns.
    wait: u64,
}

/// Shard `shard`'s client task over its QPs `mine`: posts and reaps each turn, and says on
/// `tx` what the shard measured once done (or why it stopped).
fn client_task(
    shard: usize,
    mut mine: Vec<Qp>,
    work: ClientWork,
    tx: channel::Sender<ShardResult>,
) -> impl FnMut(&mut Engine, Instant) -> bool + Send + 'static {
    let ClientWork {
        test,
        size,
        depth,
        iters,
        duration,
        wait,
    } = work;
    let mut meter = BwMeter::new(size, depth as usize);
    let (mut start, mut last_progress) = (None::<Instant>, 0u64);
    move |e, now| {
        let t0 = *start.get_or_insert(now);
        let t = now.saturating_since(t0).as_nanos();
        let running = duration.is_none_or(|d| t < d);
        let mut all_done = true;
        let h = e.engine_mut();
        for q in mine.iter_mut() {
            while running
                && (duration.is_some() || q.posted < iters)
                && q.posted - q.done < u64::from(depth)
            {
                if let Err(err) = h
                    .endpoint_mut()
                    .post_send(q.qpn, send_wr(test, q, size, q.posted))
                {
                    let _ = tx.send(Err(format!("QP {:#x}: posting a request: {err}", q.qpn)));
                    return false;
                }
                q.posted += 1;
            }
            while let Some(wc) = h.endpoint_mut().poll_cq_one(q.cq) {
                if wc.status != WcStatus::Success {
                    let _ = tx.send(Err(format!(
                        "QP {:#x}: completion {:?} ({:?}); the peer stopped answering?",
                        q.qpn, wc.status, wc.opcode
                    )));
                    return false;
                }
                if !matches!(wc.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm) {
                    q.done += 1;
                    meter.record(t);
                    last_progress = t;
                }
            }
            all_done &= q.done == q.posted && (!running || q.posted >= iters);
        }
        if all_done && (duration.is_none() || !running) {
            let iters = mine.iter().map(|q| q.done).min().unwrap_or(0);
            let _ = tx.send(Ok((shard, meter.finish(iters), meter.count())));
            return false;
        }
        if t.saturating_sub(last_progress) > wait {
            let done: u64 = mine.iter().map(|q| q.done).sum();
            let _ = tx.send(Err(format!(
                "the peer stopped answering (lcore {shard}: {done} requests done)"
            )));
            return false;
        }
        true
    }
}

/// The server's part of one size: for send-bw a task per lcore keeping receives posted and
/// counting them, until the client's results come. Returns the client's results and the
/// messages received.
fn server_size(
    b: &mut Blocking,
    oob: &Oob,
    h: &[Handle],
    qps: &[(usize, Qp)],
    test: Test,
    max_size: u64,
    depth: u32,
) -> anyhow::Result<(End, u64)> {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = channel::unbounded::<Result<u64, String>>();
    if test.uses_recv() {
        for (shard, handle) in h.iter().enumerate() {
            let mut mine: Vec<Qp> = qps
                .iter()
                .filter(|(s, _)| *s == shard)
                .map(|(_, q)| Qp {
                    recvs: u64::from(depth),
                    ..*q
                })
                .collect();
            let (stop, tx) = (stop.clone(), tx.clone());
            let mut seen = 0u64;
            handle.run_task(move |e, _| {
                let h = e.engine_mut();
                for q in mine.iter_mut() {
                    while let Some(wc) = h.endpoint_mut().poll_cq_one(q.cq) {
                        if wc.status != WcStatus::Success {
                            let _ = tx
                                .send(Err(format!("QP {:#x}: completion {:?}", q.qpn, wc.status)));
                            return false;
                        }
                        seen += 1;
                        q.recvs = q.recvs.saturating_sub(1);
                    }
                    if let Err(err) = refill(h, q, max_size, depth) {
                        let _ = tx.send(Err(format!("{err:#}")));
                        return false;
                    }
                }
                if stop.load(Ordering::Acquire) {
                    let _ = tx.send(Ok(seen));
                    return false;
                }
                true
            })?;
        }
    }
    drop(tx);
    let end: End = recv_checked(b, oob, ("read results", "results"), |_: &End| Ok(()))?;
    stop.store(true, Ordering::Release);
    let mut seen = 0;
    for r in rx.iter() {
        seen += r.map_err(|e| anyhow!(e))?;
    }
    Ok((end, seen))
}

/// The counters users look at after a run (mlx5/rxe names), summed over the lcores, one line.
fn counters_line(c: &RdmaCounters) -> String {
    let pick = [
        "retransmitted_packets",
        "packet_seq_err",
        "local_ack_timeout_err",
        "implied_nak_seq_err",
        "out_of_sequence",
        "duplicate_request",
        "rnr_nak_retry_err",
        "send_rnr_err",
        "np_ecn_marked_roce_packets",
        "np_cnp_sent",
        "rp_cnp_handled",
        "error_completions",
    ];
    let parts: Vec<String> = c
        .pairs()
        .into_iter()
        .filter(|(n, _)| pick.contains(n))
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    format!("counters: {}", parts.join(" "))
}

/// The shards' counters merged into one port, for the metrics.
fn exposition(source: &SnapshotSource<Engine>, device: &str) -> Exposition {
    let mut merged = EndpointSnapshot::default();
    for s in source
        .collect(std::time::Duration::from_millis(500))
        .into_iter()
        .flatten()
    {
        merged.merge(s);
    }
    Exposition {
        ports: vec![PortMetrics {
            device: device.to_owned(),
            snapshot: merged,
        }],
        switch: None,
    }
}
