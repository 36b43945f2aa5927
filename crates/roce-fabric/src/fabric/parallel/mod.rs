//! The fabric on several threads: a conservative parallel discrete-event engine.
//!
//! Nodes are partitioned by switch (each switch with the hosts cabled to it), switches spread
//! over the threads by a balanced static split (heaviest first, onto the lightest thread). Each
//! partition is a [`Fabric`] of its own (its own event queue, packet pool and slice of the
//! nodes); the only thing that crosses partitions is a frame on a link between them, and it
//! arrives no earlier than that link's delay after it left. So with the lookahead `L` (the
//! smallest delay of a link between partitions) every partition handles the window
//! `[t, t + L)` (`t` the earliest pending event anywhere) without hearing from the others;
//! at a barrier the frames that crossed are handed over, and the next window starts.
//!
//! Results are those of one thread, bit for bit: every event's tie key comes from the node that
//! scheduled it and that node's own count (see [`crate::event`]), every node draws from its own
//! RNG stream, and what is fabric-wide (time-series samples, telemetry, the PFC log, flow
//! progress, counters) is merged in event-key order at barriers. Fabric-wide events (samples)
//! run on the calling thread with every node gathered back, after every node event of their
//! nanosecond, as they do on one thread.

mod split;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex, MutexGuard, PoisonError};

use super::Fabric;
use crate::wires::{code, Event, GLOBAL};
use crate::{HostId, Node, SwitchId};
use roce_proto::engine::Engine;
use roce_proto::time::Instant;

/// Why a fabric cannot run on several threads (each one line, for the command line).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParallelError {
    /// Zero threads asked for.
    #[error("--threads must be at least 1")]
    NoThreads,
    /// Link failures and switch reboots are fabric-wide events the engine does not split yet.
    #[error("--threads > 1 does not run link failures or switch reboots yet; use --threads 1")]
    Failures,
    /// Port captures see frames in one order across the fabric.
    #[error("--threads > 1 does not capture ports yet; use --threads 1")]
    Capture,
    /// A link between partitions has no delay, so no window can be run apart.
    #[error("--threads > 1 needs links between switches to have a delay (one has 0 ns)")]
    NoLookahead,
}

/// A PFC frame a switch sent: (event key, switch, port, priority, XOFF).
pub(crate) type PauseNote = ((u64, u64), SwitchId, u16, usize, bool);

/// What a partition owes the fabric-wide recorder and PFC log, with the key of the event that
/// did it, to be merged in event order.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    /// PFC frames sent by switches: (event key, switch, port, priority, XOFF).
    pub(crate) pauses: Vec<PauseNote>,
    /// The event key of each entry of the partition's PFC log.
    pub(crate) rx_keys: Vec<(u64, u64)>,
}

/// The partitions of a fabric that runs on several threads.
pub(crate) struct Partitions<E> {
    parts: Vec<Fabric<E>>,
    layout: Layout,
}

/// Which node runs where.
#[derive(Debug)]
struct Layout {
    /// Hosts and switches of each partition.
    hosts: Vec<Vec<usize>>,
    switches: Vec<Vec<usize>>,
    /// The partition of each node, by node code.
    part_of: Vec<u16>,
    /// The smallest delay of a link between partitions, ns.
    lookahead: u64,
}

impl Layout {
    fn part(&self, code: u32) -> usize {
        self.part_of
            .get(code as usize)
            .map_or(0, |&p| usize::from(p))
    }
}

const STOP: u64 = u64::MAX;

type Cells<'a, E> = [Mutex<&'a mut Fabric<E>>];

/// Locks every partition (the other threads wait at the barrier, so nothing blocks).
fn lock_all<'a, 'b, E>(cells: &'a Cells<'b, E>) -> Vec<MutexGuard<'a, &'b mut Fabric<E>>> {
    cells
        .iter()
        .map(|c| c.lock().unwrap_or_else(PoisonError::into_inner))
        .collect()
}

