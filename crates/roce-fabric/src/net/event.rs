//! The simulator's event queue: a calendar queue on virtual time with a caller-given tie-break.
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

impl<T> Entry<T> {
    /// When the entry is due, ns (what the calendar's buckets are cut from).
    fn at(&self) -> u64 {
        (self.key >> 64) as u64
    }
}

/// The full sort key of an event due at `at` with tie key `tie`: pops go in its order. The
/// packing (nanoseconds in the high half) is this module's; [`key_time`] undoes it.
pub(crate) fn sort_key(at: Instant, tie: u64) -> u128 {
    (u128::from(at.as_nanos()) << 64) | u128::from(tie)
}

/// When the event of sort key `key` is due.
pub(crate) fn key_time(key: u128) -> Instant {
    Instant::from_nanos((key >> 64) as u64)
}

/// Nanoseconds each calendar bucket spans, as a power of two: a big fabric handles several
/// events per nanosecond, so a bucket holds tens of them, a heap small enough for L1.
const BUCKET_SHIFT: u32 = 4;
/// Buckets in the calendar (a power of two): 4 µs ahead at 16 ns each, past the serialization
/// and propagation delays most events are scheduled at. Later events wait in a heap.
const BUCKETS: usize = 256;

/// A deterministic queue of timed events: a calendar queue. Events due in the current bucket's
/// time span sit in a small sorted vector; those of the next `BUCKETS` - 1 spans in
/// unsorted buckets, one append each; later ones in a heap. Keys are unique, so the order in
/// which entries pop is the same as any other correct priority queue's; what changes is where
/// the memory traffic goes: a big heap missed the cache at every level of every pop.
pub struct EventQueue<T> {
    /// Events due before `near_end`, sorted by `Entry::key` from last to first (a pop takes
    /// the end: one sort per bucket is cheaper than a heap's sift per pop). It and `late` are
    /// both empty only when the whole queue is.
    near: Vec<Entry<T>>,
    /// The other events due before `near_end`: those pushed after their bucket was sorted
    /// whose place in `near` lies more than [`SHORT_MOVE`] entries from its end, in a 4-ary
    /// min-heap. A crowded bucket (thousands of events in the first microseconds of a big
    /// run) made each such insert a long move; a pop takes the earlier of the two heads.
    late: Vec<Entry<T>>,
    /// End of the current bucket's span (exclusive, a multiple of the bucket width; wider
    /// than a time so that the span of `u64::MAX` has an end).
    near_end: u128,
    /// Events due in `[near_end, near_end + span)`, bucket `(at >> BUCKET_SHIFT) % BUCKETS`.
    ring: Vec<Vec<Entry<T>>>,
    /// Events in `ring`.
    ring_len: usize,
    /// Events due from `near_end + span` on, a 4-ary min-heap.
    far: Vec<Entry<T>>,
    /// Scratch for sorting a bucket as it becomes current, one vector per nanosecond of its
    /// span (empty between refills; kept for their capacity).
    by_ns: Vec<Vec<Entry<T>>>,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Most entries an insert into the sorted current bucket may move; a later place goes to the
/// `late` heap instead.
const SHORT_MOVE: usize = 16;

/// Time the buckets together span.
const SPAN: u128 = (BUCKETS as u128) << BUCKET_SHIFT;

fn bucket(at: u128) -> usize {
    (at >> BUCKET_SHIFT) as usize % BUCKETS
}

impl<T> EventQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            near: Vec::new(),
            late: Vec::new(),
            near_end: 0,
            ring: (0..BUCKETS).map(|_| Vec::new()).collect(),
            ring_len: 0,
            far: Vec::new(),
            by_ns: (0..1 << BUCKET_SHIFT).map(|_| Vec::new()).collect(),
        }
    }

    /// Schedules `event` at `at` with tie key `key` (unique per event; see [`tie`]).
    // Always: the fabric pushes from a few large functions, where LLVM left it a call (a
    // prologue and epilogue per event, 1.5% of the run's instructions).
    #[inline(always)]
    pub fn push(&mut self, at: Instant, key: u64, event: T) {
        let entry = Entry {
            key: sort_key(at, key),
            event,
        };
        // Most events fall in a later bucket of the calendar: one append, inlined.
        let ahead = u128::from(entry.at()).wrapping_sub(self.near_end);
        if ahead < SPAN && !self.near.is_empty() {
            self.ring_push(entry);
            return;
        }
        self.push_other(entry);
    }

    /// Appends `entry` to its calendar bucket (due within the buckets' span).
    #[inline(always)]
    fn ring_push(&mut self, entry: Entry<T>) {
        self.ring[bucket(u128::from(entry.at()))].push(entry);
        self.ring_len += 1;
    }

    /// [`Self::push`] into the current bucket, the far heap, or an empty near bucket.
    fn push_other(&mut self, entry: Entry<T>) {
        let at = u128::from(entry.at());
        if at < self.near_end {
            // Mostly due soon, so near the end: a short move; otherwise the late heap.
            let i = self.near.partition_point(|e| e.key > entry.key);
            if self.near.len() - i <= SHORT_MOVE {
                self.near.insert(i, entry);
            } else {
                heap_push(&mut self.late, entry);
            }
            return;
        }
        if at - self.near_end < SPAN {
            self.ring_push(entry);
        } else {
            heap_push(&mut self.far, entry);
        }
        if self.near.is_empty() && self.late.is_empty() {
            self.refill();
        }
    }

    /// Removes and returns the earliest event (lowest key among equals) with its key.
    pub fn pop(&mut self) -> Option<(Instant, u64, T)> {
        let late_first = match (self.near.last(), self.late.first()) {
            (Some(n), Some(l)) => l.key < n.key,
            (None, l) => l.is_some(),
            (Some(_), None) => false,
        };
        let top = if late_first {
            heap_pop(&mut self.late)?
        } else {
            self.near.pop()?
        };
        if self.near.is_empty() && self.late.is_empty() {
            self.refill();
        }
        Some((key_time(top.key), top.key as u64, top.event))
    }

    /// With `near` and `late` empty: moves on to the next bucket holding events (through the far heap
    /// when the buckets are all empty) and makes it the near heap.
    fn refill(&mut self) {
        while self.near.is_empty() {
            if self.ring_len == 0 {
                // Nothing in the buckets: jump to the far heap's earliest span.
                let Some(first) = self.far.first() else {
                    return;
                };
                self.near_end = u128::from(first.at()) >> BUCKET_SHIFT << BUCKET_SHIFT;
                self.pull_far();
            }
            let b = bucket(self.near_end);
            std::mem::swap(&mut self.near, &mut self.ring[b]);
            self.ring_len -= self.near.len();
            self.near_end += 1 << BUCKET_SHIFT;
            self.pull_far();
            self.sort_near();
        }
    }

    /// Sorts the bucket just made current, last key first. Its events share all but the low
    /// [`BUCKET_SHIFT`] bits of their time, so they are first spread by nanosecond (one pass)
    /// and only each nanosecond's few are compared, by tie key: about half the work of a
    /// comparison sort of the whole bucket.
    fn sort_near(&mut self) {
        if self.near.len() < 2 {
            return;
        }
        let mask = (1u64 << BUCKET_SHIFT) - 1;
        for e in self.near.drain(..) {
            let ns = (e.at() & mask) as usize;
            if let Some(v) = self.by_ns.get_mut(ns) {
                v.push(e);
            }
        }
        for v in self.by_ns.iter_mut().rev() {
            if v.len() > 1 {
                v.sort_unstable_by_key(|e| std::cmp::Reverse(e.key as u64));
            }
            self.near.append(v);
        }
    }

    /// Moves the far events that now fall within the buckets' span into their buckets.
    fn pull_far(&mut self) {
        let end = self.near_end + SPAN;
        while self.far.first().is_some_and(|e| u128::from(e.at()) < end) {
            if let Some(e) = heap_pop(&mut self.far) {
                self.ring_push(e);
            }
        }
    }

    /// Removes every event, earliest first.
    pub fn drain(&mut self) -> impl Iterator<Item = (Instant, u64, T)> + '_ {
        std::iter::from_fn(|| self.pop())
    }

    /// Every pending event, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        let ring = self.ring.iter().flatten();
        self.near
            .iter()
            .chain(&self.late)
            .chain(ring)
            .chain(&self.far)
            .map(|e| &e.event)
    }

    /// When the earliest event is due.
    pub fn peek_time(&self) -> Option<Instant> {
        let first = match (self.near.last(), self.late.first()) {
            (Some(n), Some(l)) => n.key.min(l.key),
            (n, l) => n.or(l)?.key,
        };
        Some(key_time(first))
    }

    /// The event that pops `n` pops from now if nothing is pushed before it and no late insert
    /// comes first, within the current bucket (a hint: the fabric prefetches what that event
    /// will read).
    pub fn upcoming(&self, n: usize) -> Option<&T> {
        let i = self.near.len().checked_sub(n + 1)?;
        self.near.get(i).map(|e| &e.event)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.near.len() + self.late.len() + self.ring_len + self.far.len()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.near.is_empty() && self.late.is_empty()
    }
}

