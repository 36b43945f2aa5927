//! Each QP's next deadline ([`QueuePair::poll_timeout`]) as last computed, recomputed only for
//! the QPs something touched since: an endpoint asks for its earliest deadline after every
//! event, and asking every QP each time made an event cost grow with the QPs a host has ever
//! had rather than with the ones that changed.
//!
//! Not here: which calls touch a QP (the endpoint says so whenever it hands one out mutably).

use std::cell::Cell;

use super::QueuePair;
use crate::time::Instant;

#[derive(Debug, Default)]
struct Entry {
    due: Cell<Option<Instant>>,
    stale: Cell<bool>,
}

/// Deadlines by QP slot.
#[derive(Debug, Default)]
pub(crate) struct DueCache {
    entries: Vec<Entry>,
}

impl DueCache {
    /// Slot `slot`'s QP changed (or came or went): its deadline is recomputed when next asked.
    pub(crate) fn touch(&mut self, slot: usize) {
        if self.entries.len() <= slot {
            self.entries.resize_with(slot + 1, Entry::default);
        }
        if let Some(e) = self.entries.get(slot) {
            e.stale.set(true);
        }
    }

    /// The deadline of `qp`, the QP in slot `slot`.
    pub(crate) fn due(&self, slot: usize, qp: Option<&QueuePair>) -> Option<Instant> {
        let Some(e) = self.entries.get(slot) else {
            return qp.and_then(QueuePair::poll_timeout);
        };
        if e.stale.replace(false) {
            e.due.set(qp.and_then(QueuePair::poll_timeout));
        }
        e.due.get()
    }

    /// The earliest deadline among `qps` (indexed by slot).
    pub(crate) fn earliest(&self, qps: &[Option<QueuePair>]) -> Option<Instant> {
        qps.iter()
            .enumerate()
            .filter_map(|(slot, qp)| self.due(slot, qp.as_ref()))
            .min()
    }
}
