//! The outage report of a run with failures: every flow's rate in time bins (so a stall shows),
//! which flows stalled and for how long, when the last stall ended, and what the failure cost
//! (frames and bytes lost, retransmissions, failed flows).

use serde::{Deserialize, Serialize};

use crate::record::series::Row;
use roce_proto::time::{Duration, Instant};

/// A flow is stalled in a bin where it moves less than this fraction of its rate before the
/// failure.
pub const STALL_FRACTION: f64 = 0.1;

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
    /// Flows that stalled (a bin after the failure under a tenth of their rate before it).
    pub stalled_flows: Vec<usize>,
    /// The longest run of stalled bins of any flow, µs.
    pub longest_stall_us: f64,
    /// From the failure to the end of the last stalled bin of any flow, µs (0: none stalled).
    pub time_to_recover_us: f64,
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
    /// The report from the per-flow bins, the failure time and the measurement start.
    pub fn new(
        flow_bins_gbps: Vec<Vec<f64>>,
        bin_us: f64,
        failure_at_us: f64,
        warm_us: f64,
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
        let mut stalled_flows = Vec::new();
        let (mut longest, mut last_end) = (0usize, None);
        for (f, b) in flow_bins_gbps.iter().enumerate() {
            let floor = before_gbps[f] * STALL_FRACTION;
            let mut run = 0;
            let mut stalled = false;
            for (i, &g) in b.iter().enumerate().skip(fail_bin) {
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
        Outage {
            failure_at_us,
            bin_us,
            time_to_recover_us: last_end
                .map_or(0.0, |e| (e as f64 * bin_us - failure_at_us).max(0.0)),
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
        let _ = writeln!(
            s,
            "outage at {:.1} us: {} flows stalled (longest {:.1} us), recovered after {:.1} us; lost {} frames ({} B), retransmitted {}, failed flows {}",
            self.failure_at_us,
            self.stalled_flows.len(),
            self.longest_stall_us,
            self.time_to_recover_us,
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
        let o = Outage::new(b, 200.0, 400.0, 0.0);
        assert_eq!(o.before_gbps, [40.0, 40.0]);
        assert_eq!(o.stalled_flows, [1]);
        assert_eq!(o.longest_stall_us, 400.0);
        assert_eq!(o.time_to_recover_us, 400.0);
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
