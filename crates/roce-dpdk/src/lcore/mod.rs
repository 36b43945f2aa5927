//! The multi-lcore runtime: several threads ("lcores"), each pinned to a CPU, named
//! `roce-lcore<i>` and registered with EAL (so mempools keep a per-lcore cache for it), each
//! running the [`Runtime`] loop of the shards given to it. A shard is one engine over one queue
//! pair of a port ([`ShardPort`]); an lcore may run shards of several ports (the two ends of a ring
//! pair, say), one after the other in its loop.
//!
//! Nothing on the data path is shared or locked: a shard's engine, queue and buffers belong to
//! its lcore. Applications talk to a shard only through its [`ShardHandle`]: work goes in and
//! completions come out through lock-free [`ArrayQueue`]s; control calls (create a QP, connect
//! it) are closures the lcore runs between two polls; an in-lcore task can drive traffic where a
//! cross-thread hop per work request would cost too much (`roce perf`, the benches); metrics ask
//! for snapshots with a generation counter the lcore checks once a loop, so a scrape never stops
//! a core. Frames reach the shard owning their QP through [`dispatch`].
//!
//! # Design: what a shard owns and what is shared
//!
//! - **QPs.** Each shard has its own sans-IO [`Endpoint`](roce_proto::endpoint::Endpoint) (or
//!   resolving endpoint) with the port's MAC and IP. Endpoints number their QPs from
//!   `EndpointConfig::first_qpn`; shard `s` takes [`dispatch::first_qpn`]`(s)` (QPNs
//!   `s << 16 ..`), so a destination QPN names its shard and no table is shared.
//! - **Steering.** Where the device takes flow rules ([`crate::steer`]), a rule per peer UDP
//!   source port puts a QP's frames on its shard's queue; a ring pair's queue `i` carries only
//!   what shard `i` of the other end sent. Everything else lands on some queue and the software
//!   dispatcher hands it to its owner's inbox (a bounded lock-free queue; a full inbox drops the
//!   frame like a full RX ring, and RC retransmits it). Completions of one shard come out in
//!   order; across shards there is no order, as across QPs of a NIC.
//! - **Neighbours.** Frames that are not RoCEv2 (ARP, NDP) belong to shard 0, which answers
//!   them and resolves peers; a QP on another shard is connected with the MAC shard 0 found
//!   (a control call), so the neighbour table is not shared either.
//! - **Memory regions.** An MR belongs to the endpoint (shard) it is registered on, and only that
//!   shard's QPs can use its keys. A buffer used by QPs on several shards is registered on each
//!   of them (a region per shard); there is no MR table visible to several shards, because a
//!   lookup on every packet through shared state would put a lock or atomics on the data path.
//! - **Buffers.** One mbuf pool per port, with a per-lcore cache: an mbuf handed to another shard
//!   is freed there, into that lcore's cache.
//! - **Metrics.** Counters live in the engines; a reader raises a shard's snapshot generation and
//!   the lcore answers between two polls ([`SnapshotSource`]), so a scrape costs one snapshot per
//!   shard and never blocks an lcore.

pub mod dispatch;
pub mod shard;

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration as StdDuration;

use crossbeam::channel::{self, Receiver, Sender};
use crossbeam::queue::ArrayQueue;

use crate::clock::Clock;
use crate::runtime::{Counters, Runtime, RuntimeConfig};
use dispatch::{DispatchCounters, ShardPort};
use roce_proto::port::Port;
use roce_proto::time::Instant;
use shard::ShardEngine;

/// The CPUs lcores run on: one lcore per entry, pinned to that CPU. `--cores N` is the first
/// `N` online CPUs (wrapping around: more lcores than CPUs share them), `--lcores 0,2-3` an
/// explicit list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cores(Vec<usize>);

/// A `--cores` or `--lcores` value that is not one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("bad core list {0:?}: expected a count (4) or CPUs (0,2-3), 1 to {max} lcores", max = dispatch::MAX_SHARDS)]
pub struct BadCores(pub String);

