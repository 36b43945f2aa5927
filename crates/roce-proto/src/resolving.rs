//! A resolving endpoint: an [`Endpoint`] plus the neighbour protocols a real port needs
//! (an ARP resolver/responder for IPv4, an NDP responder for IPv6), composed into one
//! [`Engine`]. A QP whose peer MAC is not known yet is moved to RTR only once ARP (or NDP) has
//! found it. A QP whose peer is this endpoint (our own address, as two QPs of one process on
//! one device) resolves to our own MAC at once, and its frames loop back inside the engine
//! without reaching the port, as Soft-RoCE loops them. Sans-IO like its parts: no clock, no I/O.
//! Not here: routing, gateways, VLANs.

use std::net::{IpAddr, Ipv6Addr};

use crate::arp;
use crate::arp::{Lookup, Resolver};
use crate::counters::EndpointCounters;
use crate::endpoint::{Endpoint, EndpointConfig};
use crate::engine::Engine;
use crate::ndp;
use crate::ndp::Responder;
use crate::qp::QpError;
use crate::time::{Duration, Instant};
use crate::verbs::{QpAttr, QpState};
use crate::wire::EthernetAddress;

/// The MAC to put in an address vector when the peer's MAC is to be resolved (ARP/NDP).
pub const UNKNOWN_MAC: EthernetAddress = EthernetAddress([0; 6]);

/// Frames looped back to ourselves in one [`Engine::poll_transmit`] at most, so one call stays
/// short when our own QPs stream to each other; the rest wait for the next call.
const MAX_LOOPED_PER_POLL: usize = 64;

/// How often an unresolved IPv6 neighbour is solicited again.
const NDP_RETRY: Duration = Duration::from_secs(1);
/// Solicitations before an IPv6 neighbour is declared unreachable.
const NDP_MAX_SOLICITS: u32 = 3;

/// What became of a [`ResolvingEndpoint::modify_qp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Modify {
    /// Applied to the QP now.
    Applied,
    /// Held until the peer's MAC is resolved (then applied, with the MAC filled in).
    Deferred,
}

/// What the resolution of a QP's peer came to, as reported to the endpoint's user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResolutionEvent {
    /// The deferred modifications of a QP were applied after its peer's MAC was found.
    QpResolved {
        /// The QP.
        qpn: u32,
        /// The peer's MAC.
        mac: EthernetAddress,
    },
    /// The peer of a QP never answered ARP/NDP, or a deferred modification failed; the QP was
    /// moved to the error state.
    QpUnreachable {
        /// The QP.
        qpn: u32,
        /// The peer address that did not resolve.
        ip: IpAddr,
    },
}

/// Counters of a [`ResolvingEndpoint`]: the endpoint's plus ARP's and NDP's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResolvingCounters {
    /// The transport's counters.
    pub endpoint: EndpointCounters,
    /// ARP frames received.
    pub arp_rx: u64,
    /// ARP requests sent.
    pub arp_tx_requests: u64,
    /// ARP replies sent.
    pub arp_tx_replies: u64,
    /// NDP solicitations for us received.
    pub ndp_rx_solicits: u64,
    /// NDP advertisements sent.
    pub ndp_tx_adverts: u64,
    /// NDP solicitations sent.
    pub ndp_tx_solicits: u64,
    /// Frames addressed to ourselves (QPs of this endpoint connected to each other), handled
    /// here instead of sent.
    pub looped_back: u64,
}

/// The remote side of a QP, as the out-of-band exchange tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerQp {
    /// The peer's IP address (from its GID).
    pub ip: IpAddr,
    /// The peer's MAC when known (`None`: resolve with ARP/NDP).
    pub mac: Option<EthernetAddress>,
    /// The peer's QP number.
    pub qpn: u32,
    /// The first PSN the peer sends (our expected PSN).
    pub psn: crate::psn::Psn,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    qpn: u32,
    ip: IpAddr,
    attr: QpAttr,
}

#[derive(Clone, Copy, Debug)]
struct Solicit {
    ip: Ipv6Addr,
    sent: u32,
    next: Instant,
}

