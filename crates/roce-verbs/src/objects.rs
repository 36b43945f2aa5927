//! The verbs objects application threads and the progress thread share: completion queues
//! (lock-free queues of completions), completion channels (an eventfd plus the CQs that fired),
//! queue pairs (state and queue accounting in atomics) and the work requests handed over.
//!
//! Application threads never touch the transport: they push work through the device's command
//! queue and pop completions here. Not here: the C structs (see `abi`).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_queue::SegQueue;
use roce_proto::mr::PdHandle;
use roce_proto::verbs::{QpState, SendFlags, Sgl, WcOpcode, WcStatus, WrOpcode};

use crate::error::VerbsError;
use crate::sys::eventfd::EventFd;

/// One completion as `ibv_poll_cq` returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The application's work request id.
    pub wr_id: u64,
    /// Outcome.
    pub status: WcStatus,
    /// What completed.
    pub opcode: WcOpcode,
    /// Bytes received (receives) or read (READ).
    pub byte_len: u32,
    /// Immediate data (host order), if the message carried some.
    pub imm: Option<u32>,
    /// The local QP.
    pub qp_num: u32,
    /// The remote QP (receives).
    pub src_qp: u32,
}

/// A completion channel: the eventfd programs wait on and the CQs that fired, in order.
#[derive(Debug)]
pub struct CompChannel {
    fd: EventFd,
    events: SegQueue<usize>,
}

impl CompChannel {
    /// A new channel.
    pub fn new() -> Result<CompChannel, VerbsError> {
        Ok(CompChannel {
            fd: EventFd::new().map_err(VerbsError::Io)?,
            events: SegQueue::new(),
        })
    }

    /// The descriptor (`channel->fd`).
    pub fn fd(&self) -> i32 {
        self.fd.raw()
    }

    /// Queues an event for the CQ known to the application as `cookie`.
    pub(crate) fn notify(&self, cookie: usize) {
        // Queue first: a successful wait then always finds its event.
        self.events.push(cookie);
        self.fd.signal();
    }

    /// Waits for the next event (or `WouldBlock` on a non-blocking descriptor); returns the
    /// cookie of the CQ it belongs to.
    pub fn get_event(&self) -> Result<usize, VerbsError> {
        self.fd.wait().map_err(VerbsError::Io)?;
        self.events
            .pop()
            .ok_or(VerbsError::Internal("an event without its CQ"))
    }
}

/// Empty polls between two yields of the CPU (the progress thread may share it).
const EMPTY_POLLS_BEFORE_YIELD: u32 = 64;
/// Empty polls after which the yields become short sleeps.
const EMPTY_POLLS_BEFORE_SLEEP: u32 = 4096;

/// A completion queue.
#[derive(Debug)]
pub struct Cq {
    queue: SegQueue<Completion>,
    channel: Option<Arc<CompChannel>>,
    armed: AtomicBool,
    cookie: AtomicUsize,
    /// Entries the application asked for.
    pub cqe: u32,
    empty_polls: AtomicU32,
}

impl Cq {
    /// A queue of `cqe` entries, signalling `channel` when armed.
    pub fn new(cqe: u32, channel: Option<Arc<CompChannel>>) -> Cq {
        Cq {
            queue: SegQueue::new(),
            channel,
            armed: AtomicBool::new(false),
            cookie: AtomicUsize::new(0),
            cqe,
            empty_polls: AtomicU32::new(0),
        }
    }

    /// Sets what events of this CQ carry (the `struct ibv_cq *`).
    pub fn set_cookie(&self, cookie: usize) {
        self.cookie.store(cookie, Ordering::Relaxed);
    }

