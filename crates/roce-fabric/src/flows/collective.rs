//! Collectives among K hosts as training jobs run them: ring and recursive halving-doubling
//! AllReduce and all-to-all, iterated with a compute phase before each iteration's
//! communication. [`schedule`] turns one into per-member steps (what to send to whom, what must
//! have arrived first); a [`MemberGate`] lets a host's collective flows send a step's bytes only
//! once the earlier steps' bytes arrived and the compute phase is over, and records when each
//! iteration completes; [`CollectiveReport`] sets the step and communication times against the
//! same collective's on an idle fabric.
//!
//! Nothing here sends a frame: the engines ask their gate how far each flow may go.

use serde::{Deserialize, Serialize};

use super::fct::{ideal_delivery, Paths};
use crate::limits::bounds::MAX_SCHEDULE_ENTRIES;
use roce_proto::size;
use roce_proto::time::{Duration, Instant};

/// How a collective moves its bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// Ring AllReduce: 2(K-1) steps of `bytes / K` to the next member.
    #[default]
    Ring,
    /// Recursive halving-doubling AllReduce (K a power of two): log2 K reduce-scatter steps
    /// with partners at distance K/2, K/4 ... 1 sending `bytes/2`, `bytes/4` ... `bytes/K`, then
    /// log2 K allgather steps in the reverse order with the sizes doubling.
    HalvingDoubling,
    /// All-to-all: one step in which every member sends `bytes / K` to every other member.
    AllToAll,
}

impl Algorithm {
    /// The name scenario files use.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::HalvingDoubling => "halving_doubling",
            Algorithm::AllToAll => "all_to_all",
        }
    }
}

/// Why a collective cannot be planned.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CollectiveError {
    /// Fewer than two members.
    #[error("a collective needs at least 2 hosts, got {0}")]
    TooFew(usize),
    /// Halving-doubling pairs members at power-of-two distances.
    #[error("halving_doubling needs a power-of-two number of hosts (2, 4, 8, ...), got {0}")]
    NotPowerOfTwo(usize),
    /// A host listed twice.
    #[error("host {0} is listed twice in one collective")]
    Repeated(usize),
    /// A host in two collectives (each host runs one).
    #[error("host {0} is a member of two collectives")]
    TwoCollectives(usize),
    /// A schedule too large to hold.
    #[error("{algo} among {members} hosts has {entries} schedule entries, more than this build supports (at most {max})", max = MAX_SCHEDULE_ENTRIES)]
    TooLarge {
        /// The algorithm's name.
        algo: &'static str,
        /// Members.
        members: usize,
        /// Sends and receives over all members' steps.
        entries: u64,
    },
    /// Members on different rails of a topology with `rails` rails.
    #[error("hosts {a} (rail {}) and {b} (rail {}) are on different rails; a collective runs on one rail (hosts r, r + {rails}, r + {}, ...), one collective per rail", .a % .rails, .b % .rails, 2 * .rails)]
    SplitRails {
        /// A member.
        a: usize,
        /// A member on another rail than `a`'s.
        b: usize,
        /// Rails of the topology.
        rails: usize,
    },
}

/// The sends and receives of every member's steps in [`schedule`]'s answer for `k` members,
/// counted without making it.
pub fn schedule_entries(algo: Algorithm, k: usize) -> u64 {
    let k = k as u64;
    let per_member = match algo {
        Algorithm::Ring => 2 * 2 * k.saturating_sub(1),
        Algorithm::HalvingDoubling => 2 * 2 * u64::from(k.max(1).ilog2()),
        Algorithm::AllToAll => 2 * k.saturating_sub(1),
    };
    k.saturating_mul(per_member)
}

/// One step of one member: bytes to send to each peer and to receive from each (peers by
/// position among the members).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// (peer, bytes) sent.
    pub sends: Vec<(usize, u64)>,
    /// (peer, bytes) received.
    pub recvs: Vec<(usize, u64)>,
}

