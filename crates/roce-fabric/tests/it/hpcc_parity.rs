//! Parity with the reference simulator: the HPCC authors' own 320-host experiments (`mix/fat.txt`,
//! WebSearch and FB_Hadoop flow sizes at 30 % and 50 % load for 10 ms, run.py's config for each
//! controller) run by `roce sim hpcc`'s code, its FCT slowdown per 10 % bin of flows held against
//! the ns-3 run of the same files.
//! The reference numbers are fixtures (`tests/fixtures/hpcc/reference/`, written by
//! `tools/hpcc/reference.sh` from ns-3's FCT files); ours are computed here.
//!
//! The bounds are stated from the measurement (BENCHMARKS.md, "Parity with ns-3"): per
//! controller, the median over the ten bins of ours/ns-3 for p50, p95 and p99, and the range
//! every single bin's p50 ratio must stay in. They are loose enough for a change that moves a
//! few flows and tight enough that a controller which stops reacting (or a lost INT hop, as
//! the three-slot shim was) fails: the p95 of HPCC's short flows was 2.8x ns-3's then.
//!
//! Each run takes 30 to 170 CPU seconds optimised (FB_Hadoop at 50 % load: 170 to 300), so the
//! tests are `#[ignore]`d in debug builds; the test command (`tools/test.sh`) runs them optimised:
//! `cargo test --profile bench -p roce-fabric --test it hpcc_parity -- --ignored --skip hadoop_50`,
//! and `tools/test.sh --long` the FB_Hadoop 50 % ones too.

use std::path::Path;

use roce_fabric::experiment::hpcc_run::HpccRun;
use roce_fabric::flows::fct::{slowdown_bins, SlowdownBin};
use roce_fabric::limits::bounds::Limits;
use roce_testkit::fixtures;

/// The bounds one controller is held to: (low, high) of the median ratio ours/ns-3 over the
/// bins for p50, p95 and p99, and of every bin's p50 ratio.
struct Bounds {
    p50: (f64, f64),
    p95: (f64, f64),
    p99: (f64, f64),
    each_p50: (f64, f64),
}

/// The bounds of DCQCN and HPCC; TIMELY and DCTCP have their own p95 range.
const BOUNDS: Bounds = Bounds {
    p50: (0.95, 1.10),
    p95: (0.85, 1.25),
    p99: (0.7, 1.43),
    each_p50: (0.90, 1.15),
};

/// One reference bin: the largest flow and the p50 / p95 / p99 slowdown.
#[derive(Debug)]
struct RefBin {
    max_size: u64,
    p: [f64; 3],
}

/// `fct_analysis.py -s 10` output, `#` lines skipped.
fn reference(name: &str) -> Vec<RefBin> {
    let path = Path::new(fixtures::HPCC).join(format!("reference/{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 5, "{}: {l}", path.display());
            RefBin {
                max_size: f[1].parse().unwrap(),
                p: [
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                ],
            }
        })
        .collect()
}

/// Our bins on the same config, the run on two threads (the same result as one).
fn ours(name: &str) -> Vec<SlowdownBin> {
    let config = Path::new(fixtures::HPCC).join(format!("mix/config_fat_{name}.txt"));
    let run = HpccRun::load(&config).unwrap();
    let built = run.scenario.build_within(&Limits::default(), 2).unwrap();
    let (summary, _) = run.scenario.run_built(built, |_| {}).unwrap();
    assert_eq!(summary.failed_flows, 0, "{name}: {}", summary.table());
    let records = run.fct_records(&summary).unwrap();
    // Every flow of the flow file (its first line counts them) finishes.
    let workload = name.split('_').next().unwrap_or_default();
    let flows = std::fs::read_to_string(config.with_file_name(format!("{workload}.txt"))).unwrap();
    let count: usize = flows.lines().next().unwrap().trim().parse().unwrap();
    assert_eq!(
        records.len(),
        count,
        "{name}: every flow of {workload}.txt finishes"
    );
    // fct_analysis.py leaves the largest flow out; so do we, to bin the same flows.
    let mut rows: Vec<(u64, f64)> = records.iter().map(|r| (r.size, r.slowdown())).collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    rows.pop();
    slowdown_bins(&rows, 10)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    (xs[(n - 1) / 2] + xs[n / 2]) / 2.0
}

