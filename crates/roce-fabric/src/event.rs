//! The simulator's event queue: a min-heap on virtual time with a sequence-number tie-break.
//!
//! Two events due at the same nanosecond pop in the order they were pushed, so a run depends only
//! on its inputs and its seed, never on heap internals. The queue knows nothing about what an
//! event means.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use roce_proto::time::Instant;

struct Entry<T> {
    at: u64,
    seq: u64,
    event: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest, then first-pushed, entry.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A deterministic queue of timed events.
pub struct EventQueue<T> {
    heap: BinaryHeap<Entry<T>>,
    seq: u64,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> EventQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Schedules `event` at `at`.
    pub fn push(&mut self, at: Instant, event: T) {
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(Entry {
            at: at.as_nanos(),
            seq,
            event,
        });
    }

    /// Removes and returns the earliest event (first pushed among equals).
    pub fn pop(&mut self) -> Option<(Instant, T)> {
        self.heap
            .pop()
            .map(|e| (Instant::from_nanos(e.at), e.event))
    }

    /// When the earliest event is due.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| Instant::from_nanos(e.at))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_push_order_and_earlier_first() {
        let mut q = EventQueue::new();
        q.push(Instant::from_nanos(5), 'a');
        q.push(Instant::from_nanos(3), 'b');
        q.push(Instant::from_nanos(5), 'c');
        q.push(Instant::from_nanos(3), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
    }
}
