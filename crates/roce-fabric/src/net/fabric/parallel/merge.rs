//! Moving nodes and records between a split fabric and its partitions, and the fabric-wide
//! events. Samples and route recomputation read or change every node: they run on the whole
//! fabric with the nodes gathered back. A link changing state (or its sending end noticing)
//! and a switch rebooting act on one node whose frames live in its partition's packet pool:
//! they run in that partition, with the fabric-wide tie-key count handed over and back, and
//! the changed links copied to every partition. Node events due at the same nanosecond whose
//! tie keys sort between fabric-wide ones (a fabric-wide event scheduled them) run between
//! them, partition by partition.

use super::Layout;
use crate::net::fabric::Fabric;
use crate::net::transit::{code, Event, GLOBAL};
use crate::{HostId, Node, SwitchId};
use roce_proto::engine::Engine;
use roce_proto::time::Instant;

/// Hands the frames that left each partition to the partitions they lead to (all locked).
pub(super) fn exchange<E>(parts: &mut [&mut Fabric<E>]) -> u64 {
    let mut n = 0;
    for k in 0..parts.len() {
        let out = match parts.get_mut(k).and_then(|p| p.w.cross.as_mut()) {
            Some(c) => std::mem::take(&mut c.out),
            None => continue,
        };
        n += out.len() as u64;
        for c in out {
            if let Some(to) = parts.get_mut(c.to) {
                super::window::take_in(to, std::iter::once(c));
            }
        }
    }
    n
}

impl<E: Engine> Fabric<E> {
    /// Handles the fabric-wide events due at `g`, in key order, with every node event up to
    /// `g` done and the partitions stopped.
    pub(super) fn global_step(
        &mut self,
        parts: &mut [&mut Fabric<E>],
        layout: &Layout,
        g: Instant,
    ) {
        while self.w.queue.peek_time() == Some(g) {
            let Some((_, key, ev)) = self.w.queue.pop() else {
                break;
            };
            // Node events a fabric-wide event scheduled carry fabric-wide tie keys: those due
            // now that sort before this one go first, as on one thread.
            for p in parts.iter_mut() {
                p.run_at(g, key);
            }
            self.w.enter(g, key);
            self.w.origin = GLOBAL;
            let home = match ev {
                Event::LinkState(l, _) | Event::LinkDetect(l, _) => self
                    .w
                    .links
                    .get(l as usize)
                    .map(|x| layout.part(code(x.from.0))),
                Event::SwitchFlush(s) => {
                    Some(layout.part(code(Node::Switch(SwitchId(s as usize)))))
                }
                _ => None,
            };
            match home.and_then(|k| parts.get_mut(k)) {
                Some(p) => self.in_partition(p, ev),
                None => {
                    self.gather(parts, layout, g);
                    // Whether the partitions have anything left to do (a sample that finds
                    // nothing anywhere takes the rest of the run's samples at once).
                    self.w.idle_elsewhere = parts.iter().all(|p| {
                        p.w.queue.is_empty() && p.w.cross.as_ref().is_none_or(|c| c.out.is_empty())
                    });
                    if self.dispatch(ev) {
                        self.w.events += 1;
                    }
                    self.w.idle_elsewhere = true;
                    self.scatter(parts, layout);
                }
            }
            let links = &self.w.links;
            for p in parts.iter_mut() {
                p.w.links.clone_from(links);
            }
        }
    }

    /// Handles this partition's node events due at `g` whose tie keys sort before `key`.
    fn run_at(&mut self, g: Instant, key: u64) {
        while self.w.queue.peek_time() == Some(g) {
            let Some((at, k, ev)) = self.w.queue.pop() else {
                break;
            };
            if k >= key {
                self.w.queue.push(at, k, ev);
                break;
            }
            self.w.enter(g, k);
            self.w.origin = ev.target(&self.w.links);
            if self.dispatch(ev) {
                self.w.events += 1;
            }
        }
    }

    /// Handles fabric-wide event `ev` in partition `p` (which holds the node it acts on); the
    /// fabric-wide events it schedules come back here.
    fn in_partition(&mut self, p: &mut Fabric<E>, ev: Event) {
        p.w.enter(self.w.current.0, self.w.current.1);
        p.w.origin = GLOBAL;
        p.w.global_seq = self.w.global_seq;
        p.w.links.clone_from(&self.w.links);
        if p.dispatch(ev) {
            p.w.events += 1;
        }
        self.w.global_seq = p.w.global_seq;
        self.w.links.clone_from(&p.w.links);
        let queued: Vec<_> = p.w.queue.drain().collect();
        for (at, key, ev) in queued {
            let q = if ev.target(&p.w.links) == GLOBAL {
                &mut self.w.queue
            } else {
                &mut p.w.queue
            };
            q.push(at, key, ev);
        }
    }

