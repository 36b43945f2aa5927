//! The simulator's event queue: a min-heap on virtual time with a caller-given tie-break.
//!
//! Two events due at the same nanosecond pop in the order of their tie keys, so a run depends only
//! on its inputs and its seed, never on heap internals. The fabric makes the key from the node
//! that scheduled the event and that node's own count of scheduled events ([`tie`]), so any
//! partition of the nodes orders events the same way (what the parallel engine needs). The key
//! is a bijective mix of the two, so that at a tie no node always goes first (a fixed order by
//! node would favour low-numbered hosts at every switch queue). The queue knows nothing about
//! what an event means.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use roce_proto::time::Instant;

/// Bits of a tie key that count a node's events (the rest name the node).
pub const SEQ_BITS: u32 = 40;

/// The tie key of the `seq`-th event scheduled by the node coded `origin` (below 2^24): below
/// 2^63, so before every [`tie_last`] key.
pub fn tie(origin: u32, seq: u64) -> u64 {
    let mut z = (u64::from(origin) << SEQ_BITS) | (seq & ((1 << SEQ_BITS) - 1));
    // splitmix64's finalizer: a bijection, so distinct (origin, seq) stay distinct in 64 bits.
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) >> 1
}

/// The tie key of the `seq`-th fabric-wide event: after every node event of its nanosecond.
pub fn tie_last(seq: u64) -> u64 {
    (1 << 63) | seq
}

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
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest, then lowest-keyed, entry.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A deterministic queue of timed events.
pub struct EventQueue<T> {
    heap: BinaryHeap<Entry<T>>,
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
        }
    }

    /// Schedules `event` at `at` with tie key `key` (unique per event; see [`tie`]).
    pub fn push(&mut self, at: Instant, key: u64, event: T) {
        self.heap.push(Entry {
            at: at.as_nanos(),
            seq: key,
            event,
        });
    }

    /// Removes and returns the earliest event (lowest key among equals) with its key.
    pub fn pop(&mut self) -> Option<(Instant, u64, T)> {
        self.heap
            .pop()
            .map(|e| (Instant::from_nanos(e.at), e.seq, e.event))
    }

    /// Removes every event, earliest first.
    pub fn drain(&mut self) -> impl Iterator<Item = (Instant, u64, T)> + '_ {
        std::iter::from_fn(|| self.pop())
    }

    /// Every pending event, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.heap.iter().map(|e| &e.event)
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
    fn equal_times_pop_in_key_order_and_earlier_first() {
        let mut q = EventQueue::new();
        q.push(Instant::from_nanos(5), tie_last(0), 'a');
        q.push(Instant::from_nanos(3), 7, 'b');
        q.push(Instant::from_nanos(5), tie(1, 9), 'c');
        q.push(Instant::from_nanos(3), 3, 'd');
        let order: Vec<char> = q.drain().map(|(_, _, e)| e).collect();
        assert_eq!(order, vec!['d', 'b', 'c', 'a']);
        assert_eq!(
            tie(1, 1 << SEQ_BITS),
            tie(1, 0),
            "the count wraps within its bits"
        );
        let keys: std::collections::BTreeSet<u64> = (0..64)
            .flat_map(|o| (0..64).map(move |s| tie(o, s)))
            .collect();
        assert_eq!(keys.len(), 64 * 64, "distinct");
        assert!(keys.iter().all(|&k| k < tie_last(0)));
        // Neither node goes first at every tie.
        let first = (0..64).filter(|&s| tie(0, s) < tie(2, s)).count();
        assert!((16..48).contains(&first), "{first}");
    }
}
