//! The simulator's event queue: a min-heap on virtual time with a caller-given tie-break.
//!
//! Two events due at the same nanosecond pop in the order of their tie keys, so a run depends only
//! on its inputs and its seed, never on heap internals. The fabric makes the key from the node
//! that scheduled the event and that node's own count of scheduled events ([`tie`]), so any
//! partition of the nodes orders events the same way (what the parallel engine needs). The key
//! is a bijective mix of the two, so that at a tie no node always goes first (a fixed order by
//! node would favour low-numbered hosts at every switch queue). The queue knows nothing about
//! what an event means.

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

/// A pending event and its full sort key: time in the high 64 bits, tie key in the low ones,
/// so that one integer compare orders two entries.
struct Entry<T> {
    key: u128,
    event: T,
}

fn sort_key(at: u64, tie: u64) -> u128 {
    (u128::from(at) << 64) | u128::from(tie)
}

/// Children per node of the heap: a 4-ary heap is half as deep as a binary one and its four
/// children share a cache line or two, which matters once the queue holds many thousand frames.
const ARITY: usize = 4;

/// A deterministic queue of timed events.
pub struct EventQueue<T> {
    /// A 4-ary min-heap on `Entry::key`. Keys are unique, so the order in which entries pop is
    /// the same as any other correct priority queue's.
    heap: Vec<Entry<T>>,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> EventQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue { heap: Vec::new() }
    }

    /// Schedules `event` at `at` with tie key `key` (unique per event; see [`tie`]).
    pub fn push(&mut self, at: Instant, key: u64, event: T) {
        let key = sort_key(at.as_nanos(), key);
        let mut i = self.heap.len();
        self.heap.push(Entry { key, event });
        // Sift up: move parents down until the new entry's place is found, then swap it in.
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.heap[parent].key <= key {
                break;
            }
            self.heap.swap(parent, i);
            i = parent;
        }
    }

    /// Removes and returns the earliest event (lowest key among equals) with its key.
    pub fn pop(&mut self) -> Option<(Instant, u64, T)> {
        let last = self.heap.pop()?;
        let top = if self.heap.is_empty() {
            last
        } else {
            let top = std::mem::replace(&mut self.heap[0], last);
            self.sift_down(0);
            top
        };
        let at = (top.key >> 64) as u64;
        Some((Instant::from_nanos(at), top.key as u64, top.event))
    }

    /// Moves the entry at `i` down to where its key belongs.
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let key = self.heap[i].key;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
            let mut best = first;
            let mut best_key = self.heap[first].key;
            for c in first + 1..end {
                let k = self.heap[c].key;
                if k < best_key {
                    best = c;
                    best_key = k;
                }
            }
            if best_key >= key {
                break;
            }
            self.heap.swap(i, best);
            i = best;
        }
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
        self.heap
            .first()
            .map(|e| Instant::from_nanos((e.key >> 64) as u64))
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

    #[test]
    fn interleaved_pushes_and_pops_come_out_as_a_sorted_set_would() {
        let mut q = EventQueue::new();
        let mut model = std::collections::BTreeSet::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut now = 0u64;
        for round in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Bursts of pushes, then pops; many equal times, so the tie keys decide.
            if x % 3 != 0 || model.is_empty() {
                let at = now + (x >> 40) % 64;
                let key = tie((x % 7) as u32, round);
                q.push(Instant::from_nanos(at), key, round);
                model.insert((at, key, round));
            } else {
                let want = model.pop_first();
                let got = q.pop().map(|(t, k, e)| (t.as_nanos(), k, e));
                assert_eq!(got, want);
                now = got.map_or(now, |g| g.0);
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(
                q.peek_time().map(Instant::as_nanos),
                model.first().map(|m| m.0)
            );
        }
        let rest: Vec<_> = q.drain().map(|(t, k, e)| (t.as_nanos(), k, e)).collect();
        assert_eq!(rest, model.into_iter().collect::<Vec<_>>());
    }
}