    /// Pops up to `max` completions into `out`; returns how many.
    pub fn poll(&self, max: usize, mut out: impl FnMut(usize, Completion)) -> usize {
        let mut n = 0;
        while n < max {
            match self.queue.pop() {
                Some(c) => {
                    out(n, c);
                    n += 1;
                }
                None => break,
            }
        }
        if n == 0 {
            // A program spinning on an empty CQ must not starve the progress thread (on a
            // machine with fewer free cores than spinning threads): every so often it yields,
            // and after a long empty spell it sleeps a little.
            let empty = self.empty_polls.fetch_add(1, Ordering::Relaxed) + 1;
            if empty % EMPTY_POLLS_BEFORE_YIELD == 0 {
                if empty >= EMPTY_POLLS_BEFORE_SLEEP {
                    std::thread::sleep(std::time::Duration::from_micros(20));
                } else {
                    std::thread::yield_now();
                }
            }
        } else {
            self.empty_polls.store(0, Ordering::Relaxed);
        }
        n
    }

    /// Requests an event on the channel for the next completion (`ibv_req_notify_cq`).
    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// Completions waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// No completion waiting.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Appends a completion and fires the channel if the CQ is armed.
    pub(crate) fn push(&self, c: Completion) {
        self.queue.push(c);
        if self.armed.swap(false, Ordering::SeqCst) {
            if let Some(ch) = &self.channel {
                ch.notify(self.cookie.load(Ordering::Relaxed));
            }
        }
    }
}

/// Queue sizes of a QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpCaps {
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth.
    pub max_recv_wr: u32,
    /// SGEs per send.
    pub max_send_sge: u32,
    /// SGEs per receive.
    pub max_recv_sge: u32,
    /// Inline bytes per send.
    pub max_inline: u32,
}

/// What `create_qp` needs.
#[derive(Clone, Debug)]
pub struct QpSpec {
    /// Protection domain.
    pub pd: PdHandle,
    /// CQ of send completions.
    pub send_cq: Arc<Cq>,
    /// CQ of receive completions.
    pub recv_cq: Arc<Cq>,
    /// Queue sizes.
    pub caps: QpCaps,
    /// Every send is signaled.
    pub sq_sig_all: bool,
}

/// A queue pair as application threads see it.
#[derive(Debug)]
pub struct Qp {
    /// QP number.
    pub qpn: u32,
    /// Creation parameters.
    pub spec: QpSpec,
    state: AtomicU8,
    sq_posted: AtomicU64,
    sq_done: AtomicU64,
    rq_posted: AtomicU64,
    rq_done: AtomicU64,
}

fn state_code(s: QpState) -> u8 {
    match s {
        QpState::Reset => 0,
        QpState::Init => 1,
        QpState::Rtr => 2,
        QpState::Rts => 3,
        QpState::Sqd => 4,
        QpState::Sqe => 5,
        QpState::Err => 6,
    }
}

fn state_of(code: u8) -> QpState {
    match code {
        1 => QpState::Init,
        2 => QpState::Rtr,
        3 => QpState::Rts,
        4 => QpState::Sqd,
        5 => QpState::Sqe,
        6 => QpState::Err,
        _ => QpState::Reset,
    }
}

impl Qp {
    /// A QP in RESET.
    pub(crate) fn new(qpn: u32, spec: QpSpec) -> Qp {
        Qp {
            qpn,
            spec,
            state: AtomicU8::new(state_code(QpState::Reset)),
            sq_posted: AtomicU64::new(0),
            sq_done: AtomicU64::new(0),
            rq_posted: AtomicU64::new(0),
            rq_done: AtomicU64::new(0),
        }
    }

    /// The state as the application last set it (or ERR once the transport failed).
    pub fn state(&self) -> QpState {
        state_of(self.state.load(Ordering::Acquire))
    }

    pub(crate) fn set_state(&self, s: QpState) {
        self.state.store(state_code(s), Ordering::Release);
    }

    /// Takes `n` send-queue slots, or fails with `QueueFull` when fewer are free.
    pub fn reserve_send(&self, n: u32) -> Result<(), VerbsError> {
        reserve(
            &self.sq_posted,
            &self.sq_done,
            n,
            self.spec.caps.max_send_wr,
        )
    }

