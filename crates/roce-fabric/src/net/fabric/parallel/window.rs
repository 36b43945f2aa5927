//! The windows of a parallel run. Every thread decides the next step from the same published
//! numbers (each partition's earliest pending time, the earliest fabric-wide event), runs its
//! partition through the window, posts the frames that left it into the mailboxes of the
//! partitions they lead to, and meets the others at one barrier; the next window starts by
//! taking in what was posted. A frame posted in a window is due no earlier than the window's
//! end (the lookahead), so taking it in early or late within the next window changes nothing.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::{since, thread_times, ThreadTimes};
use crate::net::fabric::Fabric;
use crate::net::transit::{Crossing, Event};
use roce_proto::engine::Engine;
use roce_proto::time::{Duration, Instant};

/// No pending event.
const NONE: Instant = Instant::FAR_FUTURE;

/// A time shared between threads: its nanoseconds in an atomic.
fn load(a: &AtomicU64) -> Instant {
    Instant::from_nanos(a.load(Ordering::Relaxed))
}

/// Publishes `t` in `a` (see [`load`]).
fn store(a: &AtomicU64, t: Instant) {
    a.store(t.as_nanos(), Ordering::Relaxed);
}

/// What every thread does next.
pub(super) enum Step {
    /// Run the window up to (not including) this time.
    Window(Instant),
    /// The calling thread handles the fabric-wide events at this time, between two barriers
    /// (the first so that no thread still reads what it changes); the others wait.
    Global(Instant),
    /// The run is over.
    Done,
}

pub(super) type Cells<'a, E> = [Mutex<&'a mut Fabric<E>>];

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Locks every partition (the other threads wait at the barrier, so nothing blocks).
pub(super) fn lock_all<'a, 'b, E>(
    cells: &'a Cells<'b, E>,
) -> Vec<MutexGuard<'a, &'b mut Fabric<E>>> {
    cells.iter().map(lock).collect()
}

/// What the threads of a run share.
pub(super) struct Shared<'a, 'b, E> {
    cells: &'a Cells<'b, E>,
    /// Frames on their way, by (from, to) partition: `from * n + to`.
    mail: Vec<Mutex<Vec<Crossing>>>,
    /// By window parity, each partition's earliest pending time after its window (the frames
    /// it posted included), as [`store`] keeps it.
    next: [Vec<AtomicU64>; 2],
    /// By window parity, each partition's events and posted frames in its window.
    done: [Vec<(AtomicU64, AtomicU64)>; 2],
    /// The earliest fabric-wide event, as [`store`] keeps it (changes only in a global step).
    global: AtomicU64,
    pub(super) barrier: WindowBarrier,
    lookahead: Duration,
    stop: Instant,
}

impl<'a, 'b, E: Engine> Shared<'a, 'b, E> {
    pub(super) fn new(cells: &'a Cells<'b, E>, lookahead: Duration, stop: Instant) -> Self {
        let n = cells.len();
        let none = || AtomicU64::new(NONE.as_nanos());
        let atomics = || (0..n).map(|_| none()).collect::<Vec<_>>();
        let pairs = || {
            (0..n)
                .map(|_| (AtomicU64::new(0), AtomicU64::new(0)))
                .collect::<Vec<_>>()
        };
        Shared {
            cells,
            mail: (0..n * n).map(|_| Mutex::default()).collect(),
            next: [atomics(), atomics()],
            done: [pairs(), pairs()],
            global: none(),
            barrier: WindowBarrier::new(n),
            lookahead,
            stop,
        }
    }

    /// Publishes every partition's earliest event and the earliest fabric-wide one (`global`)
    /// for the window of `parity` (with every partition locked or idle, and the mail empty).
    pub(super) fn publish(&self, cells: &Cells<'b, E>, global: Option<Instant>, parity: usize) {
        for (k, c) in cells.iter().enumerate() {
            let t = lock(c).w.queue.peek_time().unwrap_or(NONE);
            if let Some(a) = self.next[parity].get(k) {
                store(a, t);
            }
        }
        store(&self.global, global.unwrap_or(NONE));
    }

    /// The next step, the same on every thread: a window ends a lookahead after the earliest
    /// node event, or at the next fabric-wide event; the global step at that nanosecond then
    /// runs its node events and the fabric-wide ones in tie-key order.
    pub(super) fn decide(&self, parity: usize) -> Step {
        let t = self.next[parity].iter().map(load).min().unwrap_or(NONE);
        let g = load(&self.global);
        if g < self.stop && g <= t {
            return Step::Global(g);
        }
        if t >= self.stop {
            return Step::Done;
        }
        let w = (t + self.lookahead).min(self.stop).min(g);
        Step::Window(w)
    }

