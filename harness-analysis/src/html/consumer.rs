//! The consumer run's chart, one per job: three panels on one time axis that tell its story —
//! produce rate against consume rate, the lag, and the consumers' cache (messages, MiB) against
//! the pull thresholds, with each flow-control gate's delayed pulls as marks of its colour.

use plotters::prelude::*;

use super::error::ReportError;
use super::marks::{self, Mark};
use super::style::{chart_err, color, legend, max_of, svg, FONT};
use super::table::Table;
use super::view::Thresholds;

/// The four gates in RocketMQ's order (DefaultMQPushConsumerImpl.pullMessage): the column, the
/// gate's name in words, its mark colour.
pub const GATES: [(&str, &str, RGBColor); 4] = [
    ("consumer_fc_count", "count", RGBColor(255, 127, 14)),
    ("consumer_fc_size", "size", RGBColor(148, 103, 189)),
    ("consumer_fc_span", "span", RGBColor(140, 86, 75)),
    (
        "consumer_fc_not_locked",
        "not-locked",
        RGBColor(227, 119, 194),
    ),
];

/// The listener's failure series (timeseries.csv, per second), drawn on the rates panel when
/// non-zero: the column, the words of its legend, its colour.
pub const FAILURE_SERIES: [(&str, &str, RGBColor); 3] = [
    (
        "consumer_failures",
        "listener failures / s",
        RGBColor(214, 39, 40),
    ),
    (
        "consumer_retries",
        "redelivered (reconsumeTimes > 0) / s",
        RGBColor(188, 189, 34),
    ),
    (
        "consumer_dlq",
        "sent to the DLQ / s",
        RGBColor(23, 190, 207),
    ),
];

/// A threshold drawn only when it is within this factor of the data: a limit far above the
/// cache would flatten the series it bounds, so it is named in the legend instead.
const OFF_SCALE: f64 = 3.0;

/// One job's consumer seconds, columns by name (None: the column is absent or empty).
pub struct ConsumerPlot {
    pub title: String,
    pub produced: Vec<Option<f64>>,
    pub consumed: Vec<Option<f64>>,
    pub lag: Vec<Option<f64>>,
    pub cached: Vec<Option<f64>>,
    pub cached_mib: Vec<Option<f64>>,
    /// Per gate of [`GATES`]: delayed pulls per second.
    pub gates: [Vec<f64>; 4],
    /// Per series of [`FAILURE_SERIES`]: messages per second (0 when the column is absent).
    pub failures: [Vec<f64>; 3],
    pub thresholds: Option<Thresholds>,
    /// Seconds with a fault moment (kill, restart, pause): a vertical mark on every panel.
    pub events: Vec<(usize, String)>,
}

impl ConsumerPlot {
    pub fn new(
        title: String,
        s: &Table,
        seconds: &[&Vec<String>],
        thresholds: Option<Thresholds>,
        events: Vec<(usize, String)>,
    ) -> ConsumerPlot {
        let col = |c: &str| seconds.iter().map(|r| s.num(r, c)).collect::<Vec<_>>();
        ConsumerPlot {
            title,
            produced: col("ok"),
            consumed: col("consumed"),
            lag: col("consumer_lag"),
            cached: col("consumer_cached"),
            cached_mib: col("consumer_cached_mib"),
            gates: GATES.map(|g| {
                seconds
                    .iter()
                    .map(|r| s.num(r, g.0).unwrap_or(0.0))
                    .collect()
            }),
            failures: FAILURE_SERIES.map(|f| {
                seconds
                    .iter()
                    .map(|r| s.num(r, f.0).unwrap_or(0.0))
                    .collect()
            }),
            thresholds,
            events,
        }
    }

    /// The gates that delayed at least one pull: `(name, total delayed pulls, first second)`.
    pub fn active_gates(&self) -> Vec<(&'static str, f64, usize)> {
        GATES
            .iter()
            .zip(&self.gates)
            .filter_map(|(g, v)| {
                let first = v.iter().position(|x| *x > 0.0)?;
                Some((g.1, v.iter().sum(), first))
            })
            .collect()
    }

    /// Whether the listener failed in any second (the failure series are drawn).
    pub fn any_failures(&self) -> bool {
        self.failures.iter().flatten().any(|x| *x > 0.0)
    }

    /// The gates with nothing to show, named for the one line that replaces their marks.
    pub fn quiet_gates(&self) -> Vec<&'static str> {
        GATES
            .iter()
            .zip(&self.gates)
            .filter(|(_, v)| v.iter().all(|x| *x == 0.0))
            .map(|(g, _)| g.1)
            .collect()
    }
}

fn points(v: &[Option<f64>]) -> Vec<(f64, f64)> {
    v.iter()
        .enumerate()
        .filter_map(|(i, y)| y.map(|y| (i as f64 + 0.5, y)))
        .collect()
}

