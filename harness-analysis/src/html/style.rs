//! The look every chart shares: size, font, palette, the SVG canvas, the legend box, the
//! y-axis headroom and the one error mapping of plotters' errors. A leaf: the chart kinds
//! (`charts`, `marks`, `overlay`, `consumer`, `replication`) draw with it.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::error::ReportError;

pub(super) const WIDTH: u32 = 880;
pub(super) const FONT: &str = "sans-serif";

/// Distinct colours for cells and busy classes (ColorBrewer Set1/Dark2).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

pub(super) fn chart_err<E: std::fmt::Debug>(e: E) -> ReportError {
    ReportError::Chart(format!("{e:?}"))
}

/// Draws into a fresh SVG string of `height` pixels.
pub(super) fn svg(
    height: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), ReportError>,
) -> Result<String, ReportError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        draw(&root)?;
        root.present().map_err(chart_err)?;
    }
    Ok(out)
}

/// The legend box, in the upper left corner of every chart.
pub(super) fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> Result<(), ReportError> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font((FONT, 11))
        .draw()
        .map_err(chart_err)
}

pub(super) fn max_of(values: impl Iterator<Item = f64>, floor: f64) -> f64 {
    values.fold(floor, f64::max) * 1.08
}
