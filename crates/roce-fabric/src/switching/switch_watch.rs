//! What the PFC watchdog and the deadlock search ask of a switch's queues: its watchdog, a
//! stormed queue dropped whole, whether a queue holds a packet from a given ingress.

use std::collections::VecDeque;

use super::{Dequeued, Switch};
use crate::switching::watchdog::Watchdog;
use roce_proto::time::Instant;

impl<T, X> Switch<T, X> {
    /// The PFC watchdog, if the switch runs one (configured, with PFC on).
    pub fn watchdog(&self) -> Option<&Watchdog> {
        self.watchdog.as_deref()
    }

    /// The PFC watchdog, mutably.
    pub fn watchdog_mut(&mut self) -> Option<&mut Watchdog> {
        self.watchdog.as_deref_mut()
    }

    /// Drops every packet of `egress`'s queue `prio` (a watchdog's `drop` action), releasing
    /// their buffer and ingress accounting as dequeues do; returns them (the caller counts them
    /// and asks [`Switch::should_resume`] of their ingress ports). Their sojourn is not counted.
    pub fn drop_queue(&mut self, egress: u16, prio: usize) -> Vec<Dequeued<T>> {
        let Some(port) = self.ports.get_mut(usize::from(egress)) else {
            return Vec::new();
        };
        let Some(q) = port.queues.get_mut(prio) else {
            return Vec::new();
        };
        let dropped: Vec<_> = q.drain(..).collect();
        if !dropped.is_empty() {
            port.sched.emptied(prio);
        }
        port.nonempty &= !(1 << prio);
        if let Some(b) = port.qbytes.get_mut(prio) {
            *b = 0;
        }
        let mut out = Vec::with_capacity(dropped.len());
        for q in dropped {
            let len = u64::from(q.len);
            self.used_bytes -= len.min(self.used_bytes);
            let ingress = self.ports.get_mut(usize::from(q.ingress));
            if let Some(b) = ingress.and_then(|p| p.ingress_bytes.get_mut(prio)) {
                *b -= len.min(*b);
            }
            out.push(Dequeued {
                pkt: q.pkt,
                prio,
                ingress: q.ingress,
                len,
                queued_at: Instant::from_nanos(u64::from(q.at)),
            });
        }
        out
    }

    /// Whether `egress`'s queue `prio` holds a packet that arrived on `ingress`.
    pub fn holds_from(&self, egress: u16, prio: usize, ingress: u16) -> bool {
        let q = self
            .ports
            .get(usize::from(egress))
            .and_then(|p| p.queues.get(prio));
        q.is_some_and(|q: &VecDeque<_>| q.iter().any(|x| x.ingress == ingress))
    }
}
