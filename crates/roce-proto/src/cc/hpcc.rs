//! HPCC: Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019. The sender computes
//! each hop's normalized inflight from in-band telemetry (INT) echoed in ACKs and steers its rate
//! to a target utilization η, with a reference rate updated once per RTT and per-ACK fast
//! reaction against it (Algorithm 1, as the authors' ns-3 model runs it:
//! alibaba-edu/High-Precision-Congestion-Control `rdma-hw.cc`, `HandleAckHp`/`UpdateRateHp`).
//!
//! Per hop j, between the records of two ACKs: τ = ts − ts', txRate = Δtx_bytes·8/τ,
//! u_j = txRate/B + min(qlen, qlen')·8/(B·T). U = max_j u_j (τ of that hop) is smoothed over
//! the base RTT T: u ← (u·(T − τ) + U·τ)/T, from u = 1. With k = u/η: k ≥ 1 or after
//! `max_stage` additive steps (ns-3's `MI_THRESH`; 0: always), R ← R_ref/k + W_AI; else
//! R ← R_ref + W_AI. Every ACK applies R (fast reaction; `fast_react` off: only full updates
//! do anything). R_ref and the stage take R at a *full* update: the first ACK that covers a
//! packet sent after the previous full update, i.e. once per actual RTT (the ACK's PSN against
//! the next PSN at the last full update, [`IntAck`]). The very first ACK only records the hops.
//! With `multi_rate` each hop keeps its own u, R_ref and stage and the rate is the least of the
//! hops' (ns-3's `MULTI_RATE 1`); with `sample_feedback` a fast reaction skips hops whose queue
//! reads empty (`SAMPLE_FEEDBACK 1`).
//!
//! # Carrying INT RoCE-safely
//! On the wire the records travel in the INT shim of [`crate::wire::int`] (between UDP and BTH,
//! announced by UDP port 4792, stripped by the receiver before ICRC verification and echoed on
//! its ACKs); see that module for the format and why the ICRC stays valid. An endpoint turns
//! the shim on per QP with `Endpoint::enable_int` and hands echoed records to
//! [`CongestionControl::on_int`]. The simulated fabric's INT switches fill the shim's slots at
//! egress (and stamp out-of-band metadata on frames without a shim, for test engines).

use tracing::trace;

use super::{clamp_rate, CcMetrics, CongestionControl, IntAck, Rate, Window, WindowParams};
use crate::psn::Psn;
use crate::time::{Duration, Instant};
use crate::wire::int::{self as wire_int, HopRecord};

/// Hops remembered per flow.
pub const MAX_HOPS: usize = 8;

/// One switch egress port's telemetry, as INT records it when the packet leaves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// Bytes queued at the egress port.
    pub qlen_bytes: u64,
    /// Bytes transmitted by the port so far (a free-running counter).
    pub tx_bytes: u64,
    /// When the switch recorded this (its own clock; only differences matter).
    pub ts: Instant,
    /// The port's line rate B.
    pub link_rate: Rate,
    /// Where `tx_bytes` wraps to 0 (0: a counter that does not wrap).
    pub tx_wrap: u64,
    /// Where `ts` wraps to 0, ns (0: a clock that does not wrap).
    pub ts_wrap_ns: u64,
}

impl IntHop {
    /// A record read from a shim whose byte fields count in units `units`: its time and tx
    /// counter wrap where the shim's fields do.
    pub fn from_record(r: &HopRecord, units: u8) -> Self {
        IntHop {
            qlen_bytes: r.qlen_bytes,
            tx_bytes: r.tx_bytes,
            ts: Instant::from_nanos(r.ts_ns),
            link_rate: Rate::from_bps(r.rate_bps),
            tx_wrap: wire_int::tx_wrap_bytes(units),
            ts_wrap_ns: wire_int::TS_WRAP_NS,
        }
    }

