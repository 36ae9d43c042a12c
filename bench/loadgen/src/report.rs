//! Turns the JSON lines of a run into medians and the BENCHMARKS.md table.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::stats;

mod auth;
mod declared;
mod format;
mod gateway;
mod replicas;
mod telemetry;
pub use format::{fmt_num, fmt_ratio};

/// One figure of the table: where it comes from and which way is better.
pub struct Figure {
    /// Stable key (used in the JSON summary).
    pub key: &'static str,
    /// Row title.
    pub title: &'static str,
    /// Unit shown in the row.
    pub unit: &'static str,
    /// Measurement (`measure` field of a result line) it is read from.
    pub measure: &'static str,
    /// Field of that line.
    pub field: &'static str,
    /// Multiplier applied to the field.
    pub scale: f64,
    /// Whether a larger value is better.
    pub higher_better: bool,
}

const fn fig(
    key: &'static str,
    title: &'static str,
    unit: &'static str,
    measure: &'static str,
    field: &'static str,
    scale: f64,
    higher_better: bool,
) -> Figure {
    Figure {
        key,
        title,
        unit,
        measure,
        field,
        scale,
        higher_better,
    }
}

/// Every figure the harness produces, in table order.
pub const FIGURES: &[Figure] = &[
    fig(
        "cold_start_ms",
        "Cold start (spawn → initialize response)",
        "ms",
        "cold-start",
        "median_ms",
        1.0,
        false,
    ),
    fig(
        "seq_p50_us",
        "Sequential tools/call p50, stdio",
        "µs",
        "stdio-seq",
        "p50_us",
        1.0,
        false,
    ),
    fig(
        "seq_p99_us",
        "Sequential tools/call p99, stdio",
        "µs",
        "stdio-seq",
        "p99_us",
        1.0,
        false,
    ),
    fig(
        "pipelined_calls_per_s",
        "Pipelined throughput, stdio, 64 in flight",
        "calls/s",
        "stdio-pipelined",
        "calls_per_s",
        1.0,
        true,
    ),
    fig(
        "cpu_us_per_call",
        "Server CPU per call (pipelined stdio)",
        "µs",
        "stdio-pipelined",
        "cpu_us_per_call",
        1.0,
        false,
    ),
    fig(
        "tools_list_ms",
        "tools/list, 1,000 tools, all pages",
        "ms",
        "tools-list",
        "median_ms",
        1.0,
        false,
    ),
    fig(
        "http_calls_per_s",
        "HTTP throughput, 64 clients",
        "calls/s",
        "http",
        "calls_per_s",
        1.0,
        true,
    ),
    fig(
        "http_p50_us",
        "HTTP p50, 64 clients",
        "µs",
        "http",
        "p50_us",
        1.0,
        false,
    ),
    fig(
        "http_p99_us",
        "HTTP p99, 64 clients",
        "µs",
        "http",
        "p99_us",
        1.0,
        false,
    ),
    fig(
        "peak_rss_mb",
        "Peak RSS, stdio (after the pipelined run)",
        "MB",
        "stdio-pipelined",
        "peak_rss_kb",
        1.0 / 1024.0,
        false,
    ),
    fig(
        "peak_rss_http_mb",
        "Peak RSS, HTTP (64 sessions)",
        "MB",
        "http",
        "peak_rss_kb",
        1.0 / 1024.0,
        false,
    ),
];

/// Settings of the report.
#[derive(Debug, Default)]
pub struct ReportOpts {
    /// JSON-lines file written by the loadgen runs.
    pub results: PathBuf,
    /// Markdown file to (re)write.
    pub out: PathBuf,
    /// JSON summary of the medians to write.
    pub summary: Option<PathBuf>,
    /// (label, display name) of each server; the first is the subject of the ratios.
    pub servers: Vec<(String, String)>,
    /// Key/value lines for the header (machine, date...).
    pub meta: Vec<(String, String)>,
    /// Free-text lines for the configurations section.
    pub notes: Vec<String>,
    /// Fail unless every figure was produced for every server.
    pub require_all: bool,
    /// Declared-tool section, command group: floor, subject, peers (label, display name).
    pub cmd_servers: Vec<(String, String)>,
    /// Declared-tool section, HTTP group: floor, subject, peers.
    pub http_servers: Vec<(String, String)>,
    /// Declared-tool section, SQL group: floor, subject, peers.
    pub sql_servers: Vec<(String, String)>,
    /// Free-text lines of the declared-tool section.
    pub declared_notes: Vec<String>,
    /// Gateway section: (configuration, label, display name) of each row.
    pub gw_servers: Vec<(String, String, String)>,
    /// Free-text lines of the gateway section.
    pub gateway_notes: Vec<String>,
    /// Replicas section: (label `rep-a-<era>` or `rep-b-<era>`, display name) of each row.
    pub rep_servers: Vec<(String, String)>,
    /// Free-text lines of the replicas section.
    pub rep_notes: Vec<String>,
    /// Telemetry section: (label `tel-off`, `tel-metrics` or `tel-export`, display name).
    pub tel_servers: Vec<(String, String)>,
    /// Free-text lines of the telemetry section.
    pub tel_notes: Vec<String>,
    /// The BENCHMARKS.md whose toolwright figures the telemetry section shows as "before".
    pub tel_baseline: Option<PathBuf>,
    /// Access-token section: (label `auth-static` or `auth-jwt`, display name).
    pub auth_servers: Vec<(String, String)>,
    /// Free-text lines of the access-token section.
    pub auth_notes: Vec<String>,
}