fn peak(v: &[Option<f64>]) -> f64 {
    v.iter().flatten().copied().fold(0.0, f64::max)
}

/// The three panels stacked in one SVG, x = the job's seconds in order.
pub fn chart(p: &ConsumerPlot) -> Result<String, ReportError> {
    let n = p.lag.len().max(1) as f64;
    let marks: Vec<Mark> = p.events.iter().map(|(i, t)| Mark::new(*i, t)).collect();
    svg(600, |root| {
        let root = root.titled(&p.title, (FONT, 15)).map_err(chart_err)?;
        let (rates, rest) = root.split_vertically(180);
        let (lag, cache) = rest.split_vertically(160);

        // Produce against consume.
        let failures = p.failures.iter().flatten().copied();
        let ymax = max_of(
            (p.produced.iter().chain(&p.consumed).flatten().copied()).chain(failures),
            1.0,
        );
        let mut chart = ChartBuilder::on(&rates)
            .margin(6)
            .x_label_area_size(22)
            .y_label_area_size(60)
            .margin_right(66)
            .build_cartesian_2d(0f64..n, 0f64..ymax)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .y_desc("messages / s")
            .draw()
            .map_err(chart_err)?;
        for (name, v, c) in [
            ("produced (acknowledged) / s", &p.produced, color(0)),
            ("consumed / s", &p.consumed, color(2)),
        ] {
            chart
                .draw_series(LineSeries::new(points(v), c.stroke_width(2)))
                .map_err(chart_err)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2))
                });
        }
        // Failures, redeliveries and DLQ sends share the unit: a dashed series each, only
        // when the run had any (a healthy listener keeps the panel as it was). The job's
        // totals are the caption's (summary.csv): a drain that ends mid-second leaves that
        // second's part out of timeseries.csv, so a sum here would differ from them.
        for ((_, name, c), v) in FAILURE_SERIES.iter().zip(&p.failures) {
            let total: f64 = v.iter().sum();
            if total == 0.0 {
                continue;
            }
            let c = *c;
            let pts: Vec<(f64, f64)> = v
                .iter()
                .enumerate()
                .map(|(i, y)| (i as f64 + 0.5, *y))
                .collect();
            chart
                .draw_series(DashedLineSeries::new(pts, 5, 3, c.stroke_width(2)))
                .map_err(chart_err)?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2))
                });
        }
        marks::draw(&mut chart, &marks, ymax, true)?;
        legend(&mut chart)?;

        // Lag.
        let ymax = max_of(p.lag.iter().flatten().copied(), 1.0);
        let mut chart = ChartBuilder::on(&lag)
            .margin(6)
            .x_label_area_size(22)
            .y_label_area_size(60)
            .margin_right(66)
            .build_cartesian_2d(0f64..n, 0f64..ymax)
            .map_err(chart_err)?;
        chart
            .configure_mesh()
            .y_desc("messages behind")
            .draw()
            .map_err(chart_err)?;
        let c = color(3);
        chart
            .draw_series(LineSeries::new(points(&p.lag), c.stroke_width(2)))
            .map_err(chart_err)?
            .label("consumer lag (broker max offset − committed offset, all queues)")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2)));
        marks::draw(&mut chart, &marks, ymax, false)?;
        legend(&mut chart)?;

        cache_panel(p, &cache, n, &marks)
    })
}

