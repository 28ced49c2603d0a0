//! A replicating pair's seconds (`[cluster] slaves = 1`), drawn under the cell's producer
//! timeline on the same seconds: the master's lag behind its slave, the slave wait p99 of the
//! puts that waited, and the sends answered SLAVE_NOT_AVAILABLE (11) or FLUSH_SLAVE_TIMEOUT
//! (12). Only a run with `[cluster] slaves = 1` has the picture (a lone master reports its lag
//! as 0); a pair with nothing to show is one line of text.

use plotters::prelude::*;

use super::error::ReportError;
use super::marks::{self, Mark};
use super::style::{chart_err, color, legend, max_of, svg, FONT};
use super::table::Table;

/// The panels: the column, the scale from its unit to the drawn one, the axis in words, the
/// legend, whether it is drawn as bars (counts per second) rather than a line.
const PANELS: [(&str, f64, &str, &str, Style); 4] = [
    (
        "repl_lag_bytes",
        1.0 / 1024.0,
        "lag (KiB)",
        "master ahead of the slave's acknowledged offset, KiB",
        Style::Line,
    ),
    (
        "slave_wait_p99_us",
        1.0 / 1000.0,
        "slave wait p99 (ms)",
        "wait for the slave, p99 of the puts that waited, ms",
        Style::Line,
    ),
    (
        "slave_not_available",
        1.0,
        "answers / s",
        "SLAVE_NOT_AVAILABLE (11) answers / s",
        Style::Bars,
    ),
    (
        "flush_slave_timeout",
        1.0,
        "answers / s",
        "FLUSH_SLAVE_TIMEOUT (12) answers / s",
        Style::Bars,
    ),
];

/// The CSV columns the picture draws (the figure's tooltip).
pub const COLUMNS: &str =
    "repl_lag_bytes, slave_wait_p99_us, slave_not_available, flush_slave_timeout, event";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Line,
    Bars,
}

