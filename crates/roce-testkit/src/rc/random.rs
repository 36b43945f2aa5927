//! The randomized end-to-end run shared by the in-memory suite (roce-proto's rc_random tests) and
//! the DPDK net_ring check (roce-dpdk's tests/it/runtime.rs): many QPs, every opcode, 0 B..1 MiB
//! messages, faults on both directions, start PSNs just below the 24-bit wrap, and exact
//! verification of every byte, completion and atomic.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use super::*;
use roce_proto::connect::RcOptions;
use roce_proto::fault::{FaultConfig, FaultPort};
use roce_proto::loopback::EndpointPair;
use roce_proto::mr::MrInfo;
use roce_proto::port::Port;
use roce_proto::psn::Psn;
use roce_proto::verbs::{
    Mtu, Recovery, RecvWr, SendFlags, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion, WrKind,
    WrOpcode, WrOperands,
};

/// What a finished run must show.
struct Expect {
    /// (A-side MR, B-side MR, length, direction A→B?)
    copies: Vec<(u32, u32, usize, bool)>,
    /// Receive completions B must produce, in order: (wr_id, opcode, byte_len, imm).
    recvs: Vec<(u64, WcOpcode, u32, Option<u32>)>,
    /// A's send completions, in order.
    sends: Vec<u64>,
    /// (A-side result MR lkey, expected original value) per atomic.
    atomic_results: Vec<(u32, u64)>,
    /// (B-side counter lkey, final value).
    counters: Vec<(u32, u64)>,
}

fn size(rng: &mut Pcg64, budget: &mut usize) -> usize {
    let n = match rng.random_range(0..100u32) {
        0..=44 => rng.random_range(0..=64),
        45..=79 => rng.random_range(65..=8192),
        80..=95 => rng.random_range(8193..=65536),
        _ => rng.random_range(65537..=1 << 20),
    };
    let n = n.min(*budget);
    *budget -= n;
    n
}

fn sge(m: &MrInfo, len: usize) -> Sge {
    Sge {
        addr: m.addr,
        length: len as u32,
        lkey: m.lkey,
    }
}

/// The shape of one randomized run.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// Replays the run: QP set-up, operations, sizes, fault decisions.
    pub seed: u64,
    /// Queue pairs, each with its own message stream.
    pub qps: usize,
    /// Work requests per QP.
    pub ops_per_qp: usize,
    /// Message bytes over all QPs.
    pub byte_budget: usize,
    /// Faults on both directions of the link.
    pub faults: Faults,
    /// How every QP recovers lost packets.
    pub recovery: Recovery,
}

/// How a run's link misbehaves.
#[derive(Clone, Copy, Debug)]
pub enum Faults {
    /// Each kind at a fraction drawn from 1%..=10% (from the seed).
    Random,
    /// These fractions.
    Fixed(FaultConfig),
}

impl Faults {
    fn pick(self, rng: &mut Pcg64) -> FaultConfig {
        let mut frac = || rng.random_range(0.01..=0.10);
        match self {
            Faults::Random => FaultConfig {
                loss: frac(),
                duplicate: frac(),
                reorder: frac(),
                corrupt: frac(),
            },
            Faults::Fixed(f) => f,
        }
    }
}