    /// Takes `n` receive-queue slots, or fails with `QueueFull` when fewer are free.
    pub fn reserve_recv(&self, n: u32) -> Result<(), VerbsError> {
        reserve(
            &self.rq_posted,
            &self.rq_done,
            n,
            self.spec.caps.max_recv_wr,
        )
    }

    /// Back to RESET: the transport dropped both queues.
    pub(crate) fn reset_queues(&self) {
        let sq = self.sq_posted.load(Ordering::Acquire);
        self.sq_done.store(sq, Ordering::Release);
        let rq = self.rq_posted.load(Ordering::Acquire);
        self.rq_done.store(rq, Ordering::Release);
    }

    pub(crate) fn send_done(&self) {
        self.sq_done.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn recv_done(&self) {
        self.rq_done.fetch_add(1, Ordering::AcqRel);
    }
}

fn reserve(posted: &AtomicU64, done: &AtomicU64, n: u32, max: u32) -> Result<(), VerbsError> {
    let n = u64::from(n);
    let before = posted.fetch_add(n, Ordering::AcqRel);
    let outstanding = (before + n).saturating_sub(done.load(Ordering::Acquire));
    if outstanding > u64::from(max) {
        posted.fetch_sub(n, Ordering::AcqRel);
        return Err(VerbsError::QueueFull);
    }
    Ok(())
}

/// A send work request handed to the progress thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendRequest {
    /// The application's id.
    pub wr_id: u64,
    /// The operation.
    pub opcode: WrOpcode,
    /// Local data (empty for inline sends).
    pub sgl: Sgl,
    /// A completion is wanted on success.
    pub signaled: bool,
    /// Fence and solicited-event flags.
    pub flags: SendFlags,
    /// The bytes of an inline send, copied when it was posted.
    pub inline: Option<Vec<u8>>,
}

/// A receive work request handed to the progress thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecvRequest {
    /// The application's id.
    pub wr_id: u64,
    /// Where the data goes.
    pub sgl: Sgl,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_slots_are_reserved_up_to_the_depth_and_freed_by_completions() {
        let cq = Arc::new(Cq::new(4, None));
        let mut t = roce_proto::mr::MrTable::default();
        let spec = QpSpec {
            pd: t.alloc_pd(),
            send_cq: cq.clone(),
            recv_cq: cq,
            caps: QpCaps {
                max_send_wr: 2,
                max_recv_wr: 1,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline: 0,
            },
            sq_sig_all: false,
        };
        let qp = Qp::new(17, spec);
        assert!(qp.reserve_send(2).is_ok());
        assert!(matches!(qp.reserve_send(1), Err(VerbsError::QueueFull)));
        qp.send_done();
        assert!(qp.reserve_send(1).is_ok());
        assert!(qp.reserve_recv(1).is_ok());
        assert!(matches!(qp.reserve_recv(1), Err(VerbsError::QueueFull)));
        qp.set_state(QpState::Rts);
        assert_eq!(qp.state(), QpState::Rts);
    }

    #[test]
    fn an_armed_cq_fires_its_channel_once() {
        let ch = Arc::new(CompChannel::new().expect("channel"));
        let cq = Cq::new(4, Some(ch.clone()));
        cq.set_cookie(0x1234);
        let wc = Completion {
            wr_id: 1,
            status: WcStatus::Success,
            opcode: WcOpcode::Send,
            byte_len: 0,
            imm: None,
            qp_num: 17,
            src_qp: 0,
        };
        cq.push(wc);
        cq.arm();
        cq.push(wc);
        cq.push(wc);
        assert_eq!(ch.get_event().ok(), Some(0x1234));
        assert!(ch.events.is_empty());
        let mut got = Vec::new();
        assert_eq!(cq.poll(8, |_, c| got.push(c.wr_id)), 3);
        assert_eq!(got, [1, 1, 1]);
    }
}
