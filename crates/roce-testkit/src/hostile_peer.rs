//! A hostile peer against one endpoint, as a state machine: actions decoded from bytes (so the
//! proptest in roce-proto's `tests/it/hostile_props.rs` and the cargo-fuzz target
//! `fuzz/fuzz_targets/endpoint.rs` drive the same thing), frames with valid ICRCs crafted from the
//! peer's side, local verbs interleaved (posts, polls, timers, region registration, invalidation
//! and deregistration), and the invariants checked after every step:
//! - a region that grants no remote write or atomic right, and is never a local write target,
//!   never changes; every other region's bytes are lent by the harness (as the verbs library
//!   lends an application's buffer), and such a region is never even asked to write;
//! - no byte of a deregistered or invalidated region is ever sent (each region is filled with its
//!   own byte, never reused; the peer only ever writes 0xff), and nothing is sent as zeros;
//! - every work request completes at most once, and all of them once the QP is in error;
//! - a drain of `poll_transmit` ends, with at most `MAX_QUEUED_RESPONSES + 1` ACKs/NAKs;
//! - nothing panics.
//!
//! Depends on `roce_proto` only.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use roce_proto::connect::RcOptions;
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::mr::{MrInfo, PdHandle};
use roce_proto::psn::{Msn, Psn};
use roce_proto::qp::MAX_QUEUED_RESPONSES;
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::{
    AccessFlags, AddressVector, CqHandle, Mtu, QpInit, QpState, Recovery, RecvWr, SendFlags,
    SendWr, Sge, Sgl, WrOpcode,
};
use roce_proto::wire::aeth::{self, Syndrome};
use roce_proto::wire::opcode::Opcode;
use roce_proto::wire::{
    atomic_ack_eth, atomic_eth, bth, ethernet, parse_frame, reth, Ecn, EtherType, EthernetAddress,
    ExtRepr, IpRepr, RoceRepr,
};

use crate::action_bytes;
pub use crate::hostile_action::{Action, ACTION_BYTES};
use crate::lent_memory::Lent;

const MAC_PEER: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 0xa]);
const MAC_US: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 0xb]);
const IP_PEER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 10);
const IP_US: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 11);
const IP_STRANGER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 66);
const PEER_QPN: u32 = 0x99;
/// Every byte the peer writes (payloads, atomic values).
const PEER_BYTE: u8 = 0xff;
/// Region fill bytes are 1..=LAST_FILL, each used once.
const LAST_FILL: u8 = 0xf0;
/// More frames than any drain can honestly produce.
const DRAIN_LIMIT: usize = 100_000;

#[derive(Clone, Debug)]
struct Region {
    info: MrInfo,
    fill: u8,
    target: bool,
    /// The bytes, when the harness lent them.
    lent: Option<Lent>,
}

impl Region {
    /// Grants no remote write or atomic right and is never a local write target.
    fn sealed(&self) -> bool {
        !self.target
            && !self
                .info
                .access
                .intersects(AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC)
    }
}

/// The endpoint under attack and what the harness knows of it.
pub struct Harness {
    ep: Endpoint,
    qpn: u32,
    cq: CqHandle,
    pd: PdHandle,
    now: Instant,
    mtu: u32,
    regions: Vec<Region>,
    next_fill: u8,
    /// Fill bytes of regions deregistered or invalidated: never to be sent again.
    dead: [bool; 256],
    /// Every rkey ever handed out (the peer learned them all).
    rkeys: Vec<u32>,
    /// Work requests posted and not completed.
    outstanding: BTreeSet<u64>,
    next_wr: u64,
    /// The peer's message in progress: a WRITE (bytes left) or a SEND.
    open_write: Option<u32>,
    open_send: bool,
    /// How the QP recovers lost packets.
    recovery: Recovery,
}

impl Default for Harness {
    fn default() -> Self {
        Harness::new()
    }
}

fn sge(r: &Region, len: u32) -> Sge {
    Sge {
        addr: r.info.addr,
        length: len.min(r.info.length as u32),
        lkey: r.info.lkey,
    }
}

impl Harness {
    /// An endpoint with one go-back-N QP in RTS to the imaginary peer, PSNs about to wrap.
    pub fn new() -> Harness {
        Self::with_recovery(Recovery::GoBackN)
    }