fn within(x: f64, (lo, hi): (f64, f64)) -> bool {
    (lo..=hi).contains(&x)
}

fn holds(name: &str, bounds: Bounds) {
    let theirs = reference(name);
    let mine = ours(name);
    assert_eq!(theirs.len(), 10, "{name}: ten reference bins");
    assert_eq!(mine.len(), 10, "{name}: ten bins of ours");
    let mut table = format!("{name}: bin max_size | ns-3 p50 p95 p99 | ours p50 p95 p99\n");
    let mut ratios: [Vec<f64>; 3] = Default::default();
    for (t, m) in theirs.iter().zip(&mine) {
        // The same flows in the same bins: the bins' largest flows agree.
        assert_eq!(
            t.max_size, m.max_bytes,
            "{name}: bin {} holds other flows",
            m.pct
        );
        let ours = [m.p50, m.p95, m.p99];
        for k in 0..3 {
            ratios[k].push(ours[k] / t.p[k]);
        }
        table += &format!(
            "{:>3} {:>9} | {:.3} {:.3} {:.3} | {:.3} {:.3} {:.3}\n",
            m.pct, m.max_bytes, t.p[0], t.p[1], t.p[2], m.p50, m.p95, m.p99
        );
    }
    let med: Vec<f64> = ratios.iter().map(|r| median(r.clone())).collect();
    table += &format!(
        "median ratio p50 {:.3} p95 {:.3} p99 {:.3}",
        med[0], med[1], med[2]
    );
    println!("{table}");
    assert!(within(med[0], bounds.p50), "p50 median ratio\n{table}");
    assert!(within(med[1], bounds.p95), "p95 median ratio\n{table}");
    assert!(within(med[2], bounds.p99), "p99 median ratio\n{table}");
    for (i, r) in ratios[0].iter().enumerate() {
        assert!(
            within(*r, bounds.each_p50),
            "bin {i} p50 ratio {r:.3}\n{table}"
        );
    }
}

/// DCQCN (`CC_MODE 1`): measured 1.035 / 1.046 / 1.006 (p50 per bin 1.00-1.07).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn dcqcn_websearch_30_matches_ns3() {
    holds("ws30_dcqcn", BOUNDS);
}

/// HPCC (`CC_MODE 3`, run.py's hp95): measured 1.047 / 1.062 / 1.079 (p50 per bin 1.01-1.08).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn hpcc_websearch_30_matches_ns3() {
    holds("ws30_hp95", BOUNDS);
}

/// TIMELY (`CC_MODE 7`): measured 1.025 / 0.967 / 0.822 (p50 per bin 1.01-1.10). The p99 of
/// flows under 50 KB is 0.55-0.84 of ns-3's, not explained yet (not by `ACK_HIGH_PRIO 1`,
/// which only matters under PFC: neither simulator paused a port in this run).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn timely_websearch_30_matches_ns3() {
    holds(
        "ws30_timely",
        Bounds {
            p95: (0.8, 1.2),
            ..BOUNDS
        },
    );
}

/// DCTCP (`CC_MODE 8`, rate-based with the window, run.py's `DCTCP_RATE_AI`): measured
/// 1.030 / 1.011 / 1.011 (p50 per bin 1.01-1.10).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn dctcp_websearch_30_matches_ns3() {
    holds(
        "ws30_dctcp",
        Bounds {
            p95: (0.85, 1.2),
            ..BOUNDS
        },
    );
}

/// DCQCN at 50 % load: measured 1.042 / 1.040 / 0.990 (p50 per bin 0.97-1.07).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn dcqcn_websearch_50_matches_ns3() {
    holds("ws50_dcqcn", BOUNDS);
}

/// HPCC at 50 % load: measured 1.055 / 1.093 / 1.068 (p50 per bin 1.01-1.08).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn hpcc_websearch_50_matches_ns3() {
    holds("ws50_hp95", BOUNDS);
}