impl Cores {
    /// `n` lcores on the online CPUs in order, wrapping around.
    pub fn count(n: usize) -> Result<Cores, BadCores> {
        if n == 0 || n > dispatch::MAX_SHARDS {
            return Err(BadCores(n.to_string()));
        }
        let cpus = available_cpus();
        Ok(Cores(
            (0..n)
                .map(|i| cpus.get(i % cpus.len().max(1)).copied().unwrap_or(i))
                .collect(),
        ))
    }

    /// Parses an lcore list: `0,2-3` (CPUs, in order; each entry one lcore).
    pub fn list(text: &str) -> Result<Cores, BadCores> {
        let bad = || BadCores(text.to_owned());
        let mut cpus = Vec::new();
        for part in text.split(',').map(str::trim) {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b || b - a >= dispatch::MAX_SHARDS {
                return Err(bad());
            }
            cpus.extend(a..=b);
        }
        if cpus.is_empty() || cpus.len() > dispatch::MAX_SHARDS {
            return Err(bad());
        }
        Ok(Cores(cpus))
    }

    /// One lcore on CPU 0: the single-core runtime.
    pub fn one() -> Cores {
        Cores(vec![0])
    }

    /// How many lcores.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never: a core list has at least one lcore.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The CPU of each lcore.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }
}

impl FromStr for Cores {
    type Err = BadCores;

    /// A count (`4`) or a list (`0,2-3`).
    fn from_str(s: &str) -> Result<Cores, BadCores> {
        match s.trim().parse::<usize>() {
            Ok(n) => Cores::count(n),
            Err(_) => Cores::list(s),
        }
    }
}

impl fmt::Display for Cores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus: Vec<String> = self.0.iter().map(usize::to_string).collect();
        f.write_str(&cpus.join(","))
    }
}

/// The CPUs lcores may be pinned to (at least one entry): the machine's online CPUs, not the
/// calling thread's affinity (EAL pins the main thread to its first lcore).
fn available_cpus() -> Vec<usize> {
    let cpus = crate::online_cpus();
    if cpus.is_empty() {
        vec![0]
    } else {
        cpus
    }
}

/// A control call, run on the shard's lcore between two polls.
type Call<E> = Box<dyn FnOnce(&mut E, Instant) + Send>;

/// A snapshot answer: shard, generation asked, snapshot.
type Answer<S> = (usize, u64, S);

/// The last generation asked and where the answers come in (one asker at a time).
type Answers<S> = Arc<std::sync::Mutex<(u64, Receiver<Answer<S>>)>>;

/// What the control channel carries to a shard's lcore.
enum Control<E> {
    /// A call run between two polls.
    Call(Call<E>),
    /// A task to install.
    Task(Task<E>),
}
/// An in-lcore task: called after every poll of its shard until it returns `false`.
pub type Task<E> = Box<dyn FnMut(&mut E, Instant) -> bool + Send>;

/// What an application and one shard share.
struct Mailbox<E: ShardEngine> {
    work: ArrayQueue<E::Work>,
    done: ArrayQueue<E::Done>,
    control: Sender<Control<E>>,
    /// Bumped by a reader that wants a snapshot; the shard answers once per new value.
    snapshot_wanted: AtomicU64,
    snapshots: Sender<Answer<E::Snapshot>>,
    dispatch: Arc<DispatchCounters>,
}

/// An application's handle on one shard: post work, reap completions, run control calls. Clone
/// it into as many threads as post to the shard.
pub struct ShardHandle<E: ShardEngine> {
    index: usize,
    mailbox: Arc<Mailbox<E>>,
}

impl<E: ShardEngine> Clone for ShardHandle<E> {
    fn clone(&self) -> Self {
        ShardHandle {
            index: self.index,
            mailbox: self.mailbox.clone(),
        }
    }
}

/// Why a control call did not return.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LcoreError {
    /// The lcore running the shard has stopped.
    #[error("shard {0}: its lcore has stopped")]
    Stopped(usize),
    /// A thread could not be started.
    #[error("cannot start lcore thread {0}: {1}")]
    Spawn(usize, String),
    /// An lcore thread panicked.
    #[error("lcore {0} panicked")]
    Panicked(usize),
    /// A QP refused a control call's modification.
    #[error(transparent)]
    Qp(#[from] roce_proto::qp::QpError),
}

