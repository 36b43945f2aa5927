//! The verbs vocabulary: work requests, scatter/gather entries, completions, access flags and
//! queue-pair attributes, shaped after libibverbs but as plain Rust values.
//!
//! Nothing here does work; the [`crate::endpoint::Endpoint`] and [`crate::qp`] act on these types.

use std::net::IpAddr;

use arrayvec::ArrayVec;
use bitflags::bitflags;
use serde::Serialize;

use crate::psn::Psn;
use crate::wire::EthernetAddress;

/// Most scatter/gather entries one work request carries.
pub const MAX_SGE: usize = 4;

bitflags! {
    /// What a memory region (or a QP's responder) allows.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
    pub struct AccessFlags: u32 {
        /// The local side may write (RDMA READ responses and receives land here).
        const LOCAL_WRITE = 1 << 0;
        /// A remote peer may RDMA WRITE.
        const REMOTE_WRITE = 1 << 1;
        /// A remote peer may RDMA READ.
        const REMOTE_READ = 1 << 2;
        /// A remote peer may run atomics.
        const REMOTE_ATOMIC = 1 << 3;
    }
}

bitflags! {
    /// Per-work-request flags.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct SendFlags: u32 {
        /// Generate a completion on success (errors always complete).
        const SIGNALED = 1 << 0;
        /// Wait for earlier RDMA READs and atomics to complete before starting.
        const FENCE = 1 << 1;
        /// Set the solicited-event bit on the last packet.
        const SOLICITED = 1 << 2;
    }
}

/// One scatter/gather entry: `length` bytes at `addr` of the region named by `lkey`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Address inside the region (the region's `addr` plus an offset).
    pub addr: u64,
    /// Bytes.
    pub length: u32,
    /// The region's local key.
    pub lkey: u32,
}

/// A scatter/gather list (at most [`MAX_SGE`] entries, stored inline).
pub type Sgl = ArrayVec<Sge, MAX_SGE>;

/// Total bytes of a scatter/gather list.
pub fn sgl_len(sgl: &[Sge]) -> u64 {
    sgl.iter().map(|s| u64::from(s.length)).sum()
}

/// What a send work request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrOpcode {
    /// SEND into the peer's next receive.
    Send,
    /// SEND carrying 32 bits of immediate data.
    SendWithImm {
        /// Immediate data (sent in network order).
        imm: u32,
    },
    /// SEND that also invalidates `rkey` at the responder (`IBV_WR_SEND_WITH_INV`): once the
    /// message is placed, the peer's region with that rkey no longer takes remote access.
    SendWithInv {
        /// The peer's rkey to invalidate.
        rkey: u32,
    },
    /// RDMA WRITE to `remote_addr` under `rkey`.
    RdmaWrite {
        /// Remote virtual address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA WRITE that also consumes a receive on the peer and carries immediate data.
    RdmaWriteWithImm {
        /// Remote virtual address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data.
        imm: u32,
    },
    /// RDMA READ from `remote_addr` under `rkey` into the local SGL.
    RdmaRead {
        /// Remote virtual address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// 64-bit compare-and-swap; the original value lands in the local SGL (8 bytes).
    AtomicCmpAndSwp {
        /// Remote virtual address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Value to compare with.
        compare: u64,
        /// Value stored when equal.
        swap: u64,
    },
    /// 64-bit fetch-and-add; the original value lands in the local SGL (8 bytes).
    AtomicFetchAndAdd {
        /// Remote virtual address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Value to add.
        add: u64,
    },
    /// Invalidates a local region (`IBV_WR_LOCAL_INV`): its lkey and rkey stop resolving. Sends
    /// nothing; runs once every earlier work request has completed (as if fenced), so none of
    /// them loses its memory half-way.
    LocalInv {
        /// The region's rkey or lkey.
        rkey: u32,
    },
}

/// A work request's operation without its operands: libibverbs' `enum ibv_wr_opcode` for the
/// operations a remote peer sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrKind {
    /// `IBV_WR_SEND`.
    Send,
    /// `IBV_WR_SEND_WITH_IMM`.
    SendWithImm,
    /// `IBV_WR_RDMA_WRITE`.
    RdmaWrite,
    /// `IBV_WR_RDMA_WRITE_WITH_IMM`.
    RdmaWriteWithImm,
    /// `IBV_WR_RDMA_READ`.
    RdmaRead,
    /// `IBV_WR_ATOMIC_CMP_AND_SWP`.
    AtomicCmpAndSwp,
    /// `IBV_WR_ATOMIC_FETCH_AND_ADD`.
    AtomicFetchAndAdd,
}