    /// Nanoseconds from `older` (the same port's earlier record) to this one, across one wrap
    /// of the clock (ns-3's `GetTimeDelta`).
    pub fn time_since(&self, older: &IntHop) -> u64 {
        wrapped_delta(self.ts.as_nanos(), older.ts.as_nanos(), self.ts_wrap_ns)
    }

    /// Bytes the port sent from `older` to this record, across one wrap of the counter (ns-3's
    /// `GetBytesDelta`).
    pub fn bytes_since(&self, older: &IntHop) -> u64 {
        wrapped_delta(self.tx_bytes, older.tx_bytes, self.tx_wrap)
    }
}

/// `new − old` on a counter that wraps at `wrap` (0: never; a step back then reads as 0).
fn wrapped_delta(new: u64, old: u64, wrap: u64) -> u64 {
    match new.checked_sub(old) {
        Some(d) => d,
        None if wrap > 0 => new.wrapping_add(wrap).wrapping_sub(old),
        None => 0,
    }
}

impl From<IntHop> for HopRecord {
    fn from(h: IntHop) -> Self {
        HopRecord {
            ts_ns: h.ts.as_nanos(),
            tx_bytes: h.tx_bytes,
            qlen_bytes: h.qlen_bytes,
            rate_bps: h.link_rate.as_bps(),
        }
    }
}

crate::cc_params! {
    /// HPCC parameters.
    pub struct HpccParams {
        /// The send window beside the rate (on, over the 10 us base RTT: the HPCC authors'
        /// run.py gives HPCC HAS_WIN 1, VAR_WIN 1 with the window's RTT equal to T).
        base win: WindowParams,
        /// Target utilization eta.
        eta: f64 = "",
        /// Additive steps before a multiplicative adjustment is forced (ns-3 MI_THRESH; 0:
        /// every update is R_ref/k + W_AI, also upward).
        max_stage: u32 = "",
        /// Additive increase W_AI (default B·(1 − eta)/16: 313 at 100 Gbit/s).
        w_ai: u32 = "Mbit/s",
        /// Base RTT T of the paths: the EWMA horizon of u and the RTT of its queue term.
        base_rtt: f64 = "us",
        /// Floor of the rate.
        min_rate: u32 = "Mbit/s",
        /// React on every ACK against the reference rate (ns-3 FAST_REACT); 0: only the full
        /// update, once per RTT, does anything.
        fast_react: bool = "",
        /// One u, reference rate and stage per hop, the rate the least of the hops' (ns-3
        /// MULTI_RATE); 0: one u from the most loaded hop.
        multi_rate: bool = "",
        /// A fast reaction skips hops whose queue reads empty (ns-3 SAMPLE_FEEDBACK).
        sample_feedback: bool = "",
        /// Units multiplier of the INT records' byte fields (ns-3 INT_MULTI: queue in 80·m
        /// bytes, tx bytes in 128·m), 1 to 255.
        int_multi: u32 = "",
    }
}

/// The flows W_AI is sized for: N·W_AI = (1 − eta)·B, so that up to this many flows' additive
/// steps together stay inside the headroom eta leaves (HPCC §3.3: W_AI trades the speed of
/// reaching fairness against the standing queue, and scales with B and N; the authors' ns-3
/// run.py scales it with the line rate). Measured in the fabric's incast matrix (tests/
/// cc_validation.rs): 8 and 12 leave other 25 Gbit/s cells short of Jain 0.95 and 8 takes 16
/// flows to 90 % utilisation; 16 keeps the queue under 0.5 us of line rate.
const AI_FLOWS: f64 = 16.0;

/// W_AI for a port of `line` and target utilization `eta`, Mbit/s.
fn w_ai_for(line: Rate, eta: f64) -> u32 {
    super::rate::mbps_of(line, (1.0 - eta).max(0.0) / AI_FLOWS)
}

