//! The messages of `roce loopback`: every QP pair moves the same [`Schedule`] of messages from A
//! to B (a READ the other way), posted and reaped in order with a window of `depth`, and
//! afterwards every destination byte, completion and atomic result is checked. Not here: the
//! link ([`super::link`]), the summary (`super`).

use anyhow::Context;

use roce_proto::connect::{connect_rc, RcOptions, RcSide};
use roce_proto::endpoint::Endpoint;
use roce_proto::mr::MrInfo;
use roce_proto::verbs::{AccessFlags, RecvWr, SendWr, Sge, WcOpcode, WcStatus, WrOpcode};

use crate::cli::ops::Op;

/// What each QP pair sends: message `i` is operation `ops[i % ops.len()]` of `size` bytes (8
/// for an atomic) in slot `i` of the buffers, `count` messages with at most `depth`
/// outstanding.
pub(super) struct Schedule {
    ops: Vec<Op>,
    size: u32,
    count: u32,
    depth: u32,
    /// The messages that consume a receive at B, in order.
    consuming: Vec<u32>,
}

impl Schedule {
    /// `count` messages of `size` bytes cycling through `ops` (not empty), `depth` outstanding.
    pub(super) fn new(ops: &[Op], size: u32, count: u32, depth: u32) -> Schedule {
        let mut s = Schedule {
            ops: ops.to_vec(),
            size,
            count,
            depth,
            consuming: Vec::new(),
        };
        s.consuming = (0..count).filter(|&i| s.op(i).consumes_recv()).collect();
        s
    }

    /// The operation of message `i`.
    fn op(&self, i: u32) -> Op {
        self.ops[i as usize % self.ops.len()]
    }

    /// Where message `i` lies in its buffers.
    fn slot(&self, i: u32) -> u64 {
        u64::from(self.size.max(8)) * u64::from(i)
    }

    /// Bytes of each data buffer: a slot per message.
    pub(super) fn span(&self) -> u64 {
        u64::from(self.size.max(8)) * u64::from(self.count)
    }

    /// Receives B consumes.
    fn recvs_wanted(&self) -> u32 {
        self.consuming.len() as u32
    }
}

/// One QP pair and its buffers: A's source and destination, B's source and destination, and
/// B's atomic counter.
pub(super) struct Flow {
    /// A's QP.
    pub(super) a: RcSide,
    /// B's QP.
    pub(super) b: RcSide,
    a_src: MrInfo,
    a_dst: MrInfo,
    b_src: MrInfo,
    b_dst: MrInfo,
    counter: MrInfo,
    posted: u32,
    recvs_posted: u32,
    completed: u32,
    recvs_done: u32,
    /// Completions that were not the expected ones.
    pub(super) errors: Vec<String>,
}

/// `seed`'s pattern across the whole region `mr`.
fn fill_pattern(ep: &mut Endpoint, mr: &MrInfo, seed: u8) {
    if let Some(m) = ep.mr_mut(mr.lkey) {
        for (i, b) in m.bytes_mut().iter_mut().enumerate() {
            *b = seed
                .wrapping_add((i as u8).wrapping_mul(31))
                .wrapping_add((i >> 8) as u8);
        }
    }
}

/// What the check of a finished flow found.
#[derive(Default)]
pub(super) struct Verified {
    /// Messages whose bytes (or atomic result) arrived right.
    pub(super) messages: u64,
    /// Their bytes.
    pub(super) bytes: u64,
    /// What did not.
    pub(super) errors: Vec<String>,
}

impl Flow {
    /// QP pair number `q` between `a` and `b`, connected with `opts`, its buffers registered for
    /// `sched` and the sources filled with the pair's pattern.
    pub(super) fn connect(
        a: &mut Endpoint,
        b: &mut Endpoint,
        q: u32,
        opts: &RcOptions,
        sched: &Schedule,
    ) -> anyhow::Result<Flow> {
        let (sa, sb) = connect_rc(a, b, opts).context("connecting the QPs")?;
        let access = AccessFlags::all();
        let span = sched.span();
        let reg =
            |ep: &mut Endpoint, side: &RcSide, len: u64| ep.reg_mr(side.pd, len as usize, access);
        let a_src = reg(a, &sa, span);
        let a_dst = reg(a, &sa, span);
        let b_src = reg(b, &sb, span);
        let b_dst = reg(b, &sb, span);
        let counter = reg(b, &sb, 8);
        fill_pattern(a, &a_src, q as u8);
        fill_pattern(b, &b_src, q as u8 ^ 0x5a);
        Ok(Flow {
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
        })
    }

    /// One turn: keeps B's receives and A's requests posted, reaps both completion queues.
    /// Returns whether every message has completed.
    pub(super) fn step(&mut self, a: &mut Endpoint, b: &mut Endpoint, sched: &Schedule) -> bool {
        self.post_recvs(b, sched);
        self.post_sends(a, sched);
        self.reap_sends(a);
        self.reap_recvs(b, sched);
        self.completed >= sched.count && self.recvs_done >= sched.recvs_wanted()
    }

    /// Keeps B's receive queue stocked in message order.
    fn post_recvs(&mut self, b: &mut Endpoint, sched: &Schedule) {
        while self.recvs_posted < sched.recvs_wanted()
            && self.recvs_posted - self.recvs_done < sched.depth
        {
            let i = sched.consuming[self.recvs_posted as usize];
            let len = if sched.op(i) == Op::WriteImm {
                0
            } else {
                sched.size
            };
            let wr = RecvWr::new(
                u64::from(i),
                Sge {
                    addr: self.b_dst.addr + sched.slot(i),
                    length: len,
                    lkey: self.b_dst.lkey,
                },
            );
            if b.post_recv(self.b.qpn, wr).is_err() {
                break;
            }
            self.recvs_posted += 1;
        }
    }

