//! Counters of the fabric: per port and priority, as a switch or NIC would expose them.
//!
//! Plain numbers, filled by the fabric as frames move; reports read them. Nothing here decides
//! anything.

use roce_proto::wire::pfc::PRIORITIES;
use serde::{Deserialize, Serialize};

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
    /// Packets dropped: buffer or queue full, headroom overrun, no route, link down, loss
    /// (the sum of those reasons in `dropped`).
    pub drops: u64,
    /// Packets dropped, by reason.
    pub dropped: DropReasons,
    /// PFC frames sent upstream for this priority (XOFF and XON).
    pub pause_sent: u64,
    /// PFC frames received for this priority (read from the transmitter's
    /// [`PauseState`](roce_proto::pause::PauseState) when the counters are read).
    pub pause_received: u64,
    /// Nanoseconds this priority's transmitter was paused.
    pub pause_ns: u64,
    /// Largest egress queue occupancy seen, in bytes.
    pub queue_hwm_bytes: u64,
    /// PFC storms the switch's watchdog detected on this egress queue (SONiC
    /// `PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED`).
    #[serde(skip_serializing_if = "is_zero")]
    pub pfc_wd_storms: u64,
    /// Storms on it the watchdog saw end (SONiC `PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED`).
    #[serde(skip_serializing_if = "is_zero")]
    pub pfc_wd_restored: u64,
}

/// Whether a counter is zero (counters a run without the feature never moves stay out of the
/// JSON).
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
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
        self.dropped.accumulate(&other.dropped);
        self.pause_sent += other.pause_sent;
        self.pause_received += other.pause_received;
        self.pause_ns += other.pause_ns;
        self.queue_hwm_bytes = self.queue_hwm_bytes.max(other.queue_hwm_bytes);
        self.pfc_wd_storms += other.pfc_wd_storms;
        self.pfc_wd_restored += other.pfc_wd_restored;
    }
}

/// Why packets of one port and priority were lost. Switch reasons are counted at the egress
/// port the packet was headed for (`no_route` at its ingress port, having none); link reasons at
/// the sending port; `fcs_error` at the receiving port; `pfc_watchdog` at the stormed port
/// (whether the packet was queued on it, bound for it or arriving on it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DropReasons {
    /// The switch's shared buffer was full.
    pub buffer_full: u64,
    /// A lossy (or PFC-less) egress queue was at its limit.
    pub queue_full: u64,
    /// A lossless packet overran XOFF + headroom (the headroom was too small).
    pub headroom_overrun: u64,
    /// The class held its share of the buffer.
    pub class_full: u64,
    /// No route, or every equal-cost port's link is down (a black hole).
    pub no_route: u64,
    /// Sent into a dead link, or on a link when it died.
    pub link_down: u64,
    /// Lost by the link's loss rate.
    pub link_loss: u64,
    /// In a switch's buffer when it rebooted (not in `drops`, which predates reboots).
    pub switch_reboot: u64,
    /// Arrived corrupted and failed the FCS check (not in `drops`: `PortCounters::rx_fcs_errors`).
    pub fcs_error: u64,
    /// Dropped by the switch's PFC watchdog (`action = "drop"`): queued on a stormed egress
    /// queue when the storm was detected, or bound for it or arriving on its port while the storm
    /// lasted (SONiC's TX and RX drops). In `drops`, like the other switch reasons. Left out
    /// of the JSON while zero.
    #[serde(skip_serializing_if = "is_zero")]
    pub pfc_watchdog: u64,
}

impl DropReasons {
    /// Adds `o` into `self`.
    pub fn accumulate(&mut self, o: &DropReasons) {
        for (a, b) in self.fields_mut().into_iter().zip(o.values()) {
            *a += b;
        }
    }

