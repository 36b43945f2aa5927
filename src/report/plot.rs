//! Plot pieces the SVG reports share, so every chart draws its named lines and its legend box
//! the same way, and the charts of a line with a band around it ([`band_chart`]).

use std::path::Path;

use plotters::coord::CoordTranslate;
use plotters::prelude::*;

use super::overlay::Band;

/// Draws `pts` as a `width`-pixel line of `color`, listed in the legend as `name`.
pub(crate) fn labelled_line<DB, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    pts: impl IntoIterator<Item = (f64, f64)>,
    color: RGBAColor,
    width: u32,
    name: &str,
) -> Result<(), String>
where
    DB: DrawingBackend,
    CT: CoordTranslate<From = (f64, f64)>,
{
    chart
        .draw_series(LineSeries::new(pts, color.stroke_width(width)))
        .map_err(|e| e.to_string())?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
    Ok(())
}

/// Draws the legend box of the lines labelled so far, on a translucent white background.
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())
}

/// The axes of a [`band_chart`]: descriptions and whether x is logarithmic.
pub(crate) struct Axes<'a> {
    /// The x axis.
    pub x_desc: &'a str,
    /// The y axis.
    pub y_desc: &'a str,
    /// A logarithmic x axis (flow sizes).
    pub log_x: bool,
}

/// Draws each band's mean as a line, labelled with the band's name, over a translucent area from
/// its smallest to its largest figure, into the SVG file `path`.
pub(crate) fn band_chart(
    path: &Path,
    title: &str,
    axes: &Axes<'_>,
    bands: &[Band],
) -> Result<(), String> {
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let pts = || bands.iter().flat_map(|b| b.pts.iter());
    let x_min = pts().map(|p| p.x).fold(f64::INFINITY, f64::min);
    let x_max = pts().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max);
    let y_max = pts().map(|p| p.hi).fold(1e-9, f64::max) * 1.05;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60);
    if axes.log_x {
        let (lo, hi) = if x_min.is_finite() && x_min > 0.0 {
            (x_min / 1.5, x_max * 1.5)
        } else {
            (1.0, 10.0)
        };
        let mut chart = builder
            .build_cartesian_2d((lo..hi).log_scale(), 0f64..y_max)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(axes.x_desc)
            .y_desc(axes.y_desc)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .map_err(|e| e.to_string())?;
        draw_bands(&mut chart, bands)?;
    } else {
        let mut chart = builder
            .build_cartesian_2d(0f64..x_max.max(1e-9), 0f64..y_max)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(axes.x_desc)
            .y_desc(axes.y_desc)
            .draw()
            .map_err(|e| e.to_string())?;
        draw_bands(&mut chart, bands)?;
    }
    root.present().map_err(|e| e.to_string())
}

fn draw_bands<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    bands: &[Band],
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    for (i, band) in bands.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let area: Vec<(f64, f64)> = band
            .pts
            .iter()
            .map(|p| (p.x, p.hi))
            .chain(band.pts.iter().rev().map(|p| (p.x, p.lo)))
            .collect();
        if band.pts.iter().any(|p| p.hi > p.lo) {
            chart
                .draw_series(std::iter::once(Polygon::new(area, color.mix(0.2).filled())))
                .map_err(|e| e.to_string())?;
        }
        let mean = band.pts.iter().map(|p| (p.x, p.mean));
        labelled_line(chart, mean, color, 2, &band.name)?;
    }
    if bands.len() <= 16 {
        legend(chart)?;
    }
    Ok(())
}
