//! The table printed at the end of `harness run`.

use harness_results::summary::SummaryRow;

/// The final table, sorted by `key_metric` (best first), best and worst marked.
pub fn table(rows: &[SummaryRow], key_metric: &str, higher_better: bool) -> String {
    let mut order: Vec<&SummaryRow> = rows.iter().collect();
    order.sort_by(|a, b| {
        let (x, y) = (a.metric(key_metric), b.metric(key_metric));
        let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
        if higher_better {
            o.reverse()
        } else {
            o
        }
    });
    let valid: Vec<&&SummaryRow> = order.iter().filter(|r| r.valid).collect();
    let best = valid
        .first()
        .map(|r| (r.cell_id.clone(), r.repetition, r.step));
    let worst = (valid.len() > 1)
        .then(|| {
            valid
                .last()
                .map(|r| (r.cell_id.clone(), r.repetition, r.step))
        })
        .flatten();
    // Wide enough for every label, so cells that differ only in their last value stay apart.
    let w = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 100);
    // Order inversions (`harness::order`) beside busy answers and rates, when any job counted them.
    let counted = rows.iter().any(|r| r.order.order_inversions.is_some());
    let inversions = |r: &SummaryRow| match (counted, r.order.order_inversions) {
        (false, _) => String::new(),
        (true, Some(n)) => format!(" {n:>10}"),
        (true, None) => format!(" {:>10}", "-"),
    };
    let mut out = String::new();
    out.push_str(&format!(
        "{:<2} {:<w$} {:>3} {:>4} {:>9} {:>9} {:>9} {:>7} {:>7} {:>8} {:>8} {:>9} {:>6} {:>6} {:>7}{}  {}\n",
        "", "cell", "rep", "step", "target/s", "achieved", "ok/s", "busy", "busy%", "p50 ms", "p99 ms", "max ms", "tmo", "drop", "brkCPU%",
        if counted { format!(" {:>10}", "inversions") } else { String::new() },
        "valid"
    ));
    for r in order {
        let id = (r.cell_id.clone(), r.repetition, r.step);
        let mark = if Some(&id) == best.as_ref() {
            "★"
        } else if Some(&id) == worst.as_ref() {
            "✗"
        } else {
            ""
        };
        let mut label = r.label.clone();
        if label.chars().count() > w {
            label = label.chars().take(w - 1).collect::<String>() + "…";
        }
        out.push_str(&format!(
            "{:<2} {:<w$} {:>3} {:>4} {:>9} {:>9.0} {:>9.0} {:>7} {:>6.2}% {:>8.3} {:>8.3} {:>9.3} {:>6} {:>6} {:>7}{}  {}\n",
            mark,
            label,
            r.repetition,
            r.step.map_or("-".into(), |s| s.to_string()),
            r.target_rate.map_or("closed".into(), |t| format!("{t:.0}")),
            r.achieved_rate(),
            r.ok_rate(),
            r.seg.busy_total(),
            r.busy_rate() * 100.0,
            r.seg.latency_us[0] as f64 / 1000.0,
            r.seg.latency_us[2] as f64 / 1000.0,
            r.seg.latency_us[4] as f64 / 1000.0,
            r.seg.counts.timeouts,
            r.seg.counts.dropped,
            r.res.broker_cpu_avg.map_or("-".into(), |c| format!("{c:.0}")),
            inversions(r),
            if r.valid { "yes".to_owned() } else { format!("NO: {}", r.invalid_reason) }
        ));
    }
    out.push_str(&format!(
        "sorted by {key_metric} ({} is better); ★ best, ✗ worst among valid rows\n",
        if higher_better { "higher" } else { "lower" }
    ));
    // An invalid row is the right verdict, but not an answer: say why and what to change.
    out.push_str(&crate::report::advice::footer(
        rows.iter()
            .filter(|r| !r.valid)
            .map(|r| r.invalid_kinds.as_slice()),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::OrderColumns;

    fn row(id: &str, inversions: Option<u64>) -> SummaryRow {
        SummaryRow {
            cell_id: id.into(),
            label: id.into(),
            valid: true,
            order: OrderColumns {
                order_inversions: inversions,
                ..OrderColumns::default()
            },
            ..SummaryRow::default()
        }
    }

    #[test]
    fn inversions_show_only_when_a_job_counted_them() {
        let plain = table(&[row("a", None)], "ok_rate", true);
        assert!(!plain.contains("inversions"), "{plain}");
        let t = table(&[row("a", Some(42)), row("b", None)], "ok_rate", true);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].contains("inversions"), "{t}");
        assert!(lines[1].contains("        42  yes"), "{t}");
        assert!(lines[2].contains("         -  yes"), "{t}");
    }
}
