//! Files `roce sim compare --out DIR` leaves: the table (text, JSON and CSV), one CSV line per
//! run, every run's own `--out` files under `runs/`, and overlay plots of the variants, each the
//! mean over its seeds with a band from their smallest to their largest figure: total goodput and
//! bottleneck queue over time, and the FCT slowdown by flow size when the flows finish.

use std::fmt::Write as _;
use std::path::Path;

use roce_fabric::experiment::compare::{metrics_of, table_csv, Row, Run, Variant};
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::record::series::{Recorder, Row as SeriesRow};

use super::overlay::{time_band, Band, FctBySize};
use super::plot::{band_chart, Axes};
use super::sim::{write, ReportError};

/// What one run leaves for the overlays: (µs, total goodput Gbit/s) and (µs, queue KB) at the
/// monitored port.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Trace {
    /// Total goodput over time.
    pub goodput: Vec<(f64, f64)>,
    /// Bottleneck queue over time.
    pub queue_kb: Vec<(f64, f64)>,
}

impl Trace {
    /// Of a run's recorder.
    pub fn of<E>(rec: &Recorder<E>) -> Trace {
        let t = |ns: u64| ns as f64 / 1e3;
        // A row and, when it stands for an idle stretch, the stretch's last sample.
        let times = |r: &SeriesRow| {
            let last = (r.repeats > 0).then(|| rec.last_ns(r));
            std::iter::once(r.t_ns).chain(last).map(t)
        };
        Trace {
            goodput: rec
                .rows
                .iter()
                .flat_map(|r| {
                    let g: f64 = r.flow_gbps.iter().sum();
                    times(r).map(move |x| (x, g))
                })
                .collect(),
            queue_kb: rec
                .rows
                .iter()
                .flat_map(|r| {
                    let q = r.queue_bytes.first().map(|q| *q as f64 / 1e3);
                    times(r).filter_map(move |x| q.map(|q| (x, q)))
                })
                .collect(),
        }
    }
}

/// Which series of a trace a plot shows.
type Pick = fn(&Trace) -> &Vec<(f64, f64)>;

/// One line per run: variant, seed, then every metric of the comparison.
pub fn runs_csv(variants: &[Variant], runs: &[Run], summaries: &[RunSummary]) -> String {
    let metrics = metrics_of(summaries);
    let mut s = String::from("variant,seed");
    for (name, _) in &metrics {
        let _ = write!(s, ",{name}");
    }
    s.push('\n');
    for (run, sum) in runs.iter().zip(summaries) {
        let label = variants[run.variant].label().replace('"', "\"\"");
        let _ = write!(s, "\"{label}\",{}", run.seed);
        for (_, get) in &metrics {
            let _ = write!(s, ",{}", get(sum));
        }
        s.push('\n');
    }
    s
}

/// Writes the table (text, JSON and `table.csv`), `runs.csv`, the overlay plots and, when runs
/// have FCTs, `fct_by_size.csv` into `dir`.
pub fn write_compare(
    dir: &Path,
    rows: &[Row],
    table: &str,
    variants: &[Variant],
    runs: &[Run],
    summaries: &[RunSummary],
    traces: &[Trace],
) -> Result<(), ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let fmt_err = |name: &str, message: String| ReportError::Format {
        path: dir.join(name).display().to_string(),
        message,
    };
    write(dir, "compare.txt", table)?;
    let json =
        serde_json::to_string_pretty(rows).map_err(|e| fmt_err("compare.json", e.to_string()))?;
    write(dir, "compare.json", &json)?;
    write(dir, "table.csv", &table_csv(rows))?;
    write(dir, "runs.csv", &runs_csv(variants, runs, summaries))?;
    // Each variant's runs, in seed order.
    let mine = |v: usize| {
        runs.iter()
            .enumerate()
            .filter(move |(_, r)| r.variant == v)
            .map(|(i, _)| i)
    };
    let seeds = rows.first().map_or(0, |r| r.runs);
    let spread = if seeds > 1 {
        format!(" (mean of {seeds} seeds, band min..max)")
    } else {
        String::new()
    };
    let plots: [(&str, &str, &str, Pick); 2] = [
        ("goodput.svg", "Total goodput by variant", "Gbit/s", |t| {
            &t.goodput
        }),
        ("queue.svg", "Bottleneck queue by variant", "KB", |t| {
            &t.queue_kb
        }),
    ];
    for (file, title, unit, pick) in plots {
        let bands: Vec<Band> = variants
            .iter()
            .enumerate()
            .map(|(v, variant)| {
                let series: Vec<&[(f64, f64)]> = mine(v)
                    .filter_map(|i| traces.get(i))
                    .map(|t| pick(t).as_slice())
                    .collect();
                Band {
                    name: variant.label(),
                    pts: time_band(&series),
                }
            })
            .collect();
        let axes = Axes {
            x_desc: "time (us)",
            y_desc: unit,
            log_x: false,
        };
        band_chart(&dir.join(file), &format!("{title}{spread}"), &axes, &bands)
            .map_err(|e| fmt_err(file, e))?;
    }
    let by_variant: Vec<(String, Vec<&RunSummary>)> = variants
        .iter()
        .enumerate()
        .map(|(v, variant)| {
            let sums = mine(v).filter_map(|i| summaries.get(i)).collect();
            (variant.label(), sums)
        })
        .collect();
    if let Some(fct) = FctBySize::of(&by_variant) {
        write(dir, "fct_by_size.csv", &fct.csv())?;
        for (file, pct, bands) in [
            ("fct_slowdown_p50.svg", "p50", &fct.p50),
            ("fct_slowdown_p95.svg", "p95", &fct.p95),
        ] {
            let axes = Axes {
                x_desc: "flow size (bytes, bin upper edge)",
                y_desc: "FCT slowdown",
                log_x: true,
            };
            let title = format!("{pct} FCT slowdown by flow size{spread}");
            band_chart(&dir.join(file), &title, &axes, bands).map_err(|e| fmt_err(file, e))?;
        }
    }
    Ok(())
}
