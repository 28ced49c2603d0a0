//! The charts, drawn with plotters into SVG strings (inline in the page, no script needed).

use plotters::prelude::*;

use super::error::ReportError;
use super::marks;
use super::style::{chart_err, color, legend, max_of, svg, FONT, WIDTH};

/// One coloured line per series, each with its legend entry.
fn draw_lines<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<
        'a,
        DB,
        Cartesian2d<impl Ranged<ValueType = f64>, impl Ranged<ValueType = f64>>,
    >,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), ReportError> {
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .map_err(chart_err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2)));
    }
    Ok(())
}

/// One second of a job's timeline.
#[derive(Debug, Clone, Default)]
pub struct Second {
    pub offered: Option<f64>,
    pub ok: f64,
    /// Busy answers per class, in the order of [`Timeline::classes`].
    pub busy: Vec<f64>,
    pub p99_ms: Option<f64>,
    /// A known stall in this second (put lock held ≥ 100 ms).
    pub stall: bool,
    /// What a fault injector did in this second (`kill restart`, `pause`); empty if nothing.
    pub event: String,
    /// The first second of a new step or probe.
    pub boundary: bool,
}

pub struct Timeline {
    pub title: String,
    pub classes: Vec<String>,
    pub seconds: Vec<Second>,
}

/// Offered rate (line), ok and busy answers stacked by class (bars), p99 (right axis), stalls
/// (red marks) and step/probe boundaries (grey lines), one bar per sampled second.
pub fn timeline(t: &Timeline) -> Result<String, ReportError> {
    svg(280, |root| {
        let n = t.seconds.len().max(1) as f64;
        let ymax = max_of(
            t.seconds.iter().map(|s| {
                s.offered
                    .unwrap_or(0.0)
                    .max(s.ok + s.busy.iter().sum::<f64>())
            }),
            1.0,
        );
        let p99max = max_of(t.seconds.iter().filter_map(|s| s.p99_ms), 1.0);
        let mut chart = ChartBuilder::on(root)
            .caption(&t.title, (FONT, 15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .right_y_label_area_size(60)
            .build_cartesian_2d(0f64..n, 0f64..ymax)
            .map_err(chart_err)?
            .set_secondary_coord(0f64..n, 0f64..p99max);
        chart
            .configure_mesh()
            .x_desc("second (sampled, in order)")
            .y_desc("answers / s")
            .draw()
            .map_err(chart_err)?;
        chart
            .configure_secondary_axes()
            .y_desc("send latency p99 (ms)")
            .draw()
            .map_err(chart_err)?;
        // Stacks: ok first, then each busy class.
        let mut layers: Vec<(String, RGBColor, Vec<f64>)> = vec![(
            "ok".into(),
            RGBColor(120, 190, 120),
            t.seconds.iter().map(|s| s.ok).collect(),
        )];
        for (c, name) in t.classes.iter().enumerate() {
            let values: Vec<f64> = t
                .seconds
                .iter()
                .map(|s| s.busy.get(c).copied().unwrap_or(0.0))
                .collect();
            if values.iter().any(|v| *v > 0.0) {
                layers.push((format!("busy {name}"), color(c + 3), values));
            }
        }
        let mut base = vec![0.0; t.seconds.len()];
        for (name, col, values) in layers {
            let bars: Vec<Rectangle<(f64, f64)>> = values
                .iter()
                .enumerate()
                .filter(|(_, v)| **v > 0.0)
                .map(|(i, v)| {
                    let x = i as f64;
                    let r =
                        Rectangle::new([(x + 0.1, base[i]), (x + 0.9, base[i] + v)], col.filled());
                    base[i] += v;
                    r
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(chart_err)?
                .label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], col.filled()));
        }
        for (i, s) in t.seconds.iter().enumerate() {
            let x = i as f64;
            if s.boundary {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x, 0.0), (x, ymax)],
                        BLACK.mix(0.35),
                    )))
                    .map_err(chart_err)?;
            }
            if !s.event.is_empty() {
                // A fault moment: a red line through its second's bar, named at the top.
                let x = x + 0.5;
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x, 0.0), (x, ymax)],
                        RED.stroke_width(2),
                    )))
                    .map_err(chart_err)?;
                chart
                    .draw_series(std::iter::once(Text::new(
                        s.event.clone(),
                        (x + 0.05, ymax * 0.9),
                        (FONT, 11).into_font().color(&RED),
                    )))
                    .map_err(chart_err)?;
            }
            if s.stall {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x, ymax * 0.97), (x + 1.0, ymax)],
                        RED.filled(),
                    )))
                    .map_err(chart_err)?;
            }
        }
        let offered: Vec<(f64, f64)> = t
            .seconds
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.offered.map(|o| (i as f64 + 0.5, o)))
            .collect();
        if !offered.is_empty() {
            chart
                .draw_series(LineSeries::new(offered, BLUE.stroke_width(2)))
                .map_err(chart_err)?
                .label("offered / s")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], BLUE.stroke_width(2)));
        }
        let p99: Vec<(f64, f64)> = t
            .seconds
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.p99_ms.map(|p| (i as f64 + 0.5, p)))
            .collect();
        chart
            .draw_secondary_series(LineSeries::new(p99, BLACK.stroke_width(1)))
            .map_err(chart_err)?
            .label("send latency p99 (right axis)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], BLACK));
        legend(&mut chart)
    })
}

fn percentile_label(x: f64) -> String {
    let decade = x.log10();
    if (decade - decade.round()).abs() > 1e-6 {
        return String::new();
    }
    let nines = decade.round() as usize;
    match nines {
        0 => "0%".into(),
        n => format!("{:.*}%", n.saturating_sub(2), 100.0 * (1.0 - 1.0 / x)),
    }
}

