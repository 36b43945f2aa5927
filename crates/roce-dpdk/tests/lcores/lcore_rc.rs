//! A randomized RC run over the multi-lcore runtime: endpoints A and B on the two ends of a
//! net_ring pair with one queue pair per shard, their shards spread over lcores, QPs spread over
//! the shards (optionally each A-shard's QP talking to the *next* B-shard, so every frame needs
//! the software dispatcher), work posted and completions reaped by the test thread through the
//! shards' queues; afterwards every completion, byte and atomic result is checked.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use roce_dpdk::lcore::dispatch::{shard_config, shard_ports};
use roce_dpdk::lcore::shard::{connect_across, Completion, Verb, VerbsShard};
use roce_dpdk::lcore::{Cores, LcoreConfig, Lcores, Shard, ShardHandle};
use roce_dpdk::{ring_pair_queues, DpdkPort, Eal, Mempool, PortConfig, TscClock};
use roce_proto::connect::RcOptions;
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::mr::MrInfo;
use roce_proto::psn::Psn;
use roce_proto::verbs::{
    AccessFlags, QpInit, RecvWr, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion, WrOpcode,
};
use roce_proto::wire::EthernetAddress;

type Sh = ShardHandle<VerbsShard<Endpoint>>;

/// The shape of one run.
#[derive(Clone, Debug)]
pub struct LcoreRun {
    /// Replays sizes, operations and fills.
    pub seed: u64,
    /// Shards per endpoint (= queue pairs per ring port).
    pub shards: usize,
    /// The lcores (shard `i` of both ends runs on lcore `i % cores`).
    pub cores: Cores,
    /// QP pairs, spread round-robin over the shards.
    pub qps: usize,
    /// Work requests per QP.
    pub ops_per_qp: usize,
    /// A's QP on shard `i` talks to B's QP on shard `i + 1` (frames land on the wrong queue).
    pub cross: bool,
}

/// What a run did, for the caller's exact checks.
#[derive(Debug)]
pub struct LcoreOutcome {
    /// Frames the dispatchers handed from one shard to another (both ends).
    pub forwarded: u64,
    /// Frames dropped at a full inbox.
    pub inbox_full: u64,
    /// Completions checked.
    pub completions: usize,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Write,
    Read,
    Send,
    FetchAdd,
}

struct QpPlan {
    a: (usize, u32, MrInfo, MrInfo),
    b: (usize, u32, MrInfo),
    /// (op, wr_id, offset, len, fill)
    ops: Vec<(Op, u64, usize, usize, u8)>,
}

fn mac(i: u8) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0, 0x1c, i])
}

fn config(i: u8, shard: usize) -> EndpointConfig {
    shard_config(EndpointConfig::ipv4(mac(i), [198, 18, 1, i].into()), shard)
}

const MR_LEN: usize = 1 << 20;

/// Runs `r` over a fresh ring pair called `name`, its rings and RX queues filling from `pool`.
pub fn run_over_lcores(
    eal: &Eal,
    pool: &Arc<Mempool>,
    name: &str,
    r: &LcoreRun,
) -> anyhow::Result<LcoreOutcome> {
    let mut rng = Pcg64::seed_from_u64(r.seed);
    let n = r.shards;
    let (a_id, b_id) = ring_pair_queues(eal, name, 1024, n as u16)?;
    let cfg = PortConfig {
        rx_desc: 256,
        tx_desc: 256,
        mtu: Some(4200),
        queues: n as u16,
        ..PortConfig::default()
    };
    let a_port = DpdkPort::new(eal, a_id, pool.clone(), &cfg)?;
    let b_port = DpdkPort::new(eal, b_id, pool.clone(), &cfg)?;
    let mut shards = Vec::new();
    for (side, port) in [(1u8, a_port), (2u8, b_port)] {
        for (i, p) in shard_ports(port.into_queues(), 4096)
            .into_iter()
            .enumerate()
        {
            shards.push(Shard {
                engine: VerbsShard::new(Endpoint::new(config(side, i))),
                port: p,
                lcore: i % r.cores.len(),
            });
        }
    }
    let clock = TscClock::new(eal);
    let lcores = Lcores::spawn(Some(eal), &r.cores, shards, clock, LcoreConfig::default())?;
    let (ha, hb): (Vec<Sh>, Vec<Sh>) = {
        let h = lcores.handles();
        (h[..n].to_vec(), h[n..].to_vec())
    };
    let result = drive(&ha, &hb, r, &mut rng);
    let snapshots = lcores.snapshots(Duration::from_secs(2));
    let exits = lcores.stop()?;
    let outcome = result?;
    ensure!(
        snapshots.iter().all(Option::is_some),
        "a shard did not answer a snapshot"
    );
    let forwarded = ha
        .iter()
        .chain(&hb)
        .map(|h| {
            h.dispatch_counters()
                .forwarded
                .load(std::sync::atomic::Ordering::Relaxed)
        })
        .sum();
    let inbox_full = ha
        .iter()
        .chain(&hb)
        .map(|h| {
            h.dispatch_counters()
                .inbox_full
                .load(std::sync::atomic::Ordering::Relaxed)
        })
        .sum();
    let errors: u64 = exits
        .iter()
        .map(|e| e.engine.engine().counters().qp.error_completions)
        .sum();
    ensure!(errors == 0, "{errors} error completions");
    Ok(LcoreOutcome {
        forwarded,
        inbox_full,
        completions: outcome,
    })
}

