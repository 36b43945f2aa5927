//! A scripted peer: one endpoint under test, and hand-built frames from a peer that exists only
//! in the test, so a QP test reads as a conversation of packets (smoltcp `send!`/`recv!` style).

use roce_proto::connect::RcOptions;
use roce_proto::endpoint::Endpoint;
use roce_proto::psn::{Msn, Psn};
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::{AddressVector, CqHandle, QpAttr, QpInit, QpState, WorkCompletion};
use roce_proto::wire::aeth;
use roce_proto::wire::aeth::Syndrome;
use roce_proto::wire::opcode::Opcode;
use roce_proto::wire::{bth, ethernet, parse_frame, Ecn, EtherType, ExtRepr, IpRepr, RoceRepr};

use super::*;

/// The test's imaginary peer QP.
pub const PEER_QPN: u32 = 0x99;

/// AETH syndrome bytes: ACK (credits 31), NAKs for a PSN sequence error, an invalid request and
/// a remote access error.
pub const ACK: u8 = 0x1f;
/// NAK: PSN sequence error.
pub const NAK_SEQ: u8 = 0x60;
/// NAK: invalid request.
pub const NAK_INV: u8 = 0x61;
/// NAK: remote access error.
pub const NAK_ACCESS: u8 = 0x62;

/// A path MTU of 256 bytes, the peer sending from PSN 100 and the QP under test from 500,
/// four READs/atomics in flight.
pub fn mtu256() -> RcOptions {
    RcOptions {
        mtu: roce_proto::verbs::Mtu::Mtu256,
        a_psn: Psn::new(100),
        b_psn: Psn::new(500),
        max_rd_atomic: 4,
        ..RcOptions::default()
    }
}

/// A RETH naming `len` bytes at offset `off` of `mr`.
pub fn reth(mr: &roce_proto::mr::MrInfo, off: u64, len: u32) -> ExtRepr {
    ExtRepr {
        reth: Some(roce_proto::wire::reth::Repr {
            va: mr.addr + off,
            rkey: mr.rkey,
            dma_len: len,
        }),
        ..Default::default()
    }
}

/// One packet as the script sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pkt {
    /// The BTH opcode.
    pub opcode: Opcode,
    /// The BTH PSN.
    pub psn: Psn,
    /// The BTH AckReq bit.
    pub ack_req: bool,
    /// The extension headers.
    pub ext: ExtRepr,
    /// The payload.
    pub payload: Vec<u8>,
    /// Overrides the destination QPN (default: the QP under test).
    pub dest_qpn: Option<u32>,
    /// The P_Key to stamp (default 0xffff).
    pub pkey: u16,
}

impl Pkt {
    /// `opcode` at `psn`: no AckReq, no extension header, no payload, to the QP under test.
    pub fn new(opcode: Opcode, psn: u32) -> Self {
        Pkt {
            opcode,
            psn: Psn::new(psn),
            ack_req: false,
            ext: ExtRepr::default(),
            payload: vec![],
            dest_qpn: None,
            pkey: 0xffff,
        }
    }
    /// With AckReq set.
    pub fn ack_req(mut self) -> Self {
        self.ack_req = true;
        self
    }
    /// With the extension headers `ext`.
    pub fn ext(mut self, ext: ExtRepr) -> Self {
        self.ext = ext;
        self
    }
    /// With the payload `p`.
    pub fn payload(mut self, p: &[u8]) -> Self {
        self.payload = p.to_vec();
        self
    }
    /// The AETH syndrome byte and MSN, for byte-level assertions.
    pub fn aeth(&self) -> Option<(u8, u32)> {
        self.ext.aeth.map(|a| (a.syndrome.to_byte(), a.msn.value()))
    }
}

/// An RDMA WRITE Only (ACK requested) of `data` to the start of `mr`.
pub fn write_only(psn: u32, mr: &roce_proto::mr::MrInfo, data: &[u8]) -> Pkt {
    Pkt::new(Opcode::RC_RDMA_WRITE_ONLY, psn)
        .ack_req()
        .ext(reth(mr, 0, data.len() as u32))
        .payload(data)
}

