//! The progress thread's [`Engine`]: a [`ResolvingEndpoint`] (endpoint, ARP, NDP) plus the application
//! memory behind each registered region.
//!
//! The sans-IO endpoint keeps its own copy of every region, at the application's address (so
//! RETH addresses and keys work unchanged). The two copies meet where verbs semantics make the
//! application's bytes matter: before a SEND/WRITE is posted its gather list is loaded from the
//! application (`load`), a receive's or READ's landed bytes are stored back before its
//! completion is delivered (`store`), and here, for the passive side that never polls, an
//! incoming READ request loads the range it reads, an executed WRITE packet stores the bytes it
//! wrote and an executed atomic stores its 8 bytes. Executed means the responder accepted the
//! packet in sequence (its expected PSN moved past it), so duplicates and out-of-order packets
//! never overwrite the application.

use std::collections::HashMap;

use roce_proto::engine::Engine;
use roce_proto::mr::MrInfo;
use roce_proto::psn::Psn;
use roce_proto::resolving::ResolvingEndpoint;
use roce_proto::time::Instant;
use roce_proto::wire::parse_view_unverified;

use crate::sys::memory::AppMemory;

/// The application side of one registered region.
#[derive(Debug)]
struct AppRegion {
    mem: AppMemory,
    /// The region's address in RETHs and SGEs (`iova`; the application's pointer for
    /// `ibv_reg_mr`).
    iova: u64,
}

/// Where the current multi-packet WRITE of a QP writes next.
#[derive(Clone, Copy, Debug)]
struct WriteCursor {
    rkey: u32,
    next_va: u64,
}

/// What an incoming request does to memory, as far as the application copy cares.
#[derive(Clone, Copy, Debug)]
enum Access {
    /// A WRITE packet: the RETH (first/only packet) and the payload length.
    Write {
        reth: Option<(u32, u64)>,
        len: usize,
    },
    /// A READ request.
    Read { rkey: u32, va: u64, len: usize },
    /// A compare-and-swap or fetch-and-add.
    Atomic { rkey: u32, va: u64 },
}

#[derive(Clone, Copy, Debug)]
struct Incoming {
    qpn: u32,
    psn: Psn,
    access: Access,
}

enum Direction {
    /// Application → transport.
    Load,
    /// Transport → application.
    Store,
}

/// A host whose memory regions mirror application memory.
#[derive(Debug)]
pub(crate) struct VerbsEngine {
    host: ResolvingEndpoint,
    regions: HashMap<u32, AppRegion>,
    lkey_of_rkey: HashMap<u32, u32>,
    writes: HashMap<u32, WriteCursor>,
}

impl VerbsEngine {
    pub(crate) fn new(host: ResolvingEndpoint) -> Self {
        VerbsEngine {
            host,
            regions: HashMap::new(),
            lkey_of_rkey: HashMap::new(),
            writes: HashMap::new(),
        }
    }

    pub(crate) fn host(&self) -> &ResolvingEndpoint {
        &self.host
    }

    pub(crate) fn host_mut(&mut self) -> &mut ResolvingEndpoint {
        &mut self.host
    }

    /// Ties the transport's region `info` to the application's `mem`.
    pub(crate) fn add_region(&mut self, info: MrInfo, mem: AppMemory) {
        self.lkey_of_rkey.insert(info.rkey, info.lkey);
        self.regions.insert(
            info.lkey,
            AppRegion {
                mem,
                iova: info.addr,
            },
        );
    }

    /// Forgets a region (after its deregistration); the application memory is no longer used.
    pub(crate) fn remove_region(&mut self, lkey: u32) {
        self.regions.remove(&lkey);
        self.lkey_of_rkey.retain(|_, l| *l != lkey);
    }

    /// Forgets what is known about a destroyed QP.
    pub(crate) fn forget_qp(&mut self, qpn: u32) {
        self.writes.remove(&qpn);
    }

    /// Copies `len` bytes at `addr` of region `lkey` from the application to the transport.
    /// `false` when `lkey` is not an application region or the range leaves it.
    pub(crate) fn load(&mut self, lkey: u32, addr: u64, len: usize) -> bool {
        self.copy(lkey, addr, len, Direction::Load)
    }

