//! The outage report of a run with failures: every flow's rate in time bins (so a stall shows),
//! which flows stalled and for how long, when the last stall ended, and what the failure cost
//! (frames and bytes lost, retransmissions, failed flows).

use serde::{Deserialize, Serialize};

use crate::record::series::Row;
use roce_proto::time::{Duration, Instant};

/// A flow is stalled in a bin where it moves less than this fraction of its rate before the
/// failure.
pub const STALL_FRACTION: f64 = 0.1;

/// The flows have recovered in the first bin where together they move at least this fraction
/// of their rate before the failure.
pub const RECOVERED_FRACTION: f64 = 0.9;

/// What the failures of a run did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    /// When the first failure hit, µs.
    pub failure_at_us: f64,
    /// Width of the rate bins, µs.
    pub bin_us: f64,
    /// Per flow, its goodput in each bin from time 0, Gbit/s.
    pub flow_bins_gbps: Vec<Vec<f64>>,
    /// Per flow, its mean goodput in the bins between warm-up and the failure, Gbit/s.
    pub before_gbps: Vec<f64>,
    /// Flows that stalled (a bin after the failure, before they finished, under a tenth of
    /// their rate before it).
    pub stalled_flows: Vec<usize>,
    /// The longest run of stalled bins of any flow, µs.
    pub longest_stall_us: f64,
    /// From the failure to the end of the last stalled bin of any flow, µs (0: none stalled).
    pub stalls_end_us: f64,
    /// From the failure to the end of the first bin in which the flows still running move at
    /// least [`RECOVERED_FRACTION`] of what they moved before it, once they had fallen below
    /// (0 when they never fell below); `None` when they are not back by the end of the run.
    pub time_to_recover_us: Option<f64>,
    /// Frames lost to failures (dead links, reboots, no route).
    pub frames_lost: u64,
    /// Their bytes.
    pub bytes_lost: u64,
    /// Request packets retransmitted, over all flows.
    pub retransmitted: u64,
    /// Flows that failed or stalled for good.
    pub failed_flows: usize,
}

/// Per flow, the mean of the sampled rates in each `bin` up to `end` (a sample belongs to the
/// bin its interval ends in); a row's repeats are samples `interval` apart that moved nothing.
pub fn bins(
    rows: &[Row],
    interval: Duration,
    flows: usize,
    bin: Duration,
    end: Instant,
) -> Vec<Vec<f64>> {
    let ns = Duration::NANOSECOND;
    let (bin, iv) = (bin.max(ns), interval.max(ns));
    let n = (end - Instant::ZERO).div_ceil(bin) as usize;
    let mut sum = vec![vec![0.0; n]; flows];
    let mut count = vec![0u64; n];
    let bin_of = |t: Instant| ((t - ns) - Instant::ZERO).div_floor(bin) as usize;
    for r in rows {
        let b = bin_of(r.at());
        if b >= n {
            continue;
        }
        count[b] += 1;
        for (f, g) in r.flow_gbps.iter().enumerate().take(flows) {
            sum[f][b] += g;
        }
        // The repeats, bin by bin.
        let mut j = 1;
        while j <= r.repeats {
            let t = r.at() + iv.saturating_mul(j);
            let b = bin_of(t);
            let Some(c) = count.get_mut(b) else { break };
            let bin_end = Instant::ZERO + bin.saturating_mul(b as u64 + 1);
            let last = r.repeats.min((bin_end - r.at()).div_floor(iv));
            *c += last - j + 1;
            j = last + 1;
        }
    }
    for per_flow in &mut sum {
        for (v, c) in per_flow.iter_mut().zip(&count) {
            *v /= (*c).max(1) as f64;
        }
    }
    sum
}

