//! Files `roce sim compare --out DIR` leaves: the table (text and JSON), one CSV line per run,
//! every run's own `--out` files under `runs/`, and overlay plots of the variants (total goodput
//! and bottleneck queue over time, the first seed of each).

use std::fmt::Write as _;
use std::path::Path;

use roce_fabric::experiment::compare::{metrics_of, Row, Run, Variant};
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::record::series::{Recorder, Row as SeriesRow};

use super::sim::{line_chart, write, ReportError};

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
        let _ = write!(s, "\"{}\",{}", variants[run.variant].label(), run.seed);
        for (_, get) in &metrics {
            let _ = write!(s, ",{}", get(sum));
        }
        s.push('\n');
    }
    s
}

/// Writes the table, the JSON rows, `runs.csv` and the overlay plots into `dir`.
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
    write(dir, "runs.csv", &runs_csv(variants, runs, summaries))?;
    // The first run of each variant: the overlays compare variants, not seeds.
    let firsts: Vec<(String, &Trace)> = variants
        .iter()
        .enumerate()
        .filter_map(|(v, variant)| {
            let i = runs.iter().position(|r| r.variant == v)?;
            Some((variant.label(), traces.get(i)?))
        })
        .collect();
    let overlay = |pick: Pick| -> Vec<(String, Vec<(f64, f64)>)> {
        firsts
            .iter()
            .map(|(label, t)| (label.clone(), pick(t).clone()))
            .collect()
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
        line_chart(&dir.join(file), title, unit, &overlay(pick)).map_err(|e| fmt_err(file, e))?;
    }
    Ok(())
}