    /// Runs partition `k` through the window ending at `w`; returns its wall time, ns.
    pub(super) fn window(&self, k: usize, parity: usize, w: Instant) -> u64 {
        let started = std::time::Instant::now();
        let n = self.cells.len();
        let Some(cell) = self.cells.get(k) else {
            return 0;
        };
        let mut f = lock(cell);
        for j in (0..n).filter(|&j| j != k) {
            if let Some(m) = self.mail.get(j * n + k) {
                take_in(&mut f, lock(m).drain(..));
            }
        }
        let before = f.w.events;
        f.run_before(w, |_| {});
        let mut soonest = f.w.queue.peek_time().unwrap_or(NONE);
        let mut posted = 0;
        if let Some(cross) = f.w.cross.as_mut() {
            posted = cross.out.len() as u64;
            let mut boxes: Vec<_> = (0..n)
                .filter_map(|to| self.mail.get(k * n + to).map(lock))
                .collect();
            for c in cross.out.drain(..) {
                soonest = soonest.min(c.at);
                if let Some(b) = boxes.get_mut(c.to) {
                    b.push(c);
                }
            }
        }
        let flip = parity ^ 1;
        if let Some(a) = self.next[flip].get(k) {
            store(a, soonest);
        }
        if let Some((e, p)) = self.done[flip].get(k) {
            e.store(f.w.events - before, Ordering::Relaxed);
            p.store(posted, Ordering::Relaxed);
        }
        drop(f);
        since(started)
    }

    /// Adds each partition's events of the window just run (of `parity`) to `events`; returns
    /// the busiest partition's events, all of them, and the frames that crossed.
    pub(super) fn tally(&self, parity: usize, events: &mut [u64]) -> (u64, u64, u64) {
        let (mut most, mut all, mut crossed) = (0, 0, 0);
        for ((e, p), sum) in self.done[parity].iter().zip(events) {
            let e = e.load(Ordering::Relaxed);
            most = most.max(e);
            all += e;
            *sum += e;
            crossed += p.load(Ordering::Relaxed);
        }
        (most, all, crossed)
    }

    /// Hands every posted frame to its partition (all of them locked in `parts`).
    pub(super) fn deliver_all(&self, parts: &mut [&mut Fabric<E>]) -> u64 {
        let n = parts.len();
        let mut moved = 0;
        for (i, m) in self.mail.iter().enumerate() {
            let mut m = lock(m);
            moved += m.len() as u64;
            if let Some(f) = parts.get_mut(i % n) {
                take_in(f, m.drain(..));
            }
        }
        moved
    }

    /// The loop of a thread other than the calling one, for partition `k`.
    pub(super) fn worker(&self, k: usize) -> ThreadTimes {
        let t0 = thread_times();
        let (mut parity, mut busy) = (0, 0);
        loop {
            match self.decide(parity) {
                Step::Done => break,
                Step::Global(_) => {
                    // Once every thread has decided, the calling thread changes what they
                    // decide from; then they go on.
                    self.barrier.wait();
                    self.barrier.wait();
                }
                Step::Window(w) => {
                    busy += self.window(k, parity, w);
                    self.barrier.wait();
                    parity ^= 1;
                }
            }
        }
        let t1 = thread_times();
        (t1.0 - t0.0, t1.1 - t0.1, busy)
    }
}

/// Queues frames that crossed into `f` for delivery.
pub(super) fn take_in<E>(f: &mut Fabric<E>, frames: impl Iterator<Item = Crossing>) {
    for c in frames {
        let epoch = c.slot.epoch;
        let pkt = f.w.pool.adopt(c.slot);
        f.w.queue
            .push(c.at, c.key, Event::Deliver(c.link, pkt, epoch));
    }
}

/// Spins a little, yields a little, then sleeps: windows are often shorter than a sleep and a
/// wake-up, but a thread kept waiting long should give its CPU away.
pub(super) struct WindowBarrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

/// Busy-wait rounds before yielding, and yields before sleeping.
const SPINS: u32 = 256;
const YIELDS: u32 = 64;

impl WindowBarrier {
    fn new(n: usize) -> Self {
        WindowBarrier {
            n,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Returns once all `n` threads have called it (everything each did before is then
    /// visible to all).
    pub(super) fn wait(&self) {
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.store(gen.wrapping_add(1), Ordering::SeqCst);
            if self.sleepers.load(Ordering::SeqCst) > 0 {
                let _g = lock(&self.lock);
                self.wake.notify_all();
            }
            return;
        }
        for i in 0..SPINS + YIELDS {
            if self.generation.load(Ordering::Acquire) != gen {
                return;
            }
            if i < SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        let mut g = lock(&self.lock);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        while self.generation.load(Ordering::SeqCst) == gen {
            g = self.wake.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_barrier_lets_no_thread_through_before_all_arrive() {
        let b = WindowBarrier::new(3);
        let count = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for round in 1..=200 {
                        count.fetch_add(1, Ordering::SeqCst);
                        b.wait();
                        assert!(count.load(Ordering::SeqCst) >= 3 * round);
                        b.wait();
                    }
                });
            }
        });
        assert_eq!(count.load(Ordering::SeqCst), 600);
    }
}