/// Every operand an `ibv_send_wr` can carry next to its opcode; [`WrOpcode::new`] takes the
/// ones the kind uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WrOperands {
    /// Remote virtual address (RDMA and atomics).
    pub remote_addr: u64,
    /// Remote key (RDMA and atomics).
    pub rkey: u32,
    /// Immediate data (the `WithImm` kinds).
    pub imm: u32,
    /// Compare value (CmpSwap) or addend (FetchAdd).
    pub compare_add: u64,
    /// Swap value (CmpSwap).
    pub swap: u64,
}

impl WrOpcode {
    /// The opcode of `kind` with the operands it uses from `o`.
    pub fn new(kind: WrKind, o: WrOperands) -> Self {
        let WrOperands {
            remote_addr,
            rkey,
            imm,
            compare_add,
            swap,
        } = o;
        match kind {
            WrKind::Send => WrOpcode::Send,
            WrKind::SendWithImm => WrOpcode::SendWithImm { imm },
            WrKind::RdmaWrite => WrOpcode::RdmaWrite { remote_addr, rkey },
            WrKind::RdmaWriteWithImm => WrOpcode::RdmaWriteWithImm {
                remote_addr,
                rkey,
                imm,
            },
            WrKind::RdmaRead => WrOpcode::RdmaRead { remote_addr, rkey },
            WrKind::AtomicCmpAndSwp => WrOpcode::AtomicCmpAndSwp {
                remote_addr,
                rkey,
                compare: compare_add,
                swap,
            },
            WrKind::AtomicFetchAndAdd => WrOpcode::AtomicFetchAndAdd {
                remote_addr,
                rkey,
                add: compare_add,
            },
        }
    }

    /// RDMA READ or an atomic: needs a response and counts against `max_rd_atomic`.
    pub fn is_read_or_atomic(&self) -> bool {
        matches!(
            self,
            WrOpcode::RdmaRead { .. }
                | WrOpcode::AtomicCmpAndSwp { .. }
                | WrOpcode::AtomicFetchAndAdd { .. }
        )
    }

    /// Consumes a receive work request at the responder (SENDs, RDMA WRITE with immediate).
    pub fn consumes_receive(&self) -> bool {
        matches!(
            self,
            WrOpcode::Send
                | WrOpcode::SendWithImm { .. }
                | WrOpcode::SendWithInv { .. }
                | WrOpcode::RdmaWriteWithImm { .. }
        )
    }

    /// Done locally: sends nothing and occupies no PSN.
    pub fn is_local(&self) -> bool {
        matches!(self, WrOpcode::LocalInv { .. })
    }

    /// An atomic operation.
    pub fn is_atomic(&self) -> bool {
        matches!(
            self,
            WrOpcode::AtomicCmpAndSwp { .. } | WrOpcode::AtomicFetchAndAdd { .. }
        )
    }

    /// The completion opcode reported for this request.
    pub fn wc_opcode(&self) -> WcOpcode {
        match self {
            WrOpcode::Send | WrOpcode::SendWithImm { .. } | WrOpcode::SendWithInv { .. } => {
                WcOpcode::Send
            }
            WrOpcode::RdmaWrite { .. } | WrOpcode::RdmaWriteWithImm { .. } => WcOpcode::RdmaWrite,
            WrOpcode::RdmaRead { .. } => WcOpcode::RdmaRead,
            WrOpcode::AtomicCmpAndSwp { .. } => WcOpcode::CompSwap,
            WrOpcode::AtomicFetchAndAdd { .. } => WcOpcode::FetchAdd,
            WrOpcode::LocalInv { .. } => WcOpcode::LocalInv,
        }
    }
}

/// A send work request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendWr {
    /// Caller's cookie, returned in the completion.
    pub wr_id: u64,
    /// The operation.
    pub opcode: WrOpcode,
    /// Local data: gathered for SEND/WRITE, scattered into for READ/atomics.
    pub sgl: Sgl,
    /// Signaled, fence, solicited.
    pub flags: SendFlags,
}

impl SendWr {
    /// A signaled request with one SGE.
    #[inline]
    pub fn new(wr_id: u64, opcode: WrOpcode, sge: Sge) -> Self {
        // Built where it is returned, the SGE pushed in place: building the list apart and
        // moving it in would reload just-written bytes with wide loads (a store-forwarding stall).
        let mut wr = SendWr {
            wr_id,
            opcode,
            sgl: Sgl::new(),
            flags: SendFlags::SIGNALED,
        };
        wr.sgl.push(sge);
        wr
    }
}