    /// The work request of message `i`.
    fn request(&self, i: u32, sched: &Schedule) -> SendWr {
        let at = sched.slot(i);
        let size = sched.size;
        let sge = |m: &MrInfo, len: u32| Sge {
            addr: m.addr + at,
            length: len,
            lkey: m.lkey,
        };
        let (opcode, local) = match sched.op(i) {
            Op::Write => (
                WrOpcode::RdmaWrite {
                    remote_addr: self.b_dst.addr + at,
                    rkey: self.b_dst.rkey,
                },
                sge(&self.a_src, size),
            ),
            Op::WriteImm => (
                WrOpcode::RdmaWriteWithImm {
                    remote_addr: self.b_dst.addr + at,
                    rkey: self.b_dst.rkey,
                    imm: i,
                },
                sge(&self.a_src, size),
            ),
            Op::Read => (
                WrOpcode::RdmaRead {
                    remote_addr: self.b_src.addr + at,
                    rkey: self.b_src.rkey,
                },
                sge(&self.a_dst, size),
            ),
            Op::Send => (WrOpcode::Send, sge(&self.a_src, size)),
            Op::SendImm => (WrOpcode::SendWithImm { imm: i }, sge(&self.a_src, size)),
            Op::Atomic => (
                WrOpcode::AtomicFetchAndAdd {
                    remote_addr: self.counter.addr,
                    rkey: self.counter.rkey,
                    add: u64::from(i) + 1,
                },
                sge(&self.a_dst, 8),
            ),
        };
        SendWr::new(u64::from(i), opcode, local)
    }

    /// Keeps A's window of requests full.
    fn post_sends(&mut self, a: &mut Endpoint, sched: &Schedule) {
        while self.posted < sched.count && self.posted - self.completed < sched.depth {
            if a.post_send(self.a.qpn, self.request(self.posted, sched))
                .is_err()
            {
                break;
            }
            self.posted += 1;
        }
    }

    /// A's completions, each expected in order.
    fn reap_sends(&mut self, a: &mut Endpoint) {
        while let Some(wc) = a.poll_cq_one(self.a.cq) {
            if wc.status != WcStatus::Success || wc.wr_id != u64::from(self.completed) {
                self.errors.push(format!(
                    "qp {}: send completion {:?} for wr {} (expected wr {})",
                    self.a.qpn, wc.status, wc.wr_id, self.completed
                ));
            }
            self.completed += 1;
        }
    }

    /// B's receive completions, each the next consuming message with its immediate and length.
    fn reap_recvs(&mut self, b: &mut Endpoint, sched: &Schedule) {
        while let Some(wc) = b.poll_cq_one(self.b.cq) {
            let want = sched.consuming.get(self.recvs_done as usize).copied();
            let i = want.unwrap_or(u32::MAX);
            let (op, imm) = match sched.op(i) {
                Op::WriteImm => (WcOpcode::RecvRdmaWithImm, Some(i)),
                Op::SendImm => (WcOpcode::Recv, Some(i)),
                _ => (WcOpcode::Recv, None),
            };
            if wc.status != WcStatus::Success
                || Some(wc.wr_id) != want.map(u64::from)
                || wc.opcode != op
                || wc.imm_data != imm
                || wc.byte_len != sched.size
            {
                self.errors.push(format!(
                    "qp {}: receive completion {wc:?} (expected wr {want:?})",
                    self.b.qpn
                ));
            }
            self.recvs_done += 1;
        }
    }

    /// Checks what every completed message left at its destination, and that B's counter saw
    /// each atomic exactly once.
    pub(super) fn verify(&self, a: &Endpoint, b: &Endpoint, sched: &Schedule) -> Verified {
        let view = |ep: &Endpoint, m: &MrInfo, at: u64, len: u64| {
            ep.mr(m.lkey)
                .and_then(|r| r.bytes().get(at as usize..(at + len) as usize))
                .map(<[u8]>::to_vec)
        };
        let mut v = Verified::default();
        let mut expected_counter = 0u64;
        for i in 0..self.completed.min(sched.count) {
            let at = sched.slot(i);
            let len = u64::from(sched.size);
            let ok = match sched.op(i) {
                Op::Write | Op::WriteImm | Op::Send | Op::SendImm => {
                    view(a, &self.a_src, at, len) == view(b, &self.b_dst, at, len)
                }
                Op::Read => view(a, &self.a_dst, at, len) == view(b, &self.b_src, at, len),
                Op::Atomic => {
                    let orig = view(a, &self.a_dst, at, 8)
                        .and_then(|v| v.try_into().ok())
                        .map(u64::from_le_bytes);
                    let ok = orig == Some(expected_counter);
                    expected_counter += u64::from(i) + 1;
                    ok
                }
            };
            if ok {
                v.messages += 1;
                v.bytes += if sched.op(i) == Op::Atomic { 8 } else { len };
            } else {
                v.errors.push(format!(
                    "qp {}: message {i} ({:?}) has wrong bytes at its destination",
                    self.a.qpn,
                    sched.op(i)
                ));
            }
        }
        let counter = view(b, &self.counter, 0, 8)
            .and_then(|v| v.try_into().ok())
            .map(u64::from_le_bytes);
        if counter != Some(expected_counter) {
            v.errors.push(format!("qp {}: atomic counter is {counter:?}, expected {expected_counter} (each atomic exactly once)", self.a.qpn));
        }
        v
    }
}
