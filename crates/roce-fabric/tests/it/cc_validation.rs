//! The congestion-control validation matrix (issue 14): every controller on the real RC
//! endpoints in an N:1 incast (N = 2, 8, 16) through one switch at 25, 100 and 400 Gbit/s, ECN
//! thresholds below the PFC threshold. After warm-up each run is held to what the controller
//! claims, and where a controller cannot meet a bar the reason is written next to the bar it
//! does meet (see `Expect`).
//!
//! The fabric as the reference simulators build it (the DCQCN and HPCC authors' ns-3 models):
//! ECN marks at dequeue, RED from Kmin = 16 KB per 25 Gbit/s to Kmax = 4·Kmin with pmax 0.2 (1
//! under nscc, as htsim's queue marks for it), PFC XOFF per ingress port at Kmax (so no ingress
//! pauses before the egress queue passes Kmax, whatever N), 1 us links (4 us base RTT plus serialization). The notification point sends CNPs
//! as each controller is designed with (`CcConfig::cnp_interval`: dcqcn-mlx 4 us, dctcp every
//! mark), and under dctcp the switch marks with a step at Kmin, as DCTCP is defined
//! (`CcConfig::step_marking`).
//!
//! Run lengths are short (debug builds run the whole matrix): 1.5 ms of which the first 1 ms
//! is warm-up, long enough for the controllers that converge in tens of RTTs. Controllers whose
//! published time constants are longer (dcqcn-paper: additive recovery over milliseconds, alpha
//! relaxing over 14 ms) are checked on the bars they meet in that window, with the measured
//! reason next to each bar they miss; `sim_dcqcn_theory.rs` holds dcqcn-paper to its fluid
//! model over 50 ms. Cells that had not settled in that window (their values moved with the
//! order of same-nanosecond events) are held to the issue's bars over longer windows by the
//! `#[ignore]`d tests in `long_window`, which the test command (`tools/test.sh`) runs
//! optimised (`cargo test --profile bench -p roce-fabric --test it cc_validation -- --ignored`:
//! about 10 s on 2 cores); the one cell that does not settle there is listed with it.

use roce_fabric::experiment::scenario::{Built, Scenario};
use roce_fabric::experiment::summary::RunSummary;
use roce_proto::cc::{CcConfig, Rate};

const SENDERS: [usize; 3] = [2, 8, 16];
const GBPS: [u64; 3] = [25, 100, 400];

/// A run's length and the warm-up before the bars apply, us.
#[derive(Clone, Copy, Debug)]
struct Window {
    duration_us: f64,
    warmup_us: f64,
}

/// The default run's window: 0.5 ms measured after 1 ms of warm-up.
const SHORT: Window = Window {
    duration_us: 1_500.0,
    warmup_us: 1_000.0,
};

/// Kmin for a link of `gbps`: 16 KB per 25 Gbit/s.
fn kmin(gbps: u64) -> u64 {
    16_000 * gbps / 25
}

fn kmax(gbps: u64) -> u64 {
    4 * kmin(gbps)
}

/// One run's outcome, reduced to what the matrix checks.
#[derive(Debug)]
struct Outcome {
    n: usize,
    gbps: u64,
    util: f64,
    jain: f64,
    queue_mean: f64,
    pauses_after_warmup: usize,
    qp_errors: u64,
    failed: usize,
}

impl Outcome {
    fn line(&self) -> String {
        format!(
            "N={:<2} {:>3}G util {:.3} jain {:.3} queue {:>9.0} B (Kmin {}, Kmax {}) \
             XOFF after warm-up {} qp_errors {} failed {}",
            self.n,
            self.gbps,
            self.util,
            self.jain,
            self.queue_mean,
            kmin(self.gbps),
            kmax(self.gbps),
            self.pauses_after_warmup,
            self.qp_errors,
            self.failed
        )
    }
}

/// RED's marking probability at Kmax: the reference models' 0.2, except for NSCC, whose
/// reference model (htsim, `CompositeQueue::decide_ECN` in `sim/compositequeue.cpp`) ramps
/// to marking every packet at Kmax.
fn pmax(cc: &str) -> f64 {
    if cc == "nscc" {
        1.0
    } else {
        0.2
    }
}

fn scenario(w: Window, cc: &str, params: &[String], n: usize, gbps: u64) -> Scenario {
    let line = Rate::from_gbps(gbps);
    let cnp_us = CcConfig::new(cc, line)
        .expect("known controller")
        .cnp_interval()
        .as_nanos() as f64
        / 1e3;
    let senders: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let params: Vec<String> = params.iter().map(|p| format!("{p:?}")).collect();
    let text = format!(
        r#"
        name = "validate-{cc}-{n}x{gbps}"
        seed = 1
        duration_us = {duration}
        warmup_us = {warmup}
        sample_us = 1
        cc = "{cc}"
        cc_params = [{params}]
        cnp_interval_us = {cnp_us}
        topology = {{ kind = "star", hosts = {hosts}, link = {{ gbps = {gbps}, delay_ns = 1000 }} }}
        workloads = [{{ kind = "incast", senders = [{senders}], receiver = {n} }}]
        [switch]
        buffer_bytes = 64000000
        queue_limit_bytes = 32000000
        lossless = [3]
        ecn = {{ kmin_bytes = {kmin}, kmax_bytes = {kmax}, pmax = {pmax} }}
        ecn_at = "dequeue"
        pfc_thresholds = {{ xoff_bytes = {kmax}, xon_bytes = {xon}, headroom_bytes = {headroom}, quanta = 65535 }}
        "#,
        params = params.join(", "),
        duration = w.duration_us,
        warmup = w.warmup_us,
        hosts = n + 1,
        senders = senders.join(", "),
        kmin = kmin(gbps),
        kmax = kmax(gbps),
        pmax = pmax(cc),
        xon = kmax(gbps) / 2,
        headroom = kmax(gbps),
    );
    Scenario::from_toml(&text).expect("scenario parses")
}

