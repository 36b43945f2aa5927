//! Poisson flow arrivals with sizes from a CDF, as the HPCC simulator's
//! `traffic_gen/traffic_gen.py` makes them: every host starts flows at exponential
//! intervals whose mean makes its offered load `load` of its link, each to a uniformly
//! chosen other host, sizes interpolated from a `size cumulative_percent` table.
//!
//! The web-search and FB_Hadoop tables ship with the crate (`cdf/`, sources in its
//! README). Generation only; [`crate::flows::workload`] turns flows into a plan.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use std::io::BufRead;

use crate::hpcc::flow_file::FlowLine;
use crate::hpcc::HpccError;
use crate::limits::bounds::{excerpt, MAX_LINE_BYTES};
use crate::limits::input::Lines;
use roce_proto::time::{Duration, Instant};

/// Bytes of a CDF file (the shipped tables have a dozen lines).
const MAX_CDF_BYTES: u64 = 1 << 20;

/// A flow-size distribution: (bytes, cumulative percent) points, linear in between.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeCdf {
    points: Vec<(f64, f64)>,
}

impl SizeCdf {
    /// Parses `size percent` lines (the file named `file`), checked as `custom_rand.py`
    /// checks them: from 0 %, to 100 %, both columns strictly increasing.
    pub fn parse(file: &str, text: &str) -> Result<SizeCdf, HpccError> {
        Self::read(Lines::new(file, text.as_bytes(), usize::MAX))
    }

    fn read(mut lines: Lines<impl BufRead>) -> Result<SizeCdf, HpccError> {
        let file = lines.file().to_owned();
        let err = |line: usize, msg: String| HpccError::Malformed {
            file: file.clone(),
            line,
            msg,
        };
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut last = 0;
        while let Some((n, l)) = lines.next_line()? {
            let mut it = l.split_whitespace();
            let (Some(x), Some(y)) = (it.next(), it.next()) else {
                if l.trim().is_empty() {
                    continue;
                }
                return Err(err(n, format!("{} is not `size percent`", excerpt(l))));
            };
            let (Ok(x), Ok(y)) = (x.parse::<f64>(), y.parse::<f64>()) else {
                return Err(err(n, format!("{} is not `size percent`", excerpt(l))));
            };
            if it.next().is_some() {
                return Err(err(n, format!("{} has more than two columns", excerpt(l))));
            }
            if let Some(&(px, py)) = points.last() {
                if x <= px || y <= py {
                    return Err(err(n, "sizes and percentages must increase".into()));
                }
            } else if y != 0.0 {
                return Err(err(n, "the first point must be at 0 %".into()));
            }
            points.push((x, y));
            last = n;
        }
        if points.last().map(|p| p.1) != Some(100.0) {
            return Err(err(last.max(1), "the last point must be at 100 %".into()));
        }
        Ok(SizeCdf { points })
    }

    /// The web-search distribution (HPCC's `WebSearch_distribution.txt`).
    pub fn web_search() -> SizeCdf {
        Self::builtin(include_str!("../../cdf/websearch.txt"))
    }

    /// The Facebook Hadoop distribution (HPCC's `FbHdp_distribution.txt`).
    pub fn fb_hadoop() -> SizeCdf {
        Self::builtin(include_str!("../../cdf/fb_hadoop.txt"))
    }

    fn builtin(text: &str) -> SizeCdf {
        // The shipped tables are valid (tested); an empty one can never be used.
        Self::parse("builtin", text).unwrap_or(SizeCdf {
            points: vec![(0.0, 0.0), (1.0, 100.0)],
        })
    }

    /// A shipped table by name (`websearch`, `fb_hadoop`), else the file at `name`.
    pub fn named_or_file(name: &str) -> Result<SizeCdf, HpccError> {
        match name {
            "websearch" | "web_search" => Ok(Self::web_search()),
            "fb_hadoop" | "fbhdp" => Ok(Self::fb_hadoop()),
            path => {
                let lines = crate::hpcc::lines(path.as_ref(), MAX_LINE_BYTES)?;
                Self::read(lines.with_max_bytes(MAX_CDF_BYTES))
            }
        }
    }

    /// Mean size, bytes (`getAvg`: the trapezoids of the table).
    pub fn mean(&self) -> f64 {
        self.points
            .windows(2)
            .map(|w| (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1))
            .sum::<f64>()
            / 100.0
    }

    /// One size (`int(rand())`, at least 1, as the generator writes it).
    pub fn sample(&self, rng: &mut Pcg64) -> u64 {
        let y = rng.random::<f64>() * 100.0;
        let x = self
            .points
            .windows(2)
            .find(|w| y <= w[1].1)
            .map_or(0.0, |w| {
                w[0].0 + (w[1].0 - w[0].0) / (w[1].1 - w[0].1) * (y - w[0].1)
            });
        (x as u64).max(1)
    }
}

/// What [`poisson_flows`] generates.
#[derive(Clone, Debug, PartialEq)]
pub struct PoissonSpec {
    /// Host ids taking part (sources and destinations).
    pub hosts: Vec<usize>,
    /// Offered load per host link, 0..1.
    pub load: f64,
    /// Host link rate, bit/s.
    pub link_bps: f64,
    /// First arrival no earlier than this.
    pub start: Instant,
    /// Arrivals over this long.
    pub duration: Duration,
}