/// A receive work request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecvWr {
    /// Caller's cookie, returned in the completion.
    pub wr_id: u64,
    /// Where incoming SEND data lands.
    pub sgl: Sgl,
}

impl RecvWr {
    /// A receive with one SGE.
    pub fn new(wr_id: u64, sge: Sge) -> Self {
        let mut sgl = Sgl::new();
        sgl.push(sge);
        RecvWr { wr_id, sgl }
    }
}

/// Completion status, named after `ibv_wc_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum WcStatus {
    /// Done.
    Success,
    /// Local length error (receive too small, SGL longer than allowed).
    LocLenErr,
    /// Local QP operation error.
    LocQpOpErr,
    /// Local protection error (bad lkey, bounds, access).
    LocProtErr,
    /// Flushed because the QP went to the error state.
    WrFlushErr,
    /// Unexpected response from the responder.
    BadRespErr,
    /// Local access error (response could not be written locally).
    LocAccessErr,
    /// The responder rejected the request as invalid (NAK invalid request).
    RemInvReqErr,
    /// The responder refused access (NAK remote access error).
    RemAccessErr,
    /// The responder failed (NAK remote operational error).
    RemOpErr,
    /// Transport retries (`retry_cnt`) exhausted.
    RetryExcErr,
    /// RNR retries (`rnr_retry`) exhausted.
    RnrRetryExcErr,
}

/// What a completion completes, named after `ibv_wc_opcode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum WcOpcode {
    /// A SEND (with or without immediate).
    Send,
    /// An RDMA WRITE (with or without immediate).
    RdmaWrite,
    /// An RDMA READ.
    RdmaRead,
    /// A compare-and-swap.
    CompSwap,
    /// A fetch-and-add.
    FetchAdd,
    /// A local invalidate.
    LocalInv,
    /// A receive consumed by a SEND.
    Recv,
    /// A receive consumed by an RDMA WRITE with immediate.
    RecvRdmaWithImm,
}

/// One work completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct WorkCompletion {
    /// The work request's cookie.
    pub wr_id: u64,
    /// Outcome.
    pub status: WcStatus,
    /// What completed.
    pub opcode: WcOpcode,
    /// Bytes transferred (receives: bytes received; READ: bytes read).
    pub byte_len: u32,
    /// Immediate data of a receive, if any.
    pub imm_data: Option<u32>,
    /// The rkey a SEND with Invalidate invalidated (`IBV_WC_WITH_INV`), on its receive.
    pub invalidated_rkey: Option<u32>,
    /// The local QP number.
    pub qp_num: u32,
}

/// Queue-pair states (IBTA 10.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum QpState {
    /// Fresh: nothing happens.
    Reset,
    /// Initialized: receives may be posted.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue drained: no new requests start.
    Sqd,
    /// Send queue error: receives still work.
    Sqe,
    /// Error: everything flushes.
    Err,
}

/// Path MTU: the payload bytes per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Mtu {
    /// 256 bytes.
    Mtu256,
    /// 512 bytes.
    Mtu512,
    /// 1024 bytes.
    Mtu1024,
    /// 2048 bytes.
    Mtu2048,
    /// 4096 bytes.
    Mtu4096,
}

impl Mtu {
    /// Payload bytes per packet.
    pub const fn bytes(self) -> u32 {
        match self {
            Mtu::Mtu256 => 256,
            Mtu::Mtu512 => 512,
            Mtu::Mtu1024 => 1024,
            Mtu::Mtu2048 => 2048,
            Mtu::Mtu4096 => 4096,
        }
    }

    /// The MTU of exactly `bytes` (256, 512, 1024, 2048 or 4096).
    pub const fn from_bytes(bytes: u32) -> Option<Mtu> {
        match bytes {
            256 => Some(Mtu::Mtu256),
            512 => Some(Mtu::Mtu512),
            1024 => Some(Mtu::Mtu1024),
            2048 => Some(Mtu::Mtu2048),
            4096 => Some(Mtu::Mtu4096),
            _ => None,
        }
    }
}

/// Where the peer is: its GID (an IPv4 or IPv6 address for RoCEv2) and MAC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressVector {
    /// The peer's IP address (its RoCEv2 GID).
    pub remote_ip: IpAddr,
    /// The peer's (or next hop's) MAC address.
    pub remote_mac: EthernetAddress,
    /// IP traffic class (DSCP << 2 | ECN); 0 lets the endpoint choose the ECN bits.
    pub traffic_class: u8,
    /// IPv4 TTL / IPv6 hop limit.
    pub hop_limit: u8,
}