/// Children per node of the far heap: a 4-ary heap is half as deep as a binary one and its four
/// children share a cache line or two.
const ARITY: usize = 4;

fn heap_push<T>(heap: &mut Vec<Entry<T>>, entry: Entry<T>) {
    let key = entry.key;
    let mut i = heap.len();
    heap.push(entry);
    // Sift up: move parents down until the new entry's place is found.
    while i > 0 {
        let parent = (i - 1) / ARITY;
        if heap[parent].key <= key {
            break;
        }
        heap.swap(parent, i);
        i = parent;
    }
}

fn heap_pop<T>(heap: &mut Vec<Entry<T>>) -> Option<Entry<T>> {
    let last = heap.pop()?;
    if heap.is_empty() {
        return Some(last);
    }
    let top = std::mem::replace(&mut heap[0], last);
    sift_down(heap, 0);
    Some(top)
}

/// Moves the entry at `i` down to where its key belongs.
fn sift_down<T>(heap: &mut [Entry<T>], mut i: usize) {
    let n = heap.len();
    let key = heap[i].key;
    loop {
        let first = i * ARITY + 1;
        if first >= n {
            break;
        }
        let end = (first + ARITY).min(n);
        let mut best = first;
        let mut best_key = heap[first].key;
        for (c, e) in heap[first..end].iter().enumerate().skip(1) {
            if e.key < best_key {
                best = first + c;
                best_key = e.key;
            }
        }
        if best_key >= key {
            break;
        }
        heap.swap(i, best);
        i = best;
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
        // All four share the first bucket, so the ones after the next are known too.
        assert_eq!(
            (q.upcoming(1), q.upcoming(3), q.upcoming(4)),
            (Some(&'b'), Some(&'a'), None)
        );
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

    /// Runs 20,000 rounds of xorshift-driven pushes (`push(x, now, round)` gives the time and
    /// tie key, or `None` to pop) and pops against a sorted set, checking every answer.
    /// Returns whether the late heap ever held an event.
    fn against_sorted_set(seed: u64, push: impl Fn(u64, u64, u64) -> Option<(u64, u64)>) -> bool {
        let mut q = EventQueue::new();
        let mut used_late = false;
        let mut model = std::collections::BTreeSet::new();
        let (mut x, mut now) = (seed, 0u64);
        for round in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // A pop from an empty queue must give nothing, as the set's does.
            match push(x, now, round) {
                Some((at, key)) => {
                    q.push(Instant::from_nanos(at), key, round);
                    model.insert((at, key, round));
                }
                None => {
                    let want = model.pop_first();
                    let got = q.pop().map(|(t, k, e)| (t.as_nanos(), k, e));
                    assert_eq!(got, want);
                    now = got.map_or(now, |g| g.0).min(u64::MAX / 2);
                }
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(q.iter().count(), model.len());
            let first = model.first().map(|m| m.0);
            assert_eq!(q.peek_time().map(Instant::as_nanos), first);
            used_late |= !q.late.is_empty();
            if q.late.is_empty() {
                assert_eq!(q.upcoming(0), model.first().map(|m| &m.2));
            }
        }
        let rest: Vec<_> = q.drain().map(|(t, k, e)| (t.as_nanos(), k, e)).collect();
        assert_eq!(rest, model.into_iter().collect::<Vec<_>>());
        assert!(q.is_empty());
        used_late
    }

    #[test]
    fn interleaved_pushes_and_pops_come_out_as_a_sorted_set_would() {
        // Bursts of pushes, then pops; many equal times, so the tie keys decide.
        against_sorted_set(0x9e37_79b9_7f4a_7c15, |x, now, round| {
            (x % 3 != 0).then(|| (now + (x >> 40) % 64, tie((x % 7) as u32, round)))
        });
    }

    #[test]
    fn a_crowded_current_bucket_takes_inserts_in_order() {
        // Three pushes per pop, nearly all within the current 16 ns: the sorted bucket grows
        // to thousands, so most inserts land in the late heap.
        let late = against_sorted_set(0x5851_f42d_4c95_7f2d, |x, now, round| {
            (x % 4 != 0).then(|| (now + (x >> 40) % 3, tie((x % 11) as u32, round)))
        });
        assert!(late, "the late heap was used");
    }

    #[test]
    fn far_and_sparse_events_pop_in_order_across_the_calendar() {
        // Delays from 0 to beyond the buckets' span, gaps that leave every bucket empty, the
        // end of time, and pushes behind the current span (after a pop at the end of time).
        against_sorted_set(0x2545_f491_4f6c_dd1d, |x, now, round| {
            let delay = match x % 5 {
                0 => (x >> 40) % 16,
                1 => (x >> 40) % 5_000,
                2 => (x >> 40) % 100_000,
                3 => 1 << 32,
                _ => u64::MAX - now,
            };
            (x % 2 == 1).then_some((now + delay, round))
        });
    }
}
