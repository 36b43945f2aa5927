//! `roce demo --cores N`: each host's endpoint runs as a shard on an lcore of its own (host `i`
//! on lcore `i % N`), the switch and the reports stay on the main thread. The application of a
//! host is an in-lcore task: it posts and reaps for the flows it takes part in. A WRITE is
//! verified by the receiver's lcore after the sender's lcore saw it complete (the completed
//! message numbers cross over in a lock-free queue; the sender waits for the verification
//! before it reuses a buffer slot, which is why such buffers have twice the window's slots).
//! Progress is published through atomics for the samples, the status line and the summary.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use crossbeam::queue::ArrayQueue;

use roce::metrics::PortMetrics;
use roce_dpdk::clock::MonotonicClock;
use roce_dpdk::lcore::dispatch::shard_ports;
use roce_dpdk::lcore::shard::VerbsShard;
use roce_dpdk::lcore::{Cores, LcoreConfig, Lcores, Shard};
use roce_dpdk::Eal;
use roce_proto::cc::CcMetrics;
use roce_proto::endpoint::Endpoint;
use roce_proto::time::Instant;

use super::flows::{self, Flow};
use super::Host;
use crate::cli::ops::Op;

/// What the lcores publish about one flow.
#[derive(Default)]
struct Progress {
    posted: AtomicU64,
    completed: AtomicU64,
    recv_done: AtomicU64,
    verified: AtomicU64,
    /// ns of the monotonic clock, + 1 (0: none yet).
    last_done: AtomicU64,
    /// `f64` bits of the controller's rate (Gbit/s) and alpha.
    rate_gbps: AtomicU64,
    alpha: AtomicU64,
    errors: Mutex<Vec<String>>,
    /// WRITE messages the sender saw complete, for the receiver to verify.
    completed_writes: Option<ArrayQueue<u64>>,
}

/// What a host's task does for one flow.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Posts and reaps (WRITE/SEND at the sender, READ at the receiver).
    Request,
    /// Keeps receives posted and verifies them (SEND at the receiver).
    Receive,
    /// Verifies WRITEs the sender saw complete.
    VerifyWrites,
    /// Reports the controller of the QP that paces a READ's responses (at the sender).
    Pace,
}

/// The hosts running as shards on lcores.
pub(super) struct ShardedHosts {
    rt: Lcores<VerbsShard<Endpoint>>,
    names: Vec<String>,
    flows: Vec<Flow>,
    progress: Vec<Arc<Progress>>,
    posting: Arc<AtomicBool>,
    /// Per host: CNPs sent, frames sent plus received.
    activity: Vec<Arc<[AtomicU64; 2]>>,
}

impl ShardedHosts {
    /// Moves the hosts (their endpoints and ports) onto `cores`, with a task per host driving
    /// its part of `flows` while posting is on.
    pub fn start(
        eal: &Eal,
        cores: &Cores,
        hosts: Vec<Host>,
        flows: Vec<Flow>,
        clock: MonotonicClock,
    ) -> anyhow::Result<ShardedHosts> {
        let progress: Vec<Arc<Progress>> = flows
            .iter()
            .map(|f| {
                Arc::new(Progress {
                    completed_writes: (f.op == Op::Write)
                        .then(|| ArrayQueue::new(f.slots().max(1) as usize)),
                    ..Progress::default()
                })
            })
            .collect();
        let posting = Arc::new(AtomicBool::new(true));
        let mut names = Vec::new();
        let mut shards = Vec::new();
        let mut parts_of = Vec::new();
        let mut activity = Vec::new();
        for (i, h) in hosts.into_iter().enumerate() {
            let mut parts: Vec<(Role, Flow, Arc<Progress>)> = Vec::new();
            for (f, p) in flows.iter().zip(&progress) {
                let role = match (i, f.op) {
                    (0, Op::Send) => Some(Role::Receive),
                    (0, Op::Write) => Some(Role::VerifyWrites),
                    (0, Op::Read) => Some(Role::Request),
                    (i, Op::Write | Op::Send) if i == f.sender => Some(Role::Request),
                    (i, Op::Read) if i == f.sender => Some(Role::Pace),
                    _ => None,
                };
                if let Some(role) = role {
                    parts.push((role, f.clone(), p.clone()));
                }
            }
            parts_of.push(parts);
            names.push(h.name.clone());
            let port = shard_ports(vec![h.rt.into_port()], 256)
                .into_iter()
                .next()
                .context("a shard port")?;
            shards.push(Shard {
                engine: VerbsShard::new(h.ep),
                port,
                lcore: i % cores.len(),
            });
            activity.push(Arc::new([AtomicU64::new(0), AtomicU64::new(0)]));
        }
        let rt = Lcores::spawn(Some(eal), cores, shards, clock, LcoreConfig::default())?;
        for ((h, parts), a) in rt.handles().iter().zip(parts_of).zip(&activity) {
            h.run_task(task(parts, posting.clone(), a.clone()))?;
        }
        Ok(ShardedHosts {
            rt,
            names,
            flows,
            progress,
            posting,
            activity,
        })
    }

    /// Stops new posts (what is outstanding still completes).
    pub fn stop_posting(&self) {
        self.posting.store(false, Ordering::Release);
    }