/// TIMELY at 50 % load: measured 1.042 / 0.873 / 0.763 (p50 per bin 1.01-1.13). Its short
/// flows' tails are lower than ns-3's, more so than at 30 % (p99 0.60-0.68 under 50 KB).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn timely_websearch_50_matches_ns3() {
    holds(
        "ws50_timely",
        Bounds {
            p95: (0.8, 1.2),
            ..BOUNDS
        },
    );
}

/// DCTCP at 50 % load: measured 1.072 / 1.049 / 1.063 (p50 per bin 1.05-1.09).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn dctcp_websearch_50_matches_ns3() {
    holds(
        "ws50_dctcp",
        Bounds {
            p95: (0.85, 1.2),
            ..BOUNDS
        },
    );
}

/// DCQCN on FB_Hadoop at 30 % load (99,622 flows, mostly under 1 KB): measured 1.007 / 1.016 /
/// 0.989 (p50 per bin 1.00-1.04).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn dcqcn_fb_hadoop_30_matches_ns3() {
    holds("fb30_dcqcn", BOUNDS);
}

/// HPCC on FB_Hadoop at 30 % load: measured 1.007 / 1.059 / 1.068 (p50 per bin 1.00-1.06).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn hpcc_fb_hadoop_30_matches_ns3() {
    holds("fb30_hp95", BOUNDS);
}

/// TIMELY on FB_Hadoop at 30 % load: measured 1.008 / 0.899 / 0.757 (p50 per bin 1.00-1.06);
/// its short flows' tails lower than ns-3's, as on WebSearch.
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn timely_fb_hadoop_30_matches_ns3() {
    holds(
        "fb30_timely",
        Bounds {
            p95: (0.8, 1.2),
            ..BOUNDS
        },
    );
}

/// DCTCP on FB_Hadoop at 30 % load: measured 1.008 / 1.022 / 1.027 (p50 per bin 1.00-1.07).
#[test]
#[ignore = "a 320-host run: the test command runs it optimised"]
fn dctcp_fb_hadoop_30_matches_ns3() {
    holds(
        "fb30_dctcp",
        Bounds {
            p95: (0.85, 1.2),
            ..BOUNDS
        },
    );
}

/// DCQCN on FB_Hadoop at 50 % load (165,852 flows): measured 1.075 / 1.006 / 0.998 (p50 per bin
/// 1.05-1.09).
#[test]
#[ignore = "a 320-host run of 3 to 5 CPU minutes: `tools/test.sh --long` runs it optimised"]
fn dcqcn_fb_hadoop_50_matches_ns3() {
    holds("fb50_dcqcn", BOUNDS);
}

/// HPCC on FB_Hadoop at 50 % load: measured 1.032 / 1.080 / 1.087 (p50 per bin 1.03-1.10).
#[test]
#[ignore = "a 320-host run of 3 to 5 CPU minutes: `tools/test.sh --long` runs it optimised"]
fn hpcc_fb_hadoop_50_matches_ns3() {
    holds("fb50_hp95", BOUNDS);
}

/// TIMELY on FB_Hadoop at 50 % load: measured 1.036 / 0.852 / 0.723 (p50 per bin 1.02-1.08);
/// its short flows' tails lower than ns-3's (p99 0.71-0.76 of ns-3's up to 120 KB), as on every
/// workload, so its p99 has a wider low bound.
#[test]
#[ignore = "a 320-host run of 3 to 5 CPU minutes: `tools/test.sh --long` runs it optimised"]
fn timely_fb_hadoop_50_matches_ns3() {
    holds(
        "fb50_timely",
        Bounds {
            p95: (0.8, 1.2),
            p99: (0.65, 1.43),
            ..BOUNDS
        },
    );
}

/// DCTCP on FB_Hadoop at 50 % load: measured 1.082 / 1.010 / 1.002 (p50 per bin 1.07-1.10).
#[test]
#[ignore = "a 320-host run of 3 to 5 CPU minutes: `tools/test.sh --long` runs it optimised"]
fn dctcp_fb_hadoop_50_matches_ns3() {
    holds(
        "fb50_dctcp",
        Bounds {
            p95: (0.85, 1.2),
            ..BOUNDS
        },
    );
}
