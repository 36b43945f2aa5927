//! The notification point and the ECN marking of what we send. A receiver that sees a CE-marked
//! RoCEv2 packet asks for a CNP to the sending QP, at most one per QP per
//! `min_time_between_cnps` (NVIDIA semantics: CE marks inside the interval send nothing). A
//! notification point that is off still counts CE marks but asks for no CNP.
//! Sans-IO: the endpoint reports CE packets with [`NotificationPoint::on_ce`] and drains
//! [`NotificationPoint::poll_cnp`]; it builds the CNP frame itself with the wire layer.

use std::collections::{HashMap, VecDeque};

use crate::time::{Duration, Instant};
pub use crate::wire::Ecn;

/// How our packets are marked on transmit (DSCP/ECN in the IP header, PCP in the 802.1Q tag),
/// per traffic class: data (requests and READ responses), control (ACK/NAK: the data class's
/// DSCP and PCP so they share its lossless priority, never ECN-capable) and CNPs.
///
/// An endpoint applies it to every frame it emits; a QP whose address vector sets a non-zero
/// traffic class keeps that class's DSCP (and its ECN bits, when non-zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marking {
    /// ECN codepoint of data packets (ECT(0) by default, as ConnectX sends; ECT(1) or Not-ECT
    /// are the alternatives).
    pub data_ecn: Ecn,
    /// DSCP of data packets and ACKs (26 = AF31, NVIDIA's RoCE default).
    pub data_dscp: u8,
    /// 802.1p priority of data packets and ACKs when VLAN tagged (3, the RoCE class).
    pub data_pcp: u8,
    /// DSCP of CNPs (48 = CS6, mlx5 `np_cnp_dscp` default).
    pub cnp_dscp: u8,
    /// 802.1p priority of CNPs (mlx5 `np_cnp_prio` default 6).
    pub cnp_pcp: u8,
    /// Tag every frame with this 802.1Q VLAN ID (and the class's PCP); `None` sends untagged.
    pub vlan: Option<u16>,
}

impl Default for Marking {
    fn default() -> Self {
        Marking {
            data_ecn: Ecn::Ect0,
            data_dscp: 26,
            data_pcp: 3,
            cnp_dscp: 48,
            cnp_pcp: 6,
            vlan: None,
        }
    }
}

impl Marking {
    /// The IPv4 TOS / IPv6 traffic class byte of data packets.
    pub const fn data_tos(&self) -> u8 {
        (self.data_dscp << 2) | self.data_ecn.bits()
    }
    /// The TOS / traffic class byte of CNPs (not ECN-capable).
    pub const fn cnp_tos(&self) -> u8 {
        self.cnp_dscp << 2
    }
    /// The 802.1Q tag for a frame of priority `pcp`, when a VLAN is configured.
    pub const fn vlan_tag(&self, pcp: u8) -> Option<crate::wire::VlanTag> {
        match self.vlan {
            Some(vid) => Some(crate::wire::VlanTag {
                pcp,
                dei: false,
                vid,
            }),
            None => None,
        }
    }
}

/// A CNP the endpoint should send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CnpRequest {
    /// The QPN to put in the CNP's BTH: the sender's (reaction point's) QP.
    pub dest_qpn: u32,
    /// Our QP that received the CE-marked packet (selects the path: addresses, UDP port).
    pub local_qpn: u32,
    /// When it was decided.
    pub at: Instant,
}

/// Notification-point counters, named like the mlx5 ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NpCounters {
    /// CE-marked RoCEv2 packets received (`np_ecn_marked_roce_packets`), whether the
    /// notification point is on or off.
    pub np_ecn_marked_roce_packets: u64,
    /// CNPs handed to the endpoint (`np_cnp_sent`).
    pub np_cnp_sent: u64,
}

/// The notification point of one endpoint: per-QP CNP pacing and a queue of CNPs to send.
#[derive(Clone, Debug)]
pub struct NotificationPoint {
    enabled: bool,
    min_interval: Duration,
    last_cnp: HashMap<u32, Instant>,
    queue: VecDeque<CnpRequest>,
    counters: NpCounters,
}

impl NotificationPoint {
    /// A notification point sending at most one CNP per QP per `min_time_between_cnps`.
    pub fn new(min_time_between_cnps: Duration) -> Self {
        NotificationPoint {
            enabled: true,
            min_interval: min_time_between_cnps,
            last_cnp: HashMap::new(),
            queue: VecDeque::new(),
            counters: NpCounters::default(),
        }
    }

    /// Turned on (the default) or off. Off, it still counts CE-marked packets but queues no
    /// CNP, like an mlx5 port whose `ecn/roce_np/enable/<prio>` is 0.
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Whether CE marks are answered with CNPs.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// A CE-marked packet arrived for `local_qpn` from the sender's `remote_qpn`. Returns
    /// whether a CNP was queued.
    pub fn on_ce(&mut self, now: Instant, local_qpn: u32, remote_qpn: u32) -> bool {
        self.counters.np_ecn_marked_roce_packets += 1;
        let due = self.enabled
            && self
                .last_cnp
                .get(&local_qpn)
                .is_none_or(|&last| now.saturating_since(last) >= self.min_interval);
        if due {
            self.last_cnp.insert(local_qpn, now);
            self.queue.push_back(CnpRequest {
                dest_qpn: remote_qpn,
                local_qpn,
                at: now,
            });
            tracing::trace!(t_ns = now.as_nanos(), local_qpn, remote_qpn, "cnp queued");
        }
        due
    }

    /// The next CNP to send, if any.
    #[must_use]
    pub fn poll_cnp(&mut self, now: Instant) -> Option<CnpRequest> {
        let _ = now;
        let cnp = self.queue.pop_front()?;
        self.counters.np_cnp_sent += 1;
        Some(cnp)
    }

    /// Whether a CNP waits to be sent.
    pub fn has_pending(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Forgets a destroyed QP's state (its queued CNPs are still sent).
    pub fn remove_qp(&mut self, local_qpn: u32) {
        self.last_cnp.remove(&local_qpn);
    }

    /// The counters.
    pub fn counters(&self) -> NpCounters {
        self.counters
    }

    /// The minimum interval between two CNPs of one QP.
    pub fn min_interval(&self) -> Duration {
        self.min_interval
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tos_bytes_match_nvidia_defaults() {
        let c = Marking::default();
        assert_eq!(c.data_tos(), (26 << 2) | 0b10);
        assert_eq!(c.cnp_tos(), 48 << 2);
    }
}