impl<E: ShardEngine> ShardHandle<E> {
    /// The shard's number.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Queues one unit of work; gives it back when the shard's queue is full (try again later).
    pub fn post(&self, work: E::Work) -> Result<(), E::Work> {
        self.mailbox.work.push(work)
    }

    /// The next completion, if one is there.
    pub fn poll_done(&self) -> Option<E::Done> {
        self.mailbox.done.pop()
    }

    /// Runs `f` on the shard's lcore between two polls and returns its result (blocks).
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut E, Instant) -> R + Send + 'static,
    ) -> Result<R, LcoreError> {
        let (tx, rx) = channel::bounded(1);
        let job = Control::Call(Box::new(move |e: &mut E, now| {
            let _ = tx.send(f(e, now));
        }));
        self.mailbox
            .control
            .send(job)
            .map_err(|_| LcoreError::Stopped(self.index))?;
        rx.recv().map_err(|_| LcoreError::Stopped(self.index))
    }

    /// Installs an in-lcore task (replacing any), called after every poll of the shard until it
    /// returns `false`.
    pub fn run_task(
        &self,
        task: impl FnMut(&mut E, Instant) -> bool + Send + 'static,
    ) -> Result<(), LcoreError> {
        self.mailbox
            .control
            .send(Control::Task(Box::new(task)))
            .map_err(|_| LcoreError::Stopped(self.index))
    }

    /// The dispatcher's counters of the shard's port.
    pub fn dispatch_counters(&self) -> &DispatchCounters {
        &self.mailbox.dispatch
    }
}

/// One shard to run: an engine over one queue of a port, on lcore `lcore`.
pub struct Shard<E, P: Port> {
    /// The engine.
    pub engine: E,
    /// Its port (its own queue, with the dispatcher).
    pub port: ShardPort<P>,
    /// Index into the [`Cores`] of the lcore that runs it.
    pub lcore: usize,
}

/// What a shard leaves when the runtime stops.
pub struct ShardExit<E> {
    /// The shard's number.
    pub index: usize,
    /// The engine, with all its state.
    pub engine: E,
    /// The loop's counters.
    pub counters: Counters,
}

/// Loop tuning of the multi-lcore runtime.
#[derive(Clone, Copy, Debug)]
pub struct LcoreConfig {
    /// The single-core loop's tuning, per shard.
    pub runtime: RuntimeConfig,
    /// Work units one shard's queue holds.
    pub work_queue: usize,
    /// Completions one shard's queue holds (more wait on the shard, never dropped).
    pub done_queue: usize,
    /// Empty loops after which an lcore yields its CPU once (lcores sharing a CPU make
    /// progress); 0 never yields.
    pub yield_after: u32,
}

impl Default for LcoreConfig {
    fn default() -> Self {
        LcoreConfig {
            runtime: RuntimeConfig::default(),
            work_queue: 4096,
            done_queue: 4096,
            yield_after: 64,
        }
    }
}

/// The running lcores and the handles on their shards. Dropping it stops them (use
/// [`Lcores::stop`] to get the shards back).
pub struct Lcores<E: ShardEngine> {
    threads: Vec<JoinHandle<Vec<ShardExit<E>>>>,
    handles: Vec<ShardHandle<E>>,
    stop: Arc<AtomicBool>,
    source: SnapshotSource<E>,
}

/// Asks every shard of a runtime for a snapshot, from any thread (the metrics endpoint's, the
/// telemetry thread); the lcores keep running meanwhile.
pub struct SnapshotSource<E: ShardEngine> {
    mailboxes: Vec<Arc<Mailbox<E>>>,
    /// One asker at a time: answers are matched to the generation that asked.
    answers: Answers<E::Snapshot>,
}

impl<E: ShardEngine> Clone for SnapshotSource<E> {
    fn clone(&self) -> Self {
        SnapshotSource {
            mailboxes: self.mailboxes.clone(),
            answers: self.answers.clone(),
        }
    }
}