    /// [`Harness::new`] with the QP recovering lost packets as `recovery` says (a selective
    /// repeat QP reads the first bytes of every SEND and WRITE payload as a placement header,
    /// so the peer's frames reach its placement checks).
    pub fn with_recovery(recovery: Recovery) -> Harness {
        let mut ep = Endpoint::new(EndpointConfig {
            key_seed: Some(15),
            ..EndpointConfig::ipv4(MAC_US, IP_US)
        });
        let pd = ep.alloc_pd();
        let cq = ep.create_cq(64);
        let o = Self::options(recovery);
        let init = QpInit::shared_cq(pd, cq, o.max_send_wr, o.max_recv_wr);
        let qpn = ep.create_qp(init).expect("a QP");
        Self::connect(&mut ep, qpn, recovery).expect("to RTS");
        Harness {
            ep,
            qpn,
            cq,
            pd,
            now: Instant::ZERO,
            mtu: 256,
            regions: Vec::new(),
            next_fill: 1,
            dead: [false; 256],
            rkeys: Vec::new(),
            outstanding: BTreeSet::new(),
            next_wr: 1,
            open_write: None,
            open_send: false,
            recovery,
        }
    }

    fn options(recovery: Recovery) -> RcOptions {
        RcOptions {
            mtu: Mtu::Mtu256,
            max_rd_atomic: 4,
            max_send_wr: 16,
            max_recv_wr: 16,
            recovery,
            ..RcOptions::default()
        }
    }