/// Runs `r` over two endpoints joined by `port_a` and `port_b` (wrapped in fault injectors).
/// Panics with the seed, faults and counters in the message when anything is off.
pub fn run<P: Port>(r: Run, port_a: P, port_b: P) {
    let Run {
        seed,
        qps,
        ops_per_qp,
        byte_budget,
        ..
    } = r;
    let mut rng = Pcg64::seed_from_u64(seed);
    let faults = r.faults.pick(&mut rng);
    let (a, b) = endpoints();
    let mut p = EndpointPair::new(
        a,
        b,
        FaultPort::new(port_a, faults, seed),
        FaultPort::new(port_b, faults, seed ^ 0x5eed),
    );
    let mtu = [Mtu::Mtu256, Mtu::Mtu1024, Mtu::Mtu4096][rng.random_range(0..3)];
    let mut sides = Vec::new();
    let mut expects = Vec::new();
    let mut budget = byte_budget;
    for q in 0..qps {
        let near_wrap = |rng: &mut Pcg64| Psn::new(0xFF_FFFF - rng.random_range(0..64u32));
        let o = RcOptions {
            mtu,
            a_psn: near_wrap(&mut rng),
            b_psn: near_wrap(&mut rng),
            timeout: 8,
            max_send_wr: ops_per_qp as u32 + 1,
            max_recv_wr: ops_per_qp as u32 + 1,
            max_rd_atomic: rng.random_range(1..=4),
            recovery: r.recovery,
            ..RcOptions::default()
        };
        let (sa, sb) = connect(&mut p, &o);
        let mut e = Expect {
            copies: vec![],
            recvs: vec![],
            sends: vec![],
            atomic_results: vec![],
            counters: vec![],
        };
        let counter = mr(&mut p.b, &sb, 8, 0);
        let mut counter_value = u64::from_le_bytes(
            p.b.mr(counter.lkey).unwrap().bytes()[..8]
                .try_into()
                .unwrap(),
        );
        let ops = [
            WrKind::RdmaWrite,
            WrKind::RdmaWriteWithImm,
            WrKind::RdmaRead,
            WrKind::Send,
            WrKind::SendWithImm,
            WrKind::AtomicFetchAndAdd,
            WrKind::AtomicCmpAndSwp,
        ];
        for i in 0..ops_per_qp {
            let op = ops[rng.random_range(0..ops.len())];
            let wr_id = (q as u64) << 32 | i as u64;
            let imm: u32 = rng.random();
            let mut flags = SendFlags::SIGNALED;
            if rng.random_bool(0.1) {
                flags |= SendFlags::FENCE;
            }
            let wr = match op {
                WrKind::RdmaWrite
                | WrKind::RdmaWriteWithImm
                | WrKind::RdmaRead
                | WrKind::Send
                | WrKind::SendWithImm => {
                    let n = size(&mut rng, &mut budget);
                    let fill: u8 = rng.random();
                    let (la, lb) = if matches!(op, WrKind::RdmaRead) {
                        (mr(&mut p.a, &sa, n, 0), mr(&mut p.b, &sb, n, fill))
                    } else {
                        (mr(&mut p.a, &sa, n, fill), mr(&mut p.b, &sb, n, 0))
                    };
                    e.copies
                        .push((la.lkey, lb.lkey, n, !matches!(op, WrKind::RdmaRead)));
                    let opcode = WrOpcode::new(
                        op,
                        WrOperands {
                            remote_addr: lb.addr,
                            rkey: lb.rkey,
                            imm,
                            ..WrOperands::default()
                        },
                    );
                    match op {
                        WrKind::Send | WrKind::SendWithImm => {
                            p.b.post_recv(sb.qpn, RecvWr::new(wr_id, sge(&lb, n)))
                                .unwrap();
                            e.recvs.push((
                                wr_id,
                                WcOpcode::Recv,
                                n as u32,
                                matches!(op, WrKind::SendWithImm).then_some(imm),
                            ));
                        }
                        WrKind::RdmaWriteWithImm => {
                            let dummy = mr(&mut p.b, &sb, 1, 0);
                            p.b.post_recv(sb.qpn, RecvWr::new(wr_id, sge(&dummy, 1)))
                                .unwrap();
                            e.recvs
                                .push((wr_id, WcOpcode::RecvRdmaWithImm, n as u32, Some(imm)));
                        }
                        _ => {}
                    }
                    SendWr {
                        wr_id,
                        opcode,
                        sgl: [sge(&la, n)].into_iter().collect(),
                        flags,
                    }
                }
                WrKind::AtomicFetchAndAdd | WrKind::AtomicCmpAndSwp => {
                    let res = mr(&mut p.a, &sa, 8, 0xee);
                    e.atomic_results.push((res.lkey, counter_value));
                    let opcode = if matches!(op, WrKind::AtomicFetchAndAdd) {
                        let add: u64 = rng.random_range(1..1 << 40);
                        counter_value = counter_value.wrapping_add(add);
                        WrOpcode::AtomicFetchAndAdd {
                            remote_addr: counter.addr,
                            rkey: counter.rkey,
                            add,
                        }
                    } else {
                        let swap: u64 = rng.random();
                        let compare = if rng.random_bool(0.5) {
                            counter_value
                        } else {
                            counter_value ^ 1
                        };
                        if compare == counter_value {
                            counter_value = swap;
                        }
                        WrOpcode::AtomicCmpAndSwp {
                            remote_addr: counter.addr,
                            rkey: counter.rkey,
                            compare,
                            swap,
                        }
                    };
                    SendWr {
                        wr_id,
                        opcode,
                        sgl: [sge(&res, 8)].into_iter().collect(),
                        flags,
                    }
                }
            };
            p.a.post_send(sa.qpn, wr).unwrap();
            e.sends.push(wr_id);
        }
        e.counters.push((counter.lkey, counter_value));
        sides.push((sa, sb));
        expects.push(e);
    }
    let mut got_a: Vec<WorkCompletion> = Vec::new();
    let mut got_b: Vec<WorkCompletion> = Vec::new();
    let want_a: usize = expects.iter().map(|e| e.sends.len()).sum();
    let want_b: usize = expects.iter().map(|e| e.recvs.len()).sum();
    let end = deadline(&p, 5);
    let done = p.run_until(end, |_, a, b| {
        for (sa, sb) in &sides {
            drain(a, sa, &mut got_a);
            drain(b, sb, &mut got_b);
        }
        got_a.len() >= want_a && got_b.len() >= want_b
    });
    let ctx = format!(
        "seed {seed} faults {faults:?} mtu {mtu:?}; counters A {:?}; counters B {:?}",
        p.a.counters(),
        p.b.counters()
    );
    assert!(
        done,
        "run did not finish: {} of {want_a} send and {} of {want_b} receive completions; {ctx}",
        got_a.len(),
        got_b.len()
    );
    // A few more rounds: nothing may complete twice.
    let later = p.now + roce_proto::time::Duration::from_millis(50);
    p.run_until(later, |_, a, b| {
        for (sa, sb) in &sides {
            drain(a, sa, &mut got_a);
            drain(b, sb, &mut got_b);
        }
        false
    });
    assert_eq!(got_a.len(), want_a, "extra send completions; {ctx}");
    assert_eq!(got_b.len(), want_b, "extra receive completions; {ctx}");
    for ((sa, sb), e) in sides.iter().zip(&expects) {
        let mine: Vec<_> = got_a.iter().filter(|w| w.qp_num == sa.qpn).collect();
        assert!(
            mine.iter().all(|w| w.status == WcStatus::Success),
            "send failure {mine:?}; {ctx}"
        );
        assert_eq!(
            mine.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
            e.sends,
            "send completion order; {ctx}"
        );
        let recvs: Vec<_> = got_b
            .iter()
            .filter(|w| w.qp_num == sb.qpn)
            .map(|w| (w.wr_id, w.opcode, w.byte_len, w.imm_data))
            .collect();
        assert_eq!(recvs, e.recvs, "receive completions; {ctx}");
        for &(la, lb, n, _) in &e.copies {
            let a = &p.a.mr(la).unwrap().bytes()[..n];
            let b = &p.b.mr(lb).unwrap().bytes()[..n];
            assert!(a == b, "payload of {n} bytes differs; {ctx}");
        }
        for &(l, v) in &e.atomic_results {
            let got = u64::from_le_bytes(p.a.mr(l).unwrap().bytes()[..8].try_into().unwrap());
            assert_eq!(got, v, "atomic original value; {ctx}");
        }
        for &(l, v) in &e.counters {
            let got = u64::from_le_bytes(p.b.mr(l).unwrap().bytes()[..8].try_into().unwrap());
            assert_eq!(
                got, v,
                "atomic target executed other than exactly once; {ctx}"
            );
        }
    }
    // Take every frame still on the link (held ones come out after a few rounds), so buffers
    // go back to their pool.
    let mut sink = Vec::new();
    let mut idle = 0;
    while idle < 8 {
        let n = p.port_a.rx_burst(&mut sink, 64) + p.port_b.rx_burst(&mut sink, 64);
        sink.clear();
        idle = if n == 0 { idle + 1 } else { 0 };
    }
}