impl Outage {
    /// The report from the per-flow bins, the failure time, the measurement start and when
    /// each flow finished, µs (`None`: it did not). A flow's bins from the one it finished in
    /// on are neither stalls nor part of the recovery: it had nothing left to send.
    pub fn new(
        flow_bins_gbps: Vec<Vec<f64>>,
        bin_us: f64,
        failure_at_us: f64,
        warm_us: f64,
        done_at_us: &[Option<f64>],
    ) -> Self {
        let first = (warm_us / bin_us).ceil() as usize;
        let fail_bin = (failure_at_us / bin_us).floor() as usize;
        let before_gbps: Vec<f64> = flow_bins_gbps
            .iter()
            .map(|b| {
                let lo = first.min(fail_bin.saturating_sub(1));
                let w = b.get(lo..fail_bin.min(b.len())).unwrap_or_default();
                w.iter().sum::<f64>() / (w.len().max(1) as f64)
            })
            .collect();
        // The bins a flow still had something to send in: up to the one it finished in.
        let live_bins = |f: usize| -> usize {
            let n = flow_bins_gbps.get(f).map_or(0, Vec::len);
            match done_at_us.get(f).copied().flatten() {
                Some(t) => ((t / bin_us).floor() as usize).min(n),
                None => n,
            }
        };
        let mut stalled_flows = Vec::new();
        let (mut longest, mut last_end) = (0usize, None);
        for (f, b) in flow_bins_gbps.iter().enumerate() {
            let floor = before_gbps[f] * STALL_FRACTION;
            let mut run = 0;
            let mut stalled = false;
            for (i, &g) in b.iter().enumerate().take(live_bins(f)).skip(fail_bin) {
                if before_gbps[f] > 0.0 && g < floor {
                    run += 1;
                    stalled = true;
                    longest = longest.max(run);
                    last_end = last_end.max(Some(i + 1));
                } else {
                    run = 0;
                }
            }
            if stalled {
                stalled_flows.push(f);
            }
        }
        let bins = flow_bins_gbps.iter().map(Vec::len).max().unwrap_or(0);
        // Per bin from the failure's on: (what the flows live in it moved, what they moved
        // before the failure); a bin with no live flow that ran before it ends the search.
        let totals = (fail_bin..bins).map(|i| {
            let live =
                (0..flow_bins_gbps.len()).filter(|&f| i < live_bins(f) && before_gbps[f] > 0.0);
            let (now, before) = live.fold((0.0, 0.0), |(n, b), f| {
                (n + flow_bins_gbps[f][i], b + before_gbps[f])
            });
            (i, now, before)
        });
        let mut fell = false;
        let mut recovered_bin = None;
        for (i, now, before) in totals {
            if before <= 0.0 {
                break;
            }
            let back = now >= before * RECOVERED_FRACTION;
            if back && fell {
                recovered_bin = Some(i);
                break;
            }
            fell |= !back;
        }
        let since_failure = |end_bin: usize| (end_bin as f64 * bin_us - failure_at_us).max(0.0);
        Outage {
            failure_at_us,
            bin_us,
            stalls_end_us: last_end.map_or(0.0, since_failure),
            time_to_recover_us: match (fell, recovered_bin) {
                (false, _) => Some(0.0),
                (true, Some(i)) => Some(since_failure(i + 1)),
                (true, None) => None,
            },
            longest_stall_us: longest as f64 * bin_us,
            flow_bins_gbps,
            before_gbps,
            stalled_flows,
            frames_lost: 0,
            bytes_lost: 0,
            retransmitted: 0,
            failed_flows: 0,
        }
    }

