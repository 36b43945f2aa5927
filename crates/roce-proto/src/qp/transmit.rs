//! What a QP sends: the next control packet (ACK, NAK, atomic ACK) or data packet (READ
//! response or request), described as an [`Outgoing`] by the responder or requester and written
//! into the caller's buffer from the QP's frame templates, payload gathered in place. Not here:
//! which packet is due (requester, responder) or when (the endpoint's scheduler and the pacer).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::mr::{MrRange, MrTable};
use crate::psn::Psn;
use crate::time::Instant;
use crate::verbs::{CompletionQueue, QpState, WcStatus};
use crate::wire::opcode::Opcode;
use crate::wire::placement;
use crate::wire::{
    bth, dscp, ethernet, Ecn, EthernetAddress, ExtRepr, FrameTemplate, IpRepr, PacketFields,
    RoceRepr,
};

use super::{timer, QueuePair};

/// The local addresses and defaults an endpoint gives its QPs for building frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalAddr {
    /// This endpoint's MAC.
    pub mac: EthernetAddress,
    /// This endpoint's IPv4 address, if any.
    pub ipv4: Option<Ipv4Addr>,
    /// This endpoint's IPv6 address, if any.
    pub ipv6: Option<Ipv6Addr>,
    /// The partition key stamped on every packet.
    pub pkey: u16,
    /// DSCP/ECN/PCP for packets whose QP traffic class leaves them 0, and the VLAN.
    pub marking: crate::ecn::Marking,
}

/// Where the payload bytes of an outgoing packet come from.
#[derive(Clone, Debug)]
pub(crate) enum Payload {
    None,
    /// Bytes `offset..offset + len` of the message of send WQE `wqe` (an index into the send
    /// queue, valid until the packet is written: no clone of its SGL per packet).
    Wqe {
        wqe: usize,
        offset: u64,
        len: usize,
    },
    /// A range of a memory region (READ responses).
    Mr {
        range: MrRange,
    },
}

/// One packet a QP wants to send, before the addresses are added. Filled in place by the
/// requester or responder and read in place by the emitter (no copies of its extension headers).
#[derive(Clone, Debug)]
pub(crate) struct Outgoing {
    /// Opcode, flags, PSN, extension headers and payload length, as the template takes them.
    pub fields: PacketFields,
    pub payload: Payload,
    /// Selective repeat's placement header, written before the payload.
    pub placement: Option<placement::Repr>,
    pub retransmission: bool,
}

impl Outgoing {
    pub(super) fn empty() -> Self {
        Outgoing {
            fields: PacketFields {
                opcode: Opcode::RC_ACKNOWLEDGE,
                solicited: false,
                ack_req: false,
                psn: Psn::new(0),
                ext: ExtRepr::default(),
                payload_len: 0,
            },
            payload: Payload::None,
            placement: None,
            retransmission: false,
        }
    }

    /// Starts a packet without payload: every field set, extension headers cleared.
    pub(super) fn reset(&mut self, opcode: Opcode, psn: Psn) {
        let f = &mut self.fields;
        f.opcode = opcode;
        f.psn = psn;
        f.solicited = false;
        f.ack_req = false;
        f.ext = ExtRepr::default();
        f.payload_len = 0;
        self.payload = Payload::None;
        self.placement = None;
        self.retransmission = false;
    }

    /// Sets the payload and its length (a placement header, if set, counts as payload).
    pub(super) fn set_payload(&mut self, payload: Payload) {
        let header = self.placement.map_or(0, |_| placement::HEADER_LEN);
        self.fields.payload_len = header
            + match &payload {
                Payload::None => 0,
                Payload::Wqe { len, .. } => *len,
                Payload::Mr { range } => range.len(),
            };
        self.payload = payload;
    }
}

/// A QP's two frame templates (data packets carry the endpoint's ECN, ACKs Not-ECT unless the
/// traffic class says otherwise) and the local address they were built for.
#[derive(Debug)]
pub(super) struct Templates {
    local: LocalAddr,
    data: FrameTemplate,
    control: FrameTemplate,
}