/// The steps of one iteration of `bytes` among `k` members, per member position. Sizes are
/// whole multiples of `bytes / k` (at least 1 byte), so every member sends and receives
/// `2 (k-1) bytes / k` per AllReduce iteration and `(k-1) bytes / k` per all-to-all.
pub fn schedule(algo: Algorithm, k: usize, bytes: u64) -> Result<Vec<Vec<Step>>, CollectiveError> {
    if k < 2 {
        return Err(CollectiveError::TooFew(k));
    }
    let entries = schedule_entries(algo, k);
    if entries > MAX_SCHEDULE_ENTRIES {
        return Err(CollectiveError::TooLarge {
            algo: algo.name(),
            members: k,
            entries,
        });
    }
    let unit = (bytes / k as u64).max(1);
    let step = |send: (usize, u64), recv: (usize, u64)| Step {
        sends: vec![send],
        recvs: vec![recv],
    };
    Ok(match algo {
        Algorithm::Ring => (0..k)
            .map(|m| {
                let (next, prev) = ((m + 1) % k, (m + k - 1) % k);
                (0..2 * (k - 1))
                    .map(|_| step((next, unit), (prev, unit)))
                    .collect()
            })
            .collect(),
        Algorithm::HalvingDoubling => {
            if !k.is_power_of_two() {
                return Err(CollectiveError::NotPowerOfTwo(k));
            }
            // Reduce-scatter: distance k/2 moves half the vector ... distance 1 moves 1/k;
            // allgather retraces the distances with the sizes doubling.
            let mut dists: Vec<usize> = (0..k.trailing_zeros()).map(|s| k >> (s + 1)).collect();
            let back: Vec<usize> = dists.iter().rev().copied().collect();
            dists.extend(back);
            (0..k)
                .map(|m| {
                    dists
                        .iter()
                        .map(|&d| {
                            let b = unit * d as u64;
                            step((m ^ d, b), (m ^ d, b))
                        })
                        .collect()
                })
                .collect()
        }
        Algorithm::AllToAll => (0..k)
            .map(|m| {
                let peers: Vec<(usize, u64)> =
                    (0..k).filter(|&p| p != m).map(|p| (p, unit)).collect();
                vec![Step {
                    sends: peers.clone(),
                    recvs: peers,
                }]
            })
            .collect(),
    })
}

/// Checks that a collective among `hosts` can be scheduled and, on a topology with `rails`
/// rails (host `h` of a leaf-spine is on rail `h % rails`, each rail a network of its own),
/// that its members share one rail.
pub fn check(
    algo: Algorithm,
    hosts: &[usize],
    bytes: u64,
    rails: usize,
) -> Result<(), CollectiveError> {
    schedule(algo, hosts.len(), bytes)?;
    let rails = rails.max(1);
    let Some(&a) = hosts.first() else {
        return Ok(());
    };
    match hosts.iter().find(|&&b| b % rails != a % rails) {
        Some(&b) => Err(CollectiveError::SplitRails { a, b, rails }),
        None => Ok(()),
    }
}

/// Peers in the order they first appear in `steps` (sending side with `send`).
fn peers(steps: &[Step], send: bool) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for s in steps {
        for &(p, _) in if send { &s.sends } else { &s.recvs } {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Which of its host's collective slots a flow is: its sending slot at the source, its
/// receiving slot at the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateSlots {
    /// Index among the sender's peers it sends to ([`MemberGate::out_peers`]).
    pub out: usize,
    /// Index among the receiver's peers it receives from ([`MemberGate::in_peers`]).
    pub inbound: usize,
}

/// One member's side of a collective: how far each of its flows may send given what arrived,
/// and when each iteration completed.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberGate {
    out_peers: Vec<usize>,
    in_peers: Vec<usize>,
    /// Per step: bytes from each in-slot that must have arrived (this iteration) first.
    need: Vec<Vec<u64>>,
    /// Per step: bytes each out-slot may have sent (this iteration) once the step may start.
    give: Vec<Vec<u64>>,
    out_per_iter: Vec<u64>,
    in_per_iter: Vec<u64>,
    iterations: u32,
    compute: Duration,
    /// Stand-in keys: the destination QPN of each in-slot's flow.
    in_qpns: Vec<u32>,
    rx: Vec<u64>,
    marks: Vec<Instant>,
}

