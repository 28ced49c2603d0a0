//! A knee run's probe ladder: the offered rate of every probe in the order the search tried
//! them, one line per cell, a filled dot where the probe met the SLO and a hollow one where it
//! did not, named by the term that failed first.

use plotters::prelude::*;

use super::error::ReportError;
use super::style::{chart_err, color, max_of, svg, FONT};

/// One probe: its index in the search, its offered rate, and the SLO term it failed (None
/// when it met the SLO).
pub type Rung = (f64, f64, Option<String>);

/// The failing term shortened for a label: `valid (lag p99 … (generator late …))` → `valid`.
pub fn short_term(term: &str) -> String {
    term.split(" (").next().unwrap_or(term).trim().to_owned()
}

/// One chart for all cells: `(label, rungs)` per cell.
pub fn ladder(cells: &[(String, Vec<Rung>)]) -> Result<String, ReportError> {
    svg(340, |root| {
        let all = || cells.iter().flat_map(|c| c.1.iter());
        let xmax = max_of(all().map(|r| r.0), 1.0) + 0.5;
        let ymax = max_of(all().map(|r| r.1), 1.0);
        let mut chart = ChartBuilder::on(root)
            .caption(
                "knee search: offered rate by probe (hollow: failed, named by its first failed term)",
                (FONT, 15),
            )
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..xmax, 0f64..ymax)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .x_desc("probe (in the order the search tried them)")
            .y_desc("offered rate (sends/s)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()
            .map_err(chart_err)?;
        for (i, (name, rungs)) in cells.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(
                    rungs.iter().map(|r| (r.0, r.1)),
                    c.mix(0.6),
                ))
                .map_err(chart_err)?
                .label(name.as_str())
                .legend(move |(x, y)| Circle::new((x + 7, y), 4, c.filled()));
            chart
                .draw_series(rungs.iter().map(|r| {
                    let style = match r.2 {
                        None => c.filled(),
                        Some(_) => c.stroke_width(2),
                    };
                    Circle::new((r.0, r.1), 5, style)
                }))
                .map_err(chart_err)?;
            // Name a failure only where the term changes along the cell's ladder: the same
            // term on every failing probe would cover the dots.
            let mut last: Option<String> = None;
            for r in rungs {
                let Some(term) = &r.2 else {
                    continue;
                };
                let short = short_term(term);
                if last.as_deref() == Some(short.as_str()) {
                    continue;
                }
                chart
                    .draw_series(std::iter::once(Text::new(
                        short.clone(),
                        (r.0 + 0.12, r.1 + ymax * 0.015),
                        (FONT, 10).into_font().color(&c),
                    )))
                    .map_err(chart_err)?;
                last = Some(short);
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font((FONT, 11))
            .draw()
            .map_err(chart_err)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_term_is_named_without_its_explanation() {
        assert_eq!(
            short_term("valid (lag p99 40671 µs > 10000 µs (generator late))"),
            "valid"
        );
        assert_eq!(short_term("busy_rate <= 0.1%"), "busy_rate <= 0.1%");
    }
}
