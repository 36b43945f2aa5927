//! Files a run leaves behind with `--out DIR`: the summary (JSON), the scenario (TOML), time
//! series as CSV (per-flow rate, bottleneck queue depth, congestion-control rate and alpha, PFC
//! frames, and the per-port and per-host telemetry of [`super::telemetry`]) and SVG plots of the
//! flows' rates and the queue.
//!
//! The only module of the fabric that does I/O, and only when asked.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use plotters::prelude::*;

use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::record::series::{Recorder, Row};
use roce_proto::engine::Engine;

/// Why files could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Filesystem error.
    #[error("writing {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Serialization or plotting error.
    #[error("writing {path}: {message}")]
    Format {
        /// The file.
        path: String,
        /// The cause.
        message: String,
    },
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> Result<(), ReportError> {
    let path = dir.join(name);
    fs::write(&path, text).map_err(|source| ReportError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Writes summary, scenario, CSVs and plots into `dir` (created if missing).
pub fn write_all<E: Engine>(
    dir: &Path,
    scenario: &Scenario,
    summary: &RunSummary,
    rec: Option<&Recorder<E>>,
) -> Result<(), ReportError> {
    fs::create_dir_all(dir).map_err(|source| ReportError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let fmt_err = |name: &str, e: String| ReportError::Format {
        path: dir.join(name).display().to_string(),
        message: e,
    };
    let json = serde_json::to_string_pretty(summary)
        .map_err(|e| fmt_err("summary.json", e.to_string()))?;
    write(dir, "summary.json", &json)?;
    let toml = toml::to_string(scenario).map_err(|e| fmt_err("scenario.toml", e.to_string()))?;
    write(dir, "scenario.toml", &toml)?;
    write(dir, "summary.txt", &text(summary))?;
    if let Some(fct) = &summary.fct {
        write(dir, "fct.csv", &fct.csv())?;
        // The HPCC simulator's FCT_OUTPUT_FILE format, for its analysis/fct_analysis.py.
        let nodes = scenario.host_node_ids();
        let records = fct.hpcc_records(nodes.as_deref(), 100);
        write(
            dir,
            "fct.txt",
            &roce_fabric::hpcc::fct_file::write(&records),
        )?;
        super::fct::plot_slowdown(&dir.join("fct.svg"), fct).map_err(|e| fmt_err("fct.svg", e))?;
    }
    if let Some(o) = &summary.outage {
        write(dir, "flow_bins.csv", &bins_csv(o))?;
    }
    if !summary.queue_delay.is_empty() {
        let csv = roce_fabric::experiment::queue_delay::csv(&summary.queue_delay);
        write(dir, "queue_delay.csv", &csv)?;
    }
    if let Some(r) = summary.rails.as_ref().filter(|r| !r.utilisation.is_empty()) {
        write(dir, "rails.csv", &r.csv())?;
    }
    if !summary.collectives.is_empty() {
        let csv = roce_fabric::flows::collective::CollectiveReport::csv(&summary.collectives);
        write(dir, "collectives.csv", &csv)?;
    }
    let Some(rec) = rec else {
        return Ok(());
    };
    write(dir, "flows.csv", &flows_csv(rec))?;
    write(dir, "queue.csv", &queue_csv(rec))?;
    write(dir, "cc.csv", &cc_csv(rec))?;
    write(dir, "pfc.csv", &pfc_csv(rec))?;
    if let Some(t) = &rec.telemetry {
        write(dir, "ports.csv", &super::telemetry::ports_csv(t))?;
        write(dir, "hosts.csv", &super::telemetry::hosts_csv(t))?;
        write(dir, "buffers.csv", &super::telemetry::buffers_csv(t))?;
    }
    plot_flows(&dir.join("flows.svg"), rec).map_err(|e| fmt_err("flows.svg", e))?;
    plot_queue(&dir.join("queue.svg"), rec).map_err(|e| fmt_err("queue.svg", e))?;
    Ok(())
}

/// The summary table, each collective's step and communication times against the idle
/// fabric's, then the FCT slowdown table when flows finished.
pub fn text(summary: &RunSummary) -> String {
    let mut s = summary.table();
    for (i, c) in summary.collectives.iter().enumerate() {
        s.push_str(&c.lines(i));
    }
    if let Some(fct) = &summary.fct {
        s.push_str(&fct.table());
    }
    s
}

/// The times a row's samples are written at: its first, and the last of its repeats (a
/// stretch where nothing changed is its first and last sample, not one line per sample).
fn row_times<E>(rec: &Recorder<E>, r: &Row) -> impl Iterator<Item = u64> {
    let last = (r.repeats > 0).then(|| rec.last_ns(r));
    std::iter::once(r.t_ns).chain(last)
}

/// A CSV with a `t_us` column, then one column per `columns` name, one row per sample with the
/// values `cells(row)` gives (an idle stretch as its first and last sample).
fn time_csv<E, V: std::fmt::Display>(
    rec: &Recorder<E>,
    columns: impl Iterator<Item = String>,
    cells: impl Fn(&Row) -> Vec<V>,
) -> String {
    let mut s = String::from("t_us");
    for c in columns {
        let _ = write!(s, ",{c}");
    }
    s.push('\n');
    for r in &rec.rows {
        let values = cells(r);
        for t in row_times(rec, r) {
            let _ = write!(s, "{:.3}", t as f64 / 1e3);
            for v in &values {
                let _ = write!(s, ",{v}");
            }
            s.push('\n');
        }
    }
    s
}

/// `t_us,flow0_gbps,flow1_gbps,...`
pub fn flows_csv<E>(rec: &Recorder<E>) -> String {
    let n = flow_columns(rec);
    time_csv(rec, (0..n).map(|i| format!("flow{i}_gbps")), |r| {
        (0..n).map(|i| format!("{:.4}", flow_gbps(r, i))).collect()
    })
}

/// How many flows the rows cover (a row leaves out the flows after the last that moved).
fn flow_columns<E>(rec: &Recorder<E>) -> usize {
    rec.rows
        .iter()
        .map(|r| r.flow_gbps.len())
        .max()
        .unwrap_or(0)
}

/// Flow `i`'s goodput in row `r` (0 where the row leaves it out).
fn flow_gbps(r: &Row, i: usize) -> f64 {
    r.flow_gbps.get(i).copied().unwrap_or(0.0)
}

/// `bin_start_us,flow0_gbps,...`: each flow's rate in the outage report's bins (a stall is a
/// row of zeros).
pub fn bins_csv(o: &roce_fabric::experiment::outage::Outage) -> String {
    let mut s = String::from("bin_start_us");
    for i in 0..o.flow_bins_gbps.len() {
        let _ = write!(s, ",flow{i}_gbps");
    }
    s.push('\n');
    let bins = o.flow_bins_gbps.first().map_or(0, Vec::len);
    for b in 0..bins {
        let _ = write!(s, "{:.1}", b as f64 * o.bin_us);
        for f in &o.flow_bins_gbps {
            let _ = write!(s, ",{:.4}", f.get(b).copied().unwrap_or(0.0));
        }
        s.push('\n');
    }
    s
}

/// `t_us,sw0p3_bytes,...` for the monitored ports.
pub fn queue_csv<E>(rec: &Recorder<E>) -> String {
    let names = rec
        .monitors
        .iter()
        .map(|(sw, p)| format!("sw{}p{}_bytes", sw.0, p));
    time_csv(rec, names, |r| r.queue_bytes.clone())
}

/// `t_us,host,qpn,rate_gbps,alpha` (empty when the engines have no probe).
pub fn cc_csv<E>(rec: &Recorder<E>) -> String {
    let lines = rec.rows.iter().flat_map(|r| {
        row_times(rec, r).flat_map(move |t| {
            let t_us = t as f64 / 1e3;
            r.cc.iter().map(move |(h, c)| {
                let (qpn, rate, alpha) = (c.qpn, c.rate_gbps, c.alpha);
                format!("{t_us:.3},{h},{qpn},{rate:.4},{alpha:.6}")
            })
        })
    });
    csv("t_us,host,qpn,rate_gbps,alpha", lines)
}

/// `t_us,switch,port,prio,kind` with kind XOFF or XON.
pub fn pfc_csv<E>(rec: &Recorder<E>) -> String {
    let lines = rec.pauses.iter().map(|p| {
        let kind = if p.xoff { "XOFF" } else { "XON" };
        let t_us = p.t_ns as f64 / 1e3;
        format!("{t_us:.3},{},{},{},{kind}", p.switch, p.port, p.prio)
    });
    csv("t_us,switch,port,prio,kind", lines)
}

/// A CSV of the `header` line and then `lines`.
fn csv(header: &str, lines: impl Iterator<Item = String>) -> String {
    let mut s = format!("{header}\n");
    for l in lines {
        s.push_str(&l);
        s.push('\n');
    }
    s
}

pub(crate) fn line_chart(
    path: &Path,
    title: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), String> {
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let x_max = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .fold(1e-9, f64::max);
    let y_max = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(1e-9, f64::max)
        * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("time (us)")
        .y_desc(y_label)
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        super::plot::labelled_line(&mut chart, pts.iter().copied(), color, 1, name)?;
    }
    if series.len() <= 16 {
        super::plot::legend(&mut chart)?;
    }
    root.present().map_err(|e| e.to_string())
}

fn plot_flows<E>(path: &Path, rec: &Recorder<E>) -> Result<(), String> {
    let n = flow_columns(rec);
    let series: Vec<(String, Vec<(f64, f64)>)> = (0..n.min(64))
        .map(|i| {
            let pts = rec
                .rows
                .iter()
                .flat_map(|r| row_times(rec, r).map(move |t| (t as f64 / 1e3, flow_gbps(r, i))))
                .collect();
            (format!("flow {i}"), pts)
        })
        .collect();
    line_chart(path, "Per-flow goodput", "Gbit/s", &series)
}

fn plot_queue<E>(path: &Path, rec: &Recorder<E>) -> Result<(), String> {
    let series: Vec<(String, Vec<(f64, f64)>)> = rec
        .monitors
        .iter()
        .enumerate()
        .map(|(i, (sw, p))| {
            let pts = rec
                .rows
                .iter()
                .flat_map(|r| {
                    let q = r.queue_bytes.get(i).map(|q| *q as f64 / 1e3);
                    row_times(rec, r).filter_map(move |t| q.map(|q| (t as f64 / 1e3, q)))
                })
                .collect();
            (format!("switch {} port {}", sw.0, p), pts)
        })
        .collect();
    line_chart(path, "Bottleneck queue", "KB", &series)
}