fn run(w: Window, cc: &str, params: &[String], n: usize, gbps: u64) -> Outcome {
    run_scenario(scenario(w, cc, params, n, gbps), w, n, gbps)
}

/// Runs a scenario of [`scenario`]'s shape (`n` senders at `gbps`), possibly edited.
fn run_scenario(s: Scenario, w: Window, n: usize, gbps: u64) -> Outcome {
    let cc = s.cc.clone();
    let (sum, built): (RunSummary, Built) = s.run(|_| {}).expect("runs");
    let from_ns = (w.warmup_us * 1e3) as u64;
    let pauses_after_warmup = built
        .fabric
        .recorder()
        .expect("scenarios record")
        .pauses
        .iter()
        .filter(|p| p.xoff && p.t_ns >= from_ns)
        .count();
    let o = Outcome {
        n,
        gbps,
        util: sum.bottleneck_utilisation,
        jain: sum.jain_fairness,
        queue_mean: sum.queue_mean_bytes,
        pauses_after_warmup,
        qp_errors: sum.qp_errors,
        failed: sum.failed_flows,
    };
    println!("{cc}: {}", o.line());
    o
}

/// What a controller is held to after warm-up.
struct Expect {
    min_util: f64,
    min_jain: f64,
    /// Bound on the mean queue, bytes, from the link rate.
    max_queue: fn(u64) -> f64,
    /// Whether PFC must stay silent after warm-up.
    pfc_free: bool,
}

/// The issue's bars: utilisation >= 90 %, Jain >= 0.95, mean queue below Kmax, no PFC.
const FULL: Expect = Expect {
    min_util: 0.90,
    min_jain: 0.95,
    max_queue: |g| kmax(g) as f64,
    pfc_free: true,
};

/// Runs `cc` on every (N, rate) of `cells` and checks `e`; every run must also end without a QP
/// in the error state and without a failed or stalled flow.
fn check(cc: &str, params: &[&str], cells: &[(usize, u64)], e: &Expect) {
    check_in(SHORT, cc, |_| fixed(params), cells, e);
}

/// The same parameters at every rate.
fn fixed(params: &[&str]) -> Vec<String> {
    params.iter().map(|p| (*p).to_owned()).collect()
}

/// [`check`] in window `w`, with parameters that may depend on the link rate (Gbit/s).
fn check_in(
    w: Window,
    cc: &str,
    params: impl Fn(u64) -> Vec<String>,
    cells: &[(usize, u64)],
    e: &Expect,
) {
    let mut bad = Vec::new();
    for &(n, gbps) in cells {
        let o = run(w, cc, &params(gbps), n, gbps);
        let ok = o.util >= e.min_util
            && o.jain >= e.min_jain
            && o.queue_mean <= (e.max_queue)(gbps)
            && (!e.pfc_free || o.pauses_after_warmup == 0)
            && o.qp_errors == 0
            && o.failed == 0;
        if !ok {
            bad.push(o.line());
        }
    }
    assert!(
        bad.is_empty(),
        "{cc} misses its bars in:\n{}",
        bad.join("\n")
    );
}

/// Every (N, rate) of the matrix.
fn matrix() -> Vec<(usize, u64)> {
    GBPS.iter()
        .flat_map(|&g| SENDERS.iter().map(move |&n| (n, g)))
        .collect()
}

/// DCTCP (rate based, the HPCC authors' ns-3 `HandleAckDctcp`) as it runs by default: the
/// switch marks with a step at Kmin, every mark is echoed, alpha follows the fraction of marked
/// packets, a flow adds one packet per base RTT (1638 Mbit/s), and a window of the 5 us BDP
/// scaled by the rate bounds the bytes in flight (run.py's HAS_WIN 1, VAR_WIN 1). The issue's
/// bars in every cell: utilisation 0.999 or more, Jain 0.982 or more, the queue at Kmin (at
/// most 0.28 Kmax). Without the window (before the model had one) 8 flows at 400 Gbit/s ran at
/// 0.894 here (the queue overshot K before the marks arrived) and were held to 0.89; the
/// defaults before that (RED marking, 1.5 % of the line rate per window, alpha from CNPs per
/// RTT sample) were held to 0.86 and Jain 0.94.
#[test]
fn dctcp_fills_the_link_below_kmax_without_pfc() {
    check("dctcp", &[], &matrix(), &FULL);
}

