//! The metrics a comparison shows and how each is read from a run's summary: the fabric's
//! figures always, the FCT slowdowns when the flows are finite, the step times and slowdowns of
//! collectives when the scenario runs any.

use crate::experiment::summary::RunSummary;
use crate::flows::collective::CollectiveReport;
use crate::flows::fct::SlowdownBin;

/// A metric of a comparison: its name and how to read it from a run's summary (`NaN` where the
/// run has no such figure).
pub type Metric = (&'static str, fn(&RunSummary) -> f64);

/// The metrics a comparison shows, in table order.
pub const METRICS: &[Metric] = &[
    ("goodput_gbps", |s| s.total_goodput_gbps),
    ("utilisation", |s| s.bottleneck_utilisation),
    ("jain", |s| s.jain_fairness),
    ("queue_mean_kb", |s| s.queue_mean_bytes / 1e3),
    ("queue_p99_kb", |s| s.queue_p99_bytes as f64 / 1e3),
    ("pfc_frames", |s| s.pfc_pause_frames as f64),
    ("ecn_marked", |s| s.ecn_marked as f64),
    ("cnp_sent", |s| s.cnp_sent as f64),
    ("retransmitted", |s| s.recovery.retransmitted as f64),
    ("failed_flows", |s| s.failed_flows as f64),
];

/// Slowdown percentiles over a run's finished flows (FCT over the flow's FCT alone on an idle
/// fabric), shown when every run of a grid has finite flows that finished.
pub const FCT_METRICS: &[Metric] = &[
    ("slowdown_p50", |s| fct_pctl(s, |b| b.p50)),
    ("slowdown_p95", |s| fct_pctl(s, |b| b.p95)),
    ("slowdown_p99", |s| fct_pctl(s, |b| b.p99)),
];

/// The iterations of a run's collectives (every collective's pooled), shown when every run of
/// a grid has a collective. A step is an iteration's time from the previous one's end at the
/// slowest member to its own, compute phase included; its ideal is the compute phase plus the
/// same iteration's communication on the idle fabric (the summary's `idle_comm_us`).
pub const COLLECTIVE_METRICS: &[Metric] = &[
    ("iterations", |s| iterations(&s.collectives).count() as f64),
    ("step_mean_us", |s| step_mean_us(&s.collectives)),
    ("step_p99_us", |s| step_p99_us(&s.collectives)),
    ("step_slowdown", |s| step_slowdown(&s.collectives)),
    ("comm_slowdown", |s| comm_slowdown(&s.collectives)),
];

/// One completed iteration of a collective.
struct Iteration {
    step_us: f64,
    compute_us: f64,
    idle_comm_us: f64,
    slowdown: f64,
}

fn iterations(c: &[CollectiveReport]) -> impl Iterator<Item = Iteration> + '_ {
    c.iter().flat_map(|c| {
        c.step_us
            .iter()
            .zip(&c.slowdown)
            .map(move |(&step_us, &slowdown)| Iteration {
                step_us,
                compute_us: c.collective.compute_us,
                idle_comm_us: c.idle_comm_us,
                slowdown,
            })
    })
}

/// Mean step time, µs.
fn step_mean_us(c: &[CollectiveReport]) -> f64 {
    mean(iterations(c).map(|i| i.step_us))
}

/// 99th-percentile step time, µs.
fn step_p99_us(c: &[CollectiveReport]) -> f64 {
    let mut v: Vec<f64> = iterations(c).map(|i| i.step_us).collect();
    v.sort_by(f64::total_cmp);
    nearest_rank(&v, 0.99)
}

/// Mean of each step time over its ideal: the compute phase plus the idle fabric's
/// communication.
fn step_slowdown(c: &[CollectiveReport]) -> f64 {
    mean(iterations(c).map(|i| i.step_us / (i.compute_us + i.idle_comm_us).max(1e-9)))
}

/// Mean of each communication time over the idle fabric's (the summary's `slowdown`).
fn comm_slowdown(c: &[CollectiveReport]) -> f64 {
    mean(iterations(c).map(|i| i.slowdown))
}

/// The mean, `NaN` of nothing.
fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (n, sum) = xs.fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

/// The element at `int(len * p)` of `sorted` (the FCT percentiles' convention), `NaN` of
/// nothing.
fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

fn fct_pctl(s: &RunSummary, pick: fn(&SlowdownBin) -> f64) -> f64 {
    s.fct
        .as_ref()
        .and_then(|f| f.overall())
        .map_or(f64::NAN, |b| pick(&b))
}

/// The metrics of a grid whose runs left `summaries`: [`METRICS`], [`FCT_METRICS`] when every
/// run has flow completion times, and [`COLLECTIVE_METRICS`] when every run has a collective.
pub fn metrics_of(summaries: &[RunSummary]) -> Vec<Metric> {
    let mut m = METRICS.to_vec();
    let every = |has: fn(&RunSummary) -> bool| !summaries.is_empty() && summaries.iter().all(has);
    if every(|s| s.fct.is_some()) {
        m.extend_from_slice(FCT_METRICS);
    }
    if every(|s| !s.collectives.is_empty()) {
        m.extend_from_slice(COLLECTIVE_METRICS);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flows::collective::{Algorithm, Collective};

    fn report(compute_us: f64, idle_comm_us: f64, step_us: &[f64]) -> CollectiveReport {
        let comm_us: Vec<f64> = step_us.iter().map(|s| s - compute_us).collect();
        CollectiveReport {
            collective: Collective {
                hosts: vec![0, 1],
                bytes: 4096,
                iterations: 10,
                algorithm: Algorithm::Ring,
                compute_us,
            },
            slowdown: comm_us.iter().map(|c| c / idle_comm_us).collect(),
            step_us: step_us.to_vec(),
            comm_us,
            idle_comm_us,
        }
    }

    #[test]
    fn collective_figures_pool_every_iteration_of_every_collective() {
        // Ideal steps: 10 + 10 = 20 us and 0 + 40 = 40 us.
        let c = [
            report(10.0, 10.0, &[20.0, 30.0, 50.0]),
            report(0.0, 40.0, &[80.0]),
        ];
        assert_eq!(iterations(&c).count(), 4);
        assert_eq!(step_mean_us(&c), 45.0);
        // int(4 * 0.99) = 3: the largest of four.
        assert_eq!(step_p99_us(&c), 80.0);
        // (1 + 1.5 + 2.5 + 2) / 4.
        assert_eq!(step_slowdown(&c), 1.75);
        // Communication: (1 + 2 + 4 + 2) / 4.
        assert_eq!(comm_slowdown(&c), 2.25);
        let none = [report(10.0, 10.0, &[])];
        assert!(step_mean_us(&none).is_nan() && step_p99_us(&none).is_nan());
        assert!(step_slowdown(&[]).is_nan() && comm_slowdown(&[]).is_nan());
    }
}