impl MemberGate {
    /// The gate of a member running `steps` per iteration, `iterations` times, each after
    /// `compute` of computation.
    pub fn new(steps: &[Step], iterations: u32, compute: Duration) -> Self {
        let (out_peers, in_peers) = (peers(steps, true), peers(steps, false));
        let slot = |v: &[usize], p: usize| v.iter().position(|&x| x == p).unwrap_or(0);
        let (mut need, mut give) = (Vec::new(), Vec::new());
        let mut got = vec![0u64; in_peers.len()];
        let mut sent = vec![0u64; out_peers.len()];
        for s in steps {
            need.push(got.clone());
            for &(p, b) in &s.sends {
                sent[slot(&out_peers, p)] += b;
            }
            give.push(sent.clone());
            for &(p, b) in &s.recvs {
                got[slot(&in_peers, p)] += b;
            }
        }
        MemberGate {
            rx: vec![0; in_peers.len()],
            in_qpns: vec![0; in_peers.len()],
            out_peers,
            in_peers,
            need,
            give,
            out_per_iter: sent,
            in_per_iter: got,
            iterations,
            compute,
            marks: Vec::new(),
        }
    }

    /// Peers (positions) this member sends to, by out-slot.
    pub fn out_peers(&self) -> &[usize] {
        &self.out_peers
    }

    /// Peers (positions) this member receives from, by in-slot.
    pub fn in_peers(&self) -> &[usize] {
        &self.in_peers
    }

    /// Bytes out-slot `out` sends over all iterations.
    pub fn out_total(&self, out: usize) -> u64 {
        let per_iter = self.out_per_iter.get(out).copied().unwrap_or(0);
        per_iter.saturating_mul(u64::from(self.iterations))
    }

    /// Bytes this member receives per iteration.
    pub fn bytes_per_iteration(&self) -> u64 {
        self.in_per_iter.iter().sum()
    }

    /// Names in-slot `inbound` by the destination QPN its frames carry (stand-in engines).
    pub fn set_in_qpn(&mut self, inbound: usize, qpn: u32) {
        if let Some(q) = self.in_qpns.get_mut(inbound) {
            *q = qpn;
        }
    }

    /// The in-slot whose frames carry destination QPN `qpn`.
    pub fn in_slot_of_qpn(&self, qpn: u32) -> Option<usize> {
        self.in_qpns.iter().position(|&q| q == qpn)
    }

    /// `n` bytes from in-slot `inbound` arrived (in order) at `now`.
    pub fn on_receive(&mut self, now: Instant, inbound: usize, n: u64) {
        let Some(rx) = self.rx.get_mut(inbound) else {
            return;
        };
        *rx += n;
        while self.marks.len() < self.iterations as usize {
            let done = self.marks.len() as u64 + 1;
            let complete = self
                .rx
                .iter()
                .zip(&self.in_per_iter)
                .all(|(&r, &per)| r >= done * per);
            if !complete {
                break;
            }
            self.marks.push(now);
        }
    }

    /// When the current iteration's communication may start (its compute phase over); `None`
    /// once every iteration completed.
    pub fn iteration_start(&self) -> Option<Instant> {
        let i = self.marks.len();
        if i >= self.iterations as usize {
            return None;
        }
        let begun = if i == 0 {
            Instant::ZERO
        } else {
            self.marks[i - 1]
        };
        Some(begun + self.compute)
    }

