//! What a capture's frame is, as far as the links between frames need it: addresses,
//! destination QP, PSN, its kind and its CE mark.

use std::net::IpAddr;
use std::time::Duration;

use roce_proto::psn::Psn;
use roce_proto::wire::{Ecn, RocePacket};

/// What a capture's frame is, as far as the links need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameFacts {
    /// Frame number (1-based, as Wireshark counts).
    pub frame: usize,
    /// Capture time.
    pub time: Duration,
    /// IP source.
    pub src: IpAddr,
    /// IP destination.
    pub dst: IpAddr,
    /// Destination QP.
    pub dest_qpn: u32,
    /// BTH PSN.
    pub psn: Psn,
    /// What kind of frame it is.
    pub kind: FrameKind,
    /// The IP header says Congestion Experienced.
    pub ce: bool,
}

/// The classes of frames the links follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A request (SEND, WRITE, READ request, atomic).
    Request,
    /// An ACK, read response or atomic ACK.
    Response,
    /// A NAK or RNR NAK.
    Nak,
    /// A congestion notification packet.
    Cnp,
}

impl FrameFacts {
    /// The facts of a parsed frame.
    pub fn of(frame: usize, time: Duration, p: &RocePacket<'_>) -> FrameFacts {
        let bth = &p.repr.bth;
        let op = bth.opcode;
        let kind = if op.is_cnp() {
            FrameKind::Cnp
        } else if p.repr.ext.aeth.is_some_and(|a| a.syndrome.is_nak()) {
            FrameKind::Nak
        } else if op.is_request() {
            FrameKind::Request
        } else {
            FrameKind::Response
        };
        FrameFacts {
            frame,
            time,
            src: p.repr.ip.src(),
            dst: p.repr.ip.dst(),
            dest_qpn: bth.dest_qpn,
            psn: bth.psn,
            kind,
            ce: p.repr.ip.ecn() == Ecn::Ce,
        }
    }
}