/// Attributes for `modify_qp`; `None` leaves an attribute as it is. The transition to `state`
/// decides which attributes are required (see [`crate::qp::state`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpAttr {
    /// Target state.
    pub state: Option<QpState>,
    /// Path MTU (required for INIT→RTR).
    pub path_mtu: Option<Mtu>,
    /// Destination QP number, 24 bits (required for INIT→RTR).
    pub dest_qp_num: Option<u32>,
    /// Peer address (required for INIT→RTR).
    pub av: Option<AddressVector>,
    /// Expected receive PSN (required for INIT→RTR).
    pub rq_psn: Option<Psn>,
    /// First send PSN (required for RTR→RTS).
    pub sq_psn: Option<Psn>,
    /// Local ACK timeout exponent: 4.096 µs × 2^timeout; 0 = infinite (0..=31, required for RTR→RTS).
    pub timeout: Option<u8>,
    /// Transport retries (0..=7, required for RTR→RTS).
    pub retry_cnt: Option<u8>,
    /// RNR retries (0..=7, 7 = infinite; required for RTR→RTS).
    pub rnr_retry: Option<u8>,
    /// RNR NAK timer code the responder advertises (0..=31, required for INIT→RTR).
    pub min_rnr_timer: Option<u8>,
    /// Outstanding READ/atomic requests as requester (required for RTR→RTS).
    pub max_rd_atomic: Option<u8>,
    /// Outstanding READ/atomic requests as responder (required for INIT→RTR).
    pub max_dest_rd_atomic: Option<u8>,
    /// Remote access the responder allows (RESET→INIT; defaults to none).
    pub access_flags: Option<AccessFlags>,
    /// How lost packets are recovered (INIT→RTR; go-back-N unless both ends choose otherwise).
    pub recovery: Option<Recovery>,
}

/// How a queue pair recovers lost packets. Both ends of a connection must choose the same; a
/// peer that does not speak roce's selective repeat (rxe, any RNIC) needs [`Recovery::GoBackN`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum Recovery {
    /// IBA's: the responder drops what follows a gap and NAKs the gap once; the requester
    /// resends everything from the NAKed PSN on.
    #[default]
    GoBackN,
    /// IRN's (SIGCOMM'18): the responder places SEND and WRITE packets that arrive out of order
    /// (every such packet carries a [`placement`](crate::wire::placement) header), answers each
    /// with a NAK that also names it, and completes messages in order; the requester resends
    /// only the PSNs below the highest one acknowledged that were not. READs and atomics keep
    /// IBA's semantics: the responder executes them in order.
    SelectiveRepeat,
}

/// Sizes of a new QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpInit {
    /// Protection domain.
    pub pd: PdHandle,
    /// CQ for send completions.
    pub send_cq: CqHandle,
    /// CQ for receive completions.
    pub recv_cq: CqHandle,
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth.
    pub max_recv_wr: u32,
}

impl QpInit {
    /// A QP in `pd` whose sends and receives both complete on `cq`.
    pub fn shared_cq(pd: PdHandle, cq: CqHandle, max_send_wr: u32, max_recv_wr: u32) -> Self {
        QpInit {
            pd,
            send_cq: cq,
            recv_cq: cq,
            max_send_wr,
            max_recv_wr,
        }
    }
}

/// A protection domain of an endpoint (its memory regions live in [`crate::mr`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PdHandle(pub(crate) u32);

/// A completion queue of an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CqHandle(pub(crate) u32);

impl CqHandle {
    /// The queue's number on its endpoint (0, 1, ... in creation order): an index for tables
    /// kept beside the endpoint's CQs.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A completion queue: completions in the order they happened.
#[derive(Debug, Default)]
pub struct CompletionQueue {
    entries: std::collections::VecDeque<WorkCompletion>,
    overflows: u64,
    capacity: usize,
}

impl CompletionQueue {
    /// A queue holding up to `capacity` completions (allocated as they come, not up front:
    /// a fabric has a CQ per flow, and most hold a few completions at a time).
    pub fn new(capacity: usize) -> Self {
        CompletionQueue {
            entries: std::collections::VecDeque::new(),
            overflows: 0,
            capacity,
        }
    }

    /// Appends a completion; counts (and keeps) it past capacity rather than losing it.
    pub fn push(&mut self, wc: WorkCompletion) {
        if self.entries.len() >= self.capacity {
            self.overflows += 1;
        }
        self.entries.push_back(wc);
    }

    /// The oldest completion.
    pub fn pop(&mut self) -> Option<WorkCompletion> {
        self.entries.pop_front()
    }

    /// Completions waiting.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No completions waiting.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Times a completion arrived while the queue was full.
    pub fn overflows(&self) -> u64 {
        self.overflows
    }
}