/// An ACK (or NAK: `syndrome`) for `psn` with `msn`.
pub fn ack(psn: u32, syndrome: u8, msn: u32) -> Pkt {
    Pkt::new(Opcode::RC_ACKNOWLEDGE, psn).ext(ExtRepr {
        aeth: Some(aeth::Repr {
            syndrome: Syndrome::from_byte(syndrome),
            msn: Msn::new(msn),
        }),
        ..Default::default()
    })
}

/// The endpoint under test with its QP, talking to the imaginary peer, on virtual time.
pub struct Script {
    /// The endpoint under test (at B's addresses).
    pub ep: Endpoint,
    /// Its QP, connected to [`PEER_QPN`].
    pub qpn: u32,
    /// The QP's completion queue.
    pub cq: CqHandle,
    /// The QP's protection domain.
    pub pd: roce_proto::mr::PdHandle,
    /// The present, in virtual time.
    pub now: Instant,
}

impl Script {
    /// Endpoint B with one QP in RTS, talking to the imaginary peer at A's addresses.
    pub fn new(o: &RcOptions) -> Script {
        let mut ep = endpoint(MAC_B, IP_B);
        let pd = ep.alloc_pd();
        let cq = ep.create_cq(64);
        let qpn = ep
            .create_qp(QpInit::shared_cq(pd, cq, o.max_send_wr, o.max_recv_wr))
            .unwrap();
        let attrs = [
            QpAttr {
                state: Some(QpState::Init),
                access_flags: Some(o.access),
                ..Default::default()
            },
            QpAttr {
                state: Some(QpState::Rtr),
                path_mtu: Some(o.mtu),
                dest_qp_num: Some(PEER_QPN),
                av: Some(AddressVector {
                    remote_ip: IP_A.into(),
                    remote_mac: MAC_A,
                    traffic_class: 0,
                    hop_limit: 64,
                }),
                rq_psn: Some(o.a_psn),
                min_rnr_timer: Some(o.min_rnr_timer),
                max_dest_rd_atomic: Some(o.max_rd_atomic.max(1)),
                ..Default::default()
            },
            QpAttr {
                state: Some(QpState::Rts),
                sq_psn: Some(o.b_psn),
                timeout: Some(o.timeout),
                retry_cnt: Some(o.retry_cnt),
                rnr_retry: Some(o.rnr_retry),
                max_rd_atomic: Some(o.max_rd_atomic),
                ..Default::default()
            },
        ];
        for a in &attrs {
            ep.modify_qp(qpn, a).unwrap();
        }
        Script {
            ep,
            qpn,
            cq,
            pd,
            now: Instant::ZERO,
        }
    }

    /// The peer sends `p` to the QP under test.
    pub fn send(&mut self, p: &Pkt) {
        self.send_ecn(p, Ecn::Ect0);
    }

    /// The peer sends `p` with ECN codepoint `ecn` (a switch may have marked it CE).
    pub fn send_ecn(&mut self, p: &Pkt, ecn: Ecn) {
        let frame = self.frame_ecn(p, ecn);
        self.ep.handle_frame(self.now, &frame);
    }

    /// `p` as the peer sends it, ECT(0).
    pub fn frame(&self, p: &Pkt) -> Vec<u8> {
        self.frame_ecn(p, Ecn::Ect0)
    }

    /// `p` as the peer sends it, with `ecn`.
    pub fn frame_ecn(&self, p: &Pkt, ecn: Ecn) -> Vec<u8> {
        self.frame_from(IP_A, p, ecn)
    }

    /// `p` as sent from `src` (the peer's address, or anyone else's).
    pub fn frame_from(&self, src: std::net::Ipv4Addr, p: &Pkt, ecn: Ecn) -> Vec<u8> {
        let mut repr = RoceRepr {
            eth: ethernet::Repr {
                dst: MAC_B,
                src: MAC_A,
                vlan: None,
                ethertype: EtherType::Ipv4,
            },
            ip: IpRepr::new_roce(src.into(), IP_B.into(), 0, ecn),
            udp_src_port: 0xc001,
            bth: bth::Repr {
                opcode: p.opcode,
                dest_qpn: p.dest_qpn.unwrap_or(self.qpn),
                ack_req: p.ack_req,
                psn: p.psn,
                pkey: p.pkey,
                ..bth::Repr::default()
            },
            ext: p.ext,
            payload_len: p.payload.len(),
        };
        repr.fill_lengths();
        let mut buf = vec![0u8; repr.frame_len()];
        repr.emit(&p.payload, &mut buf).unwrap();
        buf
    }