#[derive(Default)]
struct Collected {
    values: HashMap<(String, &'static str), Vec<f64>>,
    /// The same values by run (a run may hold several, e.g. sequential rounds).
    by_run: HashMap<(String, &'static str, u64), Vec<f64>>,
    errors: BTreeMap<(String, String), String>,
    missing: HashMap<String, String>,
    runs: usize,
}

fn collect(text: &str) -> Collected {
    let mut c = Collected::default();
    for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let label = v["label"].as_str().unwrap_or("?").to_owned();
        let measure = v["measure"].as_str().unwrap_or("?").to_owned();
        if let Some(run) = v["run"].as_u64() {
            c.runs = c.runs.max(run as usize);
        }
        if measure == "missing" {
            let why = v["error"].as_str().unwrap_or("not available").to_owned();
            c.missing.entry(label).or_insert(why);
            continue;
        }
        if let Some(err) = v.get("error").and_then(Value::as_str) {
            c.errors
                .entry((label, measure))
                .or_insert_with(|| err.to_owned());
            continue;
        }
        for f in all_figures().filter(|f| f.measure == measure) {
            if let Some(x) = v[f.field].as_f64().filter(|x| x.is_finite()) {
                c.values
                    .entry((label.clone(), f.key))
                    .or_default()
                    .push(x * f.scale);
                if let Some(run) = v["run"].as_u64() {
                    c.by_run
                        .entry((label.clone(), f.key, run))
                        .or_default()
                        .push(x * f.scale);
                }
            }
        }
    }
    c
}

struct Table<'a> {
    c: &'a Collected,
    medians: HashMap<(String, &'static str), f64>,
}

impl Table<'_> {
    fn get(&self, label: &str, key: &str) -> Option<f64> {
        self.medians
            .iter()
            .find(|((l, k), _)| l == label && *k == key)
            .map(|(_, v)| *v)
    }

    fn cell(&self, label: &str, f: &Figure) -> String {
        match self.c.values.get(&(label.to_owned(), f.key)) {
            Some(v) if !v.is_empty() => {
                let m = self.get(label, f.key).unwrap_or(f64::NAN);
                if v.len() < self.c.runs {
                    format!("{} ({}/{} runs)", fmt_num(m), v.len(), self.c.runs)
                } else {
                    fmt_num(m)
                }
            }
            _ if self.c.missing.contains_key(label) => "missing".into(),
            _ if self
                .c
                .errors
                .contains_key(&(label.to_owned(), f.measure.to_owned())) =>
            {
                "failed".into()
            }
            _ => "—".into(),
        }
    }
}

