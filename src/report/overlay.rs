//! What `roce sim compare`'s overlays draw per variant: the mean over its seeds and the band
//! from the smallest to the largest, of a time series ([`time_band`]) or of the FCT slowdown per
//! flow-size bin ([`FctBySize`]).

use std::fmt::Write as _;

use roce_fabric::experiment::compare::csv_field;
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::flows::fct::slowdown_bins;

/// One point of a variant's line: at `x`, the mean over the seeds that have a figure there and
/// their smallest and largest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandPoint {
    /// Time (µs) or flow size (bytes).
    pub x: f64,
    /// Mean over the seeds.
    pub mean: f64,
    /// Smallest of the seeds.
    pub lo: f64,
    /// Largest of the seeds.
    pub hi: f64,
    /// Seeds with a figure at `x`.
    pub n: usize,
}

impl BandPoint {
    /// Of the figures `ys` at `x` (`None` without any).
    fn of(x: f64, ys: &[f64]) -> Option<BandPoint> {
        if ys.is_empty() {
            return None;
        }
        Some(BandPoint {
            x,
            mean: ys.iter().sum::<f64>() / ys.len() as f64,
            lo: ys.iter().copied().fold(f64::INFINITY, f64::min),
            hi: ys.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n: ys.len(),
        })
    }
}

/// A variant's line and band: its label and points by `x`.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// The variant's label.
    pub name: String,
    /// The points, by `x`.
    pub pts: Vec<BandPoint>,
}

/// The mean and the smallest and largest of `runs`' time series (each `(µs, value)` by time) at
/// every time any of them has a sample. The runs sample at one interval, but a recorder keeps
/// an idle stretch as its first and last sample: a run's value holds from its sample to its
/// next, so a time one run sampled and another kept in such a stretch gets that stretch's value.
/// A run counts from its first sample to its last.
pub fn time_band(runs: &[&[(f64, f64)]]) -> Vec<BandPoint> {
    let mut times: Vec<f64> = runs.iter().flat_map(|r| r.iter().map(|p| p.0)).collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    // Per run, the index of its last sample at or before the current time.
    let mut at: Vec<usize> = vec![0; runs.len()];
    let mut ys = Vec::with_capacity(runs.len());
    times
        .into_iter()
        .filter_map(|t| {
            ys.clear();
            for (r, i) in runs.iter().zip(at.iter_mut()) {
                while r.get(*i + 1).is_some_and(|p| p.0 <= t) {
                    *i += 1;
                }
                let inside =
                    r.first().is_some_and(|p| p.0 <= t) && r.last().is_some_and(|p| t <= p.0);
                if let (true, Some(p)) = (inside, r.get(*i)) {
                    ys.push(p.1);
                }
            }
            BandPoint::of(t, &ys)
        })
        .collect()
}

/// Upper edges of the flow-size bins, bytes: 1, 2, 5, 10, 20, 50, ... (a 1-2-5 series, even
/// steps on a log axis), up to the first at or above `max`.
pub fn size_edges(max: u64) -> Vec<u64> {
    let mut edges = Vec::new();
    let mut decade: u64 = 1;
    loop {
        for m in [1, 2, 5] {
            let e = decade.saturating_mul(m);
            edges.push(e);
            if e >= max {
                return edges;
            }
        }
        decade = decade.saturating_mul(10);
    }
}

/// The FCT slowdown per flow-size bin of each variant: per bin (flows up to the bin's upper
/// edge and above the one before, a 1-2-5 series of edges) each seed's p50 and p95 slowdown over
/// its flows in the bin (the `fct_analysis.py` convention: slowdowns below 1 count as 1), then
/// the mean and the smallest and largest over the seeds with flows in the bin.
#[derive(Clone, Debug, PartialEq)]
pub struct FctBySize {
    /// Per variant, the p50 slowdown by bin (`x` the bin's upper edge, bytes).
    pub p50: Vec<Band>,
    /// Per variant, the p95 slowdown by bin.
    pub p95: Vec<Band>,
}

