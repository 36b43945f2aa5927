//! What application threads ask of the progress thread, through one lock-free MPSC channel (a
//! thread's commands stay in order). Calls that return something carry a one-slot reply channel;
//! posts do not wait.

use std::sync::Arc;

use crossbeam_channel::Sender;
use roce_proto::mr::{MrInfo, PdHandle};
use roce_proto::verbs::{AccessFlags, QpAttr};

use crate::error::VerbsError;
use crate::objects::{Cq, Qp, QpSpec, RecvRequest, SendRequest};
use crate::sys::memory::AppMemory;

/// Where an answer goes.
pub(crate) type Reply<T> = Sender<T>;

/// One request to the progress thread.
#[derive(Debug)]
pub(crate) enum Command {
    /// A new protection domain.
    AllocPd(Reply<PdHandle>),
    /// Registers application memory at address `iova`.
    RegMr {
        pd: PdHandle,
        mem: AppMemory,
        iova: u64,
        access: AccessFlags,
        reply: Reply<Result<MrInfo, VerbsError>>,
    },
    /// Deregisters a region; once answered, the application memory is no longer touched.
    DeregMr {
        lkey: u32,
        reply: Reply<Result<(), VerbsError>>,
    },
    /// Gives a CQ its transport queue.
    CreateCq { cq: Arc<Cq>, reply: Reply<()> },
    /// Stops delivering to a CQ (refused while a QP uses it).
    DestroyCq {
        cq: Arc<Cq>,
        reply: Reply<Result<(), VerbsError>>,
    },
    /// A new RC QP in RESET.
    CreateQp {
        spec: QpSpec,
        reply: Reply<Result<Arc<Qp>, VerbsError>>,
    },
    /// `ibv_modify_qp`, already translated (an address vector's MAC is resolved by ARP/NDP).
    ModifyQp {
        qp: Arc<Qp>,
        attr: QpAttr,
        reply: Reply<Result<(), VerbsError>>,
    },
    /// Destroys a QP (outstanding work is dropped without completions).
    DestroyQp { qpn: u32, reply: Reply<()> },
    /// Send work requests, already validated and counted against the queue.
    PostSend { qpn: u32, wrs: Vec<SendRequest> },
    /// Receive work requests, already validated and counted against the queue.
    PostRecv { qpn: u32, wrs: Vec<RecvRequest> },
    /// The counters (mlx5 / rxe names).
    Counters(Reply<Vec<(&'static str, u64)>>),
    /// The process is exiting: let the last frames (ACKs) leave, write the counters file.
    /// Handled by the progress thread itself.
    Finish(Reply<()>),
}