    /// The lines the summary table prints.
    pub fn lines(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let recovered = match self.time_to_recover_us {
            Some(t) => format!(
                "back to {:.0}% of the rate before after {t:.1} us",
                RECOVERED_FRACTION * 100.0
            ),
            None => format!(
                "not back to {:.0}% of the rate before by the end",
                RECOVERED_FRACTION * 100.0
            ),
        };
        let _ = writeln!(
            s,
            "outage at {:.1} us: {} flows stalled (longest {:.1} us, the last stall ended after {:.1} us), {recovered}; lost {} frames ({} B), retransmitted {}, failed flows {}",
            self.failure_at_us,
            self.stalled_flows.len(),
            self.longest_stall_us,
            self.stalls_end_us,
            self.frames_lost,
            self.bytes_lost,
            self.retransmitted,
            self.failed_flows
        );
        let _ = writeln!(s, "rate per {:.0} us bin, Gbit/s:", self.bin_us);
        for (f, b) in self.flow_bins_gbps.iter().enumerate() {
            let v: Vec<String> = b.iter().map(|g| format!("{g:5.1}")).collect();
            let _ = writeln!(s, "  flow {f:>3} {}", v.join(" "));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t_us: u64, g: &[f64]) -> Row {
        Row {
            t_ns: t_us * 1000,
            flow_gbps: g.to_vec(),
            ..Row::default()
        }
    }

    #[test]
    fn a_flow_at_zero_after_the_failure_is_a_stall_until_it_moves_again() {
        // Two flows sampled every 100 us, bins of 200 us; the failure at 400 us stops flow 1
        // for 400 us (two bins), flow 0 halves (not a stall).
        let rows: Vec<Row> = (1..=10)
            .map(|i| {
                let t = i * 100;
                let f1 = if (500..=800).contains(&t) { 0.0 } else { 40.0 };
                let f0 = if t > 400 { 20.0 } else { 40.0 };
                row(t, &[f0, f1])
            })
            .collect();
        let us = Duration::from_micros;
        let b = bins(&rows, us(100), 2, us(200), Instant::ZERO + us(1000));
        assert_eq!(b[1], [40.0, 40.0, 0.0, 0.0, 40.0]);
        let o = Outage::new(b.clone(), 200.0, 400.0, 0.0, &[None, None]);
        assert_eq!(o.before_gbps, [40.0, 40.0]);
        assert_eq!(o.stalled_flows, [1]);
        assert_eq!(o.longest_stall_us, 400.0);
        assert_eq!(o.stalls_end_us, 400.0);
        // Together 60 and 20 of 80 Gbit/s after the failure: never back to 72.
        assert_eq!(o.time_to_recover_us, None);
        // Flow 0 finished at 500 us: its bins from then on are not the failure's; flow 1 alone
        // is back in the bin ending at 1000 us.
        let o = Outage::new(b, 200.0, 400.0, 0.0, &[Some(500.0), None]);
        assert_eq!(o.stalled_flows, [1]);
        assert_eq!(o.time_to_recover_us, Some(600.0));
    }

    #[test]
    fn the_bins_after_a_flow_finished_are_not_a_stall() {
        // The flow finishes at 340 us, after the failure at 300 us that did not slow it.
        let b = vec![vec![40.0, 40.0, 40.0, 16.0, 0.0]];
        let o = Outage::new(b.clone(), 100.0, 300.0, 0.0, &[Some(340.0)]);
        assert!(o.stalled_flows.is_empty());
        assert_eq!((o.longest_stall_us, o.stalls_end_us), (0.0, 0.0));
        assert_eq!(o.time_to_recover_us, Some(0.0));
        // Unfinished, the same bins are a stall that lasts to the end.
        let o = Outage::new(b, 100.0, 300.0, 0.0, &[None]);
        assert_eq!(o.stalled_flows, [0]);
        assert_eq!(o.time_to_recover_us, None);
    }

    #[test]
    fn repeated_rows_count_as_the_samples_they_stand_for() {
        // One flow at 30 Gbit/s for 300 us, then idle to 1 ms, sampled every 100 us, bins of
        // 250 us: written out, and as one idle row repeated six times.
        let mut rows: Vec<Row> = (1..=3).map(|i| row(i * 100, &[30.0])).collect();
        let idle: Vec<Row> = (4..=10).map(|i| row(i * 100, &[])).collect();
        let mut expanded = rows.clone();
        expanded.extend(idle.iter().cloned());
        rows.push(Row {
            repeats: 6,
            ..idle[0].clone()
        });
        let (us, end) = (
            Duration::from_micros,
            Instant::ZERO + Duration::from_millis(1),
        );
        let b = bins(&expanded, us(100), 1, us(250), end);
        assert_eq!(b, bins(&rows, us(100), 1, us(250), end));
        assert_eq!(b[0], [30.0, 10.0, 0.0, 0.0]);
    }
}