impl<E: ShardEngine> SnapshotSource<E> {
    /// Asks every shard for a snapshot and waits up to `timeout` for the answers; a shard that
    /// did not answer in time (or has stopped) is `None`.
    pub fn collect(&self, timeout: StdDuration) -> Vec<Option<E::Snapshot>> {
        let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        answers.0 += 1;
        let generation = answers.0;
        for m in &self.mailboxes {
            m.snapshot_wanted.store(generation, Ordering::Release);
        }
        let mut out: Vec<Option<E::Snapshot>> = self.mailboxes.iter().map(|_| None).collect();
        let deadline = std::time::Instant::now() + timeout;
        let mut missing = out.len();
        while missing > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match answers.1.recv_timeout(left) {
                Ok((i, g, snap)) if g == generation => {
                    if let Some(slot @ None) = out.get_mut(i) {
                        *slot = Some(snap);
                        missing -= 1;
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        out
    }
}

/// One shard as its lcore holds it.
struct Running<E: ShardEngine, P: Port, C: Clock> {
    index: usize,
    engine: E,
    runtime: Runtime<ShardPort<P>, C>,
    mailbox: Arc<Mailbox<E>>,
    control: Receiver<Control<E>>,
    task: Option<Task<E>>,
    pending: std::collections::VecDeque<E::Done>,
    snapshot_seen: u64,
}

impl<E: ShardEngine, P: Port, C: Clock> Running<E, P, C> {
    /// One turn: control calls, posted work, the loop, the task, completions, a snapshot if
    /// asked. Returns frames moved plus work taken.
    fn turn(&mut self, clock: &C, burst: usize) -> usize {
        let now = clock.now();
        while let Ok(job) = self.control.try_recv() {
            match job {
                Control::Call(f) => f(&mut self.engine, now),
                Control::Task(t) => self.task = Some(t),
            }
        }
        let mut moved = 0;
        for _ in 0..burst {
            match self.mailbox.work.pop() {
                Some(w) => {
                    self.engine.apply(now, w);
                    moved += 1;
                }
                None => break,
            }
        }
        moved += self.runtime.poll_once(&mut self.engine);
        if let Some(task) = self.task.as_mut() {
            if !task(&mut self.engine, now) {
                self.task = None;
            }
        }
        while let Some(d) = self.pending.pop_front() {
            if let Err(d) = self.mailbox.done.push(d) {
                self.pending.push_front(d);
                break;
            }
        }
        while let Some(d) = self.engine.poll_done() {
            moved += 1;
            if self.pending.is_empty() {
                if let Err(d) = self.mailbox.done.push(d) {
                    self.pending.push_back(d);
                }
            } else {
                self.pending.push_back(d);
            }
        }
        let wanted = self.mailbox.snapshot_wanted.load(Ordering::Acquire);
        if wanted != self.snapshot_seen {
            self.snapshot_seen = wanted;
            let snap = self.engine.snapshot(now);
            let _ = self.mailbox.snapshots.send((self.index, wanted, snap));
        }
        moved
    }
}

impl<E: ShardEngine> Lcores<E> {
    /// Starts one thread per lcore of `cores` running the shards given to it (`Shard::lcore`);
    /// `clock` is copied into every lcore (one epoch for all). With `eal`, each thread registers
    /// with EAL (an lcore id, so mempool caches work for it).
    pub fn spawn<P, C>(
        eal: Option<&crate::Eal>,
        cores: &Cores,
        shards: Vec<Shard<E, P>>,
        clock: C,
        config: LcoreConfig,
    ) -> Result<Lcores<E>, LcoreError>
    where
        P: Port + Send + 'static,
        P::Buf: Send,
        C: Clock + Clone + Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let (snap_tx, snap_rx) = channel::unbounded();
        let mut per_lcore: Vec<Vec<Running<E, P, C>>> =
            (0..cores.len()).map(|_| Vec::new()).collect();
        let mut handles = Vec::new();
        let mut mailboxes = Vec::new();
        for (index, s) in shards.into_iter().enumerate() {
            let (control_tx, control_rx) = channel::unbounded();
            let mailbox = Arc::new(Mailbox {
                work: ArrayQueue::new(config.work_queue.max(1)),
                done: ArrayQueue::new(config.done_queue.max(1)),
                control: control_tx,
                snapshot_wanted: AtomicU64::new(0),
                snapshots: snap_tx.clone(),
                dispatch: s.port.counters(),
            });
            handles.push(ShardHandle {
                index,
                mailbox: mailbox.clone(),
            });
            mailboxes.push(mailbox.clone());
            let lcore = s.lcore % cores.len().max(1);
            if let Some(l) = per_lcore.get_mut(lcore) {
                l.push(Running {
                    index,
                    engine: s.engine,
                    runtime: Runtime::new(s.port, clock.clone(), config.runtime),
                    mailbox,
                    control: control_rx,
                    task: None,
                    pending: Default::default(),
                    snapshot_seen: 0,
                });
            }
        }
        let register = eal.is_some();
        let mut threads = Vec::new();
        for (i, (mut shards, &cpu)) in per_lcore.into_iter().zip(cores.cpus()).enumerate() {
            let stop = stop.clone();
            let clock = clock.clone();
            let t = std::thread::Builder::new()
                .name(format!("roce-lcore{i}"))
                .spawn(move || {
                    let pinned = crate::pin_current_thread(cpu);
                    let lcore_id = if register {
                        crate::eal::register_thread()
                    } else {
                        None
                    };
                    tracing::debug!(
                        lcore = i,
                        cpu,
                        pinned,
                        ?lcore_id,
                        shards = shards.len(),
                        "lcore up"
                    );
                    lcore_loop(&mut shards, &clock, &stop, config);
                    if lcore_id.is_some() {
                        crate::eal::unregister_thread();
                    }
                    shards
                        .into_iter()
                        .map(|s| ShardExit {
                            index: s.index,
                            counters: s.runtime.counters(),
                            engine: s.engine,
                        })
                        .collect()
                })
                .map_err(|e| LcoreError::Spawn(i, e.to_string()))?;
            threads.push(t);
        }
        Ok(Lcores {
            threads,
            handles,
            stop,
            source: SnapshotSource {
                mailboxes,
                answers: Arc::new(std::sync::Mutex::new((0, snap_rx))),
            },
        })
    }

    /// The handles on the shards, by shard number.
    pub fn handles(&self) -> &[ShardHandle<E>] {
        &self.handles
    }

    /// The handle on shard `i`.
    pub fn handle(&self, i: usize) -> Option<&ShardHandle<E>> {
        self.handles.get(i)
    }

    /// Asks every shard for a snapshot and waits up to `timeout` for the answers; a shard that
    /// did not answer in time (or has stopped) is `None`. The lcores keep running meanwhile.
    pub fn snapshots(&self, timeout: StdDuration) -> Vec<Option<E::Snapshot>> {
        self.source.collect(timeout)
    }

    /// A handle that takes snapshots from another thread.
    pub fn snapshot_source(&self) -> SnapshotSource<E> {
        self.source.clone()
    }

    /// Stops every lcore after its current turn and returns the shards, by shard number.
    pub fn stop(mut self) -> Result<Vec<ShardExit<E>>, LcoreError> {
        self.stop.store(true, Ordering::Release);
        let mut out = Vec::new();
        for (i, t) in std::mem::take(&mut self.threads).into_iter().enumerate() {
            out.extend(t.join().map_err(|_| LcoreError::Panicked(i))?);
        }
        out.sort_by_key(|s| s.index);
        Ok(out)
    }
}

impl<E: ShardEngine> Drop for Lcores<E> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn lcore_loop<E: ShardEngine, P: Port, C: Clock>(
    shards: &mut [Running<E, P, C>],
    clock: &C,
    stop: &AtomicBool,
    config: LcoreConfig,
) {
    let burst = config.runtime.burst.max(1);
    let mut idle = 0u32;
    while !stop.load(Ordering::Acquire) {
        let mut moved = 0;
        for s in shards.iter_mut() {
            moved += s.turn(clock, burst);
        }
        if moved == 0 {
            idle += 1;
            if config.yield_after > 0 && idle >= config.yield_after {
                idle = 0;
                std::thread::yield_now();
            }
        } else {
            idle = 0;
        }
    }
}
