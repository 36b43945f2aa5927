//! Plot pieces the SVG reports share, so every chart draws its named lines and its legend box
//! the same way.

use plotters::coord::CoordTranslate;
use plotters::prelude::*;

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
