//! The flow meter: passive, on every host NIC (reading BTH fields through the wire views, no ICRC
//! check), it counts the payload bytes a receiver takes per registered flow (goodput, completion
//! time: in order, or as a selective-repeat responder places them) and
//! the CNPs hosts send and receive. It reads frames; it never changes them, and the engines never
//! know it is there. (Not a TAP device: in roce, "tap" means only a Linux TAP interface.)

use std::cmp::Ordering;

use serde::Serialize;

use crate::switching::frame::{ip_key, BthInfo, IpInfo, MixMap, SplitKey};
use roce_proto::psn::{Psn, PsnWindow};
use roce_proto::time::Instant;
use roce_proto::wire::{placement, Opcode};

/// Index of a registered flow.
pub type FlowId = usize;

/// A flow the meter follows: RoCE packets with payload from `src_ip` to queue pair `dst_qpn` on
/// the receiving host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FlowSpec {
    /// Label for reports.
    pub name: String,
    /// Sending host index.
    pub src_host: usize,
    /// Index of this flow among its sender's flows.
    pub src_index: usize,
    /// Receiving host index.
    pub dst_host: usize,
    /// The sender's IP address.
    pub src_ip: std::net::IpAddr,
    /// Destination QP number on the receiver.
    pub dst_qpn: u32,
    /// Bytes after which the flow counts as complete, if it is finite.
    pub size_bytes: Option<u64>,
    /// When the flow's sender was told to start (for completion times), ns.
    pub start_ns: u64,
}

impl FlowSpec {
    /// When the flow's sender was told to start (`start_ns`).
    pub fn start(&self) -> Instant {
        Instant::from_nanos(self.start_ns)
    }
}

/// What the flow meter saw of one flow. Its first cache line holds everything [`FlowMeter::on_rx`]
/// reads and writes for a frame (the spec, with the flow's name, is not touched per frame; the
/// second line is written once per flow): the 320-host fabric receives a frame for one of
/// thousands of flows every few events, and each touch of this state missed the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct FlowProgress {
    /// The sender's address.
    src: SplitKey,
    bytes: u64,
    /// The spec's `size_bytes`, or [`NONE`].
    size: u64,
    /// When the last counted byte arrived, or [`NEVER`].
    last: Instant,
    /// The PSN expected next, or `u32::MAX` (PSNs have 24 bits) before the first.
    next_psn: u32,
    /// The next flow to the same host and QPN from another sender, or [`NO_FLOW`].
    next: u32,
    bytes_at_warmup: u64,
    /// When the first counted byte arrived, or [`NEVER`].
    first: Instant,
    /// When the spec's size was reached, or [`NEVER`].
    completed: Instant,
}

/// An absent size in [`FlowProgress`].
const NONE: u64 = u64::MAX;
/// An absent time in [`FlowProgress`].
const NEVER: Instant = Instant::FAR_FUTURE;

fn some(t: Instant) -> Option<Instant> {
    (t != NEVER).then_some(t)
}

impl FlowProgress {
    fn new(spec: &FlowSpec) -> Self {
        FlowProgress {
            src: ip_key(spec.src_ip).into(),
            bytes: 0,
            size: spec.size_bytes.unwrap_or(NONE),
            last: NEVER,
            next_psn: u32::MAX,
            next: NO_FLOW,
            bytes_at_warmup: 0,
            first: NEVER,
            completed: NEVER,
        }
    }

    /// Payload bytes of packets whose PSN advanced the flow (duplicates from retransmission
    /// are not counted twice; a gap is skipped, so a lost packet is simply missing).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// [`Self::bytes`] received since the measurement window opened.
    pub fn bytes_since_warmup(&self) -> u64 {
        self.bytes - self.bytes_at_warmup
    }

    /// When the first payload byte was seen.
    pub fn first_at(&self) -> Option<Instant> {
        some(self.first)
    }

    /// When the last payload byte was seen.
    pub fn last_at(&self) -> Option<Instant> {
        some(self.last)
    }

    /// When the spec's `size_bytes` was reached.
    pub fn completed_at(&self) -> Option<Instant> {
        some(self.completed)
    }
}

/// No flow (an empty index entry, the end of a chain).
const NO_FLOW: u32 = u32::MAX;

/// QPNs below this are indexed in a direct table per receiving host: an endpoint numbers its
/// QPs from the bottom up, so a host's few dozen are dense there, and the table (4 bytes a
/// QPN) stays in cache where a hash map's probes missed it.
const DIRECT_QPNS: usize = 256;

