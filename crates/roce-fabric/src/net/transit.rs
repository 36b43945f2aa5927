//! Frames in transit, and what moves them: the virtual clock, the event queue, the links (with
//! their in-flight frames) and the packet pool, plus the act of putting a frame on a wire
//! (serialization time, loss, corruption, propagation). Queues and decisions live in the switch
//! and the hosts.

use prefetch_index::prefetch_index;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use super::event::{key_time, sort_key, tie, tie_last, EventQueue};
use super::pool::{PacketPool, Slot};
use crate::record::capture::PortCapture;
use crate::switching::port::TxPort;
use crate::switching::stats::Lost;
use crate::{HostId, LinkId, Node, PktId, SwitchId};
use roce_proto::time::{Duration, Instant};

/// `repr(C)`: a 4-byte tag, then every variant's fields from byte 4. In the default layout a
/// `u8` or `bool` field sits at byte 1, so a popped event was copied as 15 bytes in two
/// overlapping 8-byte moves, and reading it back could not be forwarded from the store buffer
/// (10% of the 320-host run's samples waited there).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(super) enum Event {
    /// A frame reaches the far end of a link (one event per frame, so that a link's two ends
    /// share no state while it is in flight), with the link's epoch when it was sent (see
    /// [`Link::epoch`]; carried here so that sending never touches the frame's slot).
    Deliver(u32, PktId, u32),
    TxDone(NodeRef, u16),
    HostWake(u32),
    PauseEnd(NodeRef, u16),
    /// A switch port's standing XOFF is due to be re-sent (if the switch still says so).
    XoffRefresh(u32, u16, u8),
    /// A switch's PFC watchdog checks one of its queues (port, priority), if it still asks.
    Watchdog(u32, u16, u8),
    /// A host's NIC starts, refreshes or ends a PFC storm on a priority: the `pfc_storm`
    /// failure.
    PfcStorm(u32, u8, StormStep),
    LinkState(u32, bool),
    /// The sending end of a link notices it is down or up (after the detection delay).
    LinkDetect(u32, bool),
    /// Every switch recomputes its ECMP groups from the links it believes up.
    Reconverge,
    /// A switch reboots: its buffered frames are lost.
    SwitchFlush(u32),
    /// A switch is drained for maintenance (true: its neighbours route around it while it
    /// keeps forwarding what reaches it) or returned to service (false).
    Drain(u32, bool),
    Sample,
}

/// A step of a host's PFC storm ([`Event::PfcStorm`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum StormStep {
    /// The storm begins: the first XOFF.
    Start,
    /// Its XOFF is due again (stale unless the host still expects it now).
    Refresh,
    /// It ends: XON.
    Stop,
}

/// Origin code of events scheduled by no node (samples, failures): they sort after every
/// node's events at the same time (see [`tie_last`]).
pub(super) const GLOBAL: u32 = (1 << 24) - 1;

/// The origin code of a node in event tie keys and RNG streams: hosts even, switches odd.
pub(super) fn code(node: Node) -> u32 {
    match node {
        Node::Host(h) => (h.0 as u32) << 1,
        Node::Switch(s) => ((s.0 as u32) << 1) | 1,
    }
}

impl Event {
    /// The code of the node that handles the event ([`GLOBAL`] for fabric-wide events).
    pub(super) fn target(&self, links: &[Link]) -> u32 {
        match *self {
            Event::Deliver(l, ..) => links.get(l as usize).map_or(GLOBAL, |l| code(l.to.0)),
            Event::TxDone(n, _) | Event::PauseEnd(n, _) => code(n.node()),
            Event::HostWake(h) => code(Node::Host(HostId(h as usize))),
            Event::XoffRefresh(s, ..) | Event::Watchdog(s, ..) => {
                code(Node::Switch(SwitchId(s as usize)))
            }
            Event::PfcStorm(h, ..) => code(Node::Host(HostId(h as usize))),
            Event::LinkState(..)
            | Event::LinkDetect(..)
            | Event::Reconverge
            | Event::SwitchFlush(_)
            | Event::Drain(..)
            | Event::Sample => GLOBAL,
        }
    }
}

/// A [`Node`] in 32 bits (top bit: switch), so that queue entries stay small.
#[derive(Clone, Copy, Debug)]
pub(super) struct NodeRef(u32);

const SWITCH_BIT: u32 = 1 << 31;

impl From<Node> for NodeRef {
    fn from(n: Node) -> Self {
        match n {
            Node::Host(h) => NodeRef(h.0 as u32 & !SWITCH_BIT),
            Node::Switch(s) => NodeRef(s.0 as u32 | SWITCH_BIT),
        }
    }
}

