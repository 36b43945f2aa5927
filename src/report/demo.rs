//! What `roce demo` prints and writes: the summary (JSON-serializable, with the counters under
//! their mlx5 names), perftest-style flow tables, terminal sparklines of rates and queue depth,
//! and with `--out DIR` the CSV time series (through [`crate::report::sim`]'s writers) and an SVG.
//!
//! It computes nothing about the run itself; the command fills these structures.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

use crate::stats::StatsReport;
use roce_fabric::record::series::{CcSample, Recorder, Row};
use roce_fabric::SwitchId;
use roce_proto::counters::RdmaCounters;
use roce_proto::endpoint::Endpoint;
use roce_proto::time::Duration;

/// One flow's result, perftest style.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowResult {
    /// Flow number (0-based).
    pub id: usize,
    /// `write`, `send` or `read`.
    pub op: String,
    /// Host that sends the data.
    pub from: String,
    /// Host that receives the data.
    pub to: String,
    /// Message size, bytes.
    pub size: u64,
    /// Messages completed and verified.
    pub messages: u64,
    /// Goodput over the measured time, Gbit/s.
    pub goodput_gbps: f64,
    /// perftest `BW peak[MB/sec]`: the best sampling interval.
    pub bw_peak_mb_s: f64,
    /// perftest `BW average[MB/sec]`.
    pub bw_average_mb_s: f64,
    /// perftest `MsgRate[Mpps]`.
    pub msg_rate_mpps: f64,
    /// Every message's bytes matched at its destination, and every completion succeeded.
    pub verified: bool,
    /// The first problems found (empty when verified).
    pub errors: Vec<String>,
}

/// The switch as the summary shows it.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SwitchSummary {
    /// ECT packets marked CE.
    pub ecn_marked: u64,
    /// Mean depth of the bottleneck queue over the samples, bytes.
    pub queue_mean_bytes: f64,
    /// Deepest bottleneck queue sampled, bytes.
    pub queue_max_bytes: u64,
    /// Frames dropped (shared buffer full).
    pub drops: u64,
    /// PFC pause frames sent (XOFF, refreshes and XON; 0 without `--pfc`).
    pub pfc_pause_frames: u64,
    /// Frames forwarded.
    pub forwarded: u64,
    /// Frame bytes sent toward the receiver per second of traffic, Gbit/s (the bottleneck's use).
    pub bottleneck_busy_gbps: f64,
}

/// What PFC did to one host's transmitter (`roce demo --pfc`), under mlx5's counter names.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostPause {
    /// The host.
    pub host: String,
    /// Pause frames received for priority 3.
    pub rx_prio3_pause: u64,
    /// Time priority 3 was paused, µs.
    pub rx_prio3_pause_duration_us: u64,
    /// Times a frame waited for the pause to end.
    pub tx_pause_holds: u64,
}

/// The congestion controllers' story, over all sending QPs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CcSummary {
    /// Controller name.
    pub name: String,
    /// Rate the QPs start at (the host line rate), Gbit/s.
    pub line_rate_gbps: f64,
    /// Rate decreases performed.
    pub rate_cuts: u64,
    /// Rate increase events.
    pub rate_increases: u64,
    /// Lowest rate any QP was sampled at, Gbit/s.
    pub min_rate_gbps: f64,
    /// Per flow: the rate at the end of the run, Gbit/s.
    pub final_rate_gbps: Vec<f64>,
}

