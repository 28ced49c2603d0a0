//! Fault moments (timeseries.csv's `event` column: kill, restart, pause, resume) as vertical
//! lines on any chart whose x axis is a job's seconds in order, so that every timeline of a
//! fault run shows when the broker was killed or paused, whatever else it draws.

use plotters::prelude::*;

use super::error::ReportError;
use super::style::{chart_err, FONT};

/// How a mark's line is drawn: one run's marks solid, the other run's dashed, when two runs
/// share a chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stroke {
    Solid,
    Dashed,
}

/// One fault moment on a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The second's index among the job's seconds (0-based): the line goes through its middle,
    /// where that second's points are.
    pub second: usize,
    /// What happened, as drawn at the top of the line (`kill restart`, `B: pause`).
    pub text: String,
    pub stroke: Stroke,
}

impl Mark {
    pub fn new(second: usize, text: impl Into<String>) -> Mark {
        Mark {
            second,
            text: text.into(),
            stroke: Stroke::Solid,
        }
    }
}

/// Red vertical lines at `marks` from 0 to `ymax`; with `named`, each line's text at its top
/// (a stacked chart names them once, on its top panel).
pub fn draw<'a, DB: DrawingBackend + 'a, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    marks: &[Mark],
    ymax: f64,
    named: bool,
) -> Result<(), ReportError> {
    for (i, m) in marks.iter().enumerate() {
        let x = m.second as f64 + 0.5;
        let line = vec![(x, 0.0), (x, ymax)];
        match m.stroke {
            Stroke::Solid => chart
                .draw_series(std::iter::once(PathElement::new(line, RED.stroke_width(2))))
                .map(|_| ()),
            Stroke::Dashed => chart
                .draw_series(DashedLineSeries::new(line, 5, 4, RED.stroke_width(2)))
                .map(|_| ()),
        }
        .map_err(chart_err)?;
        if named && !m.text.is_empty() {
            // Stagger the names so that marks in the same or nearby seconds (A's and B's kill
            // of the same second) do not overprint each other.
            let y = ymax * (0.92 - 0.06 * (i % 6) as f64);
            chart
                .draw_series(std::iter::once(Text::new(
                    m.text.clone(),
                    (x + 0.05, y),
                    (FONT, 11).into_font().color(&RED),
                )))
                .map_err(chart_err)?;
        }
    }
    Ok(())
}