/// The sparse index's key: a receiving host and one of its QPNs (24 bits).
fn host_qpn(host: usize, qpn: u32) -> u64 {
    ((host as u64) << 32) | u64::from(qpn)
}

/// Counts per flow and CNPs, fed by the fabric at each host NIC.
#[derive(Clone, Debug, Default)]
pub struct FlowMeter {
    /// Registered flows.
    pub specs: Vec<FlowSpec>,
    /// Progress, indexed like `specs`.
    pub progress: Vec<FlowProgress>,
    /// The first flow to (receiving host, QPN) for QPNs below [`DIRECT_QPNS`], at `host *
    /// DIRECT_QPNS + qpn`; later flows to the same pair are chained through
    /// [`FlowProgress::next`].
    direct: Vec<u32>,
    /// The same for the other QPNs, by [`host_qpn`].
    sparse: MixMap<u64, u32>,
    /// CNPs sent by hosts.
    pub cnp_sent: u64,
    /// CNPs received by hosts.
    pub cnp_received: u64,
    /// Count a flow's packets only in PSN order, as an RC responder accepts them (go-back-N:
    /// a packet beyond a hole is dropped and comes again after the hole's retransmission).
    /// Off, every new PSN counts once (the stand-in engine, which never retransmits).
    pub in_order: bool,
    /// Count a flow's packets as a selective-repeat responder places them instead: each PSN
    /// once, in any order, inside the window of [`roce_proto::psn::PSN_WINDOW`] PSNs from the
    /// first one missing (a packet beyond it is dropped and comes again), without its
    /// placement header. The flows' PSNs start at 0, as the RC engine's do.
    pub placed: bool,
    /// With `placed`: per flow (indexed like `specs`), the PSNs counted from the first missing
    /// one on, made at the flow's first packet.
    held: Vec<Option<Box<PsnWindow>>>,
}

impl FlowMeter {
    /// Follows a new flow.
    pub fn register(&mut self, spec: FlowSpec) -> FlowId {
        let id = self.specs.len();
        self.progress.push(FlowProgress::new(&spec));
        // Past u32 ids (never, in practice) a flow is registered but not followed.
        if let Some(new) = u32::try_from(id).ok().filter(|&i| i != NO_FLOW) {
            self.link(spec.dst_host, spec.dst_qpn, new);
        }
        self.specs.push(spec);
        id
    }

    /// Makes flow `new` findable by (`host`, `qpn`): the head of its entry, or the end of the
    /// chain there.
    fn link(&mut self, host: usize, qpn: u32, new: u32) {
        let head = match usize::try_from(qpn).ok().filter(|&q| q < DIRECT_QPNS) {
            Some(q) => {
                let at = host * DIRECT_QPNS + q;
                if self.direct.len() <= at {
                    self.direct.resize((host + 1) * DIRECT_QPNS, NO_FLOW);
                }
                &mut self.direct[at]
            }
            None => self.sparse.entry(host_qpn(host, qpn)).or_insert(NO_FLOW),
        };
        let mut at = *head;
        if at == NO_FLOW {
            *head = new;
            return;
        }
        while let Some(p) = self.progress.get_mut(at as usize) {
            if p.next == NO_FLOW {
                p.next = new;
                return;
            }
            at = p.next;
        }
    }

    /// The first flow to (`host`, `qpn`), if any.
    fn head(&self, host: usize, qpn: u32) -> u32 {
        match usize::try_from(qpn).ok().filter(|&q| q < DIRECT_QPNS) {
            Some(q) => self.direct.get(host * DIRECT_QPNS + q).copied(),
            None => self.sparse.get(&host_qpn(host, qpn)).copied(),
        }
        .unwrap_or(NO_FLOW)
    }

    /// A frame left a host (`bth`: its BTH fields, if it is RoCEv2; see [`bth_info`]).
    ///
    /// [`bth_info`]: crate::switching::frame::bth_info
    pub fn on_tx(&mut self, bth: Option<&BthInfo>) {
        if bth.is_some_and(|b| b.opcode == Opcode::CNP) {
            self.cnp_sent += 1;
        }
    }

