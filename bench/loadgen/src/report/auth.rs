//! The report's section on access tokens (issue 39): the same `toolwright serve --http`
//! checking a static bearer token (`auth-static`, `--auth-token-env`) and validating JWT
//! access tokens against an issuer's keys (`auth-jwt`, `--auth-issuer`), so that what JWT
//! validation costs per call is read as a difference of server CPU per call.

use std::fmt::Write;

use serde_json::Value;

use super::{Collected, Figure, Table, fig, fmt_num, fmt_ratio, run_value};

/// The bound of the target: µs of server CPU that JWT validation may add per call.
pub const BOUND_US: f64 = 10.0;

const STATIC: &str = "auth-static";
const JWT: &str = "auth-jwt";

/// The figures of the section, in table order.
pub const FIGURES: &[Figure] = &[
    fig(
        "auth_http_calls_per_s",
        "HTTP throughput, 64 clients",
        "calls/s",
        "auth-http",
        "calls_per_s",
        1.0,
        true,
    ),
    fig(
        "auth_http_p50_us",
        "HTTP p50, 64 clients",
        "µs",
        "auth-http",
        "p50_us",
        1.0,
        false,
    ),
    fig(
        "auth_http_p99_us",
        "HTTP p99, 64 clients",
        "µs",
        "auth-http",
        "p99_us",
        1.0,
        false,
    ),
    fig(
        "auth_http_cpu_us",
        "Server CPU per call (HTTP, 64 clients)",
        "µs",
        "auth-http",
        "cpu_us_per_call",
        1.0,
        false,
    ),
    fig(
        "auth_seq_p50_us",
        "HTTP p50, 1 client (sequential)",
        "µs",
        "auth-seq",
        "p50_us",
        1.0,
        false,
    ),
];

/// The figures every row must produce.
const REQUIRED: &[&str] = &[
    "auth_http_calls_per_s",
    "auth_http_p50_us",
    "auth_http_p99_us",
    "auth_http_cpu_us",
    "auth_seq_p50_us",
];

