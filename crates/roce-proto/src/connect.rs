//! Connecting RC queue pairs without a wire exchange: [`RcOptions`] (the attributes both sides
//! agree on), [`RcOptions::attrs_to_rts`] (the three `modify_qp` steps to RTS) and [`connect_rc`],
//! which does for two endpoints in one process what a TCP exchange does between two hosts.

use crate::endpoint::Endpoint;

/// How [`connect_rc`] sets up a QP pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RcOptions {
    /// Path MTU of both QPs.
    pub mtu: crate::verbs::Mtu,
    /// First send PSN of A's QP (B's expected PSN).
    pub a_psn: crate::psn::Psn,
    /// First send PSN of B's QP (A's expected PSN).
    pub b_psn: crate::psn::Psn,
    /// Local ACK timeout code.
    pub timeout: u8,
    /// Transport retries.
    pub retry_cnt: u8,
    /// RNR retries (7 = infinite).
    pub rnr_retry: u8,
    /// RNR NAK timer code.
    pub min_rnr_timer: u8,
    /// READ/atomic depth both ways.
    pub max_rd_atomic: u8,
    /// Remote access both responders allow.
    pub access: crate::verbs::AccessFlags,
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth.
    pub max_recv_wr: u32,
    /// How both QPs recover lost packets.
    pub recovery: crate::verbs::Recovery,
}

impl Default for RcOptions {
    fn default() -> Self {
        use crate::verbs::AccessFlags;
        RcOptions {
            mtu: crate::verbs::Mtu::Mtu1024,
            a_psn: crate::psn::Psn::new(0),
            b_psn: crate::psn::Psn::new(0),
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            max_rd_atomic: 16,
            access: AccessFlags::REMOTE_WRITE
                | AccessFlags::REMOTE_READ
                | AccessFlags::REMOTE_ATOMIC,
            max_send_wr: 256,
            max_recv_wr: 256,
            recovery: crate::verbs::Recovery::GoBackN,
        }
    }
}

impl RcOptions {
    /// The three `modify_qp` attribute sets (RESET→INIT, INIT→RTR, RTR→RTS) that connect a QP
    /// to `dest_qpn` at `av`, expecting `rq_psn` and sending from `sq_psn`.
    pub fn attrs_to_rts(
        &self,
        dest_qpn: u32,
        av: crate::verbs::AddressVector,
        rq_psn: crate::psn::Psn,
        sq_psn: crate::psn::Psn,
    ) -> [crate::verbs::QpAttr; 3] {
        use crate::verbs::{QpAttr, QpState};
        [
            QpAttr {
                state: Some(QpState::Init),
                access_flags: Some(self.access),
                ..Default::default()
            },
            QpAttr {
                state: Some(QpState::Rtr),
                path_mtu: Some(self.mtu),
                dest_qp_num: Some(dest_qpn),
                av: Some(av),
                rq_psn: Some(rq_psn),
                min_rnr_timer: Some(self.min_rnr_timer),
                max_dest_rd_atomic: Some(self.max_rd_atomic.max(1)),
                recovery: Some(self.recovery),
                ..Default::default()
            },
            QpAttr {
                state: Some(QpState::Rts),
                sq_psn: Some(sq_psn),
                timeout: Some(self.timeout),
                retry_cnt: Some(self.retry_cnt),
                rnr_retry: Some(self.rnr_retry),
                max_rd_atomic: Some(self.max_rd_atomic),
                ..Default::default()
            },
        ]
    }
}

/// One side of a connected QP pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RcSide {
    /// Protection domain the QP lives in.
    pub pd: crate::mr::PdHandle,
    /// CQ for both send and receive completions.
    pub cq: crate::verbs::CqHandle,
    /// The QP number.
    pub qpn: u32,
}

fn rc_qp(
    ep: &mut Endpoint,
    pd: crate::mr::PdHandle,
    cq: crate::verbs::CqHandle,
    o: &RcOptions,
) -> Result<u32, crate::qp::QpError> {
    ep.create_qp(crate::verbs::QpInit::shared_cq(
        pd,
        cq,
        o.max_send_wr,
        o.max_recv_wr,
    ))
}

/// The address vector with which an endpoint configured as `local` reaches one configured as
/// `peer` (its IPv4 address when both have one, else its IPv6 address, and its MAC).
pub fn address_vector(
    local: &crate::endpoint::EndpointConfig,
    peer: &crate::endpoint::EndpointConfig,
) -> Result<crate::verbs::AddressVector, crate::qp::QpError> {
    let remote_ip = match (peer.ipv4, peer.ipv6, local.ipv4) {
        (Some(v4), _, Some(_)) => std::net::IpAddr::V4(v4),
        (_, Some(v6), _) => std::net::IpAddr::V6(v6),
        (Some(v4), None, None) => std::net::IpAddr::V4(v4),
        (None, None, _) => return Err(crate::qp::QpError::InvalidAttribute("av.remote_ip")),
    };
    Ok(crate::verbs::AddressVector {
        remote_ip,
        remote_mac: peer.mac,
        traffic_class: 0,
        hop_limit: 64,
    })
}

fn to_rts(
    ep: &mut Endpoint,
    qpn: u32,
    peer: &Endpoint,
    peer_qpn: u32,
    sq_psn: crate::psn::Psn,
    rq_psn: crate::psn::Psn,
    o: &RcOptions,
) -> Result<(), crate::qp::QpError> {
    let av = address_vector(ep.config(), peer.config())?;
    for attr in o.attrs_to_rts(peer_qpn, av, rq_psn, sq_psn) {
        ep.modify_qp(qpn, &attr)?;
    }
    Ok(())
}

/// Creates a QP on each endpoint (with a fresh PD and CQ each) and moves both to RTS, connected
/// to each other, as an out-of-band exchange (TCP in `ibv_rc_pingpong`) would.
pub fn connect_rc(
    a: &mut Endpoint,
    b: &mut Endpoint,
    o: &RcOptions,
) -> Result<(RcSide, RcSide), crate::qp::QpError> {
    let cap = (o.max_send_wr + o.max_recv_wr) as usize * 2;
    let (pd_a, cq_a) = (a.alloc_pd(), a.create_cq(cap));
    let (pd_b, cq_b) = (b.alloc_pd(), b.create_cq(cap));
    let qa = rc_qp(a, pd_a, cq_a, o)?;
    let qb = rc_qp(b, pd_b, cq_b, o)?;
    to_rts(a, qa, b, qb, o.a_psn, o.b_psn, o)?;
    to_rts(b, qb, a, qa, o.b_psn, o.a_psn, o)?;
    Ok((
        RcSide {
            pd: pd_a,
            cq: cq_a,
            qpn: qa,
        },
        RcSide {
            pd: pd_b,
            cq: cq_b,
            qpn: qb,
        },
    ))
}