impl Default for HpccParams {
    /// The 100 Gbit/s values.
    fn default() -> Self {
        HpccParams {
            win: WindowParams::var(10_000),
            eta: 0.95,
            max_stage: 5,
            w_ai: w_ai_for(Rate::from_gbps(100), 0.95),
            base_rtt: 10.0,
            min_rate: 100,
            fast_react: true,
            multi_rate: false,
            sample_feedback: false,
            int_multi: 1,
        }
    }
}

impl super::params::CcKind for HpccParams {
    fn build(&self, line_rate: Rate) -> super::Controller {
        super::Controller::Hpcc(Box::new(Hpcc::new(self.clone(), line_rate)))
    }
    fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if !(1..=255).contains(&self.int_multi) {
            return Err(("int_multi", "a multiplier from 1 to 255"));
        }
        if !self.base_rtt.is_finite() || self.base_rtt <= 0.0 {
            return Err(("base_rtt", "a positive time"));
        }
        Ok(())
    }
    fn uses_int(&self) -> bool {
        true
    }
    fn int_units(&self) -> u8 {
        u8::try_from(self.int_multi.clamp(1, 255)).unwrap_or(u8::MAX)
    }
    fn scale_to(&mut self, line_rate: Rate) {
        self.w_ai = w_ai_for(line_rate, self.eta);
    }
}

/// One hop's own state under `multi_rate`.
#[derive(Clone, Copy, Debug)]
struct HopState {
    u: f64,
    reference: f64,
    inc_stage: u32,
}

/// Where the next full update starts.
#[derive(Clone, Copy, Debug)]
enum LastFull {
    /// Nothing received yet.
    Never,
    /// The next PSN to send at the last full update: an ACK past it is the next.
    Seq(Psn),
    /// Without sequence numbers ([`CongestionControl::on_int`] given none): a full update
    /// once per T of time.
    At(Instant),
}

/// HPCC for one QP.
#[derive(Clone, Debug)]
pub struct Hpcc {
    p: HpccParams,
    window: Window,
    max: f64,
    rate: f64,
    reference: f64,
    u: f64,
    inc_stage: u32,
    prev: [Option<IntHop>; MAX_HOPS],
    hops: [HopState; MAX_HOPS],
    last_full: LastFull,
    metrics: CcMetrics,
}

impl Hpcc {
    /// A controller starting at `line_rate`.
    pub fn new(params: HpccParams, line_rate: Rate) -> Self {
        let max = line_rate.as_bps_f64();
        let mut h = Hpcc {
            window: Window::new(&params.win, line_rate),
            p: params,
            max,
            rate: max,
            reference: max,
            // ns-3 starts u (and each hop's) at 1: the first updates already cut in
            // proportion to any queue.
            u: 1.0,
            inc_stage: 0,
            prev: [None; MAX_HOPS],
            hops: [HopState {
                u: 1.0,
                reference: max,
                inc_stage: 0,
            }; MAX_HOPS],
            last_full: LastFull::Never,
            metrics: CcMetrics::default(),
        };
        h.refresh();
        h
    }

    fn refresh(&mut self) {
        self.metrics.rate = Rate::from_bps_f64(self.rate);
        self.metrics.target_rate = Rate::from_bps_f64(self.reference);
        self.metrics.alpha = self.u;
    }

    /// T in ns.
    fn t_ns(&self) -> f64 {
        (self.p.base_rtt * 1e3).max(1.0)
    }

    /// The candidate rate and stage from a reference rate, u and stage (Algorithm 1's
    /// ComputeWind, as a rate).
    fn step(&self, reference: f64, u: f64, stage: u32) -> (f64, u32) {
        let k = u / self.p.eta.max(f64::MIN_POSITIVE);
        let w_ai = f64::from(self.p.w_ai) * 1e6;
        let (rate, stage) = if k >= 1.0 || stage >= self.p.max_stage {
            let scaled = if k > 0.0 { reference / k } else { self.max };
            (scaled + w_ai, 0)
        } else {
            (reference + w_ai, stage.saturating_add(1))
        };
        let min = (f64::from(self.p.min_rate) * 1e6).min(self.max);
        (clamp_rate(rate, min, self.max), stage)
    }