    /// Bytes out-slot `out` may have sent by now, counting the current iteration's steps whose
    /// inputs arrived (the compute phase is the caller's to wait out: [`Self::iteration_start`]).
    pub fn allowance(&self, out: usize) -> u64 {
        let i = self.marks.len() as u64;
        if i >= u64::from(self.iterations) {
            return self.out_total(out);
        }
        let per = self.out_per_iter.get(out).copied().unwrap_or(0);
        let mut allowed = i * per;
        for (need, give) in self.need.iter().zip(&self.give) {
            let ready = need
                .iter()
                .zip(&self.rx)
                .zip(&self.in_per_iter)
                .all(|((&n, &r), &p)| r >= i * p + n);
            if !ready {
                break;
            }
            allowed = i * per + give.get(out).copied().unwrap_or(0);
        }
        allowed
    }

    /// When each iteration completed (every byte of it received).
    pub fn marks(&self) -> &[Instant] {
        &self.marks
    }
}

/// A collective as a scenario describes it (`kind = "all_reduce"` workloads): who takes part,
/// how much each iteration moves and how often. The plan and the report carry it as it was
/// given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Collective {
    /// Members, in ring order (or by rank for the other algorithms).
    pub hosts: Vec<usize>,
    /// Bytes reduced per iteration (all-to-all: each member's buffer, `bytes / K` per peer).
    #[serde(deserialize_with = "size::deserialize_bytes")]
    pub bytes: u64,
    /// Iterations.
    pub iterations: u32,
    /// `ring` (default), `halving_doubling` or `all_to_all`.
    #[serde(default)]
    pub algorithm: Algorithm,
    /// Compute phase before each iteration's communication, µs (the member sends nothing).
    #[serde(default)]
    pub compute_us: f64,
}

/// A collective as planned: members (host indices in position order) and their steps.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectivePlan {
    /// The collective.
    pub collective: Collective,
    /// Each member's steps (peers by position).
    pub steps: Vec<Vec<Step>>,
    /// Bytes per message of the collective's flows.
    pub message_bytes: u64,
}

impl CollectivePlan {
    /// The communication time of one iteration alone on the idle fabric: per step, the
    /// slowest member's [`ideal_delivery`] of the bytes it sends in that step over the
    /// longest path to its step peers (a member sending to several peers serializes them all
    /// through its one NIC).
    pub fn idle_comm(&self, paths: &Paths, mtu: usize) -> Duration {
        let steps = self.steps.first().map_or(0, Vec::len);
        (0..steps)
            .map(|s| {
                self.steps
                    .iter()
                    .enumerate()
                    .filter_map(|(m, member)| {
                        let step = member.get(s)?;
                        let bytes: u64 = step.sends.iter().map(|&(_, b)| b).sum();
                        let src = *self.collective.hosts.get(m)?;
                        step.sends
                            .iter()
                            .filter_map(|&(p, _)| paths.links(src, *self.collective.hosts.get(p)?))
                            .map(|l| ideal_delivery(&l, bytes, mtu, self.message_bytes))
                            .max()
                    })
                    .max()
                    .unwrap_or(Duration::ZERO)
            })
            .sum()
    }
}

/// What one collective's iterations took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectiveReport {
    /// The collective.
    #[serde(flatten)]
    pub collective: Collective,
    /// Per completed iteration: the step time, µs, from the previous iteration's end at the
    /// slowest member (or the start) to this one's end at the slowest member.
    pub step_us: Vec<f64>,
    /// Per completed iteration: the step time less the compute phase (waiting for a straggler
    /// counts as communication, as a profiler sees it).
    pub comm_us: Vec<f64>,
    /// The communication time of one iteration on the idle fabric, µs.
    pub idle_comm_us: f64,
    /// Per completed iteration: `comm_us / idle_comm_us`.
    pub slowdown: Vec<f64>,
}

impl CollectiveReport {
    /// The report of `plan` whose iterations ended at `ends` (the slowest member's marks),
    /// with `idle_comm` its [`CollectivePlan::idle_comm`].
    pub fn new(plan: &CollectivePlan, ends: &[Instant], idle_comm: Duration) -> Self {
        let mut prev = Instant::ZERO;
        let step_us: Vec<f64> = ends
            .iter()
            .map(|&e| {
                let d = e - prev;
                prev = e;
                d.as_micros_f64()
            })
            .collect();
        let comm_us: Vec<f64> = step_us
            .iter()
            .map(|s| (s - plan.collective.compute_us).max(0.0))
            .collect();
        let idle_comm_us = idle_comm.as_micros_f64();
        CollectiveReport {
            collective: plan.collective.clone(),
            slowdown: comm_us.iter().map(|c| c / idle_comm_us.max(1e-9)).collect(),
            step_us,
            comm_us,
            idle_comm_us,
        }
    }