impl<E: Engine + Send> Fabric<E> {
    /// Runs until `end` like [`Fabric::run_until_with`], on the threads [`Fabric::set_threads`]
    /// asked for (one when it was not called). The results are the same either way.
    pub fn run_until_threads(&mut self, end: Instant, mut progress: impl FnMut(Instant)) {
        let Some(mut par) = self.par.take() else {
            self.run_until_with(end, progress);
            return;
        };
        let Partitions { parts, layout } = &mut *par;
        let (layout, lookahead) = (&*layout, layout.lookahead);
        {
            let mut p: Vec<&mut Fabric<E>> = parts.iter_mut().collect();
            self.route_events(&mut p, layout, true);
            for f in p.iter_mut() {
                f.tap.progress.clone_from(&self.tap.progress);
            }
            self.scatter(&mut p, layout);
        }
        let stop = end.as_nanos().saturating_add(1);
        let cells: Vec<Mutex<&mut Fabric<E>>> = parts.iter_mut().map(Mutex::new).collect();
        let barrier = Barrier::new(cells.len());
        let window = AtomicU64::new(STOP);
        let mut reported = self.w.events / crate::PROGRESS_EVERY;
        std::thread::scope(|sc| {
            for cell in cells.iter().skip(1) {
                let (barrier, window) = (&barrier, &window);
                sc.spawn(move || loop {
                    barrier.wait();
                    let w = window.load(Ordering::Acquire);
                    if w == STOP {
                        break;
                    }
                    cell.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .run_before(w, |_| {});
                    barrier.wait();
                });
            }
            loop {
                let mut guards = lock_all(&cells);
                let mut p: Vec<&mut Fabric<E>> = guards.iter_mut().map(|g| &mut ***g).collect();
                exchange(&mut p);
                let next = p
                    .iter()
                    .filter_map(|f| f.w.queue.peek_time())
                    .min()
                    .map(Instant::as_nanos);
                let global = self.w.queue.peek_time().map(Instant::as_nanos);
                if let Some(g) = global.filter(|&g| g < stop && next.map_or(true, |t| g < t)) {
                    // A fabric-wide event comes after every node event of its nanosecond.
                    self.gather(&mut p, layout, g);
                    self.run_before(g.saturating_add(1), |_| {});
                    self.scatter(&mut p, layout);
                    continue;
                }
                let events: u64 = p.iter().map(|f| f.w.events).sum();
                drop(p);
                drop(guards);
                let total = (self.w.events + events) / crate::PROGRESS_EVERY;
                if total != reported {
                    reported = total;
                    progress(Instant::from_nanos(next.unwrap_or(0)));
                }
                let Some(t) = next.filter(|&t| t < stop) else {
                    break;
                };
                let w = t
                    .saturating_add(lookahead)
                    .min(stop)
                    .min(global.map_or(STOP, |g| g.saturating_add(1)));
                window.store(w, Ordering::Release);
                barrier.wait();
                if let Some(c) = cells.first() {
                    c.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .run_before(w, |_| {});
                }
                barrier.wait();
            }
            window.store(STOP, Ordering::Release);
            barrier.wait();
        });
        drop(cells);
        let mut p: Vec<&mut Fabric<E>> = parts.iter_mut().collect();
        self.gather(&mut p, layout, self.w.now.max(end.as_nanos()));
        self.par = Some(par);
    }
}

/// Hands the frames that left each partition to the partitions they lead to.
fn exchange<E>(parts: &mut [&mut Fabric<E>]) {
    for k in 0..parts.len() {
        let out = match parts.get_mut(k).and_then(|p| p.w.cross.as_mut()) {
            Some(c) => std::mem::take(&mut c.out),
            None => continue,
        };
        for c in out {
            if let Some(to) = parts.get_mut(c.to) {
                let pkt = to.w.pool.adopt(c.slot);
                to.w.queue.push(
                    Instant::from_nanos(c.at),
                    c.key,
                    Event::Deliver(c.link, pkt),
                );
            }
        }
    }
}