/// The figure pairs (label: key) the rows should have produced and have not.
pub fn absent(t: &Table<'_>, rows: &[(String, String)]) -> Vec<String> {
    rows.iter()
        .flat_map(|(label, _)| REQUIRED.iter().map(move |k| (label, k)))
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

/// CPU per call of JWT − static, from the values `get` gives (label, key).
fn added_cpu(get: &dyn Fn(&str, &str) -> Option<f64>) -> Option<f64> {
    Some(get(JWT, "auth_http_cpu_us")? - get(STATIC, "auth_http_cpu_us")?)
}

/// Writes the section; returns the target's name and whether it was met.
pub fn write(
    md: &mut String,
    c: &Collected,
    t: &Table<'_>,
    rows: &[(String, String)],
    notes: &[String],
) -> (String, &'static str) {
    let _ = writeln!(md, "\n## Access tokens: a static token vs JWT validation\n");
    let _ = writeln!(
        md,
        "The same `toolwright serve --http … --no-metrics`, measured in turn in each run: \
         **static token** (`--auth-token-env`: the bearer token compared with one secret) and \
         **JWT** (`--auth-issuer`, `--auth-audience`: an access token signed by the issuer's \
         key, checked against its JWKS fetched once). Cells are medians over runs; ratios are \
         to the static token's row."
    );
    if !notes.is_empty() {
        md.push('\n');
    }
    for n in notes {
        let _ = writeln!(md, "- {n}");
    }
    let header: String = FIGURES
        .iter()
        .map(|f| {
            let arrow = if f.higher_better { "↑" } else { "↓" };
            format!(" {} ({}) {arrow} |", f.title, f.unit)
        })
        .collect();
    let _ = writeln!(
        md,
        "\n| Token |{header} Throughput ÷ static | CPU per call ÷ static |\n|---|{}---:|---:|",
        "---:|".repeat(FIGURES.len())
    );
    let ratio = |label: &str, key: &str| match (t.get(label, key), t.get(STATIC, key)) {
        (Some(a), Some(b)) if b != 0.0 => fmt_ratio(a / b),
        _ => "—".into(),
    };
    for (label, name) in rows {
        let cells: String = FIGURES
            .iter()
            .map(|f| format!(" {} |", t.cell(label, f)))
            .collect();
        let _ = writeln!(
            md,
            "| {name} |{cells} {} | {} |",
            ratio(label, "auth_http_calls_per_s"),
            ratio(label, "auth_http_cpu_us")
        );
    }

    let name =
        format!("JWT validation adds ≤ {BOUND_US:.0} µs of server CPU per call (cached keys)");
    let value = added_cpu(&|l, k| t.get(l, k));
    let met = match value {
        Some(v) if v <= BOUND_US => "yes",
        Some(_) => "no",
        None => "n/a",
    };
    let quotients: Vec<f64> = (1..=c.runs as u64)
        .filter_map(|r| added_cpu(&|l, k| run_value(c, r, l, k)))
        .map(|v| v / BOUND_US)
        .collect();
    let runs_met = quotients.iter().filter(|&&q| q <= 1.0).count();
    let run_cells = if quotients.is_empty() {
        "— | —".to_owned()
    } else {
        format!(
            "{runs_met}/{} | {}",
            quotients.len(),
            crate::stats::median(&quotients).map_or("—".into(), fmt_ratio)
        )
    };
    let _ = writeln!(md, "\n### Target of issue 39\n");
    let _ = writeln!(
        md,
        "The value is server CPU per call, JWT − static token (HTTP, 64 clients). \"Met\" is \
         checked on the medians of the table; \"Runs met\" checks each run's difference on its \
         own, and \"Run median\" is the median over runs of value ÷ bound.\n"
    );
    let _ = writeln!(
        md,
        "| Target | JWT − static | Bound | Met | Runs met | Run median (value ÷ bound) |\n|---|---:|---:|---|---:|---:|"
    );
    let _ = writeln!(
        md,
        "| {name} | {} µs | ≤ {} µs | {met} | {run_cells} |",
        value.map_or("—".into(), fmt_num),
        fmt_num(BOUND_US)
    );
    (name, met)
}

#[cfg(test)]
mod tests {
    use super::super::{ReportOpts, run};

    fn line(measure: &str, label: &str, run: u32, tput: f64, cpu: f64) -> String {
        format!(
            r#"{{"measure":"{measure}","label":"{label}","run":{run},"calls_per_s":{tput},"p50_us":100,"p99_us":300,"cpu_us_per_call":{cpu}}}"#
        )
    }

    /// Run 1 adds 4 µs, run 2 adds 14 µs, run 3 adds 6 µs: the medians (static 40, JWT 46)
    /// meet the target, two runs of three do.
    #[test]
    fn section_table_ratios_and_target() {
        let dir = std::env::temp_dir().join(format!("loadgen-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let results = dir.join("r.jsonl");
        let mut lines = Vec::new();
        for (run, s, j) in [(1, 40.0, 44.0), (2, 36.0, 50.0), (3, 42.0, 48.0)] {
            lines.push(line("auth-http", "auth-static", run, 20_000.0, s));
            lines.push(line("auth-http", "auth-jwt", run, 19_000.0, j));
            lines.push(line("auth-seq", "auth-static", run, 0.0, 0.0));
            lines.push(line("auth-seq", "auth-jwt", run, 0.0, 0.0));
        }
        lines.push(
            r#"{"measure":"auth-issuer","label":"auth-jwt","run":3,"issuer":{"jwks_fetches":2}}"#
                .into(),
        );
        std::fs::write(&results, lines.join("\n")).unwrap();
        let o = ReportOpts {
            results,
            out: dir.join("B.md"),
            auth_servers: vec![
                ("auth-static".into(), "static token".into()),
                ("auth-jwt".into(), "JWT".into()),
            ],
            auth_notes: vec!["a note".into()],
            ..Default::default()
        };
        let absent = run(&o).unwrap();
        assert!(absent.is_empty(), "{absent:?}");
        let md = std::fs::read_to_string(dir.join("B.md")).unwrap();
        assert!(
            md.contains("## Access tokens: a static token vs JWT validation"),
            "{md}"
        );
        assert!(md.contains("- a note"), "{md}");
        assert!(
            md.contains("| static token | 20,000 | 100 | 300 | 40.0 | 100 | 1.00× | 1.00× |"),
            "{md}"
        );
        assert!(
            md.contains("| JWT | 19,000 | 100 | 300 | 48.0 | 100 | 0.95× | 1.20× |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| JWT validation adds ≤ 10 µs of server CPU per call (cached keys) | 8.00 µs | ≤ 10.0 µs | yes | 2/3 | 0.60× |"
            ),
            "{md}"
        );

        // A row that produced nothing is reported absent.
        std::fs::write(&o.results, lines[0].as_str()).unwrap();
        let absent = run(&o).unwrap();
        assert!(
            absent.contains(&"auth-jwt: auth_http_cpu_us".to_owned()),
            "{absent:?}"
        );
        let md = std::fs::read_to_string(dir.join("B.md")).unwrap();
        assert!(md.contains("| — µs | ≤ 10.0 µs | n/a | — | — |"), "{md}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