impl QueuePair {
    /// Writes the next control packet into `buf`; returns its length.
    #[must_use]
    pub fn poll_control(
        &mut self,
        now: Instant,
        local: &LocalAddr,
        mrs: &MrTable,
        buf: &mut [u8],
    ) -> Option<usize> {
        if !self.has_control() {
            return None;
        }
        let mut o = Outgoing::empty();
        if !self
            .resp
            .next_packet(self.attrs.path_mtu.bytes(), mrs, &mut o)
        {
            return None;
        }
        match o.fields.ext.aeth.map(|a| a.syndrome) {
            Some(crate::wire::aeth::Syndrome::Ack { .. }) => self.stats.acks_sent += 1,
            Some(_) => self.stats.naks_sent += 1,
            None => {}
        }
        self.emit(now, &o, local, mrs, buf, false).ok()
    }

    /// Writes the next data packet into `buf` (READ responses first, then requests); returns
    /// its length. Memory that went away since a work request was posted (or a READ was
    /// received) fails the QP here, at the access, instead of sending anything from it.
    #[must_use]
    pub fn poll_data(
        &mut self,
        now: Instant,
        local: &LocalAddr,
        mrs: &mut MrTable,
        cqs: &mut [CompletionQueue],
        buf: &mut [u8],
    ) -> Option<usize> {
        if self.departure_held(now)
            || matches!(self.state, QpState::Reset | QpState::Init | QpState::Err)
        {
            return None;
        }
        let mtu = self.attrs.path_mtu.bytes();
        let request = !self.resp.has_data();
        let mut o = Outgoing::empty();
        if !request {
            if !self.resp.next_packet(mtu, mrs, &mut o) {
                return None;
            }
            if self.resp.take_fatal() {
                // The READ's region went away: a remote access error NAK, then ERR (as rxe).
                self.stats.resp_remote_access_errors += 1;
                self.stats.naks_sent += 1;
                let n = self.emit(now, &o, local, mrs, buf, false).ok();
                self.enter_error(cqs);
                return n;
            }
        } else {
            // The window once per poll: it gates the readiness check below, then bounds it.
            let window = self.cc.as_ref().and_then(super::CcPacer::window);
            if !matches!(self.state, QpState::Rts | QpState::Sqd)
                || ((self.state == QpState::Sqd || window.is_some())
                    && self.requester_ready_within(|| window).is_none())
            {
                return None;
            }
            let ack_each = self.cc.as_ref().is_some_and(super::CcPacer::ack_each);
            self.req.ack_each = ack_each || self.pacer_is_slow(mtu);
            let losses = self.req.losses;
            if !self
                .req
                .next_packet(mtu, self.attrs.max_rd_atomic, &self.cfg, &mut o)
            {
                return None;
            }
            // Selective repeat decides a packet is lost when it resends it.
            if self.req.losses != losses {
                if let Some(p) = self.cc.as_mut() {
                    self.rtt.on_loss();
                    p.on_loss(now);
                }
            }
            if o.retransmission {
                self.stats.retransmitted_packets += 1;
            }
            self.req.arm_ack_timer(
                now,
                &mut self.timers,
                timer::ack_timeout(self.attrs.timeout),
                false,
            );
        }
        let n = match self.emit(now, &o, local, mrs, buf, true) {
            Ok(n) => n,
            Err(Unsent::Lost) => return None,
            Err(Unsent::SourceGone) => {
                if let Payload::Wqe { wqe, .. } = o.payload {
                    // Completes with a local protection error once it is the oldest.
                    self.req.stop_at(wqe, WcStatus::LocProtErr);
                    if wqe == 0 {
                        self.fail(WcStatus::LocProtErr, now, mrs, cqs);
                    }
                }
                return None;
            }
        };
        if let Some(p) = self.cc.as_mut() {
            // A departure already due is no hold: keeping it would make `poll_timeout` report a
            // past deadline and the loop fire timers on every poll.
            let next = p.on_transmit(now, n);
            self.next_departure = if next > now { next } else { Instant::ZERO };
            if request {
                self.rtt
                    .on_request_sent(now, o.fields.psn, o.fields.ack_req, o.retransmission, n);
            }
        }
        Some(n)
    }

