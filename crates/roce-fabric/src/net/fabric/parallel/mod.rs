//! The fabric on several threads: a conservative parallel discrete-event engine.
//!
//! Nodes are partitioned by switch (each switch with the hosts cabled to it), switches spread
//! over the threads by a balanced static split (heaviest first, onto the lightest thread). Each
//! partition is a [`Fabric`] of its own (its own event queue, packet pool and slice of the
//! nodes); the only thing that crosses partitions is a frame on a link between them, and it
//! arrives no earlier than that link's delay after it left. So with the lookahead `L` (the
//! smallest delay of a link between partitions) every partition handles the window
//! `[t, t + L)` (`t` the earliest pending event anywhere) without hearing from the others; the
//! threads meet at one barrier per window, and each then takes in the frames sent to it.
//!
//! Results are those of one thread, bit for bit: every event's tie key comes from the node that
//! scheduled it and that node's own count (see [`crate::net::event`]), every node draws from its own
//! RNG stream, and what is fabric-wide (time-series samples, telemetry, the PFC log, flow
//! progress, counters) is merged in event-key order. Fabric-wide events run on the calling
//! thread with the partitions stopped, in tie-key order with the node events of their
//! nanosecond, as they do on one thread: samples and route recomputation with every node
//! gathered back, link changes and switch reboots in the partition of the node they touch (see
//! `merge.rs`). What a node does to another partition's node (a frame lost in flight counts at
//! its sender's port) is owed in the partition's journal and settled when the nodes come back.

mod merge;
mod split;
mod window;

use std::sync::{Mutex, PoisonError};

use super::Fabric;
use crate::{LinkId, SwitchId};
use roce_proto::engine::Engine;
use roce_proto::time::{Duration, Instant};
use window::{Shared, Step};

/// Why a fabric cannot run on several threads (each one line, for the command line).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParallelError {
    /// Zero threads asked for.
    #[error("--threads must be at least 1")]
    NoThreads,
    /// A link between partitions has no delay, so no window can be run apart.
    #[error("--threads > 1 needs links between switches to have a delay (one has 0 ns)")]
    NoLookahead,
    /// More threads than [`crate::limits::bounds::MAX_THREADS`].
    #[error("--threads {0} is more than this build supports (at most {max})", max = crate::limits::bounds::MAX_THREADS)]
    TooMany(usize),
}

/// How a fabric runs: the fields only one of the modes has live here, so that a partition
/// cannot hold partitions and a whole fabric owes no journal.
pub(crate) enum RunMode<E> {
    /// Every node here, run on the calling thread.
    Whole,
    /// Split into partitions that run on threads; this fabric keeps the fabric-wide events
    /// and holds the nodes between runs.
    Split(Box<Partitions<E>>),
    /// One partition of a split fabric, with what it owes the fabric-wide records.
    Part(Box<Journal>),
}

impl<E> RunMode<E> {
    /// What a partition owes the fabric-wide records (`None` unless this is a partition).
    pub(crate) fn journal(&mut self) -> Option<&mut Journal> {
        match self {
            RunMode::Part(j) => Some(j),
            RunMode::Whole | RunMode::Split(_) => None,
        }
    }
}

/// A PFC frame a switch sent: (event key, switch, port, priority, XOFF).
pub(crate) type PauseNote = ((Instant, u64), SwitchId, u16, usize, bool);

/// What a partition owes the fabric-wide recorder and PFC log, with the key of the event that
/// did it, to be merged in event order.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    /// PFC frames sent by switches: (event key, switch, port, priority, XOFF).
    pub(crate) pauses: Vec<PauseNote>,
    /// The event key of each entry of the partition's PFC log.
    pub(crate) rx_keys: Vec<(Instant, u64)>,
    /// Frames lost in flight on a link whose sending end lives in another partition: (link,
    /// priority), for that port's `link_down` drop count.
    pub(crate) lost_in_flight: Vec<(LinkId, usize)>,
}

/// The partitions of a fabric that runs on several threads.
pub(crate) struct Partitions<E> {
    parts: Vec<Fabric<E>>,
    layout: Layout,
    stats: ParallelStats,
}

/// Which node runs where.
#[derive(Debug)]
struct Layout {
    /// Hosts and switches of each partition.
    hosts: Vec<Vec<usize>>,
    switches: Vec<Vec<usize>>,
    /// The partition of each node, by node code.
    part_of: Vec<u16>,
    /// The smallest delay of a link between partitions.
    lookahead: Duration,
}

impl Layout {
    fn part(&self, code: u32) -> usize {
        self.part_of
            .get(code as usize)
            .map_or(0, |&p| usize::from(p))
    }
}

/// Where a parallel run's time went, summed over its runs: for tuning, never part of a result.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ParallelStats {
    /// Windows run (each ends at a barrier).
    pub windows: u64,
    /// Fabric-wide events handled with the partitions stopped (samples, failures).
    pub global_steps: u64,
    /// Frames handed from one partition to another.
    pub crossings: u64,
    /// Node events handled in windows, per partition.
    pub events: Vec<u64>,
    /// The sum over windows of the busiest partition's events: with every event costing the
    /// same, the events over this bound the speed-up the split allows.
    pub critical_events: u64,
    /// Wall time each partition spent in its windows (taking frames in, handling events,
    /// posting frames out), ns.
    pub busy_ns: Vec<u64>,
    /// Wall time of the windows on the calling thread, barrier included, ns.
    pub window_ns: u64,
    /// Wall time the calling thread spent alone with the partitions stopped (fabric-wide
    /// events, merging records), ns.
    pub serial_ns: u64,
    /// CPU time of each thread (Linux; 0 elsewhere), ns.
    pub cpu_ns: Vec<u64>,
    /// Time each thread was ready to run but waited for a CPU (Linux; 0 elsewhere), ns.
    pub runqueue_ns: Vec<u64>,
}