/// Flows arriving per host as a Poisson process at `spec.load` with sizes from `cdf`, in
/// start order, as `traffic_gen.py` writes them (priority group 3, port 100).
pub fn poisson_flows(cdf: &SizeCdf, spec: &PoissonSpec, seed: u64) -> Vec<FlowLine> {
    poisson_flows_within(cdf, spec, seed, usize::MAX).unwrap_or_default()
}

/// [`poisson_flows`], or `None` as soon as more than `max` flows arrive (a load and duration
/// that would make too many are refused while they are drawn, before they take memory).
pub fn poisson_flows_within(
    cdf: &SizeCdf,
    spec: &PoissonSpec,
    seed: u64,
    max: usize,
) -> Option<Vec<FlowLine>> {
    let mut rng = Pcg64::seed_from_u64(seed ^ 0x7a11_c0de);
    let n = spec.hosts.len();
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if n < 2 || !positive(spec.load) || !positive(spec.link_bps) {
        return Some(Vec::new());
    }
    // Mean gap between one host's flows, ns.
    let gap = cdf.mean() * 8.0 / (spec.link_bps * spec.load) * 1e9;
    // Arrivals are drawn in float nanoseconds, as traffic_gen.py draws them.
    let start = spec.start.as_nanos() as f64;
    let end = start + spec.duration.as_nanos() as f64;
    let exp = |rng: &mut Pcg64| -(1.0 - rng.random::<f64>()).ln() * gap;
    let mut next: Vec<f64> = (0..n).map(|_| start + exp(&mut rng)).collect();
    let mut flows = Vec::new();
    // The host whose next flow comes first (ties: the lowest index), until all are past the end.
    while let Some((i, &t)) = next
        .iter()
        .enumerate()
        .filter(|(_, t)| **t <= end)
        .min_by(|a, b| a.1.total_cmp(b.1))
    {
        if flows.len() == max {
            return None;
        }
        let mut d = rng.random_range(0..n - 1);
        if d >= i {
            d += 1;
        }
        flows.push(FlowLine {
            src: spec.hosts[i],
            dst: spec.hosts[d],
            pg: 3,
            dport: 100,
            size: cdf.sample(&mut rng),
            start_s: t.floor() / 1e9,
        });
        next[i] = t + exp(&mut rng);
    }
    Some(flows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_tables_parse_and_have_their_published_means() {
        // getAvg() of the HPCC files.
        assert!((SizeCdf::web_search().mean() - 1_711_250.0).abs() < 1.0);
        assert!((SizeCdf::fb_hadoop().mean() - 120_420.75).abs() < 1.0);
        let e = SizeCdf::parse("cdf.txt", "0 0\n10 50\n5 100\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cdf.txt:3: sizes and percentages must increase"
        );
        let e = SizeCdf::parse("cdf.txt", "0 0\n10 50\n").unwrap_err();
        assert_eq!(e.to_string(), "cdf.txt:2: the last point must be at 100 %");
        let e = SizeCdf::parse("cdf.txt", "0 0\nten 50\n").unwrap_err();
        assert_eq!(e.to_string(), "cdf.txt:2: \"ten 50\" is not `size percent`");
    }

    /// Over a long run the count, mean size and offered load are within 2 % of the target.
    fn check_long_run(cdf: &SizeCdf, load: f64, secs: u64) {
        let spec = PoissonSpec {
            hosts: (0..16).collect(),
            load,
            link_bps: 100e9,
            start: Instant::ZERO + Duration::from_secs(2),
            duration: Duration::from_secs(secs),
        };
        let flows = poisson_flows(cdf, &spec, 42);
        let hosts = spec.hosts.len() as f64;
        let secs = spec.duration.as_secs_f64();
        let expected = hosts * secs * spec.link_bps * load / 8.0 / cdf.mean();
        let n = flows.len() as f64;
        let mean = flows.iter().map(|f| f.size as f64).sum::<f64>() / n;
        let offered =
            flows.iter().map(|f| f.size as f64 * 8.0).sum::<f64>() / (secs * hosts * spec.link_bps);
        assert!(
            (n / expected - 1.0).abs() < 0.02,
            "{n} flows, expected {expected}"
        );
        assert!((mean / cdf.mean() - 1.0).abs() < 0.02, "mean {mean}");
        assert!((offered / load - 1.0).abs() < 0.02, "load {offered}");
        assert!(flows.windows(2).all(|w| w[0].start_s <= w[1].start_s));
        assert!(flows
            .iter()
            .all(|f| f.src != f.dst && f.start_s >= 2.0 && f.start_s <= 2.0 + secs));
    }

    #[test]
    fn web_search_long_run_matches_count_mean_and_load() {
        // ~140,000 flows: the tail (coefficient of variation 2.3) averages out to < 1 %.
        check_long_run(&SizeCdf::web_search(), 0.3, 4);
    }

    #[test]
    fn fb_hadoop_long_run_matches_count_mean_and_load() {
        // ~830,000 flows (coefficient of variation 5.6).
        check_long_run(&SizeCdf::fb_hadoop(), 0.5, 1);
    }
}