/// Writes the report; returns the list of (server, figure) pairs without a value.
pub fn run(o: &ReportOpts) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(&o.results)
        .with_context(|| format!("reading {}", o.results.display()))?;
    let c = collect(&text);
    let mut medians = HashMap::new();
    for ((label, key), v) in &c.values {
        if let Some(m) = stats::median(v) {
            medians.insert((label.clone(), *key), m);
        }
    }
    let t = Table { c: &c, medians };
    let subject = o.servers.first().map(|s| s.0.clone()).unwrap_or_default();
    let peers: Vec<&(String, String)> = o.servers.iter().skip(1).collect();

    let mut md = String::new();
    let _ = writeln!(md, "# Benchmarks\n");
    let _ = writeln!(
        md,
        "<!-- Generated by bench/run from {}; do not edit by hand. -->\n",
        o.results.display()
    );
    let _ = writeln!(
        md,
        "toolwright and its peers side by side, in one run, driven by the same raw JSON-RPC load \
         generator (`bench/loadgen`, no MCP SDK on the client side). Rerun with `bench/run`.\n"
    );
    for (k, v) in &o.meta {
        let _ = writeln!(md, "- **{k}:** {v}");
    }
    if !o.servers.is_empty() {
        let _ = writeln!(md, "\n## Figures\n");
        let _ = writeln!(
            md,
            "Each cell is the median over {} run(s). Ratios are {} ÷ peer: for ↑ figures above 1 is \
             better, for ↓ figures below 1 is better. \"missing\" = server not available in this run, \
             \"failed\" = the measurement errored (see below).\n",
            c.runs.max(1),
            o.servers.first().map_or("subject", |s| s.1.as_str())
        );
        let mut header = String::from("| Figure | Unit |");
        let mut rule = String::from("|---|---|");
        for (_, name) in &o.servers {
            let _ = write!(header, " {name} |");
            rule.push_str("---:|");
        }
        for (_, name) in &peers {
            let _ = write!(header, " ÷ {name} |");
            rule.push_str("---:|");
        }
        let _ = writeln!(md, "{header}\n{rule}");
        for f in FIGURES {
            let arrow = if f.higher_better { "↑" } else { "↓" };
            let mut row = format!("| {} {arrow} | {} |", f.title, f.unit);
            for (label, _) in &o.servers {
                let _ = write!(row, " {} |", t.cell(label, f));
            }
            for (label, _) in &peers {
                let ratio = match (t.get(&subject, f.key), t.get(label, f.key)) {
                    (Some(a), Some(b)) if b != 0.0 => fmt_ratio(a / b),
                    _ => "—".into(),
                };
                let _ = write!(row, " {ratio} |");
            }
            let _ = writeln!(md, "{row}");
        }

        let _ = writeln!(md, "\n## Targets of issue 8\n");
        let _ = writeln!(
            md,
            "\"Met\" is checked on the medians of the table. \"Runs met\" checks each run on its own: \
             its value against the bound from the peers' values of the same run (each run's median \
             where it has several), since the host drifts between runs; \"Run median\" is the \
             median over runs of value ÷ bound. Argument validation < 2 µs is measured by the \
             Criterion benches, not here.\n"
        );
        let _ = writeln!(
            md,
            "| Target | {} | Bound | Met | Runs met | Run median (value ÷ bound) |\n|---|---:|---:|---|---:|---:|",
            o.servers.first().map_or("subject", |s| s.1.as_str())
        );
        let met = target_rows(&mut md, &c, &t, &subject, &targets);
        for (name, m) in &met {
            eprintln!("target {name}: {m}");
        }
    }
    let groups = declared::groups(o);
    if !groups.is_empty() {
        for (name, m) in declared::write(&mut md, &c, &t, &groups, &o.declared_notes) {
            eprintln!("target {name}: {m}");
        }
    }

    let gw_groups = gateway::groups(&o.gw_servers);
    if !gw_groups.is_empty() {
        for (name, m) in gateway::write(&mut md, &c, &t, &gw_groups, &o.gateway_notes) {
            eprintln!("target {name}: {m}");
        }
    }

    if !o.rep_servers.is_empty() {
        replicas::write(&mut md, &c, &t, &text, &o.rep_servers, &o.rep_notes);
    }
    if !o.tel_servers.is_empty() {
        let before = o
            .tel_baseline
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok());
        telemetry::write(
            &mut md,
            &c,
            &t,
            &o.tel_servers,
            before.as_deref(),
            &o.tel_notes,
        );
    }

    if !o.auth_servers.is_empty() {
        let (name, m) = auth::write(&mut md, &c, &t, &o.auth_servers, &o.auth_notes);
        eprintln!("target {name}: {m}");
    }

    if !o.notes.is_empty() {
        let _ = writeln!(md, "\n## Servers and configurations\n");
        for n in &o.notes {
            let _ = writeln!(md, "- {n}");
        }
    }
    if !o.servers.is_empty() {
        let _ = writeln!(md, "\n## How each figure is measured\n\n{METHOD}");
    }
    if !c.missing.is_empty() || !c.errors.is_empty() {
        let _ = writeln!(md, "\n## Missing servers and failed measurements\n");
        let mut missing: Vec<_> = c.missing.iter().collect();
        missing.sort();
        for (label, why) in missing {
            let _ = writeln!(md, "- {label}: missing — {}", why.replace('\n', " "));
        }
        for ((label, measure), why) in &c.errors {
            let why: String = why.replace('\n', " ").chars().take(300).collect();
            let _ = writeln!(md, "- {label} / {measure}: {why}");
        }
    }
    std::fs::write(&o.out, md).with_context(|| format!("writing {}", o.out.display()))?;

    let mut absent = Vec::new();
    let mut summary = serde_json::Map::new();
    for (label, _) in &o.servers {
        let mut per = serde_json::Map::new();
        for f in FIGURES {
            match t.get(label, f.key) {
                Some(v) => {
                    per.insert(f.key.into(), json!(v));
                }
                None => absent.push(format!("{label}: {}", f.key)),
            }
        }
        summary.insert(label.clone(), Value::Object(per));
    }
    fn per<'m>(
        summary: &'m mut serde_json::Map<String, Value>,
        label: &str,
    ) -> &'m mut serde_json::Map<String, Value> {
        let v = summary.entry(label.to_owned()).or_insert_with(|| json!({}));
        if !v.is_object() {
            *v = json!({});
        }
        v.as_object_mut().expect("an object was just put there")
    }
    for g in &groups {
        absent.extend(g.absent(&t));
        for (label, _) in g.servers {
            g.summary(&t, label, per(&mut summary, label));
        }
    }
    for g in &gw_groups {
        absent.extend(g.absent(&t));
        for (label, _) in &g.servers {
            g.summary(&t, label, per(&mut summary, label));
        }
    }
    absent.extend(replicas::absent(&t, &o.rep_servers));
    for (label, _) in &o.rep_servers {
        replicas::summary(&t, label, per(&mut summary, label));
    }
    absent.extend(telemetry::absent(&t, &o.tel_servers));
    for (label, _) in &o.tel_servers {
        telemetry::summary(&t, label, per(&mut summary, label));
    }
    absent.extend(auth::absent(&t, &o.auth_servers));
    for (label, _) in &o.auth_servers {
        auth::summary(&t, label, per(&mut summary, label));
    }
    if let Some(path) = &o.summary {
        std::fs::write(path, serde_json::to_string_pretty(&Value::Object(summary))?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(absent)
}

/// Writes the rows of a target table (after its header): each target on the medians, run
/// by run, and the median of value ÷ bound. Returns each target's name and whether it was
/// met ("yes", "no", "n/a").
fn target_rows(
    md: &mut String,
    c: &Collected,
    t: &Table<'_>,
    subject: &str,
    build: &dyn Fn(&Lookup<'_>) -> Vec<Target>,
) -> Vec<(String, &'static str)> {
    let mut met_list = Vec::new();
    let runs: Vec<u64> = (1..=c.runs as u64).collect();
    let per_run: Vec<Vec<Target>> = runs
        .iter()
        .map(|&r| build(&|l, k| run_value(c, r, l, k)))
        .collect();
    for (i, (name, key, bound, higher)) in build(&|l, k| t.get(l, k)).into_iter().enumerate() {
        let value = t.get(subject, key);
        let met = match (value, bound) {
            (Some(v), Some(b)) => {
                if (higher && v >= b) || (!higher && v <= b) {
                    "yes"
                } else {
                    "no"
                }
            }
            _ => "n/a",
        };
        let show = |x: Option<f64>| x.map_or("—".into(), fmt_num);
        // value ÷ bound per run: ≥ 1 meets a ↑ target, ≤ 1 a ↓ one.
        let quotients: Vec<f64> = runs
            .iter()
            .zip(&per_run)
            .filter_map(|(&r, ts)| {
                let v = run_value(c, r, subject, key)?;
                let b = ts[i].2?;
                (b != 0.0).then_some(v / b)
            })
            .collect();
        let runs_met = quotients
            .iter()
            .filter(|&&q| if higher { q >= 1.0 } else { q <= 1.0 })
            .count();
        let run_cells = if quotients.is_empty() {
            "— | —".to_owned()
        } else {
            format!(
                "{runs_met}/{} | {}",
                quotients.len(),
                stats::median(&quotients).map_or("—".into(), fmt_ratio)
            )
        };
        let _ = writeln!(
            md,
            "| {name} | {} | {}{} | {met} | {run_cells} |",
            show(value),
            if higher { "≥ " } else { "≤ " },
            show(bound)
        );
        met_list.push((name, met));
    }
    met_list
}

/// A server's value of a figure in one run (the median when the run holds several).
fn run_value(c: &Collected, run: u64, label: &str, key: &str) -> Option<f64> {
    c.by_run
        .get(&(label.to_owned(), key_static(key)?, run))
        .and_then(|v| stats::median(v))
}

/// The `&'static` figure key equal to `key`.
fn key_static(key: &str) -> Option<&'static str> {
    all_figures().map(|f| f.key).find(|k| *k == key)
}

/// The figures of every section.
fn all_figures() -> impl Iterator<Item = &'static Figure> {
    FIGURES
        .iter()
        .chain(declared::FIGURES)
        .chain(gateway::FIGURES)
        .chain(replicas::FIGURES)
        .chain(telemetry::FIGURES)
        .chain(auth::FIGURES)
}

