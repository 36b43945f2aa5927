//! PFC deadlock detection: a cycle of lossless queues that wait on each other (a cyclic buffer
//! dependency, Hu et al., "Deadlocks in Datacenter Networks: Why Do They Form, and How to Avoid
//! Them", HotNets 2016).
//!
//! The graph, at one instant: a node is a *stuck* egress queue, a switch port's lossless
//! priority `p` that holds a packet while its transmitter is paused. An edge goes from a stuck
//! queue `(A, port a, p)` whose link leads to switch `B`'s port `b` to every stuck queue
//! `(B, port c, p)` holding a packet that arrived on `b`: `A` cannot send until `B` frees
//! buffer of ingress `b`, which waits on `c`. A cycle in this graph is a deadlock: no queue on
//! it can send until the next one does. The search is exact for this definition; a cycle that
//! would have dissolved on its own (a pause expiring unrefreshed) counts while it stands.
//!
//! The fabric looks for one at every time-series sample (the recorder's interval, so a first
//! sighting is late by less than one interval) and the summary looks again at the end of the
//! run. Both run with every node gathered, so a parallel run sees what one thread sees.

use std::collections::BTreeMap;

use super::fabric::Fabric;
use super::wait_for::find_cycle;
pub use super::wait_for::DeadlockCycle;
use crate::{Node, SwitchId};
use roce_proto::engine::Engine;
use roce_proto::time::Instant;
use roce_proto::wire::pfc::PRIORITIES;

impl<E: Engine> Fabric<E> {
    /// A cycle of stuck lossless queues standing now, if there is one (the first the search
    /// meets, going through switches, ports and priorities in order).
    pub fn find_pfc_deadlock(&self) -> Option<DeadlockCycle> {
        let now = self.w.now;
        // Stuck queues, in (switch, port, priority) order, grouped by switch.
        let mut nodes: Vec<(usize, u16, usize)> = Vec::new();
        let mut at_switch: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (s, sw) in self.switches.iter().enumerate() {
            let lossless = (0..PRIORITIES).filter(|&p| sw.config().pfc_on(p));
            let mask = lossless.fold(0u8, |m, p| m | 1 << p);
            if mask == 0 {
                continue;
            }
            for (e, port) in sw.ports().iter().enumerate() {
                let waiting = port.waiting() & mask;
                for p in (0..PRIORITIES).filter(|&p| waiting & (1 << p) != 0) {
                    if port.tx.is_paused(p, now) {
                        at_switch.entry(s).or_default().push(nodes.len());
                        nodes.push((s, e as u16, p));
                    }
                }
            }
        }
        if nodes.len() < 2 {
            return None;
        }
        let edges: Vec<Vec<usize>> = nodes
            .iter()
            .map(|&(s, e, p)| {
                let peer = self
                    .switches
                    .get(s)
                    .and_then(|sw| sw.port(e))
                    .and_then(|port| port.tx.link)
                    .and_then(|l| self.link_peer(l));
                let Some((Node::Switch(n), b)) = peer else {
                    return Vec::new();
                };
                let Some(sw) = self.switches.get(n.0) else {
                    return Vec::new();
                };
                let there = at_switch.get(&n.0).map_or(&[][..], |v| &v[..]);
                there
                    .iter()
                    .copied()
                    .filter(|&j| {
                        nodes
                            .get(j)
                            .is_some_and(|&(_, c, q)| q == p && sw.holds_from(c, p, b))
                    })
                    .collect()
            })
            .collect();
        let cycle = find_cycle(&edges)?;
        let prio = nodes.get(*cycle.first()?)?.2;
        let queues = cycle
            .iter()
            .filter_map(|&i| nodes.get(i))
            .map(|&(s, e, _)| (SwitchId(s), e))
            .collect();
        Some(DeadlockCycle { prio, queues })
    }

    /// The first deadlock the samples saw, and when (see the module).
    pub fn pfc_deadlock(&self) -> Option<(Instant, &DeadlockCycle)> {
        self.deadlock.as_ref().map(|(t, c)| (*t, c))
    }

    /// Looks for a deadlock now, unless one was seen already (on the sampling event).
    pub(super) fn note_deadlock(&mut self) {
        if self.deadlock.is_none() {
            if let Some(c) = self.find_pfc_deadlock() {
                tracing::debug!(now = ?self.w.now, ?c, "pfc deadlock");
                self.deadlock = Some((self.w.now, c));
            }
        }
    }
}