/// What ran: hosts, switch and transport settings.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Setup {
    /// Sending hosts' names.
    pub senders: Vec<String>,
    /// Operations, one QP each per sender.
    pub ops: Vec<String>,
    /// `--port` as given (`ring`, `tap`, `tap:IFNAME`).
    pub port: String,
    /// The mirror interface, in tap mode.
    pub tap: Option<String>,
    /// Rate of the switch port toward the receiver, Gbit/s.
    pub bottleneck_gbps: f64,
    /// Shared switch buffer, bytes.
    pub buffer_bytes: u64,
    /// RED Kmin, bytes.
    pub kmin_bytes: u64,
    /// RED Kmax, bytes.
    pub kmax_bytes: u64,
    /// RED Pmax.
    pub pmax: f64,
    /// Host line rate, Gbit/s.
    pub host_gbps: f64,
    /// Congestion control.
    pub cc: String,
    /// Path MTU, bytes.
    pub mtu: u32,
    /// Message size, bytes.
    pub size: u32,
    /// Messages outstanding per QP.
    pub depth: u32,
    /// Notification point's minimum CNP interval per QP, microseconds.
    pub cnp_interval_us: u64,
}

/// What `roce demo` measured: everything `--json` prints.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DemoSummary {
    /// The run was verified end to end (every flow verified, no transport error).
    pub verified: bool,
    /// What ran.
    pub setup: Setup,
    /// Measured traffic time, seconds.
    pub duration_s: f64,
    /// Bottleneck rate, Gbit/s.
    pub bottleneck_gbps: f64,
    /// Per flow.
    pub flows: Vec<FlowResult>,
    /// Transport counters of all hosts together, mlx5/rxe names.
    pub counters: RdmaCounters,
    /// The same per port and per QP (what `roce stats` reads).
    pub stats: StatsReport,
    /// The switch.
    pub switch: SwitchSummary,
    /// Per host, what PFC pauses did to its transmitter (empty without `--pfc`).
    pub host_pauses: Vec<HostPause>,
    /// Congestion control.
    pub cc: CcSummary,
}

/// Time series of a run (one row per sample), kept in the simulator's [`Recorder`] shape so its
/// CSV writers apply.
pub struct Series {
    /// The samples.
    pub rec: Recorder<Endpoint>,
    /// Per-flow delivered bytes at the last sample.
    last_bytes: Vec<u64>,
    last_ns: u64,
}

impl std::fmt::Debug for Series {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Series")
            .field("rows", &self.rec.rows.len())
            .finish()
    }
}

impl Series {
    /// Samples every `interval`, with the bottleneck queue as switch 0 port `port`.
    pub fn new(interval: Duration, port: u16) -> Self {
        Series {
            rec: Recorder::new(interval, vec![(SwitchId(0), port)]),
            last_bytes: Vec::new(),
            last_ns: 0,
        }
    }

    /// Records one sample at `t_ns`: per-flow delivered bytes so far, the queue depth and each
    /// flow's sending host, QPN, congestion-control rate (Gbit/s) and alpha.
    pub fn sample(
        &mut self,
        t_ns: u64,
        delivered: &[u64],
        queue_bytes: u64,
        cc: &[(usize, u32, f64, f64)],
    ) {
        let secs = (t_ns.saturating_sub(self.last_ns) as f64 / 1e9).max(1e-9);
        self.last_bytes.resize(delivered.len(), 0);
        let flow_gbps = delivered
            .iter()
            .zip(self.last_bytes.iter_mut())
            .map(|(&b, last)| {
                let d = b.saturating_sub(*last);
                *last = b;
                d as f64 * 8.0 / secs / 1e9
            })
            .collect();
        self.last_ns = t_ns;
        let cc = cc
            .iter()
            .map(|&(host, qpn, rate_gbps, alpha)| {
                (
                    host,
                    CcSample {
                        qpn,
                        rate_gbps,
                        alpha,
                    },
                )
            })
            .collect();
        self.rec.rows.push(Row {
            t_ns,
            flow_gbps,
            queue_bytes: vec![queue_bytes],
            cc,
            repeats: 0,
        });
    }

    /// Highest per-flow goodput over the samples, Gbit/s.
    pub fn peak_gbps(&self, flow: usize) -> f64 {
        self.rec
            .rows
            .iter()
            .filter_map(|r| r.flow_gbps.get(flow).copied())
            .fold(0.0, f64::max)
    }