/// An [`Endpoint`] with ARP and NDP in front of it: it resolves its QPs' peer MACs and answers
/// its neighbours.
#[derive(Debug)]
pub struct ResolvingEndpoint {
    endpoint: Endpoint,
    /// Our MAC and addresses: a peer at one of them is this endpoint.
    mac: EthernetAddress,
    ipv4: Option<std::net::Ipv4Addr>,
    ipv6: Option<Ipv6Addr>,
    looped_back: u64,
    arp: Option<Resolver>,
    ndp: Option<Responder>,
    pending: Vec<Pending>,
    solicits: Vec<Solicit>,
    events: std::collections::VecDeque<ResolutionEvent>,
    ndp_tx_solicits: u64,
}

impl ResolvingEndpoint {
    /// An endpoint with `cfg`'s MAC and addresses (ARP for its IPv4, NDP for its IPv6).
    pub fn new(cfg: EndpointConfig) -> Self {
        ResolvingEndpoint {
            arp: cfg
                .ipv4
                .map(|ip| Resolver::new(arp::Config::new(cfg.mac, ip))),
            ndp: cfg.ipv6.map(|ip| Responder::new(cfg.mac, ip)),
            mac: cfg.mac,
            ipv4: cfg.ipv4,
            ipv6: cfg.ipv6,
            looped_back: 0,
            endpoint: Endpoint::new(cfg),
            pending: Vec::new(),
            solicits: Vec::new(),
            events: Default::default(),
            ndp_tx_solicits: 0,
        }
    }

    /// The transport endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The transport endpoint, mutably (QPs, MRs, CQs, posting work).
    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    /// Announces our IPv4 address (a gratuitous ARP request) on the next transmit.
    pub fn announce(&mut self) {
        if let Some(a) = self.arp.as_mut() {
            a.announce();
        }
    }

    /// Adds a permanent neighbour entry (a MAC given on the command line).
    pub fn insert_static(&mut self, ip: IpAddr, mac: EthernetAddress) {
        if let (IpAddr::V4(v4), Some(a)) = (ip, self.arp.as_mut()) {
            a.insert_static(v4, mac);
        }
    }

    /// The MAC of `ip` if known (ours for our own addresses); otherwise starts resolving it and
    /// returns `None`.
    pub fn resolve(&mut self, now: Instant, ip: IpAddr) -> Option<EthernetAddress> {
        if self.is_ours(ip) {
            return Some(self.mac);
        }
        match ip {
            IpAddr::V4(v4) => match self.arp.as_mut()?.lookup(now, v4) {
                Lookup::Reachable(mac) => Some(mac),
                Lookup::Pending | Lookup::TableFull => None,
            },
            IpAddr::V6(v6) => {
                if let Some(v4) = v6.to_ipv4_mapped() {
                    return self.resolve(now, IpAddr::V4(v4));
                }
                let mac = self.ndp.as_ref()?.neighbour(v6);
                if mac.is_none() && !self.solicits.iter().any(|s| s.ip == v6) {
                    self.solicits.push(Solicit {
                        ip: v6,
                        sent: 0,
                        next: now,
                    });
                }
                mac
            }
        }
    }

    /// `modify_qp`, filling in the peer MAC: an address vector with [`UNKNOWN_MAC`] is resolved
    /// first, and the modification (and any later one of the same QP) is held until it is.
    pub fn modify_qp(&mut self, now: Instant, qpn: u32, attr: &QpAttr) -> Result<Modify, QpError> {
        if self.endpoint.qp(qpn).is_none() {
            return Err(QpError::UnknownQp(qpn));
        }
        let held = self.pending.iter().find(|p| p.qpn == qpn).map(|p| p.ip);
        let mut attr = *attr;
        let unknown = attr.av.filter(|av| av.remote_mac == UNKNOWN_MAC);
        let wait_for = match (held, unknown) {
            (Some(ip), _) => Some(ip),
            (None, Some(av)) => match self.resolve(now, av.remote_ip) {
                Some(mac) => {
                    attr.av = Some(crate::verbs::AddressVector {
                        remote_mac: mac,
                        ..av
                    });
                    None
                }
                None => Some(av.remote_ip),
            },
            (None, None) => None,
        };
        match wait_for {
            Some(ip) => {
                self.pending.push(Pending { qpn, ip, attr });
                Ok(Modify::Deferred)
            }
            None => self
                .endpoint
                .modify_qp(qpn, &attr)
                .map(|()| Modify::Applied),
        }
    }

