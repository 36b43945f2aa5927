//! What moves frames: the virtual clock, the event queue, the links (with their in-flight
//! frames) and the packet pool, plus the act of putting a frame on a wire (serialization time,
//! loss, corruption, propagation). Queues and decisions live in the switch and the hosts.

use std::collections::VecDeque;

use rand::RngExt;
use rand_pcg::Pcg64;

use super::capture::PortCapture;
use super::event::EventQueue;
use super::frame::FrameInfo;
use super::port::TxPort;
use super::stats::Lost;
use super::switch::Arrival;
use super::{HostId, LinkId, Node, PktId, SwitchId};
use roce_proto::cc::IntHop;
use roce_proto::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub(super) enum Event {
    Deliver(u32),
    TxDone(NodeRef, u16),
    HostWake(u32),
    PauseEnd(NodeRef, u16),
    XoffRefresh(u32, u16, u8, u32),
    LinkState(u32, bool),
    /// The sending end of a link notices it is down or up (after the detection delay).
    LinkDetect(u32, bool),
    /// Every switch recomputes its ECMP groups from the links it believes up.
    Reconverge,
    /// A switch reboots: its buffered frames are lost.
    SwitchFlush(u32),
    Sample,
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

#[derive(Debug)]
pub(super) struct Link {
    pub(super) from: (Node, u16),
    pub(super) to: (Node, u16),
    pub(super) delay_ns: u64,
    pub(super) loss: f64,
    pub(super) corrupt: f64,
    pub(super) up: bool,
    /// Whether the sending end believes the link up (routes use it; it follows `up` after the
    /// detection delay).
    pub(super) detected: bool,
    pub(super) epoch: u32,
    /// Frames on the wire: (frame, link epoch when sent, delivery time). Delivery times only
    /// grow, so only the head has a `Deliver` event in the queue.
    pub(super) inflight: VecDeque<(PktId, u32, u64)>,
}

/// A frame and what the fabric read from it once, when it entered the fabric.
#[derive(Debug, Default)]
pub(super) struct Slot {
    pub(super) buf: Vec<u8>,
    pub(super) fcs_bad: bool,
    pub(super) info: FrameInfo,
    pub(super) prio: u8,
    /// INT hops stamped by switches with `int` on (empty otherwise; reused, no allocation).
    pub(super) int: Vec<IntHop>,
}

/// Frames in flight or queued, by index; buffers are reused.
#[derive(Debug, Default)]
pub(super) struct PacketPool {
    pub(super) slots: Vec<Slot>,
    pub(super) free: Vec<PktId>,
}

impl PacketPool {
    pub(super) fn alloc(&mut self, data: &[u8]) -> PktId {
        let id = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot::default());
            (self.slots.len() - 1) as PktId
        });
        if let Some(s) = self.slots.get_mut(id as usize) {
            s.buf.clear();
            s.buf.extend_from_slice(data);
            s.fcs_bad = false;
            s.int.clear();
            let a = Arrival::of(data);
            s.info = a.info;
            s.prio = a.prio as u8;
        }
        id
    }
    pub(super) fn slot(&self, id: PktId) -> Option<&Slot> {
        self.slots.get(id as usize)
    }
    pub(super) fn prio(&self, id: PktId) -> usize {
        self.slot(id).map_or(0, |s| usize::from(s.prio))
    }
    pub(super) fn release(&mut self, id: PktId) {
        self.free.push(id);
    }
    pub(super) fn frame(&self, id: PktId) -> &[u8] {
        self.slots.get(id as usize).map_or(&[], |s| &s.buf)
    }
    pub(super) fn slot_mut(&mut self, id: PktId) -> Option<&mut Slot> {
        self.slots.get_mut(id as usize)
    }
    pub(super) fn len(&self, id: PktId) -> u64 {
        self.frame(id).len() as u64
    }
}

/// What moves frames: the clock, the queue, the links, the packet pool and the RNG.
pub(super) struct Wires {
    pub(super) now: u64,
    pub(super) queue: EventQueue<Event>,
    pub(super) links: Vec<Link>,
    pub(super) pool: PacketPool,
    pub(super) rng: Pcg64,
    pub(super) events: u64,
    /// Frames lost to failures (dead links, reboots, no route).
    pub(super) lost: LostTraffic,
    /// The port whose frames are captured, if any.
    pub(super) capture: Option<PortCapture>,
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

impl Routing {
    pub(super) fn delay_of(us: f64) -> Duration {
        Duration::from_nanos((us.max(0.0) * 1000.0) as u64)
    }
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

impl LostTraffic {
    pub(super) fn add(&mut self, len: u64) {
        self.frames += 1;
        self.bytes += len;
    }
}

impl Wires {
    /// Puts `pkt` on the wire of `tx` (owned by `node`'s `port`) now.
    pub(super) fn transmit(
        &mut self,
        tx: &mut TxPort,
        node: Node,
        port: u16,
        pkt: PktId,
        prio: usize,
    ) {
        let len = self.pool.len(pkt);
        self.capture(node, port, pkt, true);
        let ser = tx.serialize_ns(len as usize);
        tx.busy = true;
        if let Some(c) = tx.counters.prio.get_mut(prio) {
            c.tx_packets += 1;
            c.tx_bytes += len;
        }
        self.queue.push(
            Instant::from_nanos(self.now + ser),
            Event::TxDone(node.into(), port),
        );
        let Some(link) = tx.link.and_then(|l| self.links.get_mut(l.0)) else {
            self.pool.release(pkt);
            return;
        };
        let lost = if !link.up {
            self.lost.add(len);
            Some(Lost::LinkDown)
        } else if link.loss > 0.0 && self.rng.random::<f64>() < link.loss {
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
        if link.corrupt > 0.0 && self.rng.random::<f64>() < link.corrupt {
            if let Some(s) = self.pool.slot_mut(pkt) {
                let at = self.rng.random_range(0..s.buf.len().max(1));
                if let Some(b) = s.buf.get_mut(at) {
                    *b ^= 0x10;
                }
                s.fcs_bad = true;
            }
        }
        let at = self.now + ser + link.delay_ns;
        let was_idle = link.inflight.is_empty();
        link.inflight.push_back((pkt, link.epoch, at));
        if let (true, Some(id)) = (was_idle, tx.link) {
            self.queue
                .push(Instant::from_nanos(at), Event::Deliver(id.0 as u32));
        }
    }
}

impl Wires {
    /// Keeps `pkt` if it crosses the captured port (see [`crate::capture`]).
    pub(super) fn capture(&mut self, node: Node, port: u16, pkt: PktId, outbound: bool) {
        if let Some(c) = self.capture.as_mut() {
            c.keep((node, port), self.now, self.pool.frame(pkt), outbound);
        }
    }
}

pub(super) fn link_from(links: &[Link], l: LinkId) -> Option<(Node, u16)> {
    links.get(l.0).map(|l| l.from)
}
