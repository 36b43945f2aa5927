//! `roce sim compare --out` for publication: `table.csv` holds per variant and metric the mean,
//! standard deviation, 95% confidence half-width, min and max over seeds, each equal to the
//! figures computed here from `runs.csv`; the overlays draw each variant's mean over its seeds
//! with a band; `fct_by_size.csv` equals the slowdowns binned by size from each run's own
//! `fct.csv`; and a scenario with collectives adds step-time and slowdown columns equal to the
//! runs' collective reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::scenario_files::{ALLREDUCE_INCAST, INCAST, WEBSEARCH};

/// t(0.975, 2) and t(0.975, 1): the 95% factors of three and two runs.
const T975_DF2: f64 = 4.302_652_729_911_275;
const T975_DF1: f64 = 12.706_204_736_174_7;

fn roce(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_roce"))
        .args(args)
        .output()
        .expect("run roce");
    println!("roce {}", args.join(" "));
    println!("stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "exit {:?}", out.status);
    out
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("roce-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Mean, sample sd, 95% half-width (with `t` for these runs), min and max of `xs`.
fn stats(xs: &[f64], t: f64) -> [f64; 5] {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    [mean, sd, t * sd / n.sqrt(), min, max]
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * want.abs().max(1.0)
}

fn read_csv(path: &Path) -> (Vec<String>, Vec<csv::StringRecord>) {
    let mut r = csv::Reader::from_path(path).expect("a CSV file");
    let head = r
        .headers()
        .expect("header")
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = r.records().collect::<Result<_, _>>().expect("CSV records");
    (head, rows)
}

/// `fct_analysis.py`'s percentile of slowdowns (below 1 counted as 1): the element at
/// `int(n * p)` of the sorted list.
fn pctl(xs: &[f64], p: f64) -> f64 {
    let mut v: Vec<f64> = xs.iter().map(|x| x.max(1.0)).collect();
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

/// The bin edge below `edge` in the 1-2-5 series (0 below 1).
fn prev_edge(edge: u64) -> u64 {
    let mut lead = edge;
    while lead >= 10 {
        lead /= 10;
    }
    match lead {
        1 => edge / 2,
        2 => edge / 2,
        _ => edge * 2 / 5,
    }
}

#[test]
fn two_variants_three_seeds_leave_a_csv_table_of_their_runs_and_overlays_with_seed_bands() {
    let dir = scratch("compare-out");
    roce(&[
        "sim",
        "compare",
        WEBSEARCH,
        "--cc",
        "none,dcqcn-mlx",
        "--seeds",
        "3",
        "--set",
        "duration_us=400",
        "--param",
        "switch.ecn.pmax=0.2",
        "--out",
        dir.to_str().expect("utf-8 path"),
    ]);

    // runs.csv: variant, seed, then one column per metric.
    let (run_head, run_rows) = read_csv(&dir.join("runs.csv"));
    let metrics = &run_head[2..];
    assert!(metrics.iter().any(|m| m == "slowdown_p95"), "{run_head:?}");
    assert!(
        !metrics.iter().any(|m| m.starts_with("step_")),
        "no collectives here"
    );
    let mut runs: BTreeMap<String, Vec<(String, Vec<f64>)>> = BTreeMap::new();
    for r in &run_rows {
        let figures = r
            .iter()
            .skip(2)
            .map(|x| x.parse().expect("a figure"))
            .collect();
        runs.entry(r[0].to_owned())
            .or_default()
            .push((r[1].to_owned(), figures));
    }
    assert_eq!(runs.len(), 2);
    assert!(runs.values().all(|v| v.len() == 3));

    // table.csv: one row per variant, five columns per metric.
    let (head, rows) = read_csv(&dir.join("table.csv"));
    let mut want = vec!["variant", "cc", "switch.ecn.pmax", "runs"]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    for m in metrics {
        for st in ["mean", "sd", "ci95", "min", "max"] {
            want.push(format!("{m}_{st}"));
        }
    }
    assert_eq!(head, want);
    assert_eq!(rows.len(), 2);
    let mut spread = 0;
    for (row, cc) in rows.iter().zip(["none", "dcqcn-mlx"]) {
        let label = format!("{cc} switch.ecn.pmax=0.2");
        assert_eq!(&row[0], label);
        assert_eq!((&row[1], &row[2], &row[3]), (cc, "0.2", "3"));
        let mine = &runs[&label];
        for (j, m) in metrics.iter().enumerate() {
            let xs: Vec<f64> = mine.iter().map(|(_, f)| f[j]).collect();
            let want = stats(&xs, T975_DF2);
            for (k, st) in ["mean", "sd", "ci95", "min", "max"].iter().enumerate() {
                let cell = &row[4 + 5 * j + k];
                let got: f64 = cell.parse().expect("a number");
                assert!(
                    close(got, want[k]),
                    "{label} {m}_{st}: {got} != {}",
                    want[k]
                );
            }
            spread += usize::from(want[2] > 0.0);
        }
    }
    assert!(spread > 5, "the seeds differ in most metrics");

    // The overlays: per variant the mean line, its legend entry and a band over the seeds.
    for file in [
        "goodput.svg",
        "queue.svg",
        "fct_slowdown_p50.svg",
        "fct_slowdown_p95.svg",
    ] {
        let svg = std::fs::read_to_string(dir.join(file)).expect(file);
        assert!(svg.len() > 5_000, "{file}: {} bytes", svg.len());
        assert!(svg.contains("mean of 3 seeds, band min..max"), "{file}");
        assert_eq!(
            svg.matches("<polygon").count(),
            2,
            "{file}: one band per variant"
        );
        assert!(svg.matches("<polyline").count() >= 4, "{file}: lines");
        for cc in ["none", "dcqcn-mlx"] {
            assert!(
                svg.contains(&format!("\n{cc} switch.ecn.pmax=0.2\n")),
                "{file}"
            );
        }
    }

    // fct_by_size.csv: per variant and 1-2-5 size bin, the p50 and p95 slowdown of each seed's
    // flows in the bin (from the run's own fct.csv), mean and extremes over the seeds.
    let (head, bins) = read_csv(&dir.join("fct_by_size.csv"));
    assert_eq!(
        head,
        [
            "variant",
            "size_bytes",
            "runs",
            "p50_mean",
            "p50_min",
            "p50_max",
            "p95_mean",
            "p95_min",
            "p95_max"
        ]
    );
    let mut want_bins = Vec::new();
    for (label, mine) in &runs {
        let flows: Vec<Vec<(u64, f64)>> = mine
            .iter()
            .map(|(seed, _)| {
                let run = dir
                    .join("runs")
                    .join(format!("{}-seed{seed}", label.replace([' ', '='], "_")));
                let (_, rows) = read_csv(&run.join("fct.csv"));
                rows.iter()
                    .map(|r| (r[3].parse().expect("size"), r[7].parse().expect("slowdown")))
                    .collect()
            })
            .collect();
        let largest = flows.iter().flatten().map(|f| f.0).max().expect("flows");
        let mut edge = 1;
        while edge < largest * 10 {
            for e in [edge, 2 * edge, 5 * edge] {
                let per_seed: Vec<Vec<f64>> = flows
                    .iter()
                    .map(|fs| {
                        fs.iter()
                            .filter(|f| prev_edge(e) < f.0 && f.0 <= e)
                            .map(|f| f.1)
                            .collect::<Vec<f64>>()
                    })
                    .filter(|s| !s.is_empty())
                    .collect();
                if !per_seed.is_empty() {
                    let p50: Vec<f64> = per_seed.iter().map(|s| pctl(s, 0.5)).collect();
                    let p95: Vec<f64> = per_seed.iter().map(|s| pctl(s, 0.95)).collect();
                    want_bins.push((label.clone(), e, per_seed.len(), p50, p95));
                }
            }
            edge *= 10;
        }
    }
    // runs.csv is ordered by variant as the grid is; the map by label.
    let mut got_bins: Vec<&csv::StringRecord> = bins.iter().collect();
    got_bins.sort_by_key(|r| r[0].to_owned());
    assert_eq!(got_bins.len(), want_bins.len());
    assert!(want_bins.len() > 10, "{} bins", want_bins.len());
    for (got, (label, edge, n, p50, p95)) in got_bins.iter().zip(&want_bins) {
        assert_eq!(
            (&got[0], got[1].parse::<u64>().ok(), &got[2]),
            (label.as_str(), Some(*edge), n.to_string().as_str())
        );
        let cell = |i: usize| got[i].parse::<f64>().expect("a figure");
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let lo = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // fct.csv prints slowdowns to 6 decimals.
        for (i, w) in [mean(p50), lo(p50), hi(p50), mean(p95), lo(p95), hi(p95)]
            .into_iter()
            .enumerate()
        {
            assert!(
                (cell(3 + i) - w).abs() < 1e-5,
                "{label} {edge}: column {} {} != {w}",
                3 + i,
                cell(3 + i)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_seed_leaves_the_interval_undefined_not_zero() {
    let dir = scratch("compare-one-seed");
    let out = roce(&[
        "sim",
        "compare",
        INCAST,
        "--cc",
        "none,dctcp",
        "--set",
        "duration_us=100",
        "--out",
        dir.to_str().expect("utf-8 path"),
    ]);
    let (head, rows) = read_csv(&dir.join("table.csv"));
    let ci: Vec<usize> = (0..head.len())
        .filter(|&i| head[i].ends_with("_ci95"))
        .collect();
    assert_eq!(ci.len(), 10);
    for row in &rows {
        assert_eq!(&row[2], "1");
        assert!(ci.iter().all(|&i| row[i].is_empty()), "{row:?}");
        assert!(
            ci.iter().all(|&i| !row[i - 2].is_empty()),
            "the means are there"
        );
    }
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.join("compare.json")).expect("compare.json"))
            .expect("JSON");
    let stats: Vec<&Value> = json
        .as_array()
        .expect("rows")
        .iter()
        .flat_map(|r| r["metrics"].as_array().expect("metrics"))
        .map(|m| &m[1])
        .collect();
    assert_eq!(stats.len(), 20);
    assert!(stats
        .iter()
        .all(|s| s["ci95"].is_null() && s["mean"].is_number()));
    // The text table has no interval to show: a cell is the run's figure alone.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('±') && !text.contains("(-)"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn collectives_add_step_time_and_slowdown_columns_from_their_reports() {
    let out = roce(&[
        "sim",
        "compare",
        ALLREDUCE_INCAST,
        "--cc",
        "none",
        "--seeds",
        "2",
        "--set",
        "duration_us=1500",
        "--json",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let row = &doc["rows"][0];
    let metrics = row["metrics"].as_array().expect("metrics");
    let names: Vec<&str> = metrics.iter().filter_map(|m| m[0].as_str()).collect();
    assert_eq!(
        names[names.len() - 5..],
        [
            "iterations",
            "step_mean_us",
            "step_p99_us",
            "step_slowdown",
            "comm_slowdown"
        ]
    );
    // Per run, from its collective reports: every iteration of every collective.
    let per_run: Vec<[f64; 5]> = doc["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| {
            let mut steps = Vec::new();
            let mut ideal = Vec::new();
            let mut comm = Vec::new();
            for c in r["summary"]["collectives"].as_array().expect("collectives") {
                let f = |k: &str| c[k].as_f64().expect(k);
                let list = |k: &str| -> Vec<f64> {
                    c[k].as_array()
                        .expect(k)
                        .iter()
                        .map(|x| x.as_f64().expect("a number"))
                        .collect()
                };
                for (s, x) in list("step_us").into_iter().zip(list("slowdown")) {
                    steps.push(s);
                    ideal.push(s / (f("compute_us") + f("idle_comm_us")));
                    comm.push(x);
                }
            }
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let mut sorted = steps.clone();
            sorted.sort_by(f64::total_cmp);
            let p99 = sorted[((sorted.len() as f64 * 0.99) as usize).min(sorted.len() - 1)];
            [
                steps.len() as f64,
                mean(&steps),
                p99,
                mean(&ideal),
                mean(&comm),
            ]
        })
        .collect();
    assert_eq!(per_run.len(), 2);
    assert!(per_run.iter().all(|r| r[0] >= 2.0), "{per_run:?}");
    for (j, m) in metrics[names.len() - 5..].iter().enumerate() {
        let xs: Vec<f64> = per_run.iter().map(|r| r[j]).collect();
        let want = stats(&xs, T975_DF1);
        let got = |k: &str| m[1][k].as_f64().expect(k);
        for (k, st) in ["mean", "sd", "ci95", "min", "max"].iter().enumerate() {
            assert!(
                close(got(st), want[k]),
                "{}_{st}: {} != {}",
                m[0],
                got(st),
                want[k]
            );
        }
    }
    // The incast slows the ring down: steps well over the idle fabric's.
    assert!(
        per_run.iter().all(|r| r[3] > 2.0 && r[4] > r[3]),
        "{per_run:?}"
    );
}