/// HPCC with the fabric's base RTT (5 us), its default W_AI (B·(1 − eta)/16, scaled with
/// the line rate) and its default window (the 10 us BDP scaled by the rate, run.py's HAS_WIN 1,
/// VAR_WIN 1), held to HPCC's published figure, a near-zero queue at high utilisation: the
/// mean queue under 2 us of line rate (a tenth of Kmin; measured at most 0.7 us) while the
/// link runs at >= 90 % (eta = 95 % of the wire, INT bytes included; measured 0.944 or more),
/// no PFC, and the issue's Jain >= 0.95. Without the window (and its per-packet ACKs, which
/// carry INT as often as the reference model's) 8 flows at 25 Gbit/s reached Jain 0.836 after
/// 1 ms and 2 flows at 100 Gbit/s 0.936, and the bar was 0.83. Measured after 2 ms of
/// warm-up, not 1: since the reference rate moves once per actual RTT, as in the authors'
/// ns-3, rather than once per T of time, the additive steps that even the flows out come less
/// often, and 8 flows at 25 Gbit/s were at Jain 0.939 over 1-1.5 ms and 0.992 over 2-3 ms.
#[test]
fn hpcc_keeps_the_queue_near_zero_at_its_target_utilisation() {
    let e = Expect {
        max_queue: |g| 2e-6 * g as f64 * 1e9 / 8.0,
        ..FULL
    };
    let w = Window {
        duration_us: 3_000.0,
        warmup_us: 2_000.0,
    };
    check_in(w, "hpcc", |_| fixed(&["base_rtt=5"]), &matrix(), &e);
}

/// dcqcn-mlx's increase steps as the HPCC authors' ns-3 `run.py` scales them with the link
/// (`ai = 5 * bw / 25`, `hai = 50 * bw / 25`: R_AI 5 Mbit/s and R_HAI 50 Mbit/s per 25 Gbit/s);
/// everything else as the preset ships.
fn mlx_params(gbps: u64) -> Vec<String> {
    vec![
        format!("rpg_ai_rate={}", 5 * gbps / 25),
        format!("rpg_hai_rate={}", 50 * gbps / 25),
    ]
}

/// [`mlx_params`] without the byte counter, as the HPCC authors' ns-3 models this firmware
/// (increases on the 300 us timer only, `RateIncEventTimerMlx`).
fn mlx_timer_only(gbps: u64) -> Vec<String> {
    let mut p = mlx_params(gbps);
    p.push("rpg_byte_reset=0".to_owned());
    p
}

/// dcqcn-mlx as it ships (ConnectX defaults: 4 us between CNPs, the 300 us timer and the byte
/// counter at 32767 units of 64 B = 2 MiB, no QCN target reset) with its increase steps scaled
/// from 25 Gbit/s as the HPCC authors' ns-3 `run.py` scales them ([`mlx_params`]). In this
/// window 2 flows meet every bar at 25 and 100 Gbit/s (utilisation 0.957 or more, Jain 0.999).
/// 8 and 16 flows are still draining the synchronized start: every flow is cut while the
/// start-up queue drains, the clamp rules leave each target near the line rate, so the first
/// 300 us timer event sends every flow back to half of it at once and the queue overshoots
/// (up to 6 Kmax with 16 flows at 100 Gbit/s, PFC with 16 at 25); utilisation 0.488 or more,
/// Jain 0.96 or more. 2 flows at 400 Gbit/s share 0.891 (the byte counter, see `long_window`).
/// `long_window` holds the cells to the bars once the start has settled.
#[test]
fn dcqcn_mlx_runs_every_cell_without_errors() {
    check_in(SHORT, "dcqcn-mlx", mlx_params, &[(2, 25), (2, 100)], &FULL);
    let draining = Expect {
        min_util: 0.45,
        max_queue: |g| 8.0 * kmax(g) as f64,
        pfc_free: false,
        ..FULL
    };
    let many = [(8, 25), (16, 25), (8, 100), (16, 100), (8, 400), (16, 400)];
    check_in(SHORT, "dcqcn-mlx", mlx_params, &many, &draining);
    let byte_counter = Expect {
        min_jain: 0.85,
        ..FULL
    };
    check_in(SHORT, "dcqcn-mlx", mlx_params, &[(2, 400)], &byte_counter);
}

/// dcqcn-paper (SIGCOMM'15, R_AI and R_HAI scaled from its 40 Gbit/s with the line rate)
/// meets every bar with 2 flows at every rate. With 8 and 16 flows it never pauses, keeps the
/// queue below Kmin and shares fairly (Jain >= 0.9: 16 flows at 25 Gbit/s 0.926, the other
/// cells 0.98 or more), but runs the link at 0.20 to 0.35 in this window: the
/// 50 us CNP interval lets the start-up queue reach about 2 MB before the second cut, the
/// flows are cut five or six times (to line/(4N) each) while it drains, and the paper's
/// recovery is additive: one R_AI (line/400) per 55 us timer event, hyper increase needing
/// five 10 MiB byte-counter events per flow. Refilling takes 3 to 5 ms, and alpha (14 ms time
/// constant) sets the depth of later cuts: what the paper's own evaluation converges in is
/// tens of ms, held to the fluid model by `sim_dcqcn_theory.rs` over 50 ms.
#[test]
fn dcqcn_paper_meets_every_bar_with_two_flows_and_never_pauses() {
    let two: Vec<(usize, u64)> = GBPS.iter().map(|&g| (2, g)).collect();
    check("dcqcn-paper", &[], &two, &FULL);
    let many: Vec<(usize, u64)> = matrix().into_iter().filter(|&(n, _)| n > 2).collect();
    let e = Expect {
        min_util: 0.2,
        min_jain: 0.9,
        max_queue: |g| kmin(g) as f64,
        ..FULL
    };
    check("dcqcn-paper", &[], &many, &e);
}

