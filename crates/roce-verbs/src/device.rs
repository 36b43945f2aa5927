//! The verbs as safe Rust: what the `extern "C"` shims call. A [`Device`] is the application
//! side of the progress thread: calls that create or change something wait for its answer over
//! a one-slot channel; posts are checked here (state, queue room) and handed over without
//! waiting; completions are popped from the CQs' lock-free queues.

use std::sync::Arc;
use std::thread::Thread;

use crossbeam_channel::{bounded, Sender};
use roce_proto::mr::{MrInfo, PdHandle};
use roce_proto::verbs::{AccessFlags, QpAttr, QpState};

use crate::command::{Command, Reply};
use crate::error::VerbsError;
use crate::info::DeviceInfo;
use crate::objects::{CompChannel, Cq, Qp, QpSpec, RecvRequest, SendRequest};
use crate::sys::memory::AppMemory;

/// The one device of the process (`roce0`), backed by the progress thread.
#[derive(Debug)]
pub struct Device {
    tx: Sender<Command>,
    waker: Thread,
    info: DeviceInfo,
}

impl Device {
    pub(crate) fn new(tx: Sender<Command>, waker: Thread, info: DeviceInfo) -> Device {
        Device { tx, waker, info }
    }

    /// The port's addresses and MTU.
    pub fn info(&self) -> DeviceInfo {
        self.info
    }

    fn send(&self, cmd: Command) -> Result<(), VerbsError> {
        // The progress thread stayed with the parent: nobody here would ever answer.
        if crate::sys::fork::forked() {
            return Err(VerbsError::Forked);
        }
        self.tx.send(cmd).map_err(|_| VerbsError::Gone)?;
        // The progress thread may be parked after a quiet spell.
        self.waker.unpark();
        Ok(())
    }

    fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, VerbsError> {
        let (tx, rx) = bounded(1);
        self.send(make(tx))?;
        rx.recv().map_err(|_| VerbsError::Gone)
    }

    /// `ibv_alloc_pd`.
    pub fn alloc_pd(&self) -> Result<PdHandle, VerbsError> {
        self.call(Command::AllocPd)
    }

    /// `ibv_reg_mr_iova2`: `mem` seen by peers (and SGEs) at `iova`.
    pub fn reg_mr(
        &self,
        pd: PdHandle,
        mem: AppMemory,
        iova: u64,
        access: AccessFlags,
    ) -> Result<MrInfo, VerbsError> {
        self.call(|reply| Command::RegMr {
            pd,
            mem,
            iova,
            access,
            reply,
        })?
    }

    /// `ibv_dereg_mr`: once it returns, the application memory is no longer touched.
    pub fn dereg_mr(&self, lkey: u32) -> Result<(), VerbsError> {
        self.call(|reply| Command::DeregMr { lkey, reply })?
    }

    /// `ibv_create_cq`.
    pub fn create_cq(
        &self,
        cqe: u32,
        channel: Option<Arc<CompChannel>>,
    ) -> Result<Arc<Cq>, VerbsError> {
        let cq = Arc::new(Cq::new(cqe, channel));
        let c = cq.clone();
        self.call(|reply| Command::CreateCq { cq: c, reply })?;
        Ok(cq)
    }

    /// `ibv_destroy_cq`.
    pub fn destroy_cq(&self, cq: &Arc<Cq>) -> Result<(), VerbsError> {
        let cq = cq.clone();
        self.call(|reply| Command::DestroyCq { cq, reply })?
    }

    /// `ibv_create_qp` for an RC QP.
    pub fn create_qp(&self, spec: QpSpec) -> Result<Arc<Qp>, VerbsError> {
        self.call(|reply| Command::CreateQp { spec, reply })?
    }

    /// `ibv_modify_qp`, translated.
    pub fn modify_qp(&self, qp: &Arc<Qp>, attr: QpAttr) -> Result<(), VerbsError> {
        let qp = qp.clone();
        self.call(|reply| Command::ModifyQp { qp, attr, reply })?
    }

    /// `ibv_destroy_qp`.
    pub fn destroy_qp(&self, qp: &Qp) -> Result<(), VerbsError> {
        let qpn = qp.qpn;
        self.call(|reply| Command::DestroyQp { qpn, reply })
    }

    /// `ibv_post_send` of already-checked requests: refused as a whole when the QP's state
    /// does not allow sends or its queue has no room for all of them.
    pub fn post_send(&self, qp: &Qp, wrs: Vec<SendRequest>) -> Result<(), VerbsError> {
        if matches!(qp.state(), QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err(VerbsError::Invalid(format!(
                "QP {:#x} is in {:?}: sends need RTS",
                qp.qpn,
                qp.state()
            )));
        }
        qp.reserve_send(wrs.len() as u32)?;
        self.send(Command::PostSend { qpn: qp.qpn, wrs })
    }

    /// `ibv_post_recv` of already-checked requests.
    pub fn post_recv(&self, qp: &Qp, wrs: Vec<RecvRequest>) -> Result<(), VerbsError> {
        if qp.state() == QpState::Reset {
            return Err(VerbsError::Invalid(format!(
                "QP {:#x} is in RESET: receives need INIT or later",
                qp.qpn
            )));
        }
        qp.reserve_recv(wrs.len() as u32)?;
        self.send(Command::PostRecv { qpn: qp.qpn, wrs })
    }

    /// The counters, `(name, value)` with the mlx5 / rxe names.
    pub fn counters(&self) -> Result<Vec<(&'static str, u64)>, VerbsError> {
        self.call(Command::Counters)
    }

    /// Lets the last frames leave and writes the counters file (at process exit; gives up
    /// after two seconds rather than hang the exit).
    pub(crate) fn finish(&self) -> Result<(), VerbsError> {
        let (tx, rx) = bounded(1);
        self.send(Command::Finish(tx))?;
        rx.recv_timeout(std::time::Duration::from_secs(2))
            .map_err(|_| VerbsError::Gone)
    }
}
