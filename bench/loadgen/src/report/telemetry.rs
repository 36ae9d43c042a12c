//! The report's section on telemetry (issue 20): the same `toolwright serve` with no
//! telemetry (`tel-off`), with its Prometheus `/metrics` as shipped (`tel-metrics`, HTTP
//! only) and exporting every span over OTLP/HTTP (`tel-export`), side by side with what the
//! repository's BENCHMARKS.md said before this run, so that "off costs nothing" and "export
//! costs this much per call" are both read from one table.

use std::fmt::Write;

use serde_json::Value;

use super::{Collected, Figure, Table, fig, fmt_num, fmt_ratio};

/// The figures of the section, in table order.
pub const FIGURES: &[Figure] = &[
    fig(
        "tel_seq_p50_us",
        "Sequential tools/call p50, stdio",
        "µs",
        "tel-stdio-seq",
        "p50_us",
        1.0,
        false,
    ),
    fig(
        "tel_pipe_calls_per_s",
        "Pipelined throughput, stdio, 64 in flight",
        "calls/s",
        "tel-stdio-pipelined",
        "calls_per_s",
        1.0,
        true,
    ),
    fig(
        "tel_pipe_cpu_us",
        "Server CPU per call (pipelined stdio)",
        "µs",
        "tel-stdio-pipelined",
        "cpu_us_per_call",
        1.0,
        false,
    ),
    fig(
        "tel_http_calls_per_s",
        "HTTP throughput, 64 clients",
        "calls/s",
        "tel-http",
        "calls_per_s",
        1.0,
        true,
    ),
    fig(
        "tel_http_p50_us",
        "HTTP p50, 64 clients",
        "µs",
        "tel-http",
        "p50_us",
        1.0,
        false,
    ),
    fig(
        "tel_http_p99_us",
        "HTTP p99, 64 clients",
        "µs",
        "tel-http",
        "p99_us",
        1.0,
        false,
    ),
    fig(
        "tel_http_cpu_us",
        "Server CPU per call (HTTP)",
        "µs",
        "tel-http",
        "cpu_us_per_call",
        1.0,
        false,
    ),
    fig(
        "tel_spans_stdio",
        "Spans received per request sent, stdio",
        "",
        "tel-otlp-stdio",
        "spans_per_call",
        1.0,
        true,
    ),
    fig(
        "tel_bytes_stdio",
        "OTLP bytes per request, stdio",
        "B",
        "tel-otlp-stdio",
        "bytes_per_call",
        1.0,
        false,
    ),
    fig(
        "tel_spans_http",
        "Spans received per request sent, HTTP",
        "",
        "tel-otlp-http",
        "spans_per_call",
        1.0,
        true,
    ),
    fig(
        "tel_bytes_http",
        "OTLP bytes per request, HTTP",
        "B",
        "tel-otlp-http",
        "bytes_per_call",
        1.0,
        false,
    ),
];

/// The figures each row must produce (`tel-metrics` has no stdio ones, only `tel-export`
/// has the sink's).
fn required(label: &str) -> &'static [&'static str] {
    match label {
        "tel-metrics" => &["tel_http_calls_per_s", "tel_http_p50_us", "tel_http_p99_us"],
        "tel-export" => &[
            "tel_pipe_calls_per_s",
            "tel_http_calls_per_s",
            "tel_spans_stdio",
            "tel_spans_http",
        ],
        _ => &[
            "tel_seq_p50_us",
            "tel_pipe_calls_per_s",
            "tel_http_calls_per_s",
        ],
    }
}

/// The figure pairs (label: key) the rows should have produced and have not.
pub fn absent(t: &Table<'_>, rows: &[(String, String)]) -> Vec<String> {
    rows.iter()
        .flat_map(|(label, _)| required(label).iter().map(move |k| (label, k)))
        .filter(|(label, key)| t.get(label, key).is_none())
        .map(|(label, key)| format!("{label}: {key}"))
        .collect()
}

/// The section's figures of `label` for the JSON summary.
pub fn summary(t: &Table<'_>, label: &str, into: &mut serde_json::Map<String, Value>) {
    for f in FIGURES {
        if let Some(v) = t.get(label, f.key) {
            into.insert(f.key.into(), serde_json::json!(v));
        }
    }
}

/// toolwright's value of a figure in the main table of a BENCHMARKS.md (`text`): the row
/// whose title is the figure's, its third cell. Only the first six figures are in it.
pub fn baseline(text: &str, f: &Figure) -> Option<f64> {
    let main = text.split("\n## ").find(|s| s.starts_with("Figures"))?;
    main.lines().find_map(|line| {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let title = cells.get(1)?.trim_end_matches(['↑', '↓']).trim();
        if title != f.title || f.measure.starts_with("tel-otlp") {
            return None;
        }
        cells.get(3)?.replace(',', "").parse().ok()
    })
}