    /// Connects the QP (from RESET) to the peer, with PSNs about to wrap.
    fn connect(ep: &mut Endpoint, qpn: u32, recovery: Recovery) -> Result<(), String> {
        let av = AddressVector {
            remote_ip: IP_PEER.into(),
            remote_mac: MAC_PEER,
            traffic_class: 0,
            hop_limit: 64,
        };
        let attrs = Self::options(recovery).attrs_to_rts(
            PEER_QPN,
            av,
            Psn::new(0xff_fff0),
            Psn::new(0xff_fff8),
        );
        for a in attrs {
            ep.modify_qp(qpn, &a).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Runs the actions `data` encodes (what the proptest and the fuzz target feed it), then
    /// moves the QP to the error state and checks that every work request completed exactly
    /// once.
    pub fn run_bytes(data: &[u8]) -> Result<(), String> {
        Self::run_bytes_with(Recovery::GoBackN, data)
    }

    /// [`Harness::run_bytes`] on a QP that recovers as `recovery` says.
    pub fn run_bytes_with(recovery: Recovery, data: &[u8]) -> Result<(), String> {
        let mut h = Harness::with_recovery(recovery);
        action_bytes::run_steps(&Action::decode_all(data), |a| h.step(a))?;
        h.finish()
    }

    fn region(&self, which: u8) -> Option<Region> {
        let n = self.regions.len();
        (n > 0).then(|| self.regions[usize::from(which) % n].clone())
    }

    fn target(&self, which: u8) -> Option<Region> {
        let t: Vec<Region> = self.regions.iter().filter(|r| r.target).cloned().collect();
        (!t.is_empty()).then(|| t[usize::from(which) % t.len()].clone())
    }

    fn wr_id(&mut self) -> u64 {
        self.next_wr += 1;
        self.next_wr
    }

    /// One action, then the invariants.
    pub fn step(&mut self, a: &Action) -> Result<(), String> {
        match *a {
            Action::Register {
                len,
                access,
                target,
            } => self.register(len, access, target),
            Action::Deregister { which } => {
                if let Some(r) = self.region(which) {
                    self.ep.dereg_mr(r.info.lkey).map_err(|e| e.to_string())?;
                    self.dead[usize::from(r.fill)] = true;
                    self.regions.retain(|x| x.info.lkey != r.info.lkey);
                }
            }
            Action::LocalInv { which, by_rkey } => {
                if let Some(r) = self.region(which) {
                    let key = if by_rkey { r.info.rkey } else { r.info.lkey };
                    let wr = SendWr {
                        wr_id: self.wr_id(),
                        opcode: WrOpcode::LocalInv { rkey: key },
                        sgl: Sgl::new(),
                        flags: SendFlags::SIGNALED,
                    };
                    self.post_send(wr);
                }
            }
            Action::PostRecv { which, len } => {
                if let Some(r) = self.target(which) {
                    let wr = RecvWr::new(self.wr_id(), sge(&r, u32::from(len) * 4));
                    let id = wr.wr_id;
                    if self.ep.post_recv(self.qpn, wr).is_ok() {
                        self.outstanding.insert(id);
                    }
                }
            }
            Action::PostSend { kind, which, len } => self.post(kind, which, len),
            Action::PeerRequest {
                op,
                key,
                off,
                len,
                psn,
                flags,
            } => self.peer_request(op, key, off, len, psn, flags),
            Action::PeerResponse {
                op,
                psn_back,
                syndrome,
                len,
            } => self.peer_response(op, psn_back, syndrome, len),
            Action::PeerCnp { stranger } => {
                let src = if stranger { IP_STRANGER } else { IP_PEER };
                let eth = ethernet::Repr {
                    dst: MAC_US,
                    src: MAC_PEER,
                    vlan: None,
                    ethertype: EtherType::Ipv4,
                };
                let ip = IpRepr::new_roce(src.into(), IP_US.into(), 48, Ecn::NotEct);
                let repr = RoceRepr::cnp(eth, ip, 0xc001, self.qpn);
                let mut buf = vec![0u8; repr.frame_len()];
                if let Ok(n) = repr.emit(&[], &mut buf) {
                    self.ep.handle_frame(self.now, &buf[..n]);
                }
            }
            Action::Poll => self.drain()?,
            Action::PollCq => self.poll_cq()?,
            Action::Advance { nanos } => {
                self.now += Duration::from_nanos(nanos);
                self.ep.handle_timeout(self.now);
            }
            Action::Reconnect => {
                let reset = roce_proto::verbs::QpAttr {
                    state: Some(QpState::Reset),
                    ..Default::default()
                };
                // From any state but RESET; what was posted completed as flushed on the way.
                if self
                    .ep
                    .qp(self.qpn)
                    .is_some_and(|q| q.state() == QpState::Err)
                {
                    self.ep
                        .modify_qp(self.qpn, &reset)
                        .map_err(|e| e.to_string())?;
                    Self::connect(&mut self.ep, self.qpn, self.recovery)?;
                    self.open_write = None;
                    self.open_send = false;
                }
            }
        }
        self.check()
    }

    fn register(&mut self, len: usize, access: AccessFlags, target: bool) {
        if self.next_fill > LAST_FILL || self.regions.len() >= 16 {
            return;
        }
        let access = if target {
            access | AccessFlags::LOCAL_WRITE
        } else {
            access
        };
        let fill = self.next_fill;
        self.next_fill += 1;
        // Every other region is lent memory, as the verbs library registers an application's.
        let lent = (fill % 2 == 1).then(|| Lent::filled(len, fill));
        let info = match &lent {
            Some(l) => {
                let addr = 0x7f00_0000_0000 + (u64::from(fill) << 24);
                let Ok(info) = self
                    .ep
                    .reg_mr_lent(self.pd, addr, Box::new(l.clone()), access)
                else {
                    return;
                };
                info
            }
            None => {
                let info = self.ep.reg_mr(self.pd, len, access);
                if let Some(m) = self.ep.mr_mut(info.lkey) {
                    m.bytes_mut().fill(fill);
                }
                info
            }
        };
        self.rkeys.push(info.rkey);
        self.regions.push(Region {
            info,
            fill,
            target,
            lent,
        });
    }

    fn post_send(&mut self, wr: SendWr) {
        let id = wr.wr_id;
        if self.ep.post_send(self.qpn, wr).is_ok() {
            self.outstanding.insert(id);
        }
    }

    fn post(&mut self, kind: u8, which: u8, len: u8) {
        let len = u32::from(len) * 4;
        let remote_addr = 0x1_0000_0000;
        let rkey = 0x1234_5600;
        let (opcode, local) = match kind {
            0 => (WrOpcode::Send, self.region(which)),
            1 => (WrOpcode::SendWithInv { rkey }, self.region(which)),
            2 => (
                WrOpcode::RdmaWrite { remote_addr, rkey },
                self.region(which),
            ),
            3 => (WrOpcode::RdmaRead { remote_addr, rkey }, self.target(which)),
            _ => (
                WrOpcode::AtomicFetchAndAdd {
                    remote_addr,
                    rkey,
                    add: 1,
                },
                self.target(which),
            ),
        };
        let Some(r) = local else { return };
        let len = if opcode.is_atomic() { 8 } else { len };
        let wr = SendWr::new(self.wr_id(), opcode, sge(&r, len));
        self.post_send(wr);
    }

    fn expected_psn(&self) -> Psn {
        self.ep
            .qp(self.qpn)
            .map_or(Psn::new(0), |q| q.expected_psn())
    }

    fn key(&self, key: u8) -> u32 {
        match key % 4 {
            0 => 0x1234_5600 | u32::from(key),
            _ if self.rkeys.is_empty() => 0,
            _ => self.rkeys[usize::from(key) % self.rkeys.len()],
        }
    }

    /// A request from the peer: mostly well-formed (a live rkey, in bounds, the expected PSN,
    /// opcodes in a sensible order), with a share of everything else.
    fn peer_request(&mut self, op: u8, key: u8, off: u8, len: u8, psn: u8, flags: u8) {
        let mtu = self.mtu;
        let e = self.expected_psn();
        let psn = match psn % 8 {
            0..=4 => e,
            5 => e.sub(1),
            6 => e.sub(2),
            _ => e.add(u32::from(psn % 5) + 1),
        };
        // A live region's rkey most of the time, else an old one or a made-up one.
        let live: Vec<&Region> = self
            .regions
            .iter()
            .filter(|r| self.ep.mr(r.info.lkey).is_some_and(|m| m.is_valid()))
            .collect();
        let target =
            (!live.is_empty() && key % 8 != 0).then(|| live[usize::from(key) % live.len()]);
        let rkey = match target {
            Some(r) => r.info.rkey,
            None => self.key(key),
        };
        let (base, room) = target.map_or((0x1_0000_0000, 4096), |r| {
            (r.info.addr, r.info.length as u32)
        });
        let at = u32::from(off) * 8 % room.max(1);
        let mut va = base + u64::from(at);
        if flags & 0x10 != 0 {
            va = va.wrapping_add(u64::from(off) << 8);
        }
        // In bounds unless the address was pushed out above.
        let msg_len = u32::from(len) * 8 % (room - at + 1);
        let peer = vec![PEER_BYTE; mtu as usize];
        let mut ext = ExtRepr::default();
        let (opcode, payload): (Opcode, &[u8]) = match op % 8 {
            0..=3 => match self.open_write {
                Some(left) if op & 0x80 == 0 => {
                    if left > mtu {
                        self.open_write = Some(left - mtu);
                        (Opcode::RC_RDMA_WRITE_MIDDLE, &peer[..])
                    } else {
                        self.open_write = None;
                        let last = if flags & 0x20 != 0 {
                            ext.immdt = Some(7);
                            Opcode::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE
                        } else {
                            Opcode::RC_RDMA_WRITE_LAST
                        };
                        (last, &peer[..left as usize])
                    }
                }
                _ => {
                    let dma_len = if flags & 0x40 != 0 {
                        msg_len + mtu
                    } else {
                        msg_len.min(mtu)
                    };
                    ext.reth = Some(reth::Repr { va, rkey, dma_len });
                    if dma_len > mtu {
                        self.open_write = Some(dma_len - mtu);
                        (Opcode::RC_RDMA_WRITE_FIRST, &peer[..])
                    } else if flags & 0x20 != 0 {
                        ext.immdt = Some(7);
                        (
                            Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
                            &peer[..dma_len as usize],
                        )
                    } else {
                        (Opcode::RC_RDMA_WRITE_ONLY, &peer[..dma_len as usize])
                    }
                }
            },
            4 | 5 => {
                let n = (msg_len % (mtu + 1)) as usize;
                let invalidate = flags & 0x20 != 0;
                if invalidate {
                    ext.ieth = Some(rkey);
                }
                let opcode = match (self.open_send, op & 0x80 != 0, invalidate) {
                    (true, false, false) => Opcode::RC_SEND_LAST,
                    (true, false, true) => Opcode::RC_SEND_LAST_WITH_INVALIDATE,
                    (true, true, _) => Opcode::RC_SEND_MIDDLE,
                    (false, true, _) => Opcode::RC_SEND_FIRST,
                    (false, false, true) => Opcode::RC_SEND_ONLY_WITH_INVALIDATE,
                    (false, false, false) => Opcode::RC_SEND_ONLY,
                };
                if !opcode.has_invalidate() {
                    ext.ieth = None;
                }
                self.open_send = opcode.is_first() || opcode.is_middle();
                let n = if self.open_send {
                    mtu as usize
                } else {
                    n.max(1)
                };
                (opcode, &peer[..n])
            }
            6 => {
                ext.reth = Some(reth::Repr {
                    va,
                    rkey,
                    dma_len: msg_len,
                });
                (Opcode::RC_RDMA_READ_REQUEST, &[][..])
            }
            _ => {
                let compare = match (flags & 4, target) {
                    (0, Some(r)) => u64::from_le_bytes([r.fill; 8]),
                    _ => u64::MAX,
                };
                // The peer only ever stores all-ones: a CAS swaps in u64::MAX, a fetch-add adds 0.
                let (opcode, swap_add) = if flags & 8 == 0 {
                    (Opcode::RC_COMPARE_SWAP, u64::MAX)
                } else {
                    (Opcode::RC_FETCH_ADD, 0)
                };
                ext.atomic_eth = Some(atomic_eth::Repr {
                    va: va & !7,
                    rkey,
                    swap_add,
                    compare,
                });
                (opcode, &[][..])
            }
        };
        // Now and then a flood of the same frame (duplicates, RNR-NAKed SENDs, gaps).
        let copies = if flags & 0x80 != 0 && len & 1 == 1 {
            100
        } else {
            1
        };
        for _ in 0..copies {
            self.peer_frame(opcode, psn, flags & 1 == 1, ext, payload, flags & 2 == 2);
        }
    }

    fn peer_response(&mut self, op: u8, psn_back: u8, syndrome: u8, len: u8) {
        let sq_psn = self.ep.qp(self.qpn).map_or(Psn::new(0), |q| q.sq_psn());
        let psn = sq_psn.sub(1 + u32::from(psn_back % 6));
        let ack = aeth::Repr {
            syndrome: match syndrome % 4 {
                0 | 1 => Syndrome::Ack { credits: 31 },
                _ => Syndrome::from_byte(syndrome),
            },
            msn: Msn::new(u32::from(len)),
        };
        let (opcode, ext, payload_len) = match op % 7 {
            0 | 1 => (
                Opcode::RC_ACKNOWLEDGE,
                ExtRepr {
                    aeth: Some(ack),
                    ..Default::default()
                },
                0,
            ),
            2 => (
                Opcode::RC_ATOMIC_ACKNOWLEDGE,
                ExtRepr {
                    aeth: Some(ack),
                    atomic_ack_eth: Some(atomic_ack_eth::Repr { orig: u64::MAX }),
                    ..Default::default()
                },
                0,
            ),
            k => {
                let (opcode, full) = match k {
                    3 => (Opcode::RC_RDMA_READ_RESPONSE_FIRST, true),
                    4 => (Opcode::RC_RDMA_READ_RESPONSE_MIDDLE, true),
                    5 => (Opcode::RC_RDMA_READ_RESPONSE_LAST, false),
                    _ => (Opcode::RC_RDMA_READ_RESPONSE_ONLY, false),
                };
                let aeth = opcode.info().is_some_and(|i| i.aeth()).then_some(ack);
                let n = if full {
                    self.mtu as usize
                } else {
                    usize::from(len) * 4 % (self.mtu as usize + 1)
                };
                (
                    opcode,
                    ExtRepr {
                        aeth,
                        ..Default::default()
                    },
                    n,
                )
            }
        };
        let payload = vec![PEER_BYTE; payload_len];
        self.peer_frame(opcode, psn, false, ext, &payload, false);
    }

    fn peer_frame(
        &mut self,
        opcode: Opcode,
        psn: Psn,
        ack_req: bool,
        ext: ExtRepr,
        payload: &[u8],
        ce: bool,
    ) {
        let ecn = if ce { Ecn::Ce } else { Ecn::Ect0 };
        let mut repr = RoceRepr {
            eth: ethernet::Repr {
                dst: MAC_US,
                src: MAC_PEER,
                vlan: None,
                ethertype: EtherType::Ipv4,
            },
            ip: IpRepr::new_roce(IP_PEER.into(), IP_US.into(), 0, ecn),
            udp_src_port: 0xc001,
            bth: bth::Repr {
                opcode,
                dest_qpn: self.qpn,
                ack_req,
                psn,
                ..bth::Repr::default()
            },
            ext,
            payload_len: payload.len(),
        };
        repr.fill_lengths();
        let mut buf = vec![0u8; repr.frame_len()];
        if let Ok(n) = repr.emit(payload, &mut buf) {
            self.ep.handle_frame(self.now, &buf[..n]);
        }
    }

    /// Regions invalidated since the last look are dead too.
    fn note_invalidations(&mut self) {
        for r in &self.regions {
            if self.ep.mr(r.info.lkey).is_some_and(|m| !m.is_valid()) {
                self.dead[usize::from(r.fill)] = true;
            }
        }
    }

    fn drain(&mut self) -> Result<(), String> {
        self.note_invalidations();
        let mut buf = vec![0u8; 9000];
        let (mut frames, mut control) = (0usize, 0usize);
        while let Some(n) = self.ep.poll_transmit(self.now, &mut buf) {
            frames += 1;
            if frames > DRAIN_LIMIT {
                return Err("poll_transmit never runs dry".into());
            }
            let frame = buf.get(..n).ok_or("length beyond the buffer")?;
            let p =
                parse_frame(frame).map_err(|e| format!("sent a frame that does not parse: {e}"))?;
            let op = p.repr.bth.opcode;
            if op == Opcode::RC_ACKNOWLEDGE || op == Opcode::RC_ATOMIC_ACKNOWLEDGE {
                control += 1;
            }
            // A selective-repeat request starts with its placement header, not region bytes.
            let header = match self.recovery {
                Recovery::SelectiveRepeat if op.is_send() || op.is_write() => {
                    roce_proto::wire::placement::HEADER_LEN
                }
                _ => 0,
            };
            let data = p
                .payload
                .get(header..)
                .ok_or("a request shorter than its header")?;
            for &b in data {
                if b == 0 {
                    return Err(format!(
                        "{op:?} carries a zero byte (a missing source sent as zeros?)"
                    ));
                }
                if b != PEER_BYTE && self.dead[usize::from(b)] {
                    return Err(format!("{op:?} carries byte {b:#x} of a dead region"));
                }
            }
        }
        if control > MAX_QUEUED_RESPONSES + 1 {
            return Err(format!("{control} ACKs/NAKs queued"));
        }
        Ok(())
    }

    fn poll_cq(&mut self) -> Result<(), String> {
        while let Some(wc) = self.ep.poll_cq_one(self.cq) {
            if !self.outstanding.remove(&wc.wr_id) {
                return Err(format!(
                    "completion of a work request not outstanding: {wc:?}"
                ));
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        for r in self.regions.iter().filter(|r| r.sealed()) {
            let m = self.ep.mr(r.info.lkey).ok_or("a live region is gone")?;
            let changed = match &r.lent {
                // Sealed: not even asked to write.
                Some(l) => l.unwritten_change(r.fill)?,
                None => m.bytes().iter().position(|&b| b != r.fill),
            };
            if let Some(i) = changed {
                return Err(format!(
                    "region {:#x} ({:?}) changed at byte {i}",
                    r.info.rkey, r.info.access
                ));
            }
        }
        Ok(())
    }

    /// The endpoint's counters (for coverage checks).
    pub fn counters(&self) -> roce_proto::counters::EndpointCounters {
        self.ep.counters()
    }

    /// Moves the QP to ERR, drains, and checks every work request completed.
    pub fn finish(mut self) -> Result<(), String> {
        let err = roce_proto::verbs::QpAttr {
            state: Some(QpState::Err),
            ..Default::default()
        };
        self.ep
            .modify_qp(self.qpn, &err)
            .map_err(|e| e.to_string())?;
        self.drain()?;
        self.poll_cq()?;
        match self.outstanding.first() {
            Some(id) => Err(format!(
                "{} work requests never completed (first: {id})",
                self.outstanding.len()
            )),
            None => Ok(()),
        }
    }
}
