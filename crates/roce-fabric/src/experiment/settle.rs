//! Whether a run's figures describe its controller settled, and when not, why: the warnings a
//! summary carries (`warning: ...` lines in the text, `warnings` and `settled` in the JSON).
//!
//! A figure read off a run that ended inside the controller's start-up, with flows still
//! moving or PFC still holding a port, is a figure of that transient; the summary says so
//! instead of leaving the reader to find out.

use super::summary::{FlowState, RunSummary};
use super::warning::{Warning, WarningKind};
use crate::engines::ScenarioEngine;
use crate::net::fabric::Fabric;
use crate::Node;
use roce_proto::cc::CcConfig;
use roce_proto::time::{Duration, Instant};

/// Goodput of steady flows may move by this fraction between the halves of the measurement
/// window before the run is called not steady (DCQCN's sawtooth stays well inside it).
pub const STEADY_TOLERANCE: f64 = 0.10;

/// What the checks need to know of the scenario besides its fabric and summary.
#[derive(Clone, Copy, Debug)]
pub struct RunShape<'a> {
    /// The senders' controller, if any.
    pub cc: Option<&'a CcConfig>,
    /// When the measurement window opened.
    pub warm: Instant,
    /// Whether failures or link events were scheduled (goodput is then meant to move).
    pub disturbed: bool,
}

/// The settle warnings of a finished run (the CNP override is the summary's own, see
/// [`RunSummary::describe_cc`]).
pub fn warnings(shape: RunShape, f: &Fabric<ScenarioEngine>, s: &RunSummary) -> Vec<Warning> {
    let steady_flows = !s.flows.is_empty()
        && f.flow_meter
            .specs
            .iter()
            .all(|spec| spec.size_bytes.is_none())
        && s.allreduce_iter_us.is_empty();
    let mut out = Vec::new();
    if steady_flows {
        out.extend(before_settle(shape.cc, shape.warm));
        if !shape.disturbed {
            out.extend(not_steady(f, shape.warm));
        }
    }
    // A collective's flows run iteration after iteration: the summary counts its iterations.
    if s.allreduce_iter_us.is_empty() {
        out.extend(flows_unfinished(s));
    }
    out.extend(pfc_active(f));
    out.extend(super::pfc_storms::warnings(
        &s.pfc_watchdog,
        s.pfc_deadlock.as_ref(),
    ));
    out
}

/// Long-running flows measured from `warm`, before `cc` has settled.
fn before_settle(cc: Option<&CcConfig>, warm: Instant) -> Option<Warning> {
    let cc = cc?;
    let settle = cc.settle_time();
    let opens = warm - Instant::ZERO;
    (settle > opens).then(|| {
        Warning::new(
            WarningKind::BeforeSettle,
            format!(
                "the measurement opens {:.0} us into the run, before {} settles ({:.0} us: its slowest loop's time constant); set warmup_us to at least that and duration_us beyond it",
                opens.as_micros_f64(),
                cc.name(),
                settle.as_micros_f64()
            ),
        )
    })
}

/// The flows' total goodput in the first and second half of the measurement window, from the
/// recorder's samples, when they differ by more than [`STEADY_TOLERANCE`].
fn not_steady(f: &Fabric<ScenarioEngine>, warm: Instant) -> Option<Warning> {
    let rec = f.recorder()?;
    let end = f.now();
    let mid = warm + (end - warm) / 2;
    let iv = rec.interval.max(Duration::NANOSECOND);
    // (sum of goodput samples, samples) per half, (warm, mid] and (mid, end]; a row stands for
    // itself and its repeats, one interval apart.
    let mut halves = [(0.0f64, 0u64); 2];
    for r in &rec.rows {
        let total: f64 = r.flow_gbps.iter().sum();
        for (h, (lo, hi)) in halves.iter_mut().zip([(warm, mid), (mid, end)]) {
            let n = samples_within(r.at(), iv, r.repeats, lo, hi);
            h.0 += total * n as f64;
            h.1 += n;
        }
    }
    let [(a, na), (b, nb)] = halves;
    if na == 0 || nb == 0 {
        return None;
    }
    let (a, b) = (a / na as f64, b / nb as f64);
    let moved = (a - b).abs() / a.max(b).max(f64::MIN_POSITIVE);
    (moved > STEADY_TOLERANCE).then(|| {
        Warning::new(
            WarningKind::NotSteady,
            format!(
                "the flows' total goodput moved from {a:.2} to {b:.2} Gbit/s between the halves of the measurement window ({:.0}%): not settled; run longer",
                moved * 100.0
            ),
        )
    })
}

/// How many of the samples at `at + k * iv`, k = 0..=repeats, fall in (`lo`, `hi`].
fn samples_within(at: Instant, iv: Duration, repeats: u64, lo: Instant, hi: Instant) -> u64 {
    if at > hi {
        return 0;
    }
    let first = if at > lo {
        0
    } else {
        (lo - at).div_floor(iv) + 1
    };
    let last = (hi - at).div_floor(iv).min(repeats);
    (last + 1).saturating_sub(first)
}

/// Finite flows still moving at the end: their completion times are missing from the figures.
fn flows_unfinished(s: &RunSummary) -> Option<Warning> {
    let n = s
        .flows
        .iter()
        .filter(|f| f.state == FlowState::Unfinished)
        .count();
    (n > 0).then(|| {
        let done = s
            .flows
            .iter()
            .filter(|f| f.state == FlowState::Done)
            .count();
        Warning::new(
            WarningKind::FlowsUnfinished,
            format!(
                "{n} finite flows were still moving when the run ended: completion times cover the {done} that finished; run longer"
            ),
        )
    })
}

/// Transmitters PFC still held at the end.
fn pfc_active(f: &Fabric<ScenarioEngine>) -> Option<Warning> {
    let paused = f.paused_now();
    let &(node, port, prio) = paused.first()?;
    let name = match node {
        Node::Host(h) => f.host_name(h).to_owned(),
        Node::Switch(s) => format!("{}:{port}", f.switch_name(s)),
    };
    Some(Warning::new(
        WarningKind::PfcActive,
        format!(
            "PFC still paused {} transmitter queues when the run ended (first: {name} priority {prio}): the fabric had not drained",
            paused.len()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_within_counts_a_row_and_its_repeats_by_arithmetic() {
        let t = |us| Instant::ZERO + Duration::from_micros(us);
        let iv = Duration::from_micros(1);
        let walk = |at: u64, repeats: u64, lo: u64, hi: u64| {
            (0..=repeats)
                .filter(|k| (lo + 1..=hi).contains(&(at + k)))
                .count() as u64
        };
        for (at, repeats) in [(0, 0), (0, 30), (5, 10), (12, 100), (40, 3)] {
            for (lo, hi) in [(0, 10), (10, 20), (3, 4), (20, 200), (50, 60)] {
                let got = samples_within(t(at), iv, repeats, t(lo), t(hi));
                assert_eq!(
                    got,
                    walk(at, repeats, lo, hi),
                    "{at}+{repeats} in ({lo}, {hi}]"
                );
            }
        }
    }
}