    /// Mean and max queue depth over the samples.
    pub fn queue_stats(&self) -> (f64, u64) {
        let q: Vec<u64> = self
            .rec
            .rows
            .iter()
            .filter_map(|r| r.queue_bytes.first().copied())
            .collect();
        let mean = q.iter().sum::<u64>() as f64 / q.len().max(1) as f64;
        (mean, q.iter().copied().max().unwrap_or(0))
    }

    /// Lowest congestion-control rate sampled, Gbit/s.
    pub fn min_cc_rate(&self) -> f64 {
        self.rec
            .rows
            .iter()
            .flat_map(|r| r.cc.iter().map(|c| c.1.rate_gbps))
            .fold(f64::INFINITY, f64::min)
    }

    /// Per-sample values of `f` in at most `width` buckets: their mean, or their minimum.
    fn buckets(&self, width: usize, lowest: bool, f: impl Fn(&Row) -> Option<f64>) -> Vec<f64> {
        let v: Vec<f64> = self.rec.rows.iter().filter_map(f).collect();
        if v.is_empty() || width == 0 {
            return Vec::new();
        }
        let per = v.len().div_ceil(width);
        v.chunks(per)
            .map(|c| {
                if lowest {
                    c.iter().copied().fold(f64::INFINITY, f64::min)
                } else {
                    c.iter().sum::<f64>() / c.len() as f64
                }
            })
            .collect()
    }

    /// Writes `flows.csv`, `queue.csv`, `cc.csv` and `demo.svg` into `dir`.
    pub fn write(&self, dir: &Path, flow_names: &[String]) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let files = [
            ("flows.csv", crate::report::sim::flows_csv(&self.rec)),
            ("queue.csv", crate::report::sim::queue_csv(&self.rec)),
            ("cc.csv", crate::report::sim::cc_csv(&self.rec)),
        ];
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let path = dir.join("demo.svg");
        self.plot(&path, flow_names)
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    fn plot(&self, path: &Path, flow_names: &[String]) -> Result<(), String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let root = SVGBackend::new(path, (960, 720)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (top, bottom) = root.split_vertically(440);
        let t = |r: &Row| r.t_ns as f64 / 1e6;
        let x_max = self.rec.rows.last().map_or(1.0, t).max(1e-3);
        let rows = &self.rec.rows;
        let y_rate = rows
            .iter()
            .flat_map(|r| {
                r.flow_gbps
                    .iter()
                    .copied()
                    .chain(r.cc.iter().map(|c| c.1.rate_gbps))
            })
            .fold(1e-3, f64::max)
            * 1.05;
        let mut chart = panel(
            &top,
            "Goodput (thick) and congestion-control rate (thin) per flow",
            (x_max, y_rate),
            "Gbit/s",
        )?;
        for (i, name) in flow_names.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let good = rows
                .iter()
                .filter_map(|r| r.flow_gbps.get(i).map(|g| (t(r), *g)));
            super::plot::labelled_line(&mut chart, good, color, 2, name)?;
            let rate = rows
                .iter()
                .filter_map(|r| r.cc.get(i).map(|c| (t(r), c.1.rate_gbps)));
            chart
                .draw_series(LineSeries::new(rate, color.stroke_width(1)))
                .map_err(|e| err(&e))?;
        }
        super::plot::legend(&mut chart)?;
        let q_max = rows
            .iter()
            .filter_map(|r| r.queue_bytes.first())
            .fold(1.0, |m, &q| f64::max(m, q as f64 / 1e3))
            * 1.05;
        let mut chart = panel(&bottom, "Bottleneck queue", (x_max, q_max), "KB")?;
        let q = rows
            .iter()
            .filter_map(|r| r.queue_bytes.first().map(|q| (t(r), *q as f64 / 1e3)));
        chart
            .draw_series(LineSeries::new(q, BLUE.stroke_width(1)))
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    }
}

