//! The slowdown-against-size plot of a run's finished flows: one dot per flow (log x axis,
//! as FCT papers draw it) and the p50 and p99 slowdown of each size bin as lines.

use std::path::Path;

use plotters::prelude::*;

use roce_fabric::flows::fct::FctReport;

/// Draws `report` into the SVG file `path`.
pub fn plot_slowdown(path: &Path, report: &FctReport) -> Result<(), String> {
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let sizes = report.flows.iter().map(|r| r.run.size as f64);
    let x_max = sizes.fold(10.0, f64::max) * 1.5;
    let y_max = report.flows.iter().map(|r| r.slowdown).fold(2.0, f64::max) * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption("FCT slowdown against flow size", ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((1f64..x_max).log_scale(), 0f64..y_max)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("flow size (bytes)")
        .y_desc("slowdown (FCT / ideal FCT)")
        .draw()
        .map_err(|e| e.to_string())?;
    let dots = report.flows.iter().map(|r| {
        Circle::new(
            (r.run.size.max(1) as f64, r.slowdown),
            2,
            BLUE.mix(0.4).filled(),
        )
    });
    chart.draw_series(dots).map_err(|e| e.to_string())?;
    let bins = [
        ("p50 per size bin", 0usize, GREEN),
        ("p99 per size bin", 1, RED),
    ];
    for (name, which, color) in bins {
        let pts = report.bins.iter().map(|b| {
            let y = if which == 0 { b.p50 } else { b.p99 };
            (b.max_bytes.max(1) as f64, y)
        });
        super::plot::labelled_line(&mut chart, pts, color.to_rgba(), 2, name)?;
    }
    super::plot::legend(&mut chart)?;
    root.present().map_err(|e| e.to_string())
}