impl NodeRef {
    pub(super) fn node(self) -> Node {
        let i = (self.0 & !SWITCH_BIT) as usize;
        if self.0 & SWITCH_BIT != 0 {
            Node::Switch(SwitchId(i))
        } else {
            Node::Host(HostId(i))
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Link {
    pub(super) from: (Node, u16),
    pub(super) to: (Node, u16),
    /// One-way propagation delay.
    pub(super) delay: Duration,
    pub(super) loss: f64,
    pub(super) corrupt: f64,
    pub(super) up: bool,
    /// Whether the sending end believes the link up (routes use it; it follows `up` after the
    /// detection delay).
    pub(super) detected: bool,
    /// Bumped when the link dies: frames sent in an earlier epoch are lost on arrival.
    pub(super) epoch: u32,
}

/// How many events ahead a delivery's slot is prefetched (about a cache miss's worth of work).
const PREFETCH_SLOT: usize = 8;
/// How many events ahead a host-bound delivery's frame bytes are prefetched.
const PREFETCH_BYTES: usize = 4;

/// What moves frames: the clock, the queue, the links, the packet pool and the RNGs.
pub(super) struct Transit {
    pub(super) now: Instant,
    pub(super) queue: EventQueue<Event>,
    pub(super) links: Vec<Link>,
    pub(super) pool: PacketPool,
    /// The run's seed: each node's RNG stream derives from it and the node's code.
    pub(super) seed: u64,
    /// RNG streams by node code (loss and corruption at a sender, RED marking at a switch).
    pub(super) rngs: Vec<Pcg64>,
    /// The code of the node whose event is being handled (the origin of what it schedules).
    pub(super) origin: u32,
    /// Events scheduled so far, by origin code (the tie keys of the next ones).
    pub(super) seqs: Vec<u64>,
    /// Events scheduled by no node.
    pub(super) global_seq: u64,
    /// The (time, tie key) of the event being handled.
    pub(super) current: (Instant, u64),
    /// The sort key below which every event has been handled (what the queue would have
    /// popped by now): an unscheduled `TxDone` below it came and went (see [`Transit::settle`]).
    frontier: u128,
    /// `TxDone` events never scheduled because they would have found nothing to do.
    pub(super) elided: u64,
    /// In a partition of a parallel run: where frames leave it.
    pub(super) cross: Option<Box<Crossings>>,
    pub(super) events: u64,
    /// Frames lost to failures (dead links, reboots, no route).
    pub(super) lost: LostTraffic,
    /// The port whose frames are captured, if any.
    pub(super) capture: Option<PortCapture>,
    /// Where a compact frame is written out in full (for a host or a capture).
    pub(super) unpacked: Vec<u8>,
    /// Where the run in progress stops: events due before this are handled.
    pub(super) stop: Instant,
    /// Whether the other partitions of a split fabric have nothing to do either (always true
    /// for a whole fabric): with this queue empty too, nothing can happen any more.
    pub(super) idle_elsewhere: bool,
    /// Samples taken at once because nothing was left to happen (counted in `events` too).
    pub(super) idle_samples: u64,
}

/// How fast the fabric notices failures and reroutes around them.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Routing {
    /// From a link going down (or up) to its sending end noticing, µs.
    #[serde(default)]
    pub detect_us: f64,
    /// From a switch noticing to every switch using the recomputed ECMP groups, µs.
    #[serde(default)]
    pub converge_us: f64,
}

/// Frames and bytes lost to failures: sent into a dead link, on a link when it died, in a
/// rebooting switch's buffer, or with no live route.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LostTraffic {
    /// Frames lost.
    pub frames: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl Transit {
    /// Empty wires seeded with `seed`.
    pub(super) fn new(seed: u64) -> Self {
        Transit {
            now: Instant::ZERO,
            queue: EventQueue::new(),
            links: Vec::new(),
            pool: PacketPool::default(),
            seed,
            rngs: Vec::new(),
            origin: GLOBAL,
            seqs: Vec::new(),
            global_seq: 0,
            current: (Instant::ZERO, 0),
            frontier: 0,
            elided: 0,
            cross: None,
            events: 0,
            lost: LostTraffic::default(),
            capture: None,
            unpacked: Vec::new(),
            stop: Instant::FAR_FUTURE,
            idle_elsewhere: true,
            idle_samples: 0,
        }
    }

    /// Prefetches what the deliveries a few events ahead will read: the slot (and link) of
    /// the one [`PREFETCH_SLOT`] events ahead, and the frame bytes of the one
    /// [`PREFETCH_BYTES`] ahead if it is for a host (its slot, which says where the bytes
    /// are, was prefetched events ago). A delivered frame was last touched at the previous
    /// hop, thousands of events before, and missed the cache on every delivery.
    #[inline]
    pub(super) fn prefetch_ahead(&self) {
        if let Some(&Event::Deliver(l, pkt, _)) = self.queue.upcoming(PREFETCH_SLOT) {
            prefetch_index(&self.links, l as usize);
            self.pool.prefetch_slot(pkt);
        }
        if let Some(&Event::Deliver(l, pkt, _)) = self.queue.upcoming(PREFETCH_BYTES) {
            let to = self.links.get(l as usize).map(|k| k.to.0);
            if let Some(Node::Host(_)) = to {
                self.pool.prefetch_bytes(pkt);
            }
        }
    }

    /// Starts handling the event due at `at` with tie key `key`.
    #[inline]
    pub(super) fn enter(&mut self, at: Instant, key: u64) {
        self.now = at;
        self.current = (at, key);
        // Pops are in key order except after an event scheduled for the current nanosecond
        // with a lower key: the frontier is the highest popped.
        self.frontier = self.frontier.max(sort_key(at, key));
    }

    /// Every event due before `stop` has been handled (a run stopped there).
    pub(super) fn close(&mut self, stop: Instant) {
        self.frontier = self.frontier.max(sort_key(stop, 0));
    }

    /// Whether the event with sort key `k` would have been handled by now.
    pub(super) fn passed(&self, k: u128) -> bool {
        k < self.frontier
    }

    /// Settles the `TxDone` that `tx` (`node`'s `port`) left unscheduled, before something
    /// is queued on the port or its state is read: if the queue would have popped it by now,
    /// it found nothing to send and the port is free (returns true); otherwise it is
    /// scheduled where it would have been, with its reserved tie key, and the port stays busy.
    pub(super) fn settle(&mut self, tx: &mut TxPort, node: Node, port: u16) -> bool {
        let Some(k) = tx.done.take() else {
            return false;
        };
        if self.passed(k) {
            tx.busy = false;
            self.elided += 1;
            return true;
        }
        self.queue
            .push(key_time(k), k as u64, Event::TxDone(node.into(), port));
        false
    }

    /// Schedules `ev` at `at` on behalf of the current origin.
    pub(super) fn schedule(&mut self, at: Instant, ev: Event) {
        let key = self.next_key();
        self.queue.push(at, key, ev);
    }

    /// The tie key of the next event the current origin schedules.
    #[inline]
    fn next_key(&mut self) -> u64 {
        let o = self.origin;
        if let Some(seq) = self.seqs.get_mut(o as usize) {
            let key = tie(o, *seq);
            *seq += 1;
            return key;
        }
        self.next_key_slow()
    }

    /// [`Self::next_key`] for a fabric-wide event or a node's first.
    #[cold]
    fn next_key_slow(&mut self) -> u64 {
        let o = self.origin;
        if o == GLOBAL {
            self.global_seq += 1;
            return tie_last(self.global_seq - 1);
        }
        self.seqs.resize(o as usize + 1, 0);
        self.next_key()
    }
}

/// The RNG stream of the node coded `code` in a run seeded `seed` (created on first use).
#[inline]
pub(super) fn node_rng(rngs: &mut Vec<Pcg64>, seed: u64, code: u32) -> &mut Pcg64 {
    let i = code as usize;
    if rngs.len() <= i {
        grow_rngs(rngs, seed, i);
    }
    &mut rngs[i]
}

/// Creates the streams up to node code `i`.
#[cold]
fn grow_rngs(rngs: &mut Vec<Pcg64>, seed: u64, i: usize) {
    while rngs.len() <= i {
        let c = rngs.len() as u64;
        // A 64-bit mix of (seed, code): streams of neighbouring nodes are unrelated.
        let mixed = (seed ^ c.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_add(c);
        rngs.push(Pcg64::seed_from_u64(mixed));
    }
}

impl LostTraffic {
    pub(super) fn add(&mut self, len: u64) {
        self.frames += 1;
        self.bytes += len;
    }
}

impl Transit {
    /// Puts `pkt` on the wire of `tx` (owned by `node`'s `port`) now. With `then_idle` (the
    /// port has nothing else to send, and whatever is queued on it later settles first; see
    /// [`Transit::settle`]) the end of the frame is not scheduled but kept in the port. `len` is
    /// the frame's length (the caller has it: a switch queue keeps it, so a dequeued frame's
    /// cold slot is not read here).
    pub(super) fn transmit(
        &mut self,
        tx: &mut TxPort,
        (node, port): (Node, u16),
        (pkt, len): (PktId, u64),
        prio: usize,
        then_idle: bool,
    ) {
        self.capture(node, port, pkt, true);
        let ser = tx.serialization_time(len as usize);
        tx.busy = true;
        if let Some(c) = tx.counters.prio.get_mut(prio) {
            c.tx_packets += 1;
            c.tx_bytes += len;
        }
        // The key is taken either way, so that every later event keeps its tie key. An end
        // due now is scheduled (it could pop before events the frontier already passed).
        let key = self.next_key();
        let end = self.now + ser;
        if then_idle && ser > Duration::ZERO {
            tx.done = Some(sort_key(end, key));
        } else {
            self.queue.push(end, key, Event::TxDone(node.into(), port));
        }
        let Some(link) = tx.link.and_then(|l| self.links.get(l.0)) else {
            self.pool.release(pkt);
            return;
        };
        let lost = if !link.up {
            self.lost.add(len);
            Some(Lost::LinkDown)
        } else if link.loss > 0.0
            && node_rng(&mut self.rngs, self.seed, code(node)).random::<f64>() < link.loss
        {
            Some(Lost::LinkLoss)
        } else {
            None
        };
        if let Some(why) = lost {
            if let Some(c) = tx.counters.prio.get_mut(prio) {
                c.drop_for(why);
            }
            self.pool.release(pkt);
            return;
        }
        let (epoch, at) = (link.epoch, end + link.delay);
        if link.corrupt > 0.0 {
            self.corrupt(node, pkt, link.corrupt);
        }
        let Some(id) = tx.link else { return };
        let key = self.next_key();
        let remote = self.cross.as_mut().and_then(|c| c.remote(id));
        match remote {
            Some((to, c)) => {
                let mut slot = self.pool.take(pkt);
                slot.epoch = epoch;
                c.send(to, at, key, id, slot);
            }
            None => self
                .queue
                .push(at, key, Event::Deliver(id.0 as u32, pkt, epoch)),
        }
    }
}

impl Transit {
    /// With probability `p` (from `node`'s stream), flips a bit of `pkt` and marks its FCS bad.
    fn corrupt(&mut self, node: Node, pkt: PktId, p: f64) {
        let rng = node_rng(&mut self.rngs, self.seed, code(node));
        if rng.random::<f64>() >= p {
            return;
        }
        if let Some(s) = self.pool.slot_mut(pkt) {
            let at = rng.random_range(0..s.wire_len().max(1));
            s.edit(|frame| {
                if let Some(b) = frame.get_mut(at) {
                    *b ^= 0x10;
                }
            });
            s.fcs_bad = true;
        }
    }

    /// Keeps `pkt` if it crosses the captured port (see [`crate::record::capture`]).
    #[inline]
    pub(super) fn capture(&mut self, node: Node, port: u16, pkt: PktId, outbound: bool) {
        if let (Some(c), Some(s)) = (self.capture.as_mut(), self.pool.slot(pkt)) {
            c.keep(
                (node, port),
                self.now,
                s.frame(&mut self.unpacked),
                outbound,
            );
        }
    }
}

pub(super) fn link_from(links: &[Link], l: LinkId) -> Option<(Node, u16)> {
    links.get(l.0).map(|l| l.from)
}

/// A frame leaving a partition: its delivery time, tie key, link and bytes.
#[derive(Debug)]
pub(crate) struct Crossing {
    pub(crate) to: usize,
    pub(crate) at: Instant,
    pub(crate) key: u64,
    pub(crate) link: u32,
    pub(crate) slot: Slot,
}

/// Where frames leave a partition: the partition at the far end of each link that leaves
/// (by link id), and the frames that left during the current window.
#[derive(Debug, Default)]
pub(crate) struct Crossings {
    pub(crate) far: Vec<Option<u16>>,
    pub(crate) out: Vec<Crossing>,
}

impl Crossings {
    /// The partition `link` leads to, if another one.
    pub(crate) fn remote(&mut self, link: LinkId) -> Option<(usize, &mut Self)> {
        let to = self.far.get(link.0).copied().flatten()?;
        Some((usize::from(to), self))
    }

    /// Sends a frame across, due at `at` with tie key `key`.
    pub(crate) fn send(&mut self, to: usize, at: Instant, key: u64, link: LinkId, slot: Slot) {
        self.out.push(Crossing {
            to,
            at,
            key,
            link: link.0 as u32,
            slot,
        });
    }
}