    /// The headers of this QP's packets for `local`, ECN as a data packet (`data`) or as an
    /// ACK would carry it. `None` before RTR (no address vector) or without a local address of
    /// the peer's IP version.
    fn repr(&self, local: &LocalAddr, data: bool) -> Option<RoceRepr> {
        let av = self.attrs.av?;
        let src: IpAddr = match av.remote_ip {
            IpAddr::V4(_) => IpAddr::V4(local.ipv4?),
            IpAddr::V6(_) => IpAddr::V6(local.ipv6?),
        };
        let m = &local.marking;
        let mut ecn = Ecn::from_bits(av.traffic_class);
        if ecn == Ecn::NotEct && data {
            ecn = m.data_ecn;
        }
        // A traffic class of 0 means "unset": the endpoint's class applies. Any other value
        // is the QP's own (so DSCP 0 is expressible as 0 with ECN bits).
        let ip_dscp = match av.traffic_class {
            0 => m.data_dscp,
            tc => dscp(tc),
        };
        let mut ip = IpRepr::new_roce(src, av.remote_ip, ip_dscp, ecn);
        match &mut ip {
            IpRepr::V4(r) => r.ttl = av.hop_limit,
            IpRepr::V6(r) => r.hop_limit = av.hop_limit,
        }
        Some(RoceRepr {
            eth: ethernet::Repr {
                dst: av.remote_mac,
                src: local.mac,
                vlan: m.vlan_tag(m.data_pcp),
                ethertype: crate::wire::EtherType::Ipv4,
            },
            ip,
            udp_src_port: self.udp_src_port,
            bth: bth::Repr {
                pkey: local.pkey,
                dest_qpn: self.attrs.dest_qpn,
                ..bth::Repr::default()
            },
            ext: ExtRepr::default(),
            payload_len: 0,
        })
    }

    /// The frame templates for `local`, built on first use after a change of address or
    /// destination (no per-packet header building).
    fn templates(&mut self, local: &LocalAddr) -> Option<&Templates> {
        if !self.templates.as_ref().is_some_and(|t| t.local == *local) {
            self.templates = Some(Box::new(Templates {
                local: *local,
                data: FrameTemplate::new(&self.repr(local, true)?),
                control: FrameTemplate::new(&self.repr(local, false)?),
            }));
        }
        self.templates.as_deref()
    }

    fn emit(
        &mut self,
        _now: Instant,
        o: &Outgoing,
        local: &LocalAddr,
        mrs: &MrTable,
        buf: &mut [u8],
        data: bool,
    ) -> Result<usize, Unsent> {
        self.templates(local).ok_or(Unsent::Lost)?;
        let t = self.templates.as_deref().ok_or(Unsent::Lost)?;
        let template = if data { &t.data } else { &t.control };
        let sq = &self.req.sq;
        // The payload is read at this moment, from memory that must still be there.
        let mut readable = true;
        // The closure says whether it wrote only zeros (their ICRC needs no hashing).
        let result = template.emit_gathered(&o.fields, buf, |dst| {
            let dst = match &o.placement {
                Some(h) => {
                    let (header, rest) = dst.split_at_mut(placement::HEADER_LEN);
                    header.copy_from_slice(&h.to_bytes());
                    rest
                }
                None => dst,
            };
            let zeros = match &o.payload {
                Payload::None => true,
                Payload::Wqe { wqe, offset, .. } => {
                    let sgl = sq.get(*wqe).map(|w| &w.wr.sgl[..]);
                    let zeros = sgl.and_then(|sgl| mrs.gather_zeros(sgl, *offset, dst));
                    readable = zeros.is_some();
                    zeros.unwrap_or(false)
                }
                Payload::Mr { range } => {
                    readable = mrs.load(*range, dst) == Ok(true);
                    false
                }
            };
            zeros && o.placement.is_none()
        });
        match result {
            Ok(_) if !readable => Err(Unsent::SourceGone),
            Ok(n) => {
                self.stats.tx_packets += 1;
                self.stats.tx_bytes += n as u64;
                Ok(n)
            }
            Err(e) => {
                tracing::warn!(qpn = self.qpn, error = %e, "could not emit a packet; it is lost");
                Err(Unsent::Lost)
            }
        }
    }
}

/// Why [`QueuePair::emit`] wrote no packet.
enum Unsent {
    /// The frame could not be built (no address yet, buffer too small): the packet is lost.
    Lost,
    /// The payload's memory was deregistered or invalidated since it was named.
    SourceGone,
}