/// TIMELY and patched TIMELY with thresholds scaled to this fabric (T_low 6 us, T_high 20 us
/// = Kmax of queueing; the published 50/500 us lie beyond PFC's reach at these rates, so the
/// delay signal never fires and PFC does the work, as the issue measured) and the additive
/// step scaled with the line rate (1/1000 of it: the paper's 10 Mbit/s at 10 Gbit/s, the
/// authors' ns-3 run.py's `RATE_AI`).
///
/// By default every packet asks for its ACK (`ack_each`, the ns-3 model's per-packet ACKs, one
/// RTT sample per packet and, with `per_rtt`, one update per RTT): TIMELY with 2 and 8 flows
/// and patched TIMELY with 8 meet the issue's bars here (utilisation 1.000, 1.000 and 0.946,
/// Jain 0.992 or more, the queue at most 91 KB, under Kmax; T_high allows 187 KB); patched
/// TIMELY with 2 flows runs at 0.857 in this window and meets every bar in `long_window`.
///
/// The bars below them were measured with coalesced ACKs (`ack_each=0`: one RTT sample per 32
/// packets, the default before), which those checks keep. Asserted: the RTT stays under
/// T_high (the mean queue below Kmin, 5 us of queueing), no PFC after warm-up, a Jain index of
/// 0.95 or more and no errors, with utilisation short of the issue's 90 % in this window:
/// - With their default once-per-RTT update, 2 and 8 flows: TIMELY 1.0 and 0.886 (held to
///   0.88; it was 0.735 and 1.0 updating on every sample, held to 0.7), patched TIMELY 0.492
///   and 0.394 (held to 0.35; 0.13 and 0.43 on every sample, held to 0.1): the start-up cuts
///   take longer than this window to recover from.
/// - 16 flows at 100 Gbit/s have not settled here with the once-per-RTT update (313 KB queued,
///   past Kmax; TIMELY 0.686, patched 0.547); `long_window` holds them to every bar. Here they
///   run on every sample (`per_rtt=0`: TIMELY 1.0, patched TIMELY 0.795), held to 0.7.
#[test]
fn timely_variants_keep_the_queue_empty_and_never_pause() {
    let cells = [(2, 100), (8, 100)];
    check("timely", &["t_low=6", "t_high=20"], &cells, &FULL);
    let p = ["t_low=6", "t_high=20", "rtt_ref=10"];
    check("patched-timely", &p, &[(8, 100)], &FULL);
    // Coalesced ACKs, as these bars were measured.
    let e = Expect {
        min_util: 0.88,
        min_jain: 0.95,
        max_queue: |g| kmin(g) as f64,
        ..FULL
    };
    check(
        "timely",
        &["t_low=6", "t_high=20", "ack_each=0"],
        &cells,
        &e,
    );
    let patched = Expect {
        min_util: 0.35,
        ..e
    };
    let p = ["t_low=6", "t_high=20", "rtt_ref=10", "ack_each=0"];
    check("patched-timely", &p, &cells, &patched);
    let sixteen = [(16, 100)];
    let e = Expect { min_util: 0.7, ..e };
    let p = ["t_low=6", "t_high=20", "per_rtt=0", "ack_each=0"];
    check("timely", &p, &sixteen, &e);
    let p = [
        "t_low=6",
        "t_high=20",
        "rtt_ref=10",
        "per_rtt=0",
        "ack_each=0",
    ];
    check("patched-timely", &p, &sixteen, &e);
}

/// Swift's parameters scaled to this fabric: a 10 us base target (the star's base RTT is
/// 4.2 to 4.7 us), h = 1 us for its one switch, flow scaling over 5 us. htsim's defaults (20 us
/// base, 100 us of flow scaling) would aim past Kmax, which is 20.5 us of queueing at every
/// rate here, and leave the work to PFC, as TIMELY's published thresholds do.
const SWIFT: [&str; 3] = ["base_target=10", "hop_scale=1", "fs_range=5"];

/// The base RTT of the star at `gbps`, us: four 1 us links, and a 1082-byte data frame and a
/// 62-byte ACK each serialized twice, with 24 bytes of preamble, gap and FCS per frame.
fn star_base_rtt_us(gbps: u64) -> f64 {
    4.0 + 2.0 * (1082.0 + 24.0 + 62.0 + 24.0) * 8.0 / (gbps as f64 * 1e3)
}

/// Microseconds the bottleneck takes to drain `bytes` of queued frames at `gbps` (each 1082
/// bytes the queue counts leaves with 24 more on the wire).
fn queue_us(bytes: f64, gbps: u64) -> f64 {
    bytes * (1082.0 + 24.0) / 1082.0 * 8.0 / (gbps as f64 * 1e3)
}

/// Swift ([`SWIFT`]) in every cell: the issue's bars, and the mean queue within the largest
/// target (base 10 + h 1 + flow scaling 5 us, less the base RTT: 12 us of line rate). Measured:
/// utilisation 1.000, Jain 0.998 or more, the queue 6.5 to 9.8 us of line rate (most with 16
/// flows at 25 Gbit/s, whose additive increase adds 16 packets, 5.5 us there, per RTT), no PFC.
#[test]
fn swift_fills_the_link_within_its_target_delay() {
    let e = Expect {
        max_queue: |g| 12e-6 * g as f64 * 1e9 / 8.0,
        ..FULL
    };
    check("swift", &SWIFT, &matrix(), &e);
}

