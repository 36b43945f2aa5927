//! QP numbers held ahead of their QPs, and QPs retired for good: what lets an application
//! with many short-lived connections (a simulated host with thousands of flows) hold a QP only
//! while its flow runs, yet number every QP as if all had been made up front.
//!
//! A held number is never given to [`Endpoint::create_qp`]; its QP is made with
//! [`Endpoint::create_held_qp`] and ends with [`Endpoint::retire_qp`], which frees the QP and
//! keeps its counters in the endpoint's totals. A packet for a retired QP is dropped and
//! counted as `retired_qp` (rxe likewise drops what arrives for a destroyed QP), not as
//! `unknown_qp`: a stale CNP or a duplicate ACK after its flow ended is not a misrouted frame.

use super::Endpoint;
use crate::counters::QpCounters;
use crate::qp::{QpError, QueuePair};
use crate::verbs::QpInit;

/// What a QP slot is held for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Hold {
    /// Not held: `create_qp` may use it when empty.
    #[default]
    Free,
    /// Held for a QP that [`Endpoint::create_held_qp`] makes (or made: it may be live).
    Reserved,
    /// Its QP was retired; the number is not used again.
    Retired,
}

/// Held and retired QP slots, and the counters of retired QPs.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// By slot; slots past the end are free.
    holds: Vec<Hold>,
    /// Counters of every retired QP, summed.
    retired: QpCounters,
    /// QPs retired so far.
    retired_qps: u64,
    /// No slot below this is free (taken, held or retired): where the search for one starts,
    /// so that holding a number per flow for thousands of flows does not scan them all.
    free_from: usize,
}

impl Held {
    fn get(&self, slot: usize) -> Hold {
        self.holds.get(slot).copied().unwrap_or_default()
    }

    fn set(&mut self, slot: usize, hold: Hold) {
        if self.holds.len() <= slot {
            self.holds.resize(slot + 1, Hold::Free);
        }
        if let Some(h) = self.holds.get_mut(slot) {
            *h = hold;
        }
    }

    /// Slot `slot`'s QP was destroyed: it may be free again.
    pub(super) fn freed(&mut self, slot: usize) {
        self.free_from = self.free_from.min(slot);
    }

    /// Whether `slot` is held (reserved or retired).
    pub(super) fn is_held(&self, slot: usize) -> bool {
        self.get(slot) != Hold::Free
    }

    /// Whether `slot`'s QP was retired.
    pub(super) fn is_retired(&self, slot: usize) -> bool {
        self.get(slot) == Hold::Retired
    }

    /// The counters of the retired QPs, summed.
    pub(super) fn retired_counters(&self) -> &QpCounters {
        &self.retired
    }
}

impl Endpoint {
    /// The first slot `create_qp` or `reserve_qpn` may take: empty and not held, or a new one.
    pub(super) fn free_slot(&mut self) -> Result<usize, QpError> {
        let held = &self.held;
        let free = (held.free_from..self.qps.len())
            .find(|&s| self.qps.get(s).is_some_and(Option::is_none) && !held.is_held(s));
        let slot = match free {
            Some(s) => s,
            None if self.qps.len() < self.cfg.max_qps => {
                self.qps.push(None);
                self.qps.len() - 1
            }
            None => return Err(QpError::QueueFull),
        };
        // Its caller takes it (create_qp fills it, reserve_qpn holds it).
        self.held.free_from = slot + 1;
        Ok(slot)
    }

    /// Holds the QP number [`Endpoint::create_qp`] would give now, for a QP made later with
    /// [`Endpoint::create_held_qp`]: numbers come out as if every QP had been made at once.
    pub fn reserve_qpn(&mut self) -> Result<u32, QpError> {
        let slot = self.free_slot()?;
        self.held.set(slot, Hold::Reserved);
        Ok(self.cfg.first_qpn + slot as u32)
    }