impl FctBySize {
    /// Of `variants`: each its label and its runs' summaries. `None` when no run has a
    /// finished flow.
    pub fn of(variants: &[(String, Vec<&RunSummary>)]) -> Option<FctBySize> {
        let sizes = || {
            variants
                .iter()
                .flat_map(|(_, runs)| runs.iter())
                .filter_map(|s| s.fct.as_ref())
                .flat_map(|f| f.flows.iter().map(|r| r.run.size))
        };
        let edges = size_edges(sizes().max()?);
        let (mut p50, mut p95) = (Vec::new(), Vec::new());
        for (name, runs) in variants {
            // Per run, per bin: the bin's p50 and p95, when the run has flows in it.
            let per_run: Vec<Vec<Option<(f64, f64)>>> = runs
                .iter()
                .map(|s| {
                    let flows: Vec<(u64, f64)> = s
                        .fct
                        .iter()
                        .flat_map(|f| &f.flows)
                        .map(|r| (r.run.size, r.slowdown))
                        .collect();
                    by_bin(&edges, &flows)
                })
                .collect();
            let band = |pick: fn((f64, f64)) -> f64| -> Vec<BandPoint> {
                edges
                    .iter()
                    .enumerate()
                    .filter_map(|(b, &e)| {
                        let ys: Vec<f64> = per_run
                            .iter()
                            .filter_map(|r| r.get(b).copied().flatten().map(pick))
                            .collect();
                        BandPoint::of(e as f64, &ys)
                    })
                    .collect()
            };
            p50.push(Band {
                name: name.clone(),
                pts: band(|p| p.0),
            });
            p95.push(Band {
                name: name.clone(),
                pts: band(|p| p.1),
            });
        }
        Some(FctBySize { p50, p95 })
    }

    /// As CSV: `variant,size_bytes,runs,p50_mean,p50_min,p50_max,p95_mean,p95_min,p95_max`, one
    /// line per variant and bin with flows (`size_bytes` the bin's upper edge, `runs` the seeds
    /// with flows in it).
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "variant,size_bytes,runs,p50_mean,p50_min,p50_max,p95_mean,p95_min,p95_max\n",
        );
        for (a, b) in self.p50.iter().zip(&self.p95) {
            for (x, y) in a.pts.iter().zip(&b.pts) {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{}",
                    csv_field(&a.name),
                    x.x,
                    x.n,
                    x.mean,
                    x.lo,
                    x.hi,
                    y.mean,
                    y.lo,
                    y.hi
                );
            }
        }
        s
    }
}

/// Per bin of `edges`, the p50 and p95 slowdown of `flows` (size, slowdown) in it, `None` for
/// a bin without flows.
fn by_bin(edges: &[u64], flows: &[(u64, f64)]) -> Vec<Option<(f64, f64)>> {
    let mut bins: Vec<Vec<(u64, f64)>> = vec![Vec::new(); edges.len()];
    for &(size, slowdown) in flows {
        if let Some(bin) = bins.get_mut(edges.partition_point(|&e| e < size)) {
            bin.push((size, slowdown));
        }
    }
    bins.iter()
        .map(|rows| slowdown_bins(rows, 100).pop().map(|b| (b.p50, b.p95)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_band_holds_a_run_through_its_idle_stretch_and_not_past_its_end() {
        // Run a sampled every µs; run b kept 1..3 µs as one idle stretch (its first and last
        // sample) and ended at 3 µs.
        let a = [
            (0.0, 10.0),
            (1.0, 20.0),
            (2.0, 30.0),
            (3.0, 40.0),
            (4.0, 50.0),
        ];
        let b = [(0.0, 0.0), (1.0, 6.0), (3.0, 6.0)];
        let band = time_band(&[&a, &b]);
        let got: Vec<(f64, f64, f64, f64, usize)> = band
            .iter()
            .map(|p| (p.x, p.mean, p.lo, p.hi, p.n))
            .collect();
        assert_eq!(
            got,
            [
                (0.0, 5.0, 0.0, 10.0, 2),
                (1.0, 13.0, 6.0, 20.0, 2),
                (2.0, 18.0, 6.0, 30.0, 2),
                (3.0, 23.0, 6.0, 40.0, 2),
                (4.0, 50.0, 50.0, 50.0, 1),
            ]
        );
        assert!(time_band(&[]).is_empty());
        assert!(time_band(&[&[]]).is_empty());
    }

    #[test]
    fn size_edges_are_a_one_two_five_series_up_to_the_largest_flow() {
        assert_eq!(size_edges(1), [1]);
        assert_eq!(size_edges(3), [1, 2, 5]);
        assert_eq!(size_edges(1000), [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]);
        assert_eq!(size_edges(1001).last(), Some(&2000));
        assert!(size_edges(u64::MAX).len() < 70);
    }

    #[test]
    fn flows_fall_in_the_bin_of_the_first_edge_at_or_above_their_size() {
        let edges = size_edges(5000);
        // 20 flows of 1000 B (slowdowns 1..20) and one of 1001 B; below 1 counts as 1.
        let mut flows: Vec<(u64, f64)> = (1..=20).map(|i| (1000, f64::from(i))).collect();
        flows.push((1001, 0.5));
        let bins = by_bin(&edges, &flows);
        assert_eq!(bins.len(), edges.len());
        // int(20 * 0.5) = 10th and int(20 * 0.95) = 19th of 1..20.
        assert_eq!(bins[9], Some((11.0, 20.0)));
        assert_eq!(edges[9], 1000);
        assert_eq!(bins[10], Some((1.0, 1.0)));
        assert_eq!(bins.iter().flatten().count(), 2);
    }
}