    /// Moves the nodes (and a port capture) into their partitions.
    pub(super) fn scatter(&mut self, parts: &mut [&mut Fabric<E>], layout: &Layout) {
        for (k, p) in parts.iter_mut().enumerate() {
            for &h in layout.hosts.get(k).map_or(&[][..], |v| &v[..]) {
                self.hosts.move_to(h, &mut p.hosts);
            }
            for &s in layout.switches.get(k).map_or(&[][..], |v| &v[..]) {
                self.switches.move_to(s, &mut p.switches);
            }
            p.w.now = self.w.now;
        }
        if let Some(c) = self.w.capture.take() {
            let k = layout.part(code(c.at.0));
            match parts.get_mut(k) {
                Some(p) => p.w.capture = Some(c),
                None => self.w.capture = Some(c),
            }
        }
    }

    /// Moves the nodes (and a port capture) back from their partitions and merges what is
    /// fabric-wide: flow progress, CNP and event counts, lost traffic, and (in event order) the
    /// PFC frames the recorder and the log are owed. The clock goes to `now`.
    pub(super) fn gather(&mut self, parts: &mut [&mut Fabric<E>], layout: &Layout, now: Instant) {
        let mut pauses = Vec::new();
        let mut rx = Vec::new();
        let mut in_flight = Vec::new();
        for (k, p) in parts.iter_mut().enumerate() {
            for &h in layout.hosts.get(k).map_or(&[][..], |v| &v[..]) {
                p.hosts.move_to(h, &mut self.hosts);
            }
            for &s in layout.switches.get(k).map_or(&[][..], |v| &v[..]) {
                p.switches.move_to(s, &mut self.switches);
            }
            if let Some(c) = p.w.capture.take() {
                self.w.capture = Some(c);
            }
            self.w.events += std::mem::take(&mut p.w.events);
            self.w.elided += std::mem::take(&mut p.w.elided);
            let lost = std::mem::take(&mut p.w.lost);
            self.w.lost.frames += lost.frames;
            self.w.lost.bytes += lost.bytes;
            self.flow_meter.cnp_sent += std::mem::take(&mut p.flow_meter.cnp_sent);
            self.flow_meter.cnp_received += std::mem::take(&mut p.flow_meter.cnp_received);
            if let Some(j) = p.mode.journal() {
                pauses.append(&mut j.pauses);
                in_flight.append(&mut j.lost_in_flight);
                let keys = std::mem::take(&mut j.rx_keys);
                let log = p.pfc_log.as_mut().map(std::mem::take).unwrap_or_default();
                rx.extend(keys.into_iter().zip(log));
            }
        }
        for (id, spec) in self.flow_meter.specs.iter().enumerate() {
            let k = layout.part(code(Node::Host(HostId(spec.dst_host))));
            let from = parts.get(k).and_then(|p| p.flow_meter.progress.get(id));
            if let (Some(from), Some(to)) = (from, self.flow_meter.progress.get_mut(id)) {
                to.clone_from(from);
            }
        }
        for (l, prio) in in_flight {
            self.count_lost_in_flight(l, prio);
        }
        // Stable sorts: entries of one event keep their order.
        pauses.sort_by_key(|e| e.0);
        rx.sort_by_key(|e| e.0);
        if let Some(rec) = self.recorder.as_mut() {
            for ((t, _), s, port, prio, xoff) in pauses {
                rec.on_pfc(t, s, port, prio, xoff);
            }
        }
        if let Some(log) = self.pfc_log.as_mut() {
            log.extend(rx.into_iter().map(|(_, e)| e));
        }
        self.w.now = now;
    }

    /// Moves the node events queued on the whole fabric (at the split, or scheduled between
    /// runs) to the partitions of their nodes; fabric-wide events stay. With `adopt`, frames
    /// move from this fabric's packet pool to theirs.
    pub(super) fn route_events(
        &mut self,
        parts: &mut [&mut Fabric<E>],
        layout: &Layout,
        adopt: bool,
    ) {
        let mut keep = Vec::new();
        let events: Vec<_> = self.w.queue.drain().collect();
        for (at, key, ev) in events {
            let target = ev.target(&self.w.links);
            let part = parts.get_mut(layout.part(target));
            match (target, part) {
                (GLOBAL, _) | (_, None) => keep.push((at, key, ev)),
                (_, Some(p)) => {
                    let ev = match ev {
                        Event::Deliver(l, pkt, e) if adopt => {
                            Event::Deliver(l, p.w.pool.adopt(self.w.pool.take(pkt)), e)
                        }
                        ev => ev,
                    };
                    p.w.queue.push(at, key, ev);
                }
            }
        }
        for (at, key, ev) in keep {
            self.w.queue.push(at, key, ev);
        }
    }
}