/// Latency by percentile, x on HdrHistogram's log axis (0 % … 99.999 %), one line per series.
pub fn spectrum(title: &str, series: &[(String, Vec<(f64, f64)>)]) -> Result<String, ReportError> {
    svg(380, |root| {
        let ymax = max_of(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)), 0.01);
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d((1f64..1e5f64).log_scale(), 0f64..ymax)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .x_desc("percentile")
            .y_desc("send latency (ms, from the intended send time)")
            .x_label_formatter(&|x| percentile_label(*x))
            .draw()
            .map_err(chart_err)?;
        draw_lines(&mut chart, series)?;
        legend(&mut chart)
    })
}

/// A metric per cell as horizontal bars (median of the repetitions) with their min–max spread.
pub fn bars(
    title: &str,
    x_desc: &str,
    cells: &[(String, Vec<f64>)],
) -> Result<String, ReportError> {
    let n = cells.len().max(1);
    let label_px = cells.iter().map(|c| c.0.chars().count()).max().unwrap_or(4) as u32 * 6 + 10;
    svg(100 + 30 * n as u32, |root| {
        let xmax = max_of(cells.iter().flat_map(|c| c.1.iter().copied()), 1e-9);
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(label_px.min(WIDTH / 2))
            .build_cartesian_2d(0f64..xmax, (0usize..n).into_segmented())
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_labels(n)
            // The first cell on top.
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) if *i < n => cells[n - 1 - i].0.clone(),
                _ => String::new(),
            })
            .draw()
            .map_err(chart_err)?;
        for (k, (_, values)) in cells.iter().enumerate() {
            let i = n - 1 - k;
            let mut v = values.clone();
            v.sort_by(f64::total_cmp);
            let Some(median) = v.get(v.len() / 2).copied() else {
                continue;
            };
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(i)),
                    (median, SegmentValue::Exact(i + 1)),
                ],
                color(k).mix(0.8).filled(),
            );
            bar.set_margin(5, 5, 0, 0);
            chart.draw_series(std::iter::once(bar)).map_err(chart_err)?;
            if v.len() > 1 {
                let (lo, hi) = (v[0], v[v.len() - 1]);
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![
                            (lo, SegmentValue::CenterOf(i)),
                            (hi, SegmentValue::CenterOf(i)),
                        ],
                        BLACK.stroke_width(2),
                    )))
                    .map_err(chart_err)?;
            }
        }
        Ok(())
    })
}

/// One cell's knee probes: `(rate, value, met the SLO)`.
pub type Probes = Vec<(f64, f64, bool)>;

/// One knee search per cell: probe rate against a metric (log y), filled dots for probes
/// that met the SLO, hollow for those that did not, and the SLO limit as a red line.
pub struct KneePlot<'a> {
    pub title: &'a str,
    pub y_desc: &'a str,
    /// Per cell: label and probes `(rate, value, met)`.
    pub cells: Vec<(String, Probes)>,
    pub limit: Option<(f64, String)>,
    /// Values below this are drawn at it (log axis).
    pub floor: f64,
}

pub fn knee(k: &KneePlot) -> Result<String, ReportError> {
    svg(340, |root| {
        let all = || k.cells.iter().flat_map(|c| c.1.iter());
        let xmax = max_of(all().map(|p| p.0), 1.0);
        let ymax = max_of(
            all().map(|p| p.1).chain(k.limit.as_ref().map(|l| l.0)),
            k.floor * 10.0,
        );
        let mut chart = ChartBuilder::on(root)
            .caption(k.title, (FONT, 15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..xmax, (k.floor..ymax).log_scale())
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .x_desc("offered rate (sends/s)")
            .y_desc(k.y_desc)
            .draw()
            .map_err(chart_err)?;
        if let Some((v, text)) = &k.limit {
            chart
                .draw_series(LineSeries::new(
                    vec![(0.0, *v), (xmax, *v)],
                    RED.stroke_width(2),
                ))
                .map_err(chart_err)?
                .label(format!("SLO: {text}"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], RED.stroke_width(2)));
        }
        for (i, (name, probes)) in k.cells.iter().enumerate() {
            let c = color(i);
            let mut pts: Vec<(f64, f64, bool)> = probes
                .iter()
                .map(|p| (p.0, p.1.max(k.floor), p.2))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(pts.iter().map(|p| (p.0, p.1)), c.mix(0.6)))
                .map_err(chart_err)?
                .label(name.as_str())
                .legend(move |(x, y)| Circle::new((x + 7, y), 4, c.filled()));
            chart
                .draw_series(pts.iter().map(|p| {
                    let style = if p.2 { c.filled() } else { c.stroke_width(2) };
                    Circle::new((p.0, p.1), 4, style)
                }))
                .map_err(chart_err)?;
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

/// Several per-second series overlaid (the consumer metrics), with the jobs' fault moments.
pub fn lines(
    title: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
    marks: &[marks::Mark],
) -> Result<String, ReportError> {
    svg(260, |root| {
        let xmax = max_of(series.iter().flat_map(|s| s.1.iter().map(|p| p.0)), 1.0);
        let ymax = max_of(series.iter().flat_map(|s| s.1.iter().map(|p| p.1)), 1e-9);
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .x_desc("second (sampled, in order)")
            .y_desc(y_desc)
            .draw()
            .map_err(chart_err)?;
        draw_lines(&mut chart, series)?;
        marks::draw(&mut chart, marks, ymax, true)?;
        legend(&mut chart)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_labels_are_hdrhistograms() {
        let got: Vec<String> = [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 20.0]
            .map(percentile_label)
            .to_vec();
        assert_eq!(got, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", ""]);
    }
}