    /// The next packet the QP under test sends now, if any.
    pub fn recv(&mut self) -> Option<Pkt> {
        let mut buf = [0u8; 9000];
        let n = self.ep.poll_transmit(self.now, &mut buf)?;
        let pkt = parse_frame(&buf[..n]).expect("the endpoint emits valid frames");
        assert_eq!(pkt.repr.bth.dest_qpn, PEER_QPN);
        assert_eq!(pkt.repr.eth.dst, MAC_A);
        Some(Pkt {
            opcode: pkt.repr.bth.opcode,
            psn: pkt.repr.bth.psn,
            ack_req: pkt.repr.bth.ack_req,
            ext: pkt.repr.ext,
            payload: pkt.payload.to_vec(),
            dest_qpn: Some(pkt.repr.bth.dest_qpn),
            pkey: pkt.repr.bth.pkey,
        })
    }

    /// Every packet waiting now.
    pub fn recv_all(&mut self) -> Vec<Pkt> {
        std::iter::from_fn(|| self.recv()).collect()
    }

    /// Lets `d` pass and fires due timers.
    pub fn advance(&mut self, d: Duration) {
        self.now += d;
        self.ep.handle_timeout(self.now);
    }

    /// Jumps to the endpoint's next deadline and fires it.
    pub fn fire_next_timer(&mut self) -> bool {
        match self.ep.poll_timeout() {
            Some(t) => {
                self.now = self.now.max(t);
                self.ep.handle_timeout(self.now);
                true
            }
            None => false,
        }
    }

    /// Every completion waiting on the QP's completion queue.
    pub fn completions(&mut self) -> Vec<WorkCompletion> {
        std::iter::from_fn(|| self.ep.poll_cq_one(self.cq)).collect()
    }

    /// Another QP of the endpoint, left in RESET.
    pub fn idle_qp(&mut self) -> u32 {
        let init = QpInit::shared_cq(self.pd, self.cq, 1, 1);
        self.ep.create_qp(init).unwrap()
    }

    /// Posts receive `wr_id` of `len` bytes at the start of `mr`.
    pub fn post_recv(&mut self, wr_id: u64, mr: &roce_proto::mr::MrInfo, len: u32) {
        let sge = roce_proto::verbs::Sge {
            addr: mr.addr,
            length: len,
            lkey: mr.lkey,
        };
        let wr = roce_proto::verbs::RecvWr::new(wr_id, sge);
        self.ep.post_recv(self.qpn, wr).unwrap();
    }

    /// Posts send `wr_id`: `opcode` over `len` bytes at the start of `mr`.
    pub fn post_send(
        &mut self,
        wr_id: u64,
        opcode: roce_proto::verbs::WrOpcode,
        mr: &roce_proto::mr::MrInfo,
        len: u32,
    ) {
        let wr = send_wr(wr_id, opcode, mr, 0, len);
        self.ep.post_send(self.qpn, wr).unwrap();
    }

    /// A region of `len` bytes with `access` on the QP's protection domain.
    pub fn mr(
        &mut self,
        len: usize,
        access: roce_proto::verbs::AccessFlags,
    ) -> roce_proto::mr::MrInfo {
        self.ep.reg_mr(self.pd, len, access)
    }
}

/// `send!(s, pkt)`: the peer sends a packet.
#[macro_export]
macro_rules! send {
    ($s:expr, $p:expr) => {
        $s.send(&$p)
    };
}

/// `recv!(s)`: the next packet (panics when none); `recv!(s, None)`: nothing is sent.
#[macro_export]
macro_rules! recv {
    ($s:expr, None) => {
        assert_eq!($s.recv(), None, "expected no packet")
    };
    ($s:expr) => {
        $s.recv().expect("expected a packet")
    };
}

// `use roce_testkit::rc::script::*` brings the macros along with the rest.
pub use crate::{recv, send};