    /// A frame whose IP and BTH fields are `ip` and `bth` reached host `host` at `now`.
    pub fn on_rx(&mut self, host: usize, now: Instant, ip: Option<&IpInfo>, bth: Option<&BthInfo>) {
        let (Some(ip), Some(bth)) = (ip, bth) else {
            return;
        };
        if bth.opcode == Opcode::CNP {
            self.cnp_received += 1;
            return;
        }
        if bth.payload_len == 0 {
            return;
        }
        let (in_order, placed) = (self.in_order, self.placed);
        let mut id = self.head(host, bth.dest_qpn);
        let prog = loop {
            let Some(p) = self.progress.get_mut(id as usize) else {
                return; // NO_FLOW: not followed
            };
            if p.src == ip.src {
                break p;
            }
            id = p.next;
        };
        let psn = bth.psn;
        let mut len = bth.payload_len as u64;
        if placed {
            let slot = id as usize;
            if self.held.len() <= slot {
                self.held.resize_with(slot + 1, || None);
            }
            let Some(held) = self.held.get_mut(slot) else {
                return;
            };
            let held = held.get_or_insert_with(|| Box::new(PsnWindow::new(Psn::new(0))));
            // Behind the window (a duplicate), beyond it (dropped: it comes again), or counted.
            if !held.insert(psn) {
                return;
            }
            while held.pop_start() {}
            prog.next_psn = held.start().value();
            len = len.saturating_sub(placement::HEADER_LEN as u64);
        } else {
            if prog.next_psn != u32::MAX {
                match psn.cmp_serial(Psn::new(prog.next_psn)) {
                    Ordering::Less => return, // a duplicate (retransmission): already counted
                    Ordering::Greater if in_order => return, // beyond a hole: it comes again
                    _ => {}
                }
            }
            prog.next_psn = psn.add(1).value();
        }
        let before = prog.bytes;
        prog.bytes += len;
        prog.last = now;
        // First and completion times are kept apart, on the line not read per frame: the first
        // counted frame finds no bytes before it, and the one that reaches the size crosses it
        // (or is the first, for a size of 0).
        if before == 0 {
            prog.first = now;
        }
        if prog.bytes >= prog.size && (before < prog.size || before == 0) {
            prog.completed = now;
        }
    }