/// Cached messages (left axis) and MiB (right axis), their thresholds, and the gates' marks.
fn cache_panel<DB: DrawingBackend>(
    p: &ConsumerPlot,
    area: &DrawingArea<DB, plotters::coord::Shift>,
    n: f64,
    marks: &[Mark],
) -> Result<(), ReportError> {
    let within = |limit: Option<f64>, data: f64| limit.filter(|l| *l <= data.max(1e-9) * OFF_SCALE);
    let t = p.thresholds.unwrap_or(Thresholds {
        messages: None,
        mib: None,
    });
    let (msgs, mib) = (peak(&p.cached), peak(&p.cached_mib));
    let msg_line = within(t.messages, msgs);
    let mib_line = within(t.mib, mib);
    let ymax = max_of([msgs, msg_line.unwrap_or(0.0)].into_iter(), 1.0);
    let y2max = max_of([mib, mib_line.unwrap_or(0.0)].into_iter(), 0.01);
    let mut chart = ChartBuilder::on(area)
        .margin(6)
        .x_label_area_size(34)
        .y_label_area_size(60)
        .right_y_label_area_size(60)
        .build_cartesian_2d(0f64..n, 0f64..ymax)
        .map_err(chart_err)?
        .set_secondary_coord(0f64..n, 0f64..y2max);
    chart
        .configure_mesh()
        .x_desc("second (sampled, in order)")
        .y_desc("cached messages")
        .draw()
        .map_err(chart_err)?;
    chart
        .configure_secondary_axes()
        .y_desc("cached MiB")
        .draw()
        .map_err(chart_err)?;
    let (cm, cb) = (color(4), color(9));
    chart
        .draw_series(LineSeries::new(points(&p.cached), cm.stroke_width(2)))
        .map_err(chart_err)?
        .label("cached messages")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], cm.stroke_width(2)));
    chart
        .draw_secondary_series(LineSeries::new(points(&p.cached_mib), cb.stroke_width(1)))
        .map_err(chart_err)?
        .label("cached MiB (right axis)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], cb));
    let threshold_label = |what: &str, limit: f64, drawn: bool| {
        if drawn {
            format!("{what} threshold {limit}")
        } else {
            format!("{what} threshold {limit} (off scale)")
        }
    };
    if let Some(l) = t.messages {
        let label = threshold_label("count", l, msg_line.is_some());
        let s = chart
            .draw_series(DashedLineSeries::new(
                msg_line.map(|v| vec![(0.0, v), (n, v)]).unwrap_or_default(),
                6,
                4,
                cm.stroke_width(1),
            ))
            .map_err(chart_err)?;
        s.label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], cm.mix(0.6)));
    }
    if let Some(l) = t.mib {
        let label = threshold_label("size MiB", l, mib_line.is_some());
        chart
            .draw_secondary_series(DashedLineSeries::new(
                mib_line.map(|v| vec![(0.0, v), (n, v)]).unwrap_or_default(),
                6,
                4,
                cb.stroke_width(1),
            ))
            .map_err(chart_err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], cb.mix(0.6)));
    }
    // One row of marks per gate that delayed a pull, at the top of the panel.
    let mut row = 0.0;
    for ((_, name, c), v) in GATES.iter().zip(&p.gates) {
        let total: f64 = v.iter().sum();
        if total == 0.0 {
            continue;
        }
        let (lo, hi) = (ymax * (0.96 - row), ymax * (0.99 - row));
        row += 0.045;
        let c = *c;
        chart
            .draw_series(
                v.iter()
                    .enumerate()
                    .filter(|(_, x)| **x > 0.0)
                    .map(|(i, _)| {
                        Rectangle::new([(i as f64 + 0.1, lo), (i as f64 + 0.9, hi)], c.filled())
                    }),
            )
            .map_err(chart_err)?
            .label(format!("flow control, {name} gate: {total} pulls delayed"))
            .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 10, y + 4)], c.filled()));
    }
    marks::draw(&mut chart, marks, ymax, false)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerMiddle)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font((FONT, 11))
        .draw()
        .map_err(chart_err)
}

/// A failing listener's job figures from summary.csv, `(column, words)`: the per-second
/// failures, redeliveries and DLQ sends are drawn; the totals, what is still pending and the
/// retry delays are the caption's last sentence.
const FAILURES: [(&str, &str); 6] = [
    ("consumer_failures", "listener failures"),
    ("consumer_retries", "redelivered from the retry topic"),
    ("consumer_dlq", "sent to the DLQ"),
    ("consumer_retry_pending", "still waiting for a retry"),
    ("retry_delay_p50_ms", "retry delay p50 (ms)"),
    ("retry_delay_p99_ms", "retry delay p99 (ms)"),
];

/// "Failures: listener failures 360 (consumer_failures), …" for a job whose listener failed;
/// None when it never did (or the run predates the columns).
pub fn failures_line(s: &Table, row: &[String]) -> Option<String> {
    if s.num(row, "consumer_failures").is_none_or(|n| n == 0.0) {
        return None;
    }
    let figures: Vec<String> = FAILURES
        .iter()
        .filter_map(|(col, what)| {
            let v = s.text(row, col);
            (!v.is_empty()).then(|| format!("{what} {v} ({col})"))
        })
        .collect();
    Some(format!("Failures: {}", figures.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_listener_is_named_and_a_healthy_one_is_not() {
        let s = Table {
            header: ["consumer_failures", "consumer_retries", "consumer_dlq"]
                .map(String::from)
                .to_vec(),
            rows: vec![],
        };
        let row = |v: [&str; 3]| v.map(String::from).to_vec();
        assert_eq!(
            failures_line(&s, &row(["40", "30", "10"])).as_deref(),
            Some("Failures: listener failures 40 (consumer_failures), redelivered from the retry topic 30 (consumer_retries), sent to the DLQ 10 (consumer_dlq)")
        );
        assert_eq!(failures_line(&s, &row(["0", "0", "0"])), None);
        assert_eq!(failures_line(&s, &row(["", "", ""])), None);
    }
}