impl ParallelStats {
    /// The speed-up the split's balance allows: events over [`ParallelStats::critical_events`].
    pub fn balance_bound(&self) -> f64 {
        self.events.iter().sum::<u64>() as f64 / self.critical_events.max(1) as f64
    }

    /// The share of the windows' wall time partition `k` waited at the barrier.
    pub fn idle_share(&self, k: usize) -> f64 {
        let busy = self.busy_ns.get(k).copied().unwrap_or(0) as f64;
        1.0 - busy / self.window_ns.max(1) as f64
    }

    fn resize(&mut self, n: usize) {
        for v in [
            &mut self.events,
            &mut self.busy_ns,
            &mut self.cpu_ns,
            &mut self.runqueue_ns,
        ] {
            v.resize(n, 0);
        }
    }
}

/// This thread's (CPU time, run-queue wait) so far, ns, from Linux's schedstat.
fn thread_times() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let mut f = text
        .split_whitespace()
        .map(|x| x.parse::<u64>().unwrap_or(0));
    (f.next().unwrap_or(0), f.next().unwrap_or(0))
}

/// Wall time since `t`, ns.
fn since(t: std::time::Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// What a thread measured of itself: (CPU ns, run-queue ns, busy ns).
type ThreadTimes = (u64, u64, u64);

impl<E: Engine + Send> Fabric<E> {
    /// Runs until `end` like [`Fabric::run_until_with`], on the threads [`Fabric::set_threads`]
    /// asked for (one when it was not called). The results are the same either way.
    pub fn run_until_threads(&mut self, end: Instant, mut progress: impl FnMut(Instant)) {
        let mut par = match std::mem::replace(&mut self.mode, RunMode::Whole) {
            RunMode::Split(par) => par,
            other => {
                self.mode = other;
                self.run_until_with(end, progress);
                return;
            }
        };
        let Partitions {
            parts,
            layout,
            stats,
        } = &mut *par;
        let layout = &*layout;
        stats.resize(parts.len());
        {
            let mut p: Vec<&mut Fabric<E>> = parts.iter_mut().collect();
            self.route_events(&mut p, layout, true);
            for f in p.iter_mut() {
                f.flow_meter.progress.clone_from(&self.flow_meter.progress);
            }
            self.scatter(&mut p, layout);
        }
        let stop = end + Duration::NANOSECOND;
        self.w.stop = stop;
        let cells: Vec<Mutex<&mut Fabric<E>>> = parts.iter_mut().map(Mutex::new).collect();
        let shared = Shared::new(&cells, layout.lookahead, stop);
        shared.publish(&cells, self.w.queue.peek_time(), 0);
        let mut reported = self.w.events / crate::PROGRESS_EVERY;
        let times: Vec<Mutex<ThreadTimes>> = cells.iter().map(|_| Mutex::default()).collect();
        std::thread::scope(|sc| {
            for (k, slot) in times.iter().enumerate().skip(1) {
                let shared = &shared;
                sc.spawn(move || {
                    let t = shared.worker(k);
                    *slot.lock().unwrap_or_else(PoisonError::into_inner) = t;
                });
            }
            let t0 = thread_times();
            let (mut parity, mut busy, mut handled) = (0, 0, 0);
            loop {
                match shared.decide(parity) {
                    Step::Done => break,
                    Step::Global(g) => {
                        shared.barrier.wait();
                        let started = std::time::Instant::now();
                        let mut guards = window::lock_all(&cells);
                        let mut p: Vec<&mut Fabric<E>> =
                            guards.iter_mut().map(|g| &mut ***g).collect();
                        stats.crossings += shared.deliver_all(&mut p);
                        self.global_step(&mut p, layout, g);
                        stats.crossings += merge::exchange(&mut p);
                        drop(p);
                        drop(guards);
                        shared.publish(&cells, self.w.queue.peek_time(), parity);
                        stats.global_steps += 1;
                        stats.serial_ns += since(started);
                        shared.barrier.wait();
                    }
                    Step::Window(w) => {
                        let started = std::time::Instant::now();
                        busy += shared.window(0, parity, w);
                        shared.barrier.wait();
                        parity ^= 1;
                        stats.window_ns += since(started);
                        stats.windows += 1;
                        let (most, all, crossed) = shared.tally(parity, &mut stats.events);
                        stats.critical_events += most;
                        stats.crossings += crossed;
                        handled += all;
                        let total = (self.w.events + handled) / crate::PROGRESS_EVERY;
                        if total != reported {
                            reported = total;
                            progress(w);
                        }
                    }
                }
            }
            let t1 = thread_times();
            *times[0].lock().unwrap_or_else(PoisonError::into_inner) =
                (t1.0 - t0.0, t1.1 - t0.1, busy);
        });
        for (k, t) in times.iter().enumerate() {
            let (cpu, queued, busy) = *t.lock().unwrap_or_else(PoisonError::into_inner);
            stats.cpu_ns[k] += cpu;
            stats.runqueue_ns[k] += queued;
            stats.busy_ns[k] += busy;
        }
        drop(shared);
        drop(cells);
        let mut p: Vec<&mut Fabric<E>> = parts.iter_mut().collect();
        self.gather(&mut p, layout, self.w.now.max(end));
        self.w.close(stop);
        tracing::debug!(?stats, "parallel run");
        self.mode = RunMode::Split(par);
    }

    /// Where the parallel runs so far spent their time (`None` on one thread).
    pub fn parallel_stats(&self) -> Option<&ParallelStats> {
        match &self.mode {
            RunMode::Split(p) => Some(&p.stats),
            RunMode::Whole | RunMode::Part(_) => None,
        }
    }
}