    /// Copies `len` bytes at `addr` of region `lkey` from the transport to the application.
    pub(crate) fn store(&mut self, lkey: u32, addr: u64, len: usize) -> bool {
        self.copy(lkey, addr, len, Direction::Store)
    }

    fn copy(&mut self, lkey: u32, addr: u64, len: usize, dir: Direction) -> bool {
        let Some(region) = self.regions.get(&lkey) else {
            return false;
        };
        let Some(off) = addr
            .checked_sub(region.iova)
            .and_then(|o| usize::try_from(o).ok())
        else {
            return false;
        };
        let Some(mr) = self.host.endpoint_mut().mr_mut(lkey) else {
            return false;
        };
        let Some(bytes) = off
            .checked_add(len)
            .and_then(|end| mr.bytes_mut().get_mut(off..end))
        else {
            return false;
        };
        match dir {
            Direction::Load => region.mem.read(off, bytes),
            Direction::Store => region.mem.write(off, bytes),
        }
    }

    fn copy_remote(&mut self, rkey: u32, va: u64, len: usize, dir: Direction) {
        if let Some(&lkey) = self.lkey_of_rkey.get(&rkey) {
            // A range outside the region is the responder's to refuse (NAK); nothing to copy.
            let _ = self.copy(lkey, va, len, dir);
        }
    }

    /// The request `frame` carries, if it is one that touches memory.
    fn classify(&self, frame: &[u8]) -> Option<Incoming> {
        let view = parse_view_unverified(frame).ok()?;
        let op = view.bth.opcode;
        let access = if op.is_write() {
            Access::Write {
                reth: view.reth().map(|r| (r.rkey, r.va)),
                len: view.payload().len(),
            }
        } else if op.is_read_request() {
            let r = view.reth()?;
            Access::Read {
                rkey: r.rkey,
                va: r.va,
                len: r.dma_len as usize,
            }
        } else if let Some(a) = view.atomic_eth() {
            Access::Atomic {
                rkey: a.rkey,
                va: a.va,
            }
        } else {
            return None;
        };
        Some(Incoming {
            qpn: view.bth.dest_qpn,
            psn: view.bth.psn,
            access,
        })
    }

    fn expected_psn(&self, qpn: u32) -> Option<Psn> {
        Some(self.host.endpoint().qp(qpn)?.expected_psn())
    }

    /// The responder executed `inc`: store what it wrote.
    fn executed(&mut self, inc: Incoming) {
        match inc.access {
            Access::Write { reth, len } => {
                let cursor = match reth {
                    Some((rkey, va)) => WriteCursor { rkey, next_va: va },
                    None => match self.writes.get(&inc.qpn) {
                        Some(c) => *c,
                        None => return,
                    },
                };
                self.copy_remote(cursor.rkey, cursor.next_va, len, Direction::Store);
                self.writes.insert(
                    inc.qpn,
                    WriteCursor {
                        next_va: cursor.next_va.wrapping_add(len as u64),
                        ..cursor
                    },
                );
            }
            Access::Atomic { rkey, va } => self.copy_remote(rkey, va, 8, Direction::Store),
            Access::Read { .. } => {}
        }
    }
}

impl Engine for VerbsEngine {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        let incoming = self.classify(frame);
        let before = incoming.and_then(|inc| {
            match inc.access {
                // The responder reads the region when it answers: give it the application's
                // bytes (a duplicate READ reads them again, as a NIC would).
                Access::Read { rkey, va, len } => self.copy_remote(rkey, va, len, Direction::Load),
                Access::Atomic { rkey, va } => self.copy_remote(rkey, va, 8, Direction::Load),
                Access::Write { .. } => {}
            }
            self.expected_psn(inc.qpn)
        });
        self.host.handle_frame(now, frame);
        if let (Some(inc), Some(before)) = (incoming, before) {
            if before == inc.psn && self.expected_psn(inc.qpn) != Some(before) {
                self.executed(inc);
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.host.handle_timeout(now);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.host.poll_transmit(now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.host.poll_timeout()
    }
}