impl<E: Engine> Fabric<E> {
    /// Moves the nodes into their partitions.
    fn scatter(&mut self, parts: &mut [&mut Fabric<E>], layout: &Layout) {
        for (k, p) in parts.iter_mut().enumerate() {
            for &h in layout.hosts.get(k).map_or(&[][..], |v| &v[..]) {
                self.hosts.move_to(h, &mut p.hosts);
            }
            for &s in layout.switches.get(k).map_or(&[][..], |v| &v[..]) {
                self.switches.move_to(s, &mut p.switches);
            }
            p.w.now = self.w.now;
        }
    }

    /// Moves the nodes back from their partitions and merges what is fabric-wide: flow
    /// progress, CNP and event counts, lost traffic, and (in event order) the PFC frames the
    /// recorder and the log are owed. The clock goes to `now`.
    fn gather(&mut self, parts: &mut [&mut Fabric<E>], layout: &Layout, now: u64) {
        let mut pauses = Vec::new();
        let mut rx = Vec::new();
        for (k, p) in parts.iter_mut().enumerate() {
            for &h in layout.hosts.get(k).map_or(&[][..], |v| &v[..]) {
                p.hosts.move_to(h, &mut self.hosts);
            }
            for &s in layout.switches.get(k).map_or(&[][..], |v| &v[..]) {
                p.switches.move_to(s, &mut self.switches);
            }
            self.w.events += std::mem::take(&mut p.w.events);
            let lost = std::mem::take(&mut p.w.lost);
            self.w.lost.frames += lost.frames;
            self.w.lost.bytes += lost.bytes;
            self.tap.cnp_sent += std::mem::take(&mut p.tap.cnp_sent);
            self.tap.cnp_received += std::mem::take(&mut p.tap.cnp_received);
            if let Some(j) = p.journal.as_mut() {
                pauses.append(&mut j.pauses);
                let keys = std::mem::take(&mut j.rx_keys);
                let log = p.pfc_log.as_mut().map(std::mem::take).unwrap_or_default();
                rx.extend(keys.into_iter().zip(log));
            }
        }
        for (id, spec) in self.tap.specs.iter().enumerate() {
            let k = layout.part(code(Node::Host(HostId(spec.dst_host))));
            let from = parts.get(k).and_then(|p| p.tap.progress.get(id));
            if let (Some(from), Some(to)) = (from, self.tap.progress.get_mut(id)) {
                to.clone_from(from);
            }
        }
        // Stable sorts: entries of one event keep their order.
        pauses.sort_by_key(|e| e.0);
        rx.sort_by_key(|e| e.0);
        if let Some(rec) = self.recorder.as_mut() {
            for ((t, _), s, port, prio, xoff) in pauses {
                rec.on_pfc(t, s, port, prio, xoff);
            }
        }
        if let Some(log) = self.pfc_log.as_mut() {
            log.extend(rx.into_iter().map(|(_, e)| e));
        }
        self.w.now = now;
    }

    /// Moves the node events queued on the whole fabric (at the split, or scheduled between
    /// runs) to the partitions of their nodes; fabric-wide events stay. With `adopt`, frames
    /// move from this fabric's packet pool to theirs.
    fn route_events(&mut self, parts: &mut [&mut Fabric<E>], layout: &Layout, adopt: bool) {
        let mut keep = Vec::new();
        let events: Vec<_> = self.w.queue.drain().collect();
        for (at, key, ev) in events {
            let target = ev.target(&self.w.links);
            let part = parts.get_mut(layout.part(target));
            match (target, part) {
                (GLOBAL, _) | (_, None) => keep.push((at, key, ev)),
                (_, Some(p)) => {
                    let ev = match ev {
                        Event::Deliver(l, pkt) if adopt => {
                            Event::Deliver(l, p.w.pool.adopt(self.w.pool.take(pkt)))
                        }
                        ev => ev,
                    };
                    p.w.queue.push(at, key, ev);
                }
            }
        }
        for (at, key, ev) in keep {
            self.w.queue.push(at, key, ev);
        }
    }
}
