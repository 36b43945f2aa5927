//! Counters of the fabric: per port and priority, as a switch or NIC would expose them.
//!
//! Plain numbers, filled by the fabric as frames move; reports read them. Nothing here decides
//! anything.

use serde::Serialize;

/// Number of 802.1p priorities.
pub const PRIORITIES: usize = 8;

/// What one priority of one port has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PrioCounters {
    /// Frames sent.
    pub tx_packets: u64,
    /// Bytes sent (frame bytes, without preamble and FCS).
    pub tx_bytes: u64,
    /// Frames received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Packets this port's egress queue marked CE.
    pub ecn_marked: u64,
    /// Packets dropped: buffer or queue full, headroom overrun, no route, link down, loss.
    pub drops: u64,
    /// PFC frames sent upstream for this priority (XOFF and XON).
    pub pause_sent: u64,
    /// PFC frames received for this priority.
    pub pause_received: u64,
    /// Nanoseconds this priority's transmitter was paused.
    pub pause_ns: u64,
    /// Largest egress queue occupancy seen, in bytes.
    pub queue_hwm_bytes: u64,
}

impl PrioCounters {
    /// Adds `other` into `self` (high-water marks take the maximum).
    pub fn accumulate(&mut self, other: &PrioCounters) {
        self.tx_packets += other.tx_packets;
        self.tx_bytes += other.tx_bytes;
        self.rx_packets += other.rx_packets;
        self.rx_bytes += other.rx_bytes;
        self.ecn_marked += other.ecn_marked;
        self.drops += other.drops;
        self.pause_sent += other.pause_sent;
        self.pause_received += other.pause_received;
        self.pause_ns += other.pause_ns;
        self.queue_hwm_bytes = self.queue_hwm_bytes.max(other.queue_hwm_bytes);
    }
}

/// Counters of one port, per priority.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PortCounters {
    /// Indexed by priority.
    pub prio: [PrioCounters; PRIORITIES],
    /// Frames dropped on receive because their FCS was bad (link corruption).
    pub rx_fcs_errors: u64,
}

impl PortCounters {
    /// The sum over priorities.
    pub fn total(&self) -> PrioCounters {
        let mut t = PrioCounters::default();
        for p in &self.prio {
            t.accumulate(p);
        }
        t
    }
}