/// The paper's claim for incast (SIGCOMM'20 section 6, the incast experiments behind "Swift
/// achieves line rate while the delay stays near the target as the incast degree grows"): with
/// N flows into one 100 Gbit/s port, the link stays full (utilisation >= 0.99, Jain >= 0.95)
/// and the fabric delay (the star's base RTT plus the bottleneck's mean queueing delay) stays
/// in a band around the target the flows settle at, t* = base + h + fs(w*) with w* the fair
/// window (each flow's share of the line over t*, in packets). The band: from 0.25 us under t*
/// to one RTT of the flows' additive increase over it (N packets of serialization: AIMD cuts
/// once the delay has passed the target, so the mean sits about half of that above). Measured
/// (t*, fabric delay, us): N=2 (11.04, 11.06), 8 (11.25, 11.50), 16 (11.41, 11.92), 32
/// (11.64, 12.85), 64 (11.96, 14.90). Not reproduced: the paper's thousands of flows, where
/// each flow's window is far below one packet; 64 flows at 25 Gbit/s (fair window 0.55
/// packets) keep the link full but starve some paced flows (Jain 0.31 over 0.5 ms; 0.65 with
/// 50 us of flow scaling).
#[test]
fn swift_holds_the_fabric_delay_near_its_target_in_an_incast() {
    let gbps = 100;
    let params = roce_proto::cc::SwiftParams {
        base_target: 10.0,
        hop_scale: 1.0,
        fs_range: 5.0,
        ..roce_proto::cc::SwiftParams::default()
    };
    let frame_bits = (1082.0 + 24.0) * 8.0;
    let mut bad = Vec::new();
    for n in [2usize, 8, 16, 32, 64] {
        // The fixed point: the target at the fair window, the fair window over the target.
        let mut target_us = params.target_ns(1.0) / 1e3;
        for _ in 0..50 {
            let fair = gbps as f64 * 1e3 * target_us / (n as f64 * frame_bits);
            target_us = params.target_ns(fair) / 1e3;
        }
        let o = run(SHORT, "swift", &fixed(&SWIFT), n, gbps);
        let delay = star_base_rtt_us(gbps) + queue_us(o.queue_mean, gbps);
        let rise = n as f64 * frame_bits / (gbps as f64 * 1e3);
        println!("N={n}: target {target_us:.2} us, fabric delay {delay:.2} us (+{rise:.2} band)");
        let ok = o.util >= 0.99
            && o.jain >= 0.95
            && delay >= target_us - 0.25
            && delay <= target_us + rise
            && o.pauses_after_warmup == 0
            && o.qp_errors == 0
            && o.failed == 0;
        if !ok {
            bad.push(format!(
                "{} target {target_us:.2} us delay {delay:.2} us",
                o.line()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "swift off its target in:\n{}",
        bad.join("\n")
    );
}

/// NSCC's parameters scaled to this fabric: the constants scale with the BDP over the star's
/// base RTT (4.2 to 4.7 us, so `network_rtt` 5 us against htsim's 12 us), and the target
/// queueing delay is 2 us, under Kmin (5.1 us of queueing at every rate here). NSCC cuts only
/// on an ACK that is both marked and over the target, by the *average* delay's excess, and an
/// unmarked ACK over the target pulls that average down; with htsim's 6 us target, just past
/// Kmin where few packets are marked, 16 flows at 25 Gbit/s sat at 12.5 us of queueing with
/// Jain 0.79.
const NSCC: [&str; 2] = ["network_rtt=5", "target_qdelay=2"];

/// NSCC ([`NSCC`], the switch marking with htsim's ramp, [`pmax`]) in every cell: the issue's
/// bars, with the mean queue under half of Kmax. Measured: utilisation 1.000, Jain 0.967 or
/// more, the queue 0.35 to 0.46 Kmax (it settles where marks become frequent, above Kmin: the
/// marked-and-late case is the only one that cuts), no PFC.
#[test]
fn nscc_fills_the_link_below_half_of_kmax_without_pfc() {
    let e = Expect {
        max_queue: |g| kmax(g) as f64 / 2.0,
        ..FULL
    };
    check("nscc", &NSCC, &matrix(), &e);
}

/// NSCC's rule that a mark alone does not cut (htsim `updateCwndOnAck_NSCC`: a marked ACK
/// under the target delay changes nothing; only a marked ACK over it decreases, by the
/// average delay's excess over the target): the delay, not the marks, sets where the queue
/// settles. With the switch marking every packet that finds a frame queued (a step at 1100
/// bytes), N flows into one 100 Gbit/s port at htsim's 6 us target keep the link full
/// (utilisation >= 0.99; a mark-driven controller would cut on every ACK) and the mean
/// queueing delay at most 0.25 us over the target. Measured (queueing delay, us): N=2 2.33
/// (the flows hold, growing only by eta), 8 4.12, 16 6.05, 32 5.48, 64 5.06; Jain 0.89 to
/// 1.00 (with every packet marked only eta and the cuts move windows, so fairness comes
/// slowly; it is not part of the claim).
#[test]
fn nscc_holds_the_queue_at_its_target_delay_when_every_packet_is_marked() {
    let gbps = 100;
    let target_us = 6.0;
    let mut bad = Vec::new();
    for n in [2usize, 8, 16, 32, 64] {
        let params = fixed(&["network_rtt=5", "target_qdelay=6"]);
        let mut s = scenario(SHORT, "nscc", &params, n, gbps);
        let ecn = s.switch.ecn.as_mut().expect("the matrix marks");
        ecn.step_bytes = Some(1100);
        let o = run_scenario(s, SHORT, n, gbps);
        let delay = queue_us(o.queue_mean, gbps);
        println!("N={n}: queueing delay {delay:.2} us (target {target_us} us)");
        let ok = o.util >= 0.99
            && delay <= target_us + 0.25
            && o.pauses_after_warmup == 0
            && o.qp_errors == 0
            && o.failed == 0;
        if !ok {
            bad.push(format!("{} queueing delay {delay:.2} us", o.line()));
        }
    }
    assert!(
        bad.is_empty(),
        "nscc past its target in:\n{}",
        bad.join("\n")
    );
}

/// NVIDIA's RTT-based controller (DOCA PCC's `rtt_template`, see `roce_proto::cc::nvidia_rtt`).
/// Its defaults are the reference's, unscaled: base_rtt 13 us (the star's base RTT is 4.2 to
/// 4.7 us, so it cuts from 8.3 to 8.8 us of queueing, under Kmax's 20.5 us at every rate),
/// cuts of 10 % per RTT above it and 20 % after a CNP or from max_delay (150 us), 5 % of the
/// line rate added per RTT at or below base_rtt, a new flow at the line rate.
///
/// With those defaults 2 flows meet the issue's bars in the short window at every rate
/// (utilisation 0.980 or more, Jain 0.997 or more, the queue 0.47 to 0.68 Kmax). More flows do
/// not, and cannot: N flows add N·5 % of the line per RTT under base_rtt and take off 10 % of
/// what they send per RTT above it, so from N = 3 the increase outweighs the cut and the queue
/// settles where the stronger cuts start, at max_delay (16 flows at 400 Gbit/s: 8.6 MB, 172 us
/// of queueing; 8 and 16 flows at 25 and 100 Gbit/s: PFC after warm-up). The reference's AI is
/// sized for the hardware's probe rate and fabrics it does not state. With the additive step at
/// 1/1000 of the line rate (`ai=1049`, TIMELY's δ here) the loop converges; the start at line
/// rate takes longer than the short window to drain (8 flows at 400 Gbit/s: 0.766 over
/// 1 to 1.5 ms), so these cells are measured over 3.5 to 4 ms ([`NVIDIA_RTT_WINDOW`]):
/// every cell but 16 flows at 25 and 100 Gbit/s meets every bar (utilisation 0.932 or more,
/// Jain 0.981 or more, the queue at most 0.16 Kmax, no PFC). 16 flows starting at the line rate
/// at 25 and 100 Gbit/s fill every ingress to PFC's threshold; at that RTT (300 us or more)
/// the cuts come once per round trip, several flows reach the floor (1/16384 of the line rate:
/// a packet per 5.8 ms at 25 Gbit/s) and stall, and the rest hold the queue at the PFC bound
/// (Jain 0.50 and 0.78, 5 flows stalled at 25 Gbit/s). Starting those flows at 1/16 of the line
/// rate (`new_flow_rate=65536`, their fair share) they meet every bar (utilisation 0.951 and
/// 0.966, Jain 0.984 and 0.993).
#[test]
fn nvidia_rtt_fills_the_link_below_kmax_without_pfc() {
    let two: Vec<(usize, u64)> = GBPS.iter().map(|&g| (2, g)).collect();
    check("nvidia-rtt", &[], &two, &FULL);
    let sixteen = [(16, 25), (16, 100)];
    let rest: Vec<(usize, u64)> = matrix()
        .into_iter()
        .filter(|c| !sixteen.contains(c))
        .collect();
    let w = NVIDIA_RTT_WINDOW;
    check_in(w, "nvidia-rtt", |_| fixed(&["ai=1049"]), &rest, &FULL);
    let p = ["ai=1049", "new_flow_rate=65536"];
    check_in(w, "nvidia-rtt", |_| fixed(&p), &sixteen, &FULL);
}

/// 0.5 ms measured after 3.5 ms of warm-up: nvidia-rtt's start at the line rate drains by then.
const NVIDIA_RTT_WINDOW: Window = Window {
    duration_us: 4_000.0,
    warmup_us: 3_500.0,
};

/// The whole matrix (25, 100 and 400 Gbit/s) over a long window ([`LONG`]: 5 ms measured after
/// 5 ms of warm-up), held to the issue's bars (HPCC: its near-zero queue) in every cell where
/// it settles there. Debug builds run about 7.5 s of CPU per 25 or 100 Gbit/s cell, so these
/// are `#[ignore]`d in the debug suite and `tools/test.sh` runs them optimised, as CI does
/// (the bench profile, whose dependencies the bench compile check has already built: the whole
/// module in about 10 s on 2 cores): `cargo test --profile bench -p roce-fabric --test it
/// cc_validation -- --ignored --nocapture`.
///
/// Measured in this window and still short of a bar with the parameters of the short tests
/// above, and why:
/// - (closed) dctcp, 8 flows at 400 Gbit/s ran at 0.890 before DCTCP had its window: the
///   queue overshot K before the first marks came back, every flow was cut two or three times
///   while it drained, and the link then ran empty while the flows refilled. The window the
///   HPCC authors' ns-3 runs DCTCP with (`HAS_WIN 1`, `VAR_WIN 1`) bounds that overshoot; with
///   it the cell runs at 1.000 (`dctcp_meets_the_issue_bars`).
/// - (closed) dcqcn-mlx, 2 flows at 400 Gbit/s: Jain 0.551 (0.534 over 30 to 40 ms), and 16
///   at 100 Gbit/s 0.947, while the byte counter's 32767 was read as bytes: it raised the
///   target once per 32 KB sent, 450 times as often as the 300 us timer at 400 Gbit/s, so a
///   flow's increase was proportional to its rate and the fast flow kept its lead. Read in
///   64-byte units as Google's Isekai models this firmware (`dcqcn::BYTE_RESET_UNIT`: 2 MiB),
///   the cells reached Jain 0.999 and 0.984 with QCN's target reset, which these tests then
///   added (see the next two entries).
/// - (closed) dcqcn-mlx, 2 flows at 25 Gbit/s: Jain 0.64 while these tests added QCN's target
///   reset (`target_reset=1`) to the preset, which the firmware documents nowhere and the HPCC
///   authors' ns-3 model does not have: after a cut it sent the small flow's target to an
///   eighth, and the small flow never got back. The claim here that ns-3 did the same (0.665)
///   came from our fabric with the reset left on, not from ns-3. The authors' ns-3 itself,
///   built and run beside ours on one HPCC config (2 hosts to 1 at 25 Gbit/s, run.py's DCQCN
///   settings with these thresholds, 40 MB each), finishes the two flows within 1% of each
///   other (27.09 and 27.33 ms; with the second starting 1 ms later 26.44 and 27.97 ms), and
///   `roce sim hpcc` of the same files within 3% (27.80 and 28.57 ms). Without the reset the
///   cell runs at Jain 0.9997 (`dcqcn_mlx_meets_every_bar_as_its_reference_model`).
/// - dcqcn-mlx, 2 flows at 400 Gbit/s with the byte counter on (as shipped): Jain 0.835 over
///   10 to 20 ms, every other bar met. At 200 Gbit/s a flow sends 2 MiB every 84 us, so its
///   byte counter raises its target 3.6 times as often as the 300 us timer, and the faster
///   flow raises its target faster; the flows keep their split. The reference model raises on
///   the timer only, and so does the cell with `rpg_byte_reset=0` (Jain 0.9997); ns-3 and
///   `roce sim hpcc` finish 2 x 400 MB at 400 Gbit/s within 0.4% and 2% of each other. Held
///   to every other bar and Jain >= 0.8.
/// - (closed) patched-timely, 2 flows at 25 Gbit/s, ran at 0.895 while RTT samples came one
///   per ACK request (every 32 packets: 21 us at 12.5 Gbit/s, twice the RTT): the queue
///   oscillated around the patch's fixed point with a period of about 2 ms and ran empty in
///   the troughs. The HPCC authors' ns-3 model, whose once-per-RTT update `per_rtt` follows,
///   acknowledges every packet (`L2_ACK_INTERVAL 1`), so its update comes one RTT after the
///   last; CoNEXT'16's fluid model updates once per max(Seg/R, minRTT). With an ACK per
///   packet (`ack_each`, now the default) the cell runs at 0.986
///   (`patched_timely_updating_once_per_rtt_stays_under_its_fixed_point`).
mod long_window {
    use super::*;

    /// 5 ms measured after 5 ms of warm-up: dcqcn-paper's additive recovery takes 3 to 5 ms.
    const LONG: Window = Window {
        duration_us: 10_000.0,
        warmup_us: 5_000.0,
    };

    /// Every (N, rate) but `except`.
    fn cells(except: &[(usize, u64)]) -> Vec<(usize, u64)> {
        matrix()
            .into_iter()
            .filter(|c| !except.contains(c))
            .collect()
    }

    /// DCTCP as its paper defines it and as it runs by default: the switch marks every packet
    /// above K (a step, here at Kmin, SIGCOMM'10 section 3.1), alpha follows the fraction of
    /// marked packets, a flow adds one 1 KB packet per 5 us base RTT (`rate_ai` = 1638
    /// Mbit/s), and its window (the BDP scaled by the rate, ns-3's VAR_WIN) bounds what it has
    /// in flight. Every cell meets every bar: utilisation 1.000, Jain 0.984 or more, the queue
    /// at Kmin (at most 0.29 Kmax). Without the window 8 flows at 400 Gbit/s ran at 0.890
    /// (held to 0.88); with RED marking and 1.5 % of the line rate per window (the defaults
    /// before) 8 flows at 25 Gbit/s ran at 0.874.
    #[test]
    #[ignore = "long window: tools/test.sh runs it optimised (see the module docs)"]
    fn dctcp_meets_the_issue_bars() {
        check_in(LONG, "dctcp", |_| Vec::new(), &cells(&[]), &FULL);
    }

    /// HPCC: every cell, Jain included (0.988 or more; 8 flows at 25 Gbit/s reached 0.958
    /// here before HPCC had its window), the queue under 2 us of line rate (at most 0.67 us;
    /// 13.5 KB with 16 flows at 400 Gbit/s).
    #[test]
    #[ignore = "long window: tools/test.sh runs it optimised (see the module docs)"]
    fn hpcc_meets_every_bar_with_its_near_zero_queue() {
        let e = Expect {
            max_queue: |g| 2e-6 * g as f64 * 1e9 / 8.0,
            ..FULL
        };
        check_in(LONG, "hpcc", |_| fixed(&["base_rtt=5"]), &cells(&[]), &e);
    }

    /// dcqcn-mlx as the HPCC authors' ns-3 models this firmware (its increases on the 300 us
    /// timer only, `rpg_byte_reset=0`, [`mlx_timer_only`]) meets every bar in every cell:
    /// utilisation 0.966 or more, Jain 0.998 or more, the queue at most 0.33 Kmax, PFC only
    /// while the start drains.
    #[test]
    #[ignore = "long window: tools/test.sh runs it optimised (see the module docs)"]
    fn dcqcn_mlx_meets_every_bar_as_its_reference_model() {
        check_in(LONG, "dcqcn-mlx", mlx_timer_only, &cells(&[]), &FULL);
    }

    /// dcqcn-mlx as shipped, its byte counter on: every cell but 2 flows at 400 Gbit/s meets
    /// every bar (utilisation 0.972 or more, Jain 0.998 or more, the queue at most 0.34 Kmax);
    /// that cell keeps the link full at Jain 0.86 (see the module docs).
    #[test]
    #[ignore = "long window: tools/test.sh runs it optimised (see the module docs)"]
    fn dcqcn_mlx_with_its_byte_counter_meets_every_bar_but_at_2x400() {
        check_in(LONG, "dcqcn-mlx", mlx_params, &cells(&[(2, 400)]), &FULL);
        let byte_counter = Expect {
            min_jain: 0.8,
            ..FULL
        };
        check_in(LONG, "dcqcn-mlx", mlx_params, &[(2, 400)], &byte_counter);
    }

    /// dcqcn-paper: 8 and 16 flows (0.2 to 0.35 in 1 ms) meet every bar once the additive
    /// recovery has run: utilisation 0.96 or more, Jain 0.974 or more, at every rate.
    #[test]
    #[ignore = "long window: tools/test.sh runs it optimised (see the module docs)"]
    fn dcqcn_paper_meets_every_bar() {
        check_in(LONG, "dcqcn-paper", |_| Vec::new(), &cells(&[]), &FULL);
    }

    /// TIMELY updating once per RTT (its default, as the HPCC authors' ns-3 `HandleAckTimely`
    /// acts on an ACK only past the sequence sent at the last update) on an ACK per packet
    /// (its default, as that model acknowledges): every cell meets every bar (utilisation
    /// 1.000, Jain 0.991 or more, the queue inside its RTT band, under Kmax: at most 760 KB at
    /// 400 Gbit/s). With coalesced ACKs too (`ack_each=0`, the default before): 16 flows at
    /// 400 Gbit/s reached Jain 0.998 there, 0.727 updating on every sample (`per_rtt=0`).
    #[test]
    #[ignore = "long window: tools/test.sh runs it optimised (see the module docs)"]
    fn timely_meets_every_bar_inside_its_rtt_band() {
        let p = ["t_low=6", "t_high=20"];
        check_in(LONG, "timely", |_| fixed(&p), &cells(&[]), &FULL);
    }

    /// Patched TIMELY updating once per RTT on an ACK per packet (its defaults, the ns-3
    /// rule and the ns-3 model's ACKs; CoNEXT'16's fluid model updates once per
    /// max(segment/R, minRTT), never per packet): every cell meets every bar (utilisation
    /// 0.951 or more, Jain 1.000), and the queue stays under the patch's fixed point. With
    /// R* = C/N and a flat RTT (g = 0, w = 1/2) the rule holds the rate when
    /// δ/2 = R*·β'·e/2, so e* = N·δ/(β'·C) = N/8 (δ = C/1000, β' = 0.008) and RTT* =
    /// RTT_ref·(1 + N/8), capped by T_high: 12.5, 20 and 20 us for 2, 8 and 16 flows, queueing
    /// of RTT* less the 5 us base RTT. Measured: 18 to 25 KB at 25 Gbit/s, 74 to 106 KB at
    /// 100, 305 to 451 KB at 400 (all under that bound). 2 flows at 25 Gbit/s ran at 0.895
    /// with one RTT sample per 32 packets (`ack_each=0`, the default before; see the module
    /// docs), 0.986 now.
    #[test]
    #[ignore = "long window: tools/test.sh runs it optimised (see the module docs)"]
    fn patched_timely_updating_once_per_rtt_stays_under_its_fixed_point() {
        let p = ["t_low=6", "t_high=20", "rtt_ref=10"];
        for (n, g) in matrix() {
            // The queue at RTT* (bytes at `g` Gbit/s): RTT_ref·(1 + N/8) capped at T_high.
            let e = Expect {
                max_queue: match n {
                    2 => |g| (12.5 - 5.0) * 1e-6 * g as f64 * 1e9 / 8.0,
                    _ => |g| (20.0 - 5.0) * 1e-6 * g as f64 * 1e9 / 8.0,
                },
                ..FULL
            };
            check_in(LONG, "patched-timely", |_| fixed(&p), &[(n, g)], &e);
        }
    }
}
