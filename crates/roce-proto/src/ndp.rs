//! IPv6 neighbour discovery (RFC 4861) for a RoCEv2 endpoint: a sans-IO [`Responder`] that
//! answers Neighbor Solicitations for our address and remembers what neighbours announce. The
//! messages and their checksum are [`crate::wire::ndp`]. Not here: router discovery, duplicate
//! address detection, retries and expiry (ARP's [`crate::arp`] has those).

use std::collections::VecDeque;
use std::net::Ipv6Addr;

use crate::wire::ethernet::EthernetAddress;
use crate::wire::ndp::{emit_frame, multicast_mac, parse_frame, solicited_node, NdpRepr};

/// Why a frame was not taken, or could not be written (the wire format's error).
pub use crate::wire::ndp::NdpError;

/// Neighbours remembered; the oldest is forgotten first.
pub const MAX_NEIGHBOURS: usize = 256;

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Solicitations for our address.
    pub rx_solicits_for_us: u64,
    /// Advertisements received.
    pub rx_adverts: u64,
    /// Neighbour discovery frames dropped (checksum, hop limit, malformed).
    pub rx_dropped: u64,
    /// Advertisements we sent.
    pub tx_adverts: u64,
    /// Solicitations left unanswered because [`MAX_QUEUED_REPLIES`] were waiting.
    pub replies_dropped: u64,
}

/// Most advertisements waiting to be sent: every solicitation for our address asks for one, so
/// a flood queues one per asker and at most this many in all (the rest are dropped and counted).
pub const MAX_QUEUED_REPLIES: usize = 64;

/// Answers solicitations for one IPv6 address and remembers neighbours' MACs.
#[derive(Debug, Clone)]
pub struct Responder {
    mac: EthernetAddress,
    ip: Ipv6Addr,
    /// Advertisements owed: (asker's MAC, asker's IP or all-nodes).
    replies: VecDeque<(EthernetAddress, Ipv6Addr, bool)>,
    neighbours: Vec<(Ipv6Addr, EthernetAddress)>,
    counters: Counters,
}

impl Responder {
    /// Answers for `ip` with `mac`.
    pub fn new(mac: EthernetAddress, ip: Ipv6Addr) -> Self {
        Responder {
            mac,
            ip,
            replies: VecDeque::new(),
            neighbours: Vec::new(),
            counters: Counters::default(),
        }
    }

    /// Counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The MAC a neighbour announced (in an advertisement or a solicitation's source option).
    pub fn neighbour(&self, ip: Ipv6Addr) -> Option<EthernetAddress> {
        self.neighbours
            .iter()
            .find(|(i, _)| *i == ip)
            .map(|&(_, m)| m)
    }

    /// Takes one frame; `Err(NotNdp)` hands it back for other protocols.
    pub fn handle_frame(&mut self, frame: &[u8]) -> Result<NdpRepr, NdpError> {
        let parsed = parse_frame(frame).inspect_err(|e| {
            if *e != NdpError::NotNdp {
                self.counters.rx_dropped += 1;
            }
        })?;
        match parsed.ndp {
            NdpRepr::Solicit { target, source_mac } if target == self.ip => {
                self.counters.rx_solicits_for_us += 1;
                let reply = if parsed.ip.src.is_unspecified() {
                    // Duplicate address detection: answer all nodes, unsolicited.
                    let all_nodes = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
                    (multicast_mac(all_nodes), all_nodes, false)
                } else {
                    let mac = source_mac.unwrap_or(parsed.eth.src);
                    self.remember(parsed.ip.src, mac);
                    (mac, parsed.ip.src, true)
                };
                if self.replies.contains(&reply) {
                    // Already on its way.
                } else if self.replies.len() >= MAX_QUEUED_REPLIES {
                    self.counters.replies_dropped += 1;
                } else {
                    self.replies.push_back(reply);
                }
            }
            NdpRepr::Advert {
                target,
                target_mac: Some(mac),
                ..
            } => {
                self.counters.rx_adverts += 1;
                self.remember(target, mac);
            }
            NdpRepr::Advert { .. } => self.counters.rx_adverts += 1,
            NdpRepr::Solicit { .. } => {}
        }
        Ok(parsed.ndp)
    }

    /// Writes the next advertisement owed; `Ok(None)` when nothing is due.
    #[must_use = "a returned length is a frame to send"]
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Result<Option<usize>, NdpError> {
        let Some(&(mac, ip, solicited)) = self.replies.front() else {
            return Ok(None);
        };
        let advert = NdpRepr::Advert {
            router: false,
            solicited,
            override_cache: true,
            target: self.ip,
            target_mac: Some(self.mac),
        };
        let len = emit_frame(&advert, self.mac, mac, self.ip, ip, buf)?;
        self.replies.pop_front();
        self.counters.tx_adverts += 1;
        Ok(Some(len))
    }

    /// Writes a solicitation for `target` (to its solicited-node group) into `buf`.
    pub fn solicit(&self, target: Ipv6Addr, buf: &mut [u8]) -> Result<usize, NdpError> {
        let group = solicited_node(target);
        let ns = NdpRepr::Solicit {
            target,
            source_mac: Some(self.mac),
        };
        emit_frame(&ns, self.mac, multicast_mac(group), self.ip, group, buf)
    }

    fn remember(&mut self, ip: Ipv6Addr, mac: EthernetAddress) {
        match self.neighbours.iter_mut().find(|(i, _)| *i == ip) {
            Some(entry) => entry.1 = mac,
            None => {
                if self.neighbours.len() >= MAX_NEIGHBOURS {
                    self.neighbours.remove(0);
                }
                self.neighbours.push((ip, mac));
            }
        }
    }
}

#[cfg(test)]
mod tests;