    /// Every reason with its count, in a fixed order (the CSV columns are `drop_<name>`).
    pub fn pairs(&self) -> [(&'static str, u64); 10] {
        let v = self.values();
        let n = Self::NAMES;
        std::array::from_fn(|i| (n[i], v[i]))
    }

    /// The names of the reasons, in the order of [`DropReasons::pairs`].
    pub const NAMES: [&'static str; 10] = [
        "buffer_full",
        "queue_full",
        "headroom_overrun",
        "class_full",
        "no_route",
        "link_down",
        "link_loss",
        "switch_reboot",
        "fcs_error",
        "pfc_watchdog",
    ];

    fn values(&self) -> [u64; 10] {
        [
            self.buffer_full,
            self.queue_full,
            self.headroom_overrun,
            self.class_full,
            self.no_route,
            self.link_down,
            self.link_loss,
            self.switch_reboot,
            self.fcs_error,
            self.pfc_watchdog,
        ]
    }

    fn fields_mut(&mut self) -> [&mut u64; 10] {
        [
            &mut self.buffer_full,
            &mut self.queue_full,
            &mut self.headroom_overrun,
            &mut self.class_full,
            &mut self.no_route,
            &mut self.link_down,
            &mut self.link_loss,
            &mut self.switch_reboot,
            &mut self.fcs_error,
            &mut self.pfc_watchdog,
        ]
    }

    /// Every reason counted.
    pub fn total(&self) -> u64 {
        self.values().iter().sum()
    }
}

/// Why a switch dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The shared buffer was full.
    BufferFull,
    /// A lossy (or PFC-less) egress queue was at its limit.
    QueueFull,
    /// A lossless packet overran XOFF + headroom.
    HeadroomOverrun,
    /// No route, or every equal-cost port's link is down.
    NoRoute,
    /// The class held its share of the buffer (`Scheduling::class_limit_bytes`).
    ClassFull,
    /// The PFC watchdog dropped it (a stormed queue, `action = "drop"`).
    PfcWatchdog,
}

/// A reason to lose a packet, to count it with [`PrioCounters::drop_for`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lost {
    /// A switch refused it.
    Switch(DropReason),
    /// Sent into a dead link or on one when it died.
    LinkDown,
    /// The link's loss rate.
    LinkLoss,
}

impl PrioCounters {
    /// Counts one packet lost for `why` (in `drops` and by reason).
    pub fn drop_for(&mut self, why: Lost) {
        use DropReason as D;
        self.drops += 1;
        let d = &mut self.dropped;
        *match why {
            Lost::Switch(D::BufferFull) => &mut d.buffer_full,
            Lost::Switch(D::QueueFull) => &mut d.queue_full,
            Lost::Switch(D::HeadroomOverrun) => &mut d.headroom_overrun,
            Lost::Switch(D::ClassFull) => &mut d.class_full,
            Lost::Switch(D::NoRoute) => &mut d.no_route,
            Lost::Switch(D::PfcWatchdog) => &mut d.pfc_watchdog,
            Lost::LinkDown => &mut d.link_down,
            Lost::LinkLoss => &mut d.link_loss,
        } += 1;
    }
}

impl PrioCounters {
    /// What happened between `before` and `self` (the high-water mark stays `self`'s).
    pub fn since(&self, before: &PrioCounters) -> PrioCounters {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let mut dropped = self.dropped;
        for (a, b) in dropped
            .fields_mut()
            .into_iter()
            .zip(before.dropped.values())
        {
            *a = a.saturating_sub(b);
        }
        PrioCounters {
            tx_packets: d(self.tx_packets, before.tx_packets),
            tx_bytes: d(self.tx_bytes, before.tx_bytes),
            rx_packets: d(self.rx_packets, before.rx_packets),
            rx_bytes: d(self.rx_bytes, before.rx_bytes),
            ecn_marked: d(self.ecn_marked, before.ecn_marked),
            drops: d(self.drops, before.drops),
            dropped,
            pause_sent: d(self.pause_sent, before.pause_sent),
            pause_received: d(self.pause_received, before.pause_received),
            pause_ns: d(self.pause_ns, before.pause_ns),
            queue_hwm_bytes: self.queue_hwm_bytes,
            pfc_wd_storms: d(self.pfc_wd_storms, before.pfc_wd_storms),
            pfc_wd_restored: d(self.pfc_wd_restored, before.pfc_wd_restored),
        }
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