    /// Moves `qpn` from RESET through INIT and RTR to RTS, connected to `peer` (as an
    /// out-of-band exchange reported it), sending from `sq_psn`. With `peer.mac` unknown the RTR
    /// and RTS steps wait for ARP/NDP ([`ResolutionEvent::QpResolved`] says when they are done).
    pub fn connect_qp(
        &mut self,
        now: Instant,
        qpn: u32,
        peer: &PeerQp,
        sq_psn: crate::psn::Psn,
        o: &crate::connect::RcOptions,
    ) -> Result<Modify, QpError> {
        let av = crate::verbs::AddressVector {
            remote_ip: peer.ip,
            remote_mac: peer.mac.unwrap_or(UNKNOWN_MAC),
            traffic_class: 0,
            hop_limit: 64,
        };
        let [init, rtr, rts] = o.attrs_to_rts(peer.qpn, av, peer.psn, sq_psn);
        let _ = self.modify_qp(now, qpn, &init)?;
        let _ = self.modify_qp(now, qpn, &rtr)?;
        self.modify_qp(now, qpn, &rts)
    }

    /// Destroys `qpn` with what is held for it: modifications waiting for ARP/NDP and events
    /// not yet polled. A QP created later with the same number starts clean.
    pub fn destroy_qp(&mut self, qpn: u32) -> Result<(), QpError> {
        self.pending.retain(|p| p.qpn != qpn);
        self.events.retain(|e| match *e {
            ResolutionEvent::QpResolved { qpn: q, .. }
            | ResolutionEvent::QpUnreachable { qpn: q, .. } => q != qpn,
        });
        self.endpoint.destroy_qp(qpn)
    }

    /// Whether `qpn` has modifications waiting for address resolution.
    pub fn is_deferred(&self, qpn: u32) -> bool {
        self.pending.iter().any(|p| p.qpn == qpn)
    }

    /// The next event, if any.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<ResolutionEvent> {
        self.events.pop_front()
    }

    /// Counters of the endpoint, ARP and NDP.
    pub fn counters(&self) -> ResolvingCounters {
        let a = self
            .arp
            .as_ref()
            .map(Resolver::counters)
            .unwrap_or_default();
        let n = self
            .ndp
            .as_ref()
            .map(Responder::counters)
            .unwrap_or_default();
        ResolvingCounters {
            endpoint: self.endpoint.counters(),
            arp_rx: a.rx_arp,
            arp_tx_requests: a.tx_requests,
            arp_tx_replies: a.tx_replies,
            ndp_rx_solicits: n.rx_solicits_for_us,
            ndp_tx_adverts: n.tx_adverts,
            ndp_tx_solicits: self.ndp_tx_solicits,
            looped_back: self.looped_back,
        }
    }

    /// Applies the held modifications of QPs waiting for `ip`, now known at `mac`.
    fn release(&mut self, ip: IpAddr, mac: Option<EthernetAddress>) {
        let (ready, rest): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| same_ip(p.ip, ip));
        self.pending = rest;
        let mut failed: Vec<u32> = Vec::new();
        let mut done: Vec<u32> = Vec::new();
        for p in ready {
            if failed.contains(&p.qpn) {
                continue;
            }
            let Some(mac) = mac else {
                failed.push(p.qpn);
                continue;
            };
            let mut attr = p.attr;
            if let Some(av) = attr.av.as_mut() {
                if av.remote_mac == UNKNOWN_MAC {
                    av.remote_mac = mac;
                }
            }
            match self.endpoint.modify_qp(p.qpn, &attr) {
                Ok(()) => {
                    if !done.contains(&p.qpn) {
                        done.push(p.qpn);
                    }
                }
                Err(e) => {
                    tracing::warn!(qpn = p.qpn, error = %e, "deferred modify_qp failed");
                    failed.push(p.qpn);
                }
            }
        }
        for qpn in failed {
            let to_err = QpAttr {
                state: Some(QpState::Err),
                ..Default::default()
            };
            if let Err(e) = self.endpoint.modify_qp(qpn, &to_err) {
                tracing::warn!(qpn, error = %e, "cannot move QP to the error state");
            }
            done.retain(|&q| q != qpn);
            self.events
                .push_back(ResolutionEvent::QpUnreachable { qpn, ip });
        }
        if let Some(mac) = mac {
            for qpn in done {
                self.events
                    .push_back(ResolutionEvent::QpResolved { qpn, mac });
            }
        }
    }

    fn drain_arp_events(&mut self) {
        while let Some(ev) = self.arp.as_mut().and_then(Resolver::poll_event) {
            match ev {
                arp::Event::Resolved { ip, mac } => self.release(IpAddr::V4(ip), Some(mac)),
                arp::Event::Unreachable { ip } => self.release(IpAddr::V4(ip), None),
            }
        }
    }

    fn check_ndp(&mut self) {
        let Some(ndp) = self.ndp.as_ref() else { return };
        let found: Vec<(Ipv6Addr, EthernetAddress)> = self
            .solicits
            .iter()
            .filter_map(|s| ndp.neighbour(s.ip).map(|m| (s.ip, m)))
            .collect();
        for (ip, mac) in found {
            self.solicits.retain(|s| s.ip != ip);
            self.release(IpAddr::V6(ip), Some(mac));
        }
    }
}