    /// Whether this ACK brings a full update (and, for the first, only records the hops).
    fn classify(&self, now: Instant, ack: Option<IntAck>) -> Option<bool> {
        match (self.last_full, ack) {
            (LastFull::Never, _) => None,
            (LastFull::Seq(next), Some(a)) => Some(a.acked.after(next)),
            (LastFull::At(at), None) => {
                let t = Duration::from_nanos(self.t_ns() as u64);
                Some(now >= at + t)
            }
            // The caller switched between giving sequence numbers and not: start over.
            _ => None,
        }
    }

    fn mark_full(&mut self, now: Instant, ack: Option<IntAck>) {
        self.last_full = match (self.last_full, ack) {
            (LastFull::Seq(old), Some(a)) if !a.next.after(old) => LastFull::Seq(old),
            (_, Some(a)) => LastFull::Seq(a.next),
            (_, None) => LastFull::At(now),
        };
    }

    /// One ACK's records: each hop's normalized inflight against its previous record. Returns
    /// (U, its τ) of the most loaded hop, updating the per-hop u under `multi_rate`, and which
    /// hops were taken.
    fn measure(&mut self, hops: &[IntHop], fast: bool) -> (f64, f64, [bool; MAX_HOPS]) {
        let t = self.t_ns();
        let (mut big_u, mut dt) = (0.0, 0.0);
        let mut taken = [false; MAX_HOPS];
        for (i, hop) in hops.iter().enumerate().take(MAX_HOPS) {
            if self.p.sample_feedback && fast && hop.qlen_bytes == 0 {
                continue;
            }
            let Some(old) = self.prev[i].replace(*hop) else {
                continue;
            };
            let tau = hop.time_since(&old) as f64;
            let b = hop.link_rate.as_bps_f64();
            if tau <= 0.0 || b <= 0.0 {
                continue;
            }
            taken[i] = true;
            let tx_rate = hop.bytes_since(&old) as f64 * 8e9 / tau;
            let q = hop.qlen_bytes.min(old.qlen_bytes) as f64 * 8e9;
            let u = tx_rate / b + q / (b * t);
            if self.p.multi_rate {
                let tau = tau.min(t);
                let h = &mut self.hops[i];
                h.u = (h.u * (t - tau) + u * tau) / t;
            } else if u > big_u {
                big_u = u;
                dt = tau;
            }
        }
        (big_u, dt, taken)
    }
}