    /// Opens the measurement window: bytes so far become warm-up bytes.
    pub fn mark_warmup(&mut self) {
        for p in &mut self.progress {
            p.bytes_at_warmup = p.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn spec(src: IpAddr, dst_host: usize, qpn: u32, size: Option<u64>) -> FlowSpec {
        FlowSpec {
            name: format!("{src}->{dst_host}#{qpn}"),
            src_host: 0,
            src_index: 0,
            dst_host,
            src_ip: src,
            dst_qpn: qpn,
            size_bytes: size,
            start_ns: 0,
        }
    }

    /// Feeds a 1000-byte RC frame from `src` to (`host`, `qpn`) with PSN `psn` at `t` ns.
    fn rx(meter: &mut FlowMeter, host: usize, src: IpAddr, qpn: u32, psn: u32, t: u64) {
        let ip = IpInfo {
            src: ip_key(src).into(),
            ..IpInfo::default()
        };
        let bth = BthInfo {
            opcode: Opcode::RC_SEND_MIDDLE,
            dest_qpn: qpn,
            psn: Psn::new(psn),
            payload_len: 1000,
        };
        meter.on_rx(host, Instant::from_nanos(t), Some(&ip), Some(&bth));
    }

    fn v4(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(198, 18, 0, last))
    }

    #[test]
    fn the_state_a_frame_touches_is_the_first_cache_line() {
        assert_eq!(std::mem::align_of::<FlowProgress>(), 64);
        assert!(std::mem::offset_of!(FlowProgress, next) + 4 <= 64);
        assert!(std::mem::offset_of!(FlowProgress, completed) >= 64);
    }

    #[test]
    fn flows_to_one_qpn_from_different_senders_are_counted_apart() {
        let mut meter = FlowMeter::default();
        let six = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 7));
        // Three senders to one (host, QPN), a direct and a sparse QPN.
        for qpn in [17, 70_000] {
            meter.register(spec(v4(1), 5, qpn, None));
            meter.register(spec(v4(2), 5, qpn, None));
            meter.register(spec(six, 5, qpn, None));
        }
        rx(&mut meter, 5, v4(2), 17, 0, 10);
        rx(&mut meter, 5, six, 17, 0, 11);
        rx(&mut meter, 5, six, 17, 1, 12);
        rx(&mut meter, 5, v4(1), 70_000, 0, 13);
        rx(&mut meter, 5, six, 70_000, 0, 14);
        // Not followed: another host, another QPN, another sender.
        rx(&mut meter, 4, v4(1), 17, 0, 15);
        rx(&mut meter, 5, v4(1), 18, 0, 16);
        rx(&mut meter, 5, v4(3), 17, 0, 17);
        let bytes: Vec<u64> = meter.progress.iter().map(FlowProgress::bytes).collect();
        assert_eq!(bytes, [0, 1000, 2000, 1000, 0, 1000]);
        let t = |ns| Some(Instant::from_nanos(ns));
        assert_eq!(meter.progress[2].first_at(), t(11));
        assert_eq!(meter.progress[2].last_at(), t(12));
        assert_eq!(meter.progress[0].first_at(), None);
    }

    #[test]
    fn duplicates_count_once_and_completion_is_when_the_size_is_crossed() {
        let mut meter = FlowMeter::default();
        meter.register(spec(v4(1), 1, 17, Some(2500)));
        meter.register(spec(v4(1), 1, 18, Some(0)));
        rx(&mut meter, 1, v4(1), 17, 0, 1);
        rx(&mut meter, 1, v4(1), 17, 1, 2);
        rx(&mut meter, 1, v4(1), 17, 1, 3); // a retransmission
        assert_eq!(
            (meter.progress[0].bytes(), meter.progress[0].completed_at()),
            (2000, None)
        );
        rx(&mut meter, 1, v4(1), 17, 2, 4);
        rx(&mut meter, 1, v4(1), 17, 3, 5);
        assert_eq!(meter.progress[0].bytes(), 4000);
        let t = |ns| Some(Instant::from_nanos(ns));
        assert_eq!(meter.progress[0].completed_at(), t(4));
        rx(&mut meter, 1, v4(1), 18, 0, 6);
        rx(&mut meter, 1, v4(1), 18, 1, 7);
        assert_eq!(meter.progress[1].completed_at(), t(6));
        meter.mark_warmup();
        rx(&mut meter, 1, v4(1), 17, 4, 8);
        assert_eq!(meter.progress[0].bytes_since_warmup(), 1000);
    }

    #[test]
    fn in_order_a_packet_beyond_a_hole_counts_only_when_it_comes_again() {
        // Go-back-N after PSN 1 was lost: 0, 2 (dropped by the responder), then 1, 2, 3.
        let arrivals = [0, 2, 1, 2, 3];
        let count = |in_order: bool| {
            let mut meter = FlowMeter {
                in_order,
                ..FlowMeter::default()
            };
            meter.register(spec(v4(1), 1, 17, Some(4000)));
            for (t, psn) in arrivals.into_iter().enumerate() {
                rx(&mut meter, 1, v4(1), 17, psn, t as u64);
            }
            (meter.progress[0].bytes(), meter.progress[0].completed_at())
        };
        // In order, all four packets count once and the flow completes with the last.
        assert_eq!(count(true), (4000, Some(Instant::from_nanos(4))));
        // Counting every new PSN (the stand-in engine) took 2 early and missed 1.
        assert_eq!(count(false), (3000, None));
    }

    #[test]
    fn placed_counts_each_psn_once_in_any_order_inside_the_window() {
        // Selective repeat over sprayed paths: 2 and 3 overtake 1; 2 is resent after a NAK;
        // a packet past the responder's window is dropped (it comes again) and so not counted.
        let arrivals = [0, 2, 3, 1, 2, 4 + roce_proto::psn::PSN_WINDOW, 4];
        let count = |placed: bool| {
            let mut meter = FlowMeter {
                in_order: true,
                placed,
                ..FlowMeter::default()
            };
            // 1000-byte packets whose first 24 bytes are the placement header.
            meter.register(spec(v4(1), 1, 17, Some(5 * 976)));
            for (t, psn) in arrivals.into_iter().enumerate() {
                rx(&mut meter, 1, v4(1), 17, psn, t as u64);
            }
            (meter.progress[0].bytes(), meter.progress[0].completed_at())
        };
        assert_eq!(count(true), (5 * 976, Some(Instant::from_nanos(6))));
        // In order only, the packets that overtook 1 were never counted (they do not come
        // again: the responder placed them).
        assert_eq!(count(false), (3000, None));
    }
}