/// What a cell's replication amounts to.
pub enum Picture {
    /// The chart (SVG) and its caption.
    Chart(String, String),
    /// A pair with no lag, no waits and no 11/12 answers: the line that stands for the chart.
    Quiet(&'static str),
}

/// A pair's cell's replication picture; None when its broker reported no HA keys.
pub fn picture(
    s: &Table,
    seconds: &[&Vec<String>],
    title: String,
    events: &[(usize, String)],
) -> Result<Option<Picture>, ReportError> {
    let col = |c: &str, k: f64| -> Vec<Option<f64>> {
        seconds.iter().map(|r| s.num(r, c).map(|v| v * k)).collect()
    };
    let lag = col(PANELS[0].0, 1.0);
    if lag.iter().all(Option::is_none) {
        return Ok(None);
    }
    let series: Vec<(usize, Vec<Option<f64>>)> = PANELS
        .iter()
        .enumerate()
        .map(|(i, p)| (i, col(p.0, p.1)))
        .filter(|(_, v)| v.iter().flatten().any(|x| *x > 0.0))
        .collect();
    if series.is_empty() {
        return Ok(Some(Picture::Quiet(
            "no replication lag, slave waits or SLAVE_NOT_AVAILABLE (11) / FLUSH_SLAVE_TIMEOUT (12) answers in this run",
        )));
    }
    let mut caption: Vec<String> = series
        .iter()
        .filter(|(i, _)| PANELS[*i].4 == Style::Bars)
        .map(|(i, v)| {
            let total: f64 = v.iter().flatten().sum();
            let first = v
                .iter()
                .position(|x| x.is_some_and(|x| x > 0.0))
                .unwrap_or(0);
            format!(
                "{}: {total} in all, the first in second {}",
                PANELS[*i].3,
                first + 1
            )
        })
        .collect();
    if let Some(peak) = series
        .iter()
        .find(|(i, _)| *i == 0)
        .map(|(_, v)| v.iter().flatten().copied().fold(0.0, f64::max))
    {
        caption.insert(0, format!("largest lag {peak:.1} KiB"));
    }
    let svg = chart(&title, &series, events)?;
    Ok(Some(Picture::Chart(svg, caption.join("; "))))
}

/// One panel per series with something to show, stacked on the cell's seconds.
fn chart(
    title: &str,
    series: &[(usize, Vec<Option<f64>>)],
    events: &[(usize, String)],
) -> Result<String, ReportError> {
    let n = series.first().map_or(1, |s| s.1.len()).max(1) as f64;
    let marks: Vec<Mark> = events.iter().map(|(i, t)| Mark::new(*i, t)).collect();
    let panel_h = 150;
    svg(30 + panel_h * series.len() as u32, |root| {
        let root = root.titled(title, (FONT, 15)).map_err(chart_err)?;
        let areas = root.split_evenly((series.len(), 1));
        for (k, ((i, v), area)) in series.iter().zip(&areas).enumerate() {
            let (_, _, axis, label, style) = PANELS[*i];
            let last = k + 1 == series.len();
            let ymax = max_of(v.iter().flatten().copied(), 0.01);
            let mut chart = ChartBuilder::on(area)
                .margin(6)
                .x_label_area_size(if last { 34 } else { 22 })
                .y_label_area_size(60)
                .margin_right(66)
                .build_cartesian_2d(0f64..n, 0f64..ymax)
                .map_err(chart_err)?;
            let mut mesh = chart.configure_mesh();
            mesh.y_desc(axis);
            if last {
                mesh.x_desc("second (sampled, in order)");
            }
            mesh.draw().map_err(chart_err)?;
            let c = color(*i + 3);
            match style {
                Style::Line => {
                    let pts: Vec<(f64, f64)> = v
                        .iter()
                        .enumerate()
                        .filter_map(|(x, y)| y.map(|y| (x as f64 + 0.5, y)))
                        .collect();
                    chart
                        .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                        .map_err(chart_err)?
                        .label(label)
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2))
                        });
                }
                Style::Bars => {
                    let bars = v.iter().enumerate().filter_map(|(x, y)| {
                        let y = y.filter(|y| *y > 0.0)?;
                        let x = x as f64;
                        Some(Rectangle::new([(x + 0.1, 0.0), (x + 0.9, y)], c.filled()))
                    });
                    chart
                        .draw_series(bars)
                        .map_err(chart_err)?
                        .label(label)
                        .legend(move |(x, y)| {
                            Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled())
                        });
                }
            }
            marks::draw(&mut chart, &marks, ymax, k == 0)?;
            legend(&mut chart)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[[&str; 4]]) -> Table {
        Table {
            header: PANELS.map(|p| p.0.to_owned()).to_vec(),
            rows: rows.iter().map(|r| r.map(String::from).to_vec()).collect(),
        }
    }

    fn pic(t: &Table) -> Option<Picture> {
        let seconds: Vec<&Vec<String>> = t.rows.iter().collect();
        picture(t, &seconds, "cell".into(), &[]).unwrap()
    }

    #[test]
    fn a_run_without_a_pair_has_no_picture_and_a_quiet_pair_one_line() {
        assert!(pic(&table(&[["", "", "0", "0"]])).is_none());
        assert!(matches!(
            pic(&table(&[["0", "", "0", "0"], ["0", "", "0", "0"]])),
            Some(Picture::Quiet(_))
        ));
    }

    #[test]
    fn a_stalled_slave_draws_lag_waits_and_12s_in_words() {
        let t = table(&[
            ["0", "200", "0", "0"],
            ["2097152", "", "0", "0"],
            ["1048576", "1000000", "0", "40"],
        ]);
        let Some(Picture::Chart(svg, caption)) = pic(&t) else {
            panic!("no chart");
        };
        assert_eq!(
            caption,
            "largest lag 2048.0 KiB; FLUSH_SLAVE_TIMEOUT (12) answers / s: 40 in all, the first in second 3"
        );
        for words in ["lag (KiB)", "slave wait p99 (ms)", "answers / s"] {
            assert!(svg.contains(words), "no `{words}`");
        }
        assert!(
            !svg.contains("SLAVE_NOT_AVAILABLE"),
            "an all-zero series is drawn"
        );
    }
}