impl CongestionControl for Hpcc {
    fn name(&self) -> &'static str {
        "hpcc"
    }
    fn on_cnp(&mut self, _now: Instant) {
        self.metrics.rp_cnp_ignored += 1;
    }
    fn on_int(&mut self, now: Instant, hops: &[IntHop], ack: Option<IntAck>) {
        let Some(full) = self.classify(now, ack) else {
            // The first ACK: its records are what the next ones are measured against.
            for (prev, hop) in self.prev.iter_mut().zip(hops) {
                *prev = Some(*hop);
            }
            self.mark_full(now, ack);
            return;
        };
        if !full && !self.p.fast_react {
            return;
        }
        let (big_u, dt, taken) = self.measure(hops, !full);
        if taken.iter().any(|&t| t) {
            let t = self.t_ns();
            let mut per_hop = [(0.0, 0); MAX_HOPS];
            let (new_rate, new_stage) = if self.p.multi_rate {
                let mut rate = self.max;
                for (i, _) in hops.iter().enumerate().take(MAX_HOPS) {
                    let h = self.hops[i];
                    if taken[i] {
                        per_hop[i] = self.step(h.reference, h.u, h.inc_stage);
                        rate = rate.min(per_hop[i].0);
                    } else {
                        rate = rate.min(h.reference);
                    }
                }
                (rate, 0)
            } else {
                let dt = dt.min(t);
                self.u = (self.u * (t - dt) + big_u * dt) / t;
                self.step(self.reference, self.u, self.inc_stage)
            };
            if new_rate < self.rate {
                self.metrics.rate_cuts += 1;
            } else if new_rate > self.rate {
                self.metrics.rate_increases += 1;
            }
            self.rate = new_rate;
            if full {
                if self.p.multi_rate {
                    for (i, &(r, s)) in per_hop.iter().enumerate() {
                        if taken[i] {
                            self.hops[i].reference = r;
                            self.hops[i].inc_stage = s;
                        }
                    }
                } else {
                    self.inc_stage = new_stage;
                }
                self.reference = new_rate;
            }
            trace!(
                t_ns = now.as_nanos(),
                u = self.u,
                rate_bps = self.rate,
                full,
                "hpcc update"
            );
        }
        if full {
            self.mark_full(now, ack);
        }
        self.refresh();
    }
    #[inline]
    fn window(&self) -> Option<u64> {
        self.window.bytes(self.rate, self.max)
    }
    #[inline]
    fn has_window(&self) -> bool {
        self.window.is_on()
    }
    #[inline]
    fn metrics(&self) -> CcMetrics {
        self.metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: f64 = 100e9;
    /// T of the default parameters, ns.
    const T: u64 = 10_000;

    fn hop(ts_ns: u64, tx_bytes: u64, qlen_bytes: u64) -> IntHop {
        IntHop {
            qlen_bytes,
            tx_bytes,
            ts: Instant::from_nanos(ts_ns),
            link_rate: Rate::from_gbps(100),
            ..IntHop::default()
        }
    }

    fn ack(acked: u32, next: u32) -> Option<IntAck> {
        Some(IntAck {
            acked: Psn::new(acked),
            next: Psn::new(next),
        })
    }

    fn hpcc(set: impl FnOnce(&mut HpccParams)) -> Hpcc {
        let mut p = HpccParams::default();
        set(&mut p);
        Hpcc::new(p, Rate::from_gbps(100))
    }

    fn w_ai() -> f64 {
        f64::from(HpccParams::default().w_ai) * 1e6
    }

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn assert_rate(h: &Hpcc, expected: f64) {
        let got = h.rate().as_bps_f64();
        assert!(
            (got - expected).abs() <= 1.0,
            "rate {got}, expected {expected}"
        );
    }

    #[test]
    fn u_starts_at_one_so_the_first_ack_that_measures_a_full_link_cuts() {
        let mut h = hpcc(|_| {});
        h.on_int(at(0), &[hop(0, 0, 0)], ack(0, 10));
        assert_rate(&h, LINE);
        // 1 us at line rate: U = 1, u = (1·(T − τ) + 1·τ)/T = 1 (from 0 it would be 0.1, an
        // additive step), so k = 1/0.95 and the rate is R_ref/k + W_AI.
        h.on_int(at(1_000), &[hop(1_000, 12_500, 0)], ack(1, 11));
        assert_eq!(h.metrics().alpha, 1.0);
        assert_rate(&h, LINE * 0.95 + w_ai());
    }

    #[test]
    fn the_reference_rate_moves_once_per_rtt_by_sequence() {
        let mut h = hpcc(|_| {});
        // The first ACK records, and the next full update waits for an ACK past PSN 10.
        h.on_int(at(0), &[hop(0, 0, 0)], ack(0, 10));
        let busy = |t: u64| hop(t, t * 25 / 2, 50_000);
        // Up to PSN 10 acknowledged: fast reactions, the reference stays at line rate.
        h.on_int(at(1_000), &[busy(1_000)], ack(5, 15));
        h.on_int(at(2_000), &[busy(2_000)], ack(10, 20));
        assert!(h.rate().as_bps_f64() < LINE);
        assert_eq!(h.metrics().target_rate, Rate::from_gbps(100));
        // PSN 10 acknowledged: a full update commits the rate; the next waits past PSN 20,
        // however much time passes.
        h.on_int(at(3_000), &[busy(3_000)], ack(11, 20));
        let reference = h.metrics().target_rate;
        assert_eq!(reference, h.rate());
        h.on_int(at(3 * T), &[busy(3 * T)], ack(20, 30));
        assert_eq!(h.metrics().target_rate, reference);
        h.on_int(at(3 * T + 100), &[busy(3 * T + 100)], ack(21, 30));
        assert_ne!(h.metrics().target_rate, reference);
    }

    /// After one full update under a standing queue, a second over one T at half the line
    /// rate (U = 0.5): returns the rate.
    fn after_a_cut_then_half_load(max_stage: u32) -> (f64, f64) {
        let mut h = hpcc(|p| p.max_stage = max_stage);
        h.on_int(at(0), &[hop(0, 0, 50_000)], ack(0, 1));
        h.on_int(at(T), &[hop(T, 125_000, 50_000)], ack(2, 3));
        let reference = h.metrics().target_rate.as_bps_f64();
        h.on_int(at(2 * T), &[hop(2 * T, 187_500, 0)], ack(4, 5));
        assert_eq!(h.metrics().alpha, 0.5);
        (reference, h.rate().as_bps_f64())
    }

    #[test]
    fn mi_thresh_zero_makes_every_update_multiplicative_also_upward() {
        // U = 1 + 50 KB·8/(B·T) = 1.4: the first full update cuts to LINE/k + W_AI.
        let (reference, additive) = after_a_cut_then_half_load(5);
        assert!((reference - (LINE * 0.95 / 1.4 + w_ai())).abs() <= 1.0);
        assert!((additive - (reference + w_ai())).abs() <= 1.0);
        let (reference, multiplicative) = after_a_cut_then_half_load(0);
        let expected = (reference * 0.95 / 0.5 + w_ai()).min(LINE);
        assert!((multiplicative - expected).abs() <= 1.0);
    }

    #[test]
    fn without_fast_react_acks_between_full_updates_change_nothing() {
        // Idle for the first half of T, at line rate for the second.
        let run = |fast_react: bool| {
            let mut h = hpcc(|p| p.fast_react = fast_react);
            h.on_int(at(0), &[hop(0, 0, 0)], ack(0, 10));
            h.on_int(at(T / 2), &[hop(T / 2, 0, 80_000)], ack(5, 15));
            let fast = h.rate();
            h.on_int(at(T), &[hop(T, 62_500, 0)], ack(11, 20));
            (fast, h.metrics().alpha)
        };
        // Off: the queue on the fast ACK is not seen, and the full update measures τ = T from
        // the first record (U = 0.5, u = 0.5).
        assert_eq!(run(false), (Rate::from_gbps(100), 0.5));
        // On: the fast ACK reacts (u = 1 from the start: a cut), and the full update measures
        // the last T/2 alone. The idle half (U = 0) weighs nothing: as in ns-3, the EWMA takes
        // τ from the hop that sets U, and none does; so u stays 1.
        let (fast, u) = run(true);
        assert!(fast < Rate::from_gbps(100));
        assert_eq!(u, 1.0);
    }

    #[test]
    fn sample_feedback_skips_hops_whose_queue_reads_empty_in_fast_reactions() {
        let mut h = hpcc(|p| p.sample_feedback = true);
        h.on_int(at(0), &[hop(0, 0, 0)], ack(0, 10));
        h.on_int(at(1_000), &[hop(1_000, 12_500, 0)], ack(1, 11));
        assert_eq!(h.rate(), Rate::from_gbps(100));
        assert_eq!(h.metrics().rate_cuts, 0);
        // A full update takes every hop, measured from the first record.
        h.on_int(at(2_000), &[hop(2_000, 25_000, 0)], ack(11, 20));
        assert_rate(&h, LINE * 0.95 + w_ai());
    }

    #[test]
    fn multi_rate_keeps_a_rate_per_hop_and_sends_at_the_least() {
        // Hop 0 congested then idle; hop 1 idle then busy. MI_THRESH 0: every step is R_ref/k.
        let run = |multi_rate: bool| {
            let mut h = hpcc(|p| {
                p.multi_rate = multi_rate;
                p.max_stage = 0;
            });
            h.on_int(at(0), &[hop(0, 0, 50_000), hop(0, 0, 0)], ack(0, 1));
            h.on_int(at(T), &[hop(T, 125_000, 50_000), hop(T, 0, 0)], ack(2, 3));
            let first = h.rate().as_bps_f64();
            h.on_int(
                at(2 * T),
                &[hop(2 * T, 125_000, 0), hop(2 * T, 112_500, 0)],
                ack(4, 5),
            );
            (first, h.rate().as_bps_f64())
        };
        let cut = LINE * 0.95 / 1.4 + w_ai();
        let (first, second) = run(false);
        assert!((first - cut).abs() <= 1.0);
        // One u, one reference: U = 0.9 from hop 1 over T, k = 0.9/0.95, from the cut.
        assert!((second - (cut * 0.95 / 0.9 + w_ai())).abs() <= 1.0);
        let (first, second) = run(true);
        assert!((first - cut).abs() <= 1.0);
        // Per hop: hop 0's u fell to 0 (back to the line rate from its cut); hop 1 (u 0.9)
        // scales its own reference, the line rate, up: the least is the line rate.
        assert_eq!(second, LINE);
    }

    #[test]
    fn t_takes_fractions_of_a_microsecond_and_must_be_positive() {
        use crate::cc::params::CcKind;
        // T = 12.24 us (the fat tree's largest base RTT): 1 us at line rate over a 12.24 KB
        // queue is U = 1 + 12_240·8/(B·T) = 1.08, and u = (1·(T − τ) + 1.08·τ)/T.
        let mut h = hpcc(|p| p.base_rtt = 12.24);
        h.on_int(at(0), &[hop(0, 0, 12_240)], ack(0, 10));
        h.on_int(at(1_000), &[hop(1_000, 12_500, 12_240)], ack(1, 11));
        let big_u = 1.0 + 12_240.0 * 8.0 / (LINE * 12.24e-6);
        let u = (12_240.0 - 1_000.0 + big_u * 1_000.0) / 12_240.0;
        assert!(
            (h.metrics().alpha - u).abs() < 1e-12,
            "{}",
            h.metrics().alpha
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let p = HpccParams {
                base_rtt: bad,
                ..HpccParams::default()
            };
            assert_eq!(p.check(), Err(("base_rtt", "a positive time")));
        }
    }

    #[test]
    fn record_deltas_cross_one_wrap_of_the_shim_fields() {
        let wrap = wire_int::TS_WRAP_NS;
        let old = IntHop {
            ts: at(wrap - 5),
            tx_bytes: 1000,
            tx_wrap: 4096,
            ts_wrap_ns: wrap,
            ..IntHop::default()
        };
        let new = IntHop {
            ts: at(5),
            tx_bytes: 24,
            ..old
        };
        assert_eq!((new.time_since(&old), new.bytes_since(&old)), (10, 3120));
        // Exact counters (out of band) do not wrap: a step back reads as nothing.
        let exact = |ts, tx| IntHop {
            ts: at(ts),
            tx_bytes: tx,
            ..IntHop::default()
        };
        assert_eq!(exact(5, 24).time_since(&exact(9, 1000)), 0);
        assert_eq!(exact(5, 24).bytes_since(&exact(9, 1000)), 0);
    }
}