/// The smallest and largest per-run median of `label`'s figure.
fn spread(c: &Collected, label: &str, key: &'static str) -> Option<(f64, f64)> {
    let per_run: Vec<f64> = (1..=c.runs as u64)
        .filter_map(|run| {
            let v = c.by_run.get(&(label.to_owned(), key, run))?;
            crate::stats::median(v)
        })
        .collect();
    let lo = per_run.iter().copied().reduce(f64::min)?;
    let hi = per_run.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}

/// Writes the section.
pub fn write(
    md: &mut String,
    c: &Collected,
    t: &Table<'_>,
    rows: &[(String, String)],
    baseline_text: Option<&str>,
    notes: &[String],
) {
    let _ = writeln!(md, "\n## Telemetry: off, metrics, OTLP export\n");
    let _ = writeln!(
        md,
        "The same `toolwright serve`, measured in turn in each run: **off** (stdio `serve`; HTTP \
         `serve --http … --no-metrics`), **metrics** (HTTP as shipped: `/metrics` on), \
         **export** (off plus OTLP/HTTP trace export of every request's span to a local sink, \
         `loadgen otlp-sink`). Cells are medians over runs; *off, min–max* is the spread of \
         the off row's per-run medians (the run-to-run noise); *before* is toolwright's figure \
         in the BENCHMARKS.md this run replaces (an earlier build and day: a second look at \
         the noise). A server's CPU includes its exporter's thread."
    );
    if !notes.is_empty() {
        md.push('\n');
    }
    for n in notes {
        let _ = writeln!(md, "- {n}");
    }
    let label = |l: &str| rows.iter().find(|(x, _)| x == l).map(|(x, _)| x.as_str());
    let (off, metrics, export) = (label("tel-off"), label("tel-metrics"), label("tel-export"));
    let _ = writeln!(
        md,
        "\n| Figure | Unit | off | off, min–max | before | metrics | export | metrics ÷ off | export ÷ off |\n|---|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for f in FIGURES {
        let cell = |l: Option<&str>| l.map_or("—".to_owned(), |l| t.cell(l, f));
        let ratio = |l: Option<&str>| match (
            l.and_then(|l| t.get(l, f.key)),
            off.and_then(|o| t.get(o, f.key)),
        ) {
            (Some(a), Some(b)) if b != 0.0 => fmt_ratio(a / b),
            _ => "—".into(),
        };
        let range = off
            .and_then(|o| spread(c, o, f.key))
            .map_or("—".into(), |(lo, hi)| {
                format!("{}–{}", fmt_num(lo), fmt_num(hi))
            });
        let before = baseline_text
            .and_then(|b| baseline(b, f))
            .map_or("—".into(), fmt_num);
        let arrow = if f.higher_better { "↑" } else { "↓" };
        let _ = writeln!(
            md,
            "| {} {arrow} | {} | {} | {range} | {before} | {} | {} | {} | {} |",
            f.title,
            f.unit,
            cell(off),
            cell(metrics),
            cell(export),
            ratio(metrics),
            ratio(export)
        );
    }
    let cost = |key: &str| {
        let (o, e) = (t.get(off?, key)?, t.get(export?, key)?);
        Some(format!(
            "{} µs ({:+.0}%)",
            fmt_num(e - o),
            100.0 * (e - o) / o
        ))
    };
    if let (Some(s), Some(h)) = (cost("tel_pipe_cpu_us"), cost("tel_http_cpu_us")) {
        let _ = writeln!(
            md,
            "\n**What export costs per call**, server CPU export − off: {s} on stdio (pipelined), {h} over HTTP."
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_toolwrights_cell_of_the_main_table() {
        let text = "# Benchmarks\n\n## Figures\n\n| Figure | Unit | toolwright | floor |\n|---|---|---:|---:|\n\
                    | Pipelined throughput, stdio, 64 in flight ↑ | calls/s | 149,397 | 367,172 |\n\
                    | HTTP p50, 64 clients ↓ | µs | 1646 | 850 |\n\n## Targets\n\n| HTTP p99, 64 clients ↓ | µs | 1 | 2 |\n";
        let f = |k: &str| FIGURES.iter().find(|f| f.key == k).unwrap();
        assert_eq!(baseline(text, f("tel_pipe_calls_per_s")), Some(149_397.0));
        assert_eq!(baseline(text, f("tel_http_p50_us")), Some(1646.0));
        // Not in the Figures section, and the sink's figures are never in it.
        assert_eq!(baseline(text, f("tel_http_p99_us")), None);
        assert_eq!(baseline(text, f("tel_spans_http")), None);
    }
}