    /// The flows with their progress so far.
    pub fn flows(&mut self) -> &[Flow] {
        for (f, p) in self.flows.iter_mut().zip(&self.progress) {
            f.posted = p.posted.load(Ordering::Acquire);
            f.completed = p.completed.load(Ordering::Acquire);
            f.recv_done = p.recv_done.load(Ordering::Acquire);
            f.verified = p.verified.load(Ordering::Acquire);
            f.last_done = match p.last_done.load(Ordering::Acquire) {
                0 => None,
                t => Some(Instant::from_nanos(t - 1)),
            };
        }
        &self.flows
    }

    /// Flow `i` as of the last [`ShardedHosts::flows`].
    pub fn flow(&self, i: usize) -> Option<&Flow> {
        self.flows.get(i)
    }

    /// The flow's controller now (rate and alpha; the counters come with the summary).
    pub fn cc(&self, i: usize) -> CcMetrics {
        let p = &self.progress[i];
        CcMetrics {
            rate: roce_proto::cc::Rate::from_bps_f64(
                f64::from_bits(p.rate_gbps.load(Ordering::Relaxed)) * 1e9,
            ),
            alpha: f64::from_bits(p.alpha.load(Ordering::Relaxed)),
            ..CcMetrics::default()
        }
    }

    /// CNPs the hosts sent so far.
    pub fn cnps(&self) -> u64 {
        self.activity
            .iter()
            .map(|a| a[0].load(Ordering::Relaxed))
            .sum()
    }

    /// Frames the hosts sent and received so far (unchanged: nothing is in flight).
    pub fn frames(&self) -> u64 {
        self.activity
            .iter()
            .map(|a| a[1].load(Ordering::Relaxed))
            .sum()
    }

    /// The hosts' counters now, taken by their lcores between two polls.
    pub fn ports(&self) -> Vec<PortMetrics> {
        self.rt
            .snapshots(std::time::Duration::from_millis(200))
            .into_iter()
            .zip(&self.names)
            .map(|(s, n)| PortMetrics {
                device: n.clone(),
                snapshot: s.unwrap_or_default(),
            })
            .collect()
    }

    /// Stops the lcores: the hosts' names and endpoints, and the flows as they ended.
    pub fn finish(mut self) -> anyhow::Result<flows::Ended> {
        self.flows();
        for (f, p) in self.flows.iter_mut().zip(&self.progress) {
            f.errors = p.errors.lock().unwrap_or_else(|e| e.into_inner()).clone();
        }
        let exits = self.rt.stop()?;
        let eps = self
            .names
            .into_iter()
            .zip(exits.into_iter().map(|e| e.engine.into_engine()))
            .collect();
        Ok((eps, self.flows))
    }
}

/// Host task: its part of every flow it takes part in, each turn.
fn task(
    mut parts: Vec<(Role, Flow, Arc<Progress>)>,
    posting: Arc<AtomicBool>,
    activity: Arc<[AtomicU64; 2]>,
) -> impl FnMut(&mut VerbsShard<Endpoint>, Instant) -> bool + Send + 'static {
    let mut scratch = Vec::new();
    move |shard, now| {
        let ep = shard.engine_mut();
        let posting = posting.load(Ordering::Acquire);
        for (role, f, p) in parts.iter_mut() {
            let errors = f.errors.len();
            match role {
                Role::Request => {
                    let before = f.completed;
                    if f.op == Op::Write {
                        // A slot is reused only once the receiver has verified what it held.
                        let verified = p.verified.load(Ordering::Acquire);
                        f.window = (f.slots() / 2)
                            .max(1)
                            .min((verified + f.slots()).saturating_sub(f.completed));
                    }
                    flows::request(f, ep, None, posting, &mut scratch, now);
                    if let Some(q) = &p.completed_writes {
                        for n in before..f.completed {
                            // Never full: at most a buffer's slots are unverified.
                            let _ = q.push(n);
                        }
                    }
                    p.posted.store(f.posted, Ordering::Release);
                    p.completed.store(f.completed, Ordering::Release);
                    if f.op == Op::Read {
                        p.verified.store(f.verified, Ordering::Release);
                    }
                    if let Some(t) = f.last_done {
                        p.last_done.store(t.as_nanos() + 1, Ordering::Release);
                    }
                    if f.op != Op::Read {
                        publish_cc(ep, f, p);
                    }
                }
                Role::Pace => publish_cc(ep, f, p),
                Role::Receive => {
                    flows::receive(f, ep, &mut scratch);
                    p.recv_done.store(f.recv_done, Ordering::Release);
                    p.verified.store(f.verified, Ordering::Release);
                }
                Role::VerifyWrites => {
                    if let Some(q) = &p.completed_writes {
                        while let Some(n) = q.pop() {
                            flows::verify_write(f, ep, n, &mut scratch);
                        }
                    }
                    p.verified.store(f.verified, Ordering::Release);
                }
            }
            if f.errors.len() > errors {
                let mut all = p.errors.lock().unwrap_or_else(|e| e.into_inner());
                all.extend(f.errors[errors..].iter().cloned());
            }
        }
        let c = ep.counters();
        activity[0].store(c.cnps_sent, Ordering::Relaxed);
        activity[1].store(c.tx_frames + c.rx_frames, Ordering::Relaxed);
        true
    }
}

/// The controller of `f`'s sending QP into `p`.
fn publish_cc(ep: &Endpoint, f: &Flow, p: &Progress) {
    if let Some(m) = ep.cc_metrics(f.src_qpn) {
        p.rate_gbps
            .store(m.rate.as_gbps_f64().to_bits(), Ordering::Relaxed);
        p.alpha.store(m.alpha.to_bits(), Ordering::Relaxed);
    }
}