type Panel<'a> = ChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// One chart with time (ms) across and `y_desc` up to `max.1`.
fn panel<'a>(
    area: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    caption: &str,
    max: (f64, f64),
    y_desc: &str,
) -> Result<Panel<'a>, String> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..max.0, 0f64..max.1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("time (ms)")
        .y_desc(y_desc)
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(chart)
}

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A one-line bar chart of `values` scaled to `max`.
pub fn sparkline(values: &[f64], max: f64) -> String {
    values
        .iter()
        .map(|&v| {
            let x = if max > 0.0 {
                (v / max).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let i = (x * (BARS.len() - 1) as f64).round() as usize;
            BARS.get(i).copied().unwrap_or(' ')
        })
        .collect()
}

/// The perftest-style table of the flows.
pub fn flow_table(flows: &[FlowResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        " flow  op     path      #bytes  #iterations  BW peak[MB/sec]  BW average[MB/sec]  MsgRate[Mpps]  Gbit/s  verified"
    );
    for f in flows {
        let _ = writeln!(
            s,
            " {:<4}  {:<5}  {:<8}  {:>6}  {:>11}  {:>15.2}  {:>18.2}  {:>13.6}  {:>6.3}  {}",
            f.id,
            f.op.to_uppercase(),
            format!("{}->{}", f.from, f.to),
            f.size,
            f.messages,
            f.bw_peak_mb_s,
            f.bw_average_mb_s,
            f.msg_rate_mpps,
            f.goodput_gbps,
            if f.verified { "yes" } else { "NO" }
        );
    }
    s
}

/// The congestion story: per-flow goodput and CC-rate sparklines and the queue's.
pub fn story(series: &Series, flows: &[FlowResult], width: usize) -> String {
    let mut s = String::new();
    let rows = &series.rec.rows;
    let span_ms = rows.last().map_or(0.0, |r| r.t_ns as f64 / 1e6);
    let rate_max = rows
        .iter()
        .flat_map(|r| r.cc.iter().map(|c| c.1.rate_gbps))
        .fold(1e-9, f64::max);
    let _ = writeln!(
        s,
        "  over {span_ms:.0} ms, left to right ({} samples; mean per slice):",
        rows.len()
    );
    for f in flows {
        let good = series.buckets(width, false, |r| r.flow_gbps.get(f.id).copied());
        let good_max = good.iter().copied().fold(1e-9, f64::max);
        let _ = writeln!(
            s,
            "  flow {:<2} goodput  {}  (0..{good_max:.2} Gbit/s)",
            f.id,
            sparkline(&good, good_max)
        );
        let rate = series.buckets(width, false, |r| r.cc.get(f.id).map(|c| c.1.rate_gbps));
        if !rate.is_empty() {
            // Every flow's congestion control sits on the sender: for READ, on its responder.
            let label = " cc rate";
            let _ = writeln!(
                s,
                "         {label}  {}  (0..{rate_max:.2} Gbit/s)",
                sparkline(&rate, rate_max)
            );
        }
    }
    let q = series.buckets(width, false, |r| r.queue_bytes.first().map(|&q| q as f64));
    let q_max = q.iter().copied().fold(1.0, f64::max);
    let _ = writeln!(
        s,
        "  queue            {}  (0..{:.0} KB)",
        sparkline(&q, q_max),
        q_max / 1e3
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_scales_to_max() {
        assert_eq!(sparkline(&[0.0, 0.5, 1.0, 2.0], 1.0), "▁▅██");
    }

    #[test]
    fn series_turns_delivered_bytes_into_gbps() {
        let mut s = Series::new(Duration::from_millis(1), 0);
        s.sample(1_000_000, &[125_000], 10, &[(1, 17, 5.0, 0.5)]);
        s.sample(2_000_000, &[250_000], 30, &[(1, 17, 4.0, 0.5)]);
        assert_eq!(s.peak_gbps(0), 1.0);
        assert_eq!(s.queue_stats(), (20.0, 30));
        assert_eq!(s.min_cc_rate(), 4.0);
    }
}