fn drive(ha: &[Sh], hb: &[Sh], r: &LcoreRun, rng: &mut Pcg64) -> anyhow::Result<usize> {
    let n = r.shards;
    let opts = RcOptions {
        max_send_wr: r.ops_per_qp as u32 + 1,
        max_recv_wr: r.ops_per_qp as u32 + 1,
        // 67 ms: lcores sharing a CPU with others (more lcores than CPUs, a busy machine) may
        // wait several scheduler slices for their turn.
        timeout: 14,
        ..RcOptions::default()
    };
    let mut plans = Vec::new();
    for q in 0..r.qps {
        let (sa, sb) = (q % n, if r.cross { (q + 1) % n } else { q % n });
        let mk = move |e: &mut VerbsShard<Endpoint>, _now| {
            let cq = e.create_reaped_cq(4096);
            let ep = e.engine_mut();
            let pd = ep.alloc_pd();
            let qpn = ep.create_qp(QpInit::shared_cq(
                pd,
                cq,
                opts.max_send_wr,
                opts.max_recv_wr,
            ));
            let access = AccessFlags::all();
            let m1 = ep.reg_mr(pd, MR_LEN, access);
            let m2 = ep.reg_mr(pd, MR_LEN, access);
            qpn.map(|qpn| (qpn, m1, m2))
        };
        let (qa, src, res) = ha[sa].call(mk)?.context("creating A's QP")?;
        let (qb, dst, _) = hb[sb].call(mk)?.context("creating B's QP")?;
        // A's first PSNs just below the 24-bit wrap.
        let psn_a = Psn::new(0xFF_FFFF - rng.random_range(0..64u32));
        let psn_b = Psn::new(rng.random_range(0..1 << 24));
        let o = RcOptions {
            a_psn: psn_a,
            b_psn: psn_b,
            ..opts
        };
        connect_across(&ha[sa], qa, &hb[sb], qb, &o)?;
        let mut ops = Vec::new();
        let mut off = 0usize;
        for i in 0..r.ops_per_qp {
            let op = [Op::Write, Op::Read, Op::Send, Op::FetchAdd][rng.random_range(0..4)];
            let len = match op {
                Op::FetchAdd => 8,
                _ if rng.random_bool(0.05) => rng.random_range(16385..=65536),
                _ => rng.random_range(0..=4096),
            };
            if off + len > MR_LEN {
                break;
            }
            ops.push((
                op,
                (q as u64) << 32 | i as u64,
                off,
                len,
                rng.random_range(1..=255u8),
            ));
            // Atomics need 8-byte alignment: every operation starts on one.
            off = (off + len + 7) & !7;
        }
        plans.push(QpPlan {
            a: (sa, qa, src, res),
            b: (sb, qb, dst),
            ops,
        });
    }
    // Sources filled and receives posted before any request leaves.
    for p in &plans {
        let (sa, _, src, _) = p.a;
        let (sb, qb, dst) = p.b;
        let ops = p.ops.clone();
        ha[sa].call(move |e, _| {
            let mut m = e.engine_mut().mr_mut(src.lkey).map(|m| m.bytes_mut());
            for (op, _, off, len, fill) in ops {
                if let (Op::Write | Op::Send, Some(b)) = (op, m.as_deref_mut()) {
                    b[off..off + len].fill(fill);
                }
            }
        })?;
        let ops = p.ops.clone();
        hb[sb].call(move |e, _| {
            for &(op, wr_id, off, len, fill) in &ops {
                match op {
                    Op::Read => {
                        if let Some(m) = e.engine_mut().mr_mut(dst.lkey) {
                            m.bytes_mut()[off..off + len].fill(fill);
                        }
                    }
                    Op::Send => {
                        let sge = Sge {
                            addr: dst.addr + off as u64,
                            length: len as u32,
                            lkey: dst.lkey,
                        };
                        e.engine_mut().post_recv(qb, RecvWr::new(wr_id, sge))?;
                    }
                    _ => {}
                }
            }
            Ok::<(), roce_proto::qp::QpError>(())
        })??;
    }
    // The data path: posts and completions through the queues only.
    let mut pending: Vec<(usize, Verb)> = Vec::new();
    for p in &plans {
        let (sa, qa, src, res) = p.a;
        let (_, _, dst) = p.b;
        for &(op, wr_id, off, len, _) in &p.ops {
            let local = |m: &MrInfo| Sge {
                addr: m.addr + off as u64,
                length: len as u32,
                lkey: m.lkey,
            };
            let remote_addr = dst.addr + off as u64;
            let (opcode, sge) = match op {
                Op::Write => (
                    WrOpcode::RdmaWrite {
                        remote_addr,
                        rkey: dst.rkey,
                    },
                    local(&src),
                ),
                Op::Read => (
                    WrOpcode::RdmaRead {
                        remote_addr,
                        rkey: dst.rkey,
                    },
                    local(&src),
                ),
                Op::Send => (WrOpcode::Send, local(&src)),
                Op::FetchAdd => (
                    WrOpcode::AtomicFetchAndAdd {
                        remote_addr,
                        rkey: dst.rkey,
                        add: wr_id | 1,
                    },
                    local(&res),
                ),
            };
            pending.push((
                sa,
                Verb::Send {
                    qpn: qa,
                    wr: SendWr::new(wr_id, opcode, sge),
                },
            ));
        }
    }
    let want_a: usize = plans.iter().map(|p| p.ops.len()).sum();
    let want_b: usize = plans
        .iter()
        .map(|p| p.ops.iter().filter(|o| matches!(o.0, Op::Send)).count())
        .sum();
    let (mut got_a, mut got_b): (Vec<WorkCompletion>, Vec<WorkCompletion>) =
        (Vec::new(), Vec::new());
    let mut queue = pending.into_iter().peekable();
    let deadline = Instant::now() + Duration::from_secs(60);
    while got_a.len() < want_a || got_b.len() < want_b {
        while let Some((s, v)) = queue.peek().cloned() {
            match ha[s].post(v) {
                Ok(()) => {
                    queue.next();
                }
                Err(_) => break,
            }
        }
        for (hs, got) in [(ha, &mut got_a), (hb, &mut got_b)] {
            for h in hs {
                while let Some(c) = h.poll_done() {
                    match c {
                        Completion::Work(wc) => got.push(wc),
                        Completion::Refused { qpn, wr_id, why } => {
                            bail!("QP {qpn:#x} refused wr {wr_id:#x}: {why}")
                        }
                    }
                }
            }
        }
        if Instant::now() > deadline {
            bail!(
                "{} of {want_a} request and {} of {want_b} receive completions after 60 s",
                got_a.len(),
                got_b.len()
            );
        }
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(50));
    for h in ha.iter().chain(hb) {
        ensure!(h.poll_done().is_none(), "a completion came twice");
    }
    // Every completion in order, every byte where it belongs.
    for p in &plans {
        let (sa, qa, src, res) = p.a;
        let (sb, qb, dst) = p.b;
        let mine: Vec<u64> = got_a
            .iter()
            .filter(|w| w.qp_num == qa)
            .map(|w| w.wr_id)
            .collect();
        let want: Vec<u64> = p.ops.iter().map(|o| o.1).collect();
        ensure!(
            mine == want,
            "QP {qa:#x}: request completions {mine:x?}, expected {want:x?}"
        );
        if let Some(w) = got_a
            .iter()
            .chain(&got_b)
            .find(|w| w.status != WcStatus::Success)
        {
            bail!("a completion failed: {w:?}");
        }
        let recvs: Vec<(u64, WcOpcode, u32)> = got_b
            .iter()
            .filter(|w| w.qp_num == qb)
            .map(|w| (w.wr_id, w.opcode, w.byte_len))
            .collect();
        let want: Vec<(u64, WcOpcode, u32)> = p
            .ops
            .iter()
            .filter(|o| matches!(o.0, Op::Send))
            .map(|o| (o.1, WcOpcode::Recv, o.3 as u32))
            .collect();
        ensure!(recvs == want, "QP {qb:#x}: receive completions differ");
        let a_src = ha[sa]
            .call(move |e, _| e.engine().mr(src.lkey).map(|m| m.bytes().to_vec()))?
            .context("A's MR")?;
        let a_res = ha[sa]
            .call(move |e, _| e.engine().mr(res.lkey).map(|m| m.bytes().to_vec()))?
            .context("A's MR")?;
        let b_dst = hb[sb]
            .call(move |e, _| e.engine().mr(dst.lkey).map(|m| m.bytes().to_vec()))?
            .context("B's MR")?;
        for &(op, wr_id, off, len, fill) in &p.ops {
            let r = off..off + len;
            match op {
                Op::Write | Op::Send => ensure!(
                    b_dst[r.clone()].iter().all(|&b| b == fill),
                    "QP {qa:#x} wr {wr_id:#x}: {op:?} of {len} bytes not delivered"
                ),
                Op::Read => ensure!(
                    a_src[r.clone()].iter().all(|&b| b == fill),
                    "QP {qa:#x} wr {wr_id:#x}: READ of {len} bytes not delivered"
                ),
                Op::FetchAdd => {
                    ensure!(
                        a_res[r.clone()] == [0u8; 8],
                        "QP {qa:#x} wr {wr_id:#x}: fetch-and-add returned {:?}",
                        &a_res[r.clone()]
                    );
                    ensure!(
                        b_dst[r.clone()] == (wr_id | 1).to_le_bytes(),
                        "QP {qa:#x} wr {wr_id:#x}: fetch-and-add left {:?}",
                        &b_dst[r.clone()]
                    );
                }
            }
        }
    }
    Ok(got_a.len() + got_b.len())
}