    /// Creates, in RESET, the QP of the number `qpn` that [`Endpoint::reserve_qpn`] held.
    /// Refuses a number not held, one whose QP exists, and a retired one.
    pub fn create_held_qp(&mut self, qpn: u32, init: QpInit) -> Result<(), QpError> {
        let cqs = self.cqs.len() as u32;
        if init.send_cq.0 >= cqs || init.recv_cq.0 >= cqs {
            return Err(QpError::UnknownCq);
        }
        let slot = self.slot(qpn).ok_or(QpError::UnknownQp(qpn))?;
        if self.held.get(slot) != Hold::Reserved || self.qps.get(slot).is_none_or(Option::is_some) {
            return Err(QpError::UnknownQp(qpn));
        }
        let port = self.udp_src_port(qpn);
        if let Some(s) = self.qps.get_mut(slot) {
            *s = Some(Box::new(QueuePair::new(
                qpn,
                &init,
                port,
                self.cfg.requester,
            )));
        }
        self.due.touch(slot);
        Ok(())
    }

    /// Frees QP `qpn` for good (its outstanding work is dropped without completions): its
    /// counters stay in the endpoint's totals ([`Endpoint::counters`]), its number is not
    /// given out again, and what arrives for it later is counted as `retired_qp`.
    pub fn retire_qp(&mut self, qpn: u32) -> Result<(), QpError> {
        let slot = self.slot(qpn).ok_or(QpError::UnknownQp(qpn))?;
        let qp = self
            .qps
            .get_mut(slot)
            .and_then(Option::take)
            .ok_or(QpError::UnknownQp(qpn))?;
        self.held.retired.accumulate(qp.counters());
        self.held.retired_qps += 1;
        self.held.set(slot, Hold::Retired);
        self.due.touch(slot);
        self.int.clear(slot);
        Ok(())
    }

    /// Counts a packet for slot `slot`, which has no QP: a retired one's or an unknown one's.
    pub(super) fn count_no_qp(&mut self, slot: usize) {
        let d = &mut self.stats.drops;
        match self.held.is_retired(slot) {
            true => d.retired_qp += 1,
            false => d.unknown_qp += 1,
        }
    }

    /// QPs retired so far ([`Endpoint::retire_qp`]).
    pub fn retired_qps(&self) -> u64 {
        self.held.retired_qps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::EndpointConfig;
    use crate::wire::EthernetAddress;

    fn endpoint() -> (Endpoint, QpInit) {
        let mut ep = Endpoint::new(EndpointConfig::ipv4(
            EthernetAddress([2, 0, 0, 0, 0, 1]),
            std::net::Ipv4Addr::new(198, 18, 0, 1),
        ));
        let (pd, cq) = (ep.alloc_pd(), ep.create_cq(8));
        (ep, QpInit::shared_cq(pd, cq, 4, 1))
    }

    #[test]
    fn held_numbers_are_those_create_qp_would_give_and_are_never_reused() {
        let (mut ep, init) = endpoint();
        let a = ep.reserve_qpn().unwrap();
        let b = ep.create_qp(init).unwrap();
        let c = ep.reserve_qpn().unwrap();
        assert_eq!((a, b, c), (17, 18, 19));
        // The held numbers are skipped by create_qp, though their QPs do not exist yet.
        assert_eq!(ep.create_qp(init).unwrap(), 20);
        ep.create_held_qp(c, init).unwrap();
        assert_eq!(ep.create_held_qp(c, init), Err(QpError::UnknownQp(c)));
        assert_eq!(ep.create_held_qp(b, init), Err(QpError::UnknownQp(b)));
        assert_eq!(ep.qpns().collect::<Vec<_>>(), [18, 19, 20]);
        ep.retire_qp(c).unwrap();
        assert_eq!(ep.retired_qps(), 1);
        assert!(ep.qp(c).is_none());
        // Retired: not made again, not given out again.
        assert_eq!(ep.create_held_qp(c, init), Err(QpError::UnknownQp(c)));
        assert_eq!(ep.create_qp(init).unwrap(), 21);
        assert_eq!(ep.retire_qp(c), Err(QpError::UnknownQp(c)));
        // A destroyed QP's number (not held) is given out again, a held one is not.
        ep.destroy_qp(b).unwrap();
        assert_eq!(ep.create_qp(init).unwrap(), b);
        assert_eq!(ep.create_qp(init).unwrap(), 22);
    }
}