    /// Mean slowdown over the completed iterations (`None` without any).
    pub fn mean_slowdown(&self) -> Option<f64> {
        (!self.slowdown.is_empty())
            .then(|| self.slowdown.iter().sum::<f64>() / self.slowdown.len() as f64)
    }

    /// One CSV of every collective's iterations: `collective,algorithm,iteration,step_us,
    /// comm_us,idle_comm_us,slowdown`.
    pub fn csv(reports: &[CollectiveReport]) -> String {
        use std::fmt::Write;
        let mut s =
            String::from("collective,algorithm,iteration,step_us,comm_us,idle_comm_us,slowdown\n");
        for (i, r) in reports.iter().enumerate() {
            for (n, ((step, comm), x)) in r
                .step_us
                .iter()
                .zip(&r.comm_us)
                .zip(&r.slowdown)
                .enumerate()
            {
                let _ = writeln!(
                    s,
                    "{i},{},{n},{step:.3},{comm:.3},{:.3},{x:.4}",
                    r.collective.algorithm.name(),
                    r.idle_comm_us
                );
            }
        }
        s
    }

    /// The lines the summary prints for collective `i`.
    pub fn lines(&self, i: usize) -> String {
        let c = &self.collective;
        let head = format!(
            "collective {i} {} of {} B among {} hosts, compute {:.1} us",
            c.algorithm.name(),
            c.bytes,
            c.hosts.len(),
            c.compute_us
        );
        let Some(mean) = self.mean_slowdown() else {
            return format!(
                "{head}: no iteration completed in the run (of {}; idle communication {:.1} us each)\n",
                c.iterations, self.idle_comm_us
            );
        };
        let join = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        format!(
            "{head}: {} of {} iterations\n  step us: {}\n  comm us: {}\n  idle comm {:.1} us, slowdown mean {mean:.2} max {:.2}\n",
            self.step_us.len(),
            c.iterations,
            join(&self.step_us),
            join(&self.comm_us),
            self.idle_comm_us,
            self.slowdown.iter().copied().fold(0.0, f64::max)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(s: &[Vec<Step>]) -> (Vec<u64>, Vec<u64>) {
        let sum = |v: &[(usize, u64)]| v.iter().map(|x| x.1).sum::<u64>();
        let tx = s
            .iter()
            .map(|m| m.iter().map(|st| sum(&st.sends)).sum())
            .collect();
        let rx = s
            .iter()
            .map(|m| m.iter().map(|st| sum(&st.recvs)).sum())
            .collect();
        (tx, rx)
    }

    #[test]
    fn halving_doubling_halves_then_doubles_and_moves_what_a_ring_moves() {
        let s = schedule(Algorithm::HalvingDoubling, 8, 8 << 10).unwrap();
        let m3: Vec<(usize, u64)> = s[3].iter().map(|st| st.sends[0]).collect();
        assert_eq!(
            m3,
            [
                (7, 4096),
                (1, 2048),
                (2, 1024),
                (2, 1024),
                (1, 2048),
                (7, 4096)
            ]
        );
        let (tx, rx) = totals(&s);
        assert_eq!(tx, vec![2 * 7 * 1024; 8]);
        assert_eq!(rx, tx);
        let ring = totals(&schedule(Algorithm::Ring, 8, 8 << 10).unwrap());
        assert_eq!(ring.0, tx);
    }

    #[test]
    fn all_to_all_sends_a_kth_to_every_other_member_in_one_step() {
        let s = schedule(Algorithm::AllToAll, 4, 4000).unwrap();
        assert_eq!(s[2].len(), 1);
        assert_eq!(s[2][0].sends, [(0, 1000), (1, 1000), (3, 1000)]);
        assert_eq!(totals(&s).1, vec![3000; 4]);
    }

    #[test]
    fn halving_doubling_refuses_a_non_power_of_two_and_every_algorithm_one_host() {
        assert_eq!(
            schedule(Algorithm::HalvingDoubling, 6, 1 << 20),
            Err(CollectiveError::NotPowerOfTwo(6))
        );
        assert_eq!(
            schedule(Algorithm::AllToAll, 1, 1 << 20),
            Err(CollectiveError::TooFew(1))
        );
    }

    #[test]
    fn the_gate_opens_a_step_once_the_earlier_steps_arrived_and_after_the_compute_phase() {
        // Member 0 of 4 in halving-doubling: partners 2, 1, 1, 2.
        let s = schedule(Algorithm::HalvingDoubling, 4, 4000).unwrap();
        let mut g = MemberGate::new(&s[0], 2, Duration::from_micros(5));
        assert_eq!(g.out_peers(), [2, 1]);
        let (to2, to1) = (0, 1);
        assert_eq!(g.iteration_start(), Some(Instant::from_nanos(5_000)));
        assert_eq!((g.allowance(to2), g.allowance(to1)), (2000, 0));
        // Step 1 (1000 B to peer 1) needs step 0's 2000 B from peer 2.
        g.on_receive(Instant::from_nanos(7_000), 0, 1999);
        assert_eq!(g.allowance(to1), 0);
        g.on_receive(Instant::from_nanos(8_000), 0, 1);
        assert_eq!(g.allowance(to1), 1000);
        // Allgather: 1000 B back to peer 1 after its 1000 B, then 2000 B to peer 2.
        g.on_receive(Instant::from_nanos(9_000), 1, 1000);
        assert_eq!((g.allowance(to2), g.allowance(to1)), (2000, 2000));
        g.on_receive(Instant::from_nanos(10_000), 1, 1000);
        assert_eq!((g.allowance(to2), g.allowance(to1)), (4000, 2000));
        assert!(g.marks().is_empty());
        g.on_receive(Instant::from_nanos(12_000), 0, 2000);
        assert_eq!(g.marks(), [Instant::from_nanos(12_000)]);
        // Iteration 2 starts after another compute phase, from step 0 again.
        assert_eq!(g.iteration_start(), Some(Instant::from_nanos(17_000)));
        assert_eq!((g.allowance(to2), g.allowance(to1)), (6000, 2000));
        g.on_receive(Instant::from_nanos(20_000), 0, 4000);
        g.on_receive(Instant::from_nanos(21_000), 1, 2000);
        assert_eq!(g.marks().len(), 2);
        assert_eq!(g.iteration_start(), None);
        assert_eq!((g.allowance(to2), g.allowance(to1)), (8000, 4000));
    }

    fn two_host_plan() -> CollectivePlan {
        CollectivePlan {
            collective: Collective {
                hosts: vec![0, 1],
                bytes: 4096,
                iterations: 2,
                algorithm: Algorithm::Ring,
                compute_us: 5.0,
            },
            steps: Vec::new(),
            message_bytes: 2048,
        }
    }

    #[test]
    fn a_report_keeps_the_collective_keys_at_its_top_level_in_json() {
        let (end, idle) = (Instant::from_nanos(20_000), Duration::from_micros(10));
        let r = CollectiveReport::new(&two_host_plan(), &[end], idle);
        assert_eq!(
            (r.step_us.clone(), r.comm_us.clone(), r.slowdown.clone()),
            (vec![20.0], vec![15.0], vec![1.5])
        );
        let json = serde_json::to_value(&r).unwrap();
        let mut keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "algorithm",
                "bytes",
                "comm_us",
                "compute_us",
                "hosts",
                "idle_comm_us",
                "iterations",
                "slowdown",
                "step_us"
            ]
        );
        assert_eq!(serde_json::from_value::<CollectiveReport>(json).unwrap(), r);
    }
}