impl ResolvingEndpoint {
    /// Whether `ip` (IPv4, IPv4-mapped or IPv6) is one of our addresses.
    fn is_ours(&self, ip: IpAddr) -> bool {
        self.ipv4.is_some_and(|v4| same_ip(ip, IpAddr::V4(v4)))
            || self.ipv6.is_some_and(|v6| ip == IpAddr::V6(v6))
    }

    /// The next frame for the port: ARP and NDP first, then the transport's.
    fn next_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if let Some(a) = self.arp.as_mut() {
            match a.poll_transmit(now, buf) {
                Ok(Some(n)) => return Some(n),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "ARP frame does not fit the buffer"),
            }
        }
        if let Some(n) = self.ndp.as_mut() {
            match n.poll_transmit(buf) {
                Ok(Some(len)) => return Some(len),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "NDP frame does not fit the buffer"),
            }
            if let Some(s) = self
                .solicits
                .iter_mut()
                .find(|s| s.next <= now && s.sent < NDP_MAX_SOLICITS)
            {
                match n.solicit(s.ip, buf) {
                    Ok(len) => {
                        s.sent += 1;
                        s.next = now + NDP_RETRY;
                        self.ndp_tx_solicits += 1;
                        return Some(len);
                    }
                    Err(e) => tracing::warn!(error = %e, "NDP solicitation does not fit"),
                }
            }
        }
        self.endpoint.poll_transmit(now, buf)
    }
}

fn same_ip(a: IpAddr, b: IpAddr) -> bool {
    let v6 = |ip: IpAddr| match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    v6(a) == v6(b)
}

impl Engine for ResolvingEndpoint {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        if let Some(a) = self.arp.as_mut() {
            match a.handle_frame(now, frame) {
                Err(arp::ArpError::NotArp) => {}
                _ => {
                    self.drain_arp_events();
                    return;
                }
            }
        }
        if let Some(n) = self.ndp.as_mut() {
            match n.handle_frame(frame) {
                Err(ndp::NdpError::NotNdp) => {}
                _ => {
                    self.check_ndp();
                    return;
                }
            }
        }
        self.endpoint.handle_frame(now, frame);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(a) = self.arp.as_mut() {
            a.handle_timeout(now);
        }
        self.drain_arp_events();
        let expired: Vec<Ipv6Addr> = self
            .solicits
            .iter()
            .filter(|s| s.sent >= NDP_MAX_SOLICITS && s.next <= now)
            .map(|s| s.ip)
            .collect();
        for ip in expired {
            self.solicits.retain(|s| s.ip != ip);
            self.release(IpAddr::V6(ip), None);
        }
        self.endpoint.handle_timeout(now);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        for _ in 0..MAX_LOOPED_PER_POLL {
            let n = self.next_transmit(now, buf)?;
            let frame = buf.get(..n)?;
            if frame.get(..6) != Some(&self.mac.0[..]) {
                return Some(n);
            }
            // A frame to ourselves: our own QPs talk to each other.
            self.looped_back += 1;
            self.handle_frame(now, frame);
        }
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let arp = self.arp.as_ref().and_then(Resolver::poll_timeout);
        let ndp = self.solicits.iter().map(|s| s.next).min();
        [arp, ndp, self.endpoint.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }
}

#[cfg(test)]
mod tests;