type Target = (String, &'static str, Option<f64>, bool);

/// A server's value of a figure: (label, figure key) → value.
type Lookup<'a> = dyn Fn(&str, &str) -> Option<f64> + 'a;

/// The targets as (description, figure, bound, higher-is-better), with the bounds
/// computed from the peers' values that `g` gives (label, figure key).
fn targets(g: &Lookup<'_>) -> Vec<Target> {
    let mul = |x: Option<f64>, m: f64| x.map(|v| v * m);
    let min = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    vec![
        (
            "stdio pipelined ≥ 2× rmcp, or ≥ 90% of the floor where lower",
            "pipelined_calls_per_s",
            min(
                mul(g("rmcp", "pipelined_calls_per_s"), 2.0),
                mul(g("floor", "pipelined_calls_per_s"), 0.9),
            ),
            true,
        ),
        (
            "server CPU per call ≤ 0.5× rmcp",
            "cpu_us_per_call",
            mul(g("rmcp", "cpu_us_per_call"), 0.5),
            false,
        ),
        (
            "sequential p50 ≤ floor + 10 µs",
            "seq_p50_us",
            g("floor", "seq_p50_us").map(|f| f + 10.0),
            false,
        ),
        (
            "HTTP throughput ≥ 2× rmcp",
            "http_calls_per_s",
            mul(g("rmcp", "http_calls_per_s"), 2.0),
            true,
        ),
        (
            "HTTP p99 ≤ rmcp",
            "http_p99_us",
            g("rmcp", "http_p99_us"),
            false,
        ),
        (
            "cold start ≤ rmcp and ≤ 1/100 of the TypeScript SDK",
            "cold_start_ms",
            min(
                g("rmcp", "cold_start_ms"),
                mul(g("ts", "cold_start_ms"), 0.01),
            ),
            false,
        ),
        (
            "peak RSS (stdio) ≤ rmcp",
            "peak_rss_mb",
            g("rmcp", "peak_rss_mb"),
            false,
        ),
        (
            "tools/list of 1,000 tools ≤ 0.5× rmcp",
            "tools_list_ms",
            mul(g("rmcp", "tools_list_ms"), 0.5),
            false,
        ),
    ]
    .into_iter()
    .map(|(name, key, bound, higher): (&str, _, _, _)| (name.to_owned(), key, bound, higher))
    .collect()
}

const METHOD: &str = "\
- **Cold start**: spawn the server with stdio pipes, send `initialize` at once (modern era: \
`server/discover`), stop the clock at its response; median of several spawns per run.
- **Sequential p50/p99**: after the handshake and a warm-up, one `tools/call add` at a time over stdio \
(write, flush, read the response line); every answer is checked (the sum must be right).
- **Pipelined throughput**: a writer thread keeps 64 `tools/call add` requests in flight (flushing only \
when the window is full), a reader thread checks every answer; calls ÷ (first request → last response).
- **Server CPU per call**: utime + stime of the server process (`/proc/<pid>/stat`, all threads) over the \
pipelined burst ÷ calls.
- **tools/list**: a server started with 1,000 extra tools (`--fixtures bulk:1000` for toolwright, \
`BENCH_EXTRA_TOOLS=1000` for the peers) is asked `tools/list`, following `nextCursor` to the last page; \
median over repeated listings (the first listing is excluded).
- **HTTP**: 64 clients, each with its own keep-alive HTTP/1.1 connection (TCP_NODELAY) and, in the legacy \
era, its own handshake (`initialize`, the `Mcp-Session-Id` the server issues if it issues one, \
`notifications/initialized`), call `add` back to back for a fixed time after a warm-up; calls ÷ wall time, \
latency percentiles over all calls. JSON and SSE answers are both accepted. The client runs on one thread.
- **Peak RSS**: VmHWM from `/proc/<pid>/status` at the end of the pipelined stdio run and of the HTTP run.
- All traffic is on 127.0.0.1; every loop is bounded in calls and in time.";

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
