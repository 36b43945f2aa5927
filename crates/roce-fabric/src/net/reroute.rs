//! Failures as fabrics have them: a link that dies is noticed by its sending end only after a
//! detection delay (loss of signal, BFD), which then stops hashing flows onto it; every switch
//! recomputes its ECMP groups a convergence time later (the routing protocol). Until then,
//! frames hashed toward the dead next hop are lost. A rebooting switch loses its buffer and
//! takes all its cables down.

use super::fabric::Fabric;
use super::transit::{link_from, Event};
use crate::switching::stats::Lost;
use crate::{LinkId, Node, SwitchId};
use roce_proto::engine::Engine;
use roce_proto::time::{Duration, Instant};

pub use super::transit::{LostTraffic, Routing};

impl<E: Engine> Fabric<E> {
    /// Sets the failure detection delay and the routing convergence time (both 0 by default:
    /// failures are noticed and routed around at once).
    pub fn set_routing(&mut self, routing: Routing) {
        self.routing = routing;
    }

    /// Frames and bytes lost to failures so far.
    pub fn lost_traffic(&self) -> LostTraffic {
        self.w.lost
    }

    /// Reboots `switch` at `at`: its buffered frames are lost and every cable of it goes down,
    /// to come up again `down_for` later.
    pub fn schedule_reboot(&mut self, switch: SwitchId, at: Instant, down_for: Duration) {
        let node = Node::Switch(switch);
        let links: Vec<LinkId> = (0..self.w.links.len())
            .map(LinkId)
            .filter(|l| {
                self.w
                    .links
                    .get(l.0)
                    .is_some_and(|x| x.from.0 == node || x.to.0 == node)
            })
            .collect();
        self.w.origin = super::transit::GLOBAL;
        self.w.schedule(at, Event::SwitchFlush(switch.0 as u32));
        for l in links {
            self.schedule_link(l, at, false);
            self.schedule_link(l, at + down_for, true);
        }
    }

    /// The cable's physical state changes: frames on it are lost when it dies; its sending end
    /// notices after the detection delay.
    pub(super) fn link_state(&mut self, l: LinkId, up: bool) -> bool {
        let at = self.now() + Duration::from_micros_f64(self.routing.detect_us);
        let Some(link) = self.w.links.get_mut(l.0) else {
            return false;
        };
        if link.up == up {
            return false;
        }
        link.up = up;
        if !up {
            link.epoch = link.epoch.wrapping_add(1);
        }
        tracing::debug!(link = l.0, up, "link state");
        let (node, port) = link.from;
        self.w.schedule(at, Event::LinkDetect(l.0 as u32, up));
        self.kick(node, port);
        true
    }

    /// The sending end notices the state (unless it changed back meanwhile): it stops or starts
    /// using the port at once, and every switch reroutes a convergence time later.
    pub(super) fn link_detect(&mut self, l: LinkId, up: bool) -> bool {
        let at = self.now() + Duration::from_micros_f64(self.routing.converge_us);
        let Some(link) = self.w.links.get_mut(l.0) else {
            return false;
        };
        if link.up != up || link.detected == up {
            return false;
        }
        let (node, port) = link.from;
        tracing::debug!(link = l.0, up, "link state detected");
        self.set_detected(l, up);
        self.w.schedule(at, Event::Reconverge);
        self.kick(node, port);
        true
    }

    /// Drains `switch` at `at` (its neighbours route around it once the routing protocol has
    /// converged; nothing is lost: it keeps forwarding what still reaches it) or, with
    /// `drained` false, returns it to service the same way: a planned maintenance.
    pub fn schedule_drain(&mut self, switch: SwitchId, at: Instant, drained: bool) {
        self.w.origin = super::transit::GLOBAL;
        self.w.schedule(at, Event::Drain(switch.0 as u32, drained));
    }

    /// The drain takes effect: every switch reroutes a convergence time later.
    pub(super) fn drain(&mut self, switch: SwitchId, drained: bool) {
        let Some(d) = self.drained.get_mut(switch.0) else {
            return;
        };
        *d = drained;
        tracing::debug!(switch = switch.0, drained, "switch drain");
        let at = self.now() + Duration::from_micros_f64(self.routing.converge_us);
        self.w.schedule(at, Event::Reconverge);
    }

    pub(super) fn reconverge(&mut self) {
        tracing::debug!(now = ?self.now(), "routes recomputed");
        self.compute_routes();
    }

    /// Counts a frame `l` lost in flight (it died under the frame) at the sending port. In a
    /// partition of a parallel run that does not hold the sender, the count is owed to the
    /// whole fabric, which adds it when the nodes come back (see [`crate::net::fabric::parallel`]).
    pub(super) fn count_lost_in_flight(&mut self, l: LinkId, prio: usize) {
        let from = link_from(&self.w.links, l);
        match from.and_then(|(n, p)| self.tx_mut(n, p)) {
            Some(tx) => {
                if let Some(c) = tx.counters.prio.get_mut(prio) {
                    c.drop_for(Lost::LinkDown);
                }
            }
            None => {
                if let Some(j) = self.mode.journal() {
                    j.lost_in_flight.push((l, prio));
                }
            }
        }
    }

    pub(super) fn flush_switch(&mut self, s: SwitchId) {
        let Some(sw) = self.switches.get_mut(s.0) else {
            return;
        };
        for (port, prio, pkt) in sw.flush() {
            let len = self.w.pool.len(pkt);
            self.w.lost.add(len);
            if let Some(c) = sw.counters_mut(port, prio) {
                c.dropped.switch_reboot += 1;
            }
            self.w.pool.release(pkt);
        }
    }
}

impl<E> Fabric<E> {
    /// Sets the probabilities that a frame on `link` is lost or corrupted.
    pub fn set_link_loss(&mut self, link: LinkId, loss: f64, corrupt: f64) {
        if let Some(l) = self.w.links.get_mut(link.0) {
            l.loss = loss.clamp(0.0, 1.0);
            l.corrupt = corrupt.clamp(0.0, 1.0);
        }
    }
}
