//! The report's section on replicas (issue 19): 64 clients through nginx to one replica
//! with its sessions in memory (configuration A, labels `rep-a-<era>`) and to three
//! replicas sharing their sessions through one Redis (B, `rep-b-<era>`), and where the CPU
//! of a call goes: the load generator, nginx, the replicas, Redis, and the rest of the
//! machine, with the Redis commands a call costs.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use serde_json::Value;

use super::{Collected, Figure, Table, fig, fmt_num, fmt_ratio};
use crate::stats;

/// The measure of every line of the section.
pub const MEASURE: &str = "replicas-http";

/// The figures of the section, all read from [`MEASURE`] lines.
pub const FIGURES: &[Figure] = &[
    fig(
        "rep_calls_per_s",
        "throughput",
        "calls/s",
        MEASURE,
        "calls_per_s",
        1.0,
        true,
    ),
    fig("rep_p50_us", "p50", "µs", MEASURE, "p50_us", 1.0, false),
    fig("rep_p99_us", "p99", "µs", MEASURE, "p99_us", 1.0, false),
    fig(
        "rep_cpu_client",
        "load generator",
        "µs",
        MEASURE,
        "client_cpu_us_per_call",
        1.0,
        false,
    ),
    fig(
        "rep_cpu_nginx",
        "nginx",
        "µs",
        MEASURE,
        "cpu_us_per_call_nginx",
        1.0,
        false,
    ),
    fig(
        "rep_cpu_replicas",
        "replicas",
        "µs",
        MEASURE,
        "cpu_us_per_call_replicas",
        1.0,
        false,
    ),
    fig(
        "rep_cpu_redis",
        "Redis",
        "µs",
        MEASURE,
        "cpu_us_per_call_redis",
        1.0,
        false,
    ),
    fig(
        "rep_busy",
        "machine busy",
        "µs",
        MEASURE,
        "machine_busy_us_per_call",
        1.0,
        false,
    ),
    fig(
        "rep_capacity",
        "machine capacity",
        "µs",
        MEASURE,
        "machine_us_per_call",
        1.0,
        false,
    ),
    fig(
        "rep_redis_cmds",
        "Redis commands",
        "",
        MEASURE,
        "redis_cmds_per_call",
        1.0,
        false,
    ),
    fig(
        "rep_redis_usec",
        "Redis µs in commands",
        "µs",
        MEASURE,
        "redis_usec_per_call",
        1.0,
        false,
    ),
];

/// The figures every row must have (the others need the processes they name).
const REQUIRED: &[&str] = &["rep_calls_per_s", "rep_p50_us", "rep_p99_us"];

/// The configuration-A row a row is compared with (`rep-b-legacy` → `rep-a-legacy`).
fn reference(label: &str) -> Option<String> {
    label
        .strip_prefix("rep-b-")
        .map(|era| format!("rep-a-{era}"))
}

/// Per command, the median over runs of its count per call, by row label.
fn commands(text: &str) -> HashMap<String, BTreeMap<String, f64>> {
    let mut raw: HashMap<String, BTreeMap<String, Vec<f64>>> = HashMap::new();
    for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["measure"] != MEASURE || v.get("error").is_some() {
            continue;
        }
        let (Some(label), Some(cmds)) = (v["label"].as_str(), v["redis_cmds"].as_object()) else {
            continue;
        };
        let per = raw.entry(label.to_owned()).or_default();
        for (name, n) in cmds {
            if let Some(n) = n.as_f64() {
                per.entry(name.clone()).or_default().push(n);
            }
        }
    }
    raw.into_iter()
        .map(|(label, per)| {
            let med = per
                .into_iter()
                .filter_map(|(k, v)| Some((k, stats::median(&v)?)))
                .collect();
            (label, med)
        })
        .collect()
}

fn figure(key: &str) -> &'static Figure {
    FIGURES.iter().find(|f| f.key == key).unwrap_or(&FIGURES[0])
}

/// The figure pairs (label: key) the rows should have produced and have not.
pub fn absent(t: &Table<'_>, rows: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (label, _) in rows {
        for key in REQUIRED {
            if t.get(label, key).is_none() {
                out.push(format!("{label}: {key}"));
            }
        }
    }
    out
}

/// The section's figures of `label` for the JSON summary.
pub fn summary(t: &Table<'_>, label: &str, into: &mut serde_json::Map<String, Value>) {
    for f in FIGURES {
        if let Some(v) = t.get(label, f.key) {
            into.insert(f.key.into(), serde_json::json!(v));
        }
    }
}

/// Writes the section: throughput and latency with B ÷ A, then where the CPU goes.
pub fn write(
    md: &mut String,
    c: &Collected,
    t: &Table<'_>,
    text: &str,
    rows: &[(String, String)],
    notes: &[String],
) {
    let _ = writeln!(
        md,
        "\n## Replicas: one replica vs three behind nginx, sessions in Redis\n"
    );
    let _ = writeln!(
        md,
        "64 clients, each with its own keep-alive connection to nginx and, in the legacy era, its \
         own session (`initialize`, `Mcp-Session-Id`, then `tools/call add` back to back). \
         **A**: nginx → one `toolwright serve --http` (sessions in memory). **B**: nginx → three \
         replicas, round-robin without affinity, with `--session-store redis://…` on one \
         `redis-server`, so each call may land on a replica that did not create its session. \
         Cells are medians over runs; ratios are B ÷ A of the same era."
    );
    if !notes.is_empty() {
        md.push('\n');
    }
    for n in notes {
        let _ = writeln!(md, "- {n}");
    }
    let cell = |label: &str, key: &str| {
        let cell = t.cell(label, figure(key));
        if cell == "—" && c.missing.contains_key(label) {
            "missing".into()
        } else {
            cell
        }
    };
    let ratio = |label: &str, key: &str| match (
        reference(label).and_then(|a| t.get(&a, key)),
        t.get(label, key),
    ) {
        (Some(a), Some(b)) if a != 0.0 => fmt_ratio(b / a),
        _ => "—".into(),
    };
    let _ = writeln!(
        md,
        "\n| Configuration | Throughput ↑ (calls/s) | p50 ↓ (µs) | p99 ↓ (µs) | Throughput ÷ A | p50 ÷ A | p99 ÷ A |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for (label, name) in rows {
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {} | {} |",
            cell(label, "rep_calls_per_s"),
            cell(label, "rep_p50_us"),
            cell(label, "rep_p99_us"),
            ratio(label, "rep_calls_per_s"),
            ratio(label, "rep_p50_us"),
            ratio(label, "rep_p99_us"),
        );
    }

    let _ = writeln!(md, "\n### Where the time goes\n");
    let _ = writeln!(
        md,
        "CPU time per call, in µs, over the measured part of each run: each process's utime + \
         stime from `/proc/<pid>/stat` (all its threads; nginx: master and worker; the \
         replicas summed), the whole machine's busy time from `/proc/stat` (everything but \
         idle, iowait and steal: this harness and anything else running), and what the \
         machine had (cores × wall time ÷ calls). \"Other\" = machine busy − the processes \
         named. Redis commands per call are its own `INFO commandstats` counts (commands run \
         inside its Lua scripts included) before and after, ÷ calls.\n"
    );
    let _ = writeln!(
        md,
        "| Configuration | load generator | nginx | replicas | Redis | other | machine busy | machine capacity | Redis commands / call | Redis µs in commands / call |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (label, name) in rows {
        let named: Option<f64> = ["rep_cpu_client", "rep_cpu_nginx", "rep_cpu_replicas"]
            .iter()
            .map(|k| t.get(label, k))
            .sum::<Option<f64>>()
            .map(|s| s + t.get(label, "rep_cpu_redis").unwrap_or(0.0));
        let other = match (t.get(label, "rep_busy"), named) {
            (Some(b), Some(n)) => fmt_num(b - n),
            _ => "—".into(),
        };
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {other} | {} | {} | {} | {} |",
            cell(label, "rep_cpu_client"),
            cell(label, "rep_cpu_nginx"),
            cell(label, "rep_cpu_replicas"),
            cell(label, "rep_cpu_redis"),
            cell(label, "rep_busy"),
            cell(label, "rep_capacity"),
            cell(label, "rep_redis_cmds"),
            cell(label, "rep_redis_usec"),
        );
    }
    let cmds = commands(text);
    let mut lines = Vec::new();
    for (label, name) in rows {
        let Some(per) = cmds.get(label).filter(|p| !p.is_empty()) else {
            continue;
        };
        let mut by: Vec<(&String, &f64)> = per.iter().collect();
        by.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
        let list: Vec<String> = by
            .iter()
            .filter(|(_, n)| **n >= 0.005)
            .map(|(k, n)| format!("`{k}` {}", fmt_num(**n)))
            .collect();
        if !list.is_empty() {
            lines.push(format!("- **{name}**: {}", list.join(", ")));
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(md, "\nRedis commands per call, by command:\n");
        for l in lines {
            let _ = writeln!(md, "{l}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ReportOpts, run};

    fn line(label: &str, tput: f64, p99: f64, redis: Option<f64>) -> String {
        let mut v = serde_json::json!({
            "measure": "replicas-http", "label": label, "run": 1,
            "calls_per_s": tput, "p50_us": p99 / 2.0, "p99_us": p99,
            "client_cpu_us_per_call": 10.0, "cpu_us_per_call_nginx": 20.0,
            "cpu_us_per_call_replicas": 30.0, "cpu_us_per_call_redis": redis.unwrap_or(0.0),
            "machine_busy_us_per_call": 75.0, "machine_us_per_call": 80.0,
        });
        if let Some(n) = redis {
            v["redis_cmds_per_call"] = n.into();
            v["redis_usec_per_call"] = (n * 2.0).into();
            v["redis_cmds"] =
                serde_json::json!({"evalsha": n / 2.0, "hget": n / 2.0, "ping": 0.001});
        }
        v.to_string()
    }

    #[test]
    fn ratios_time_and_commands() {
        let dir = std::env::temp_dir().join(format!("loadgen-replicas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let results = dir.join("r.jsonl");
        let lines = [
            line("rep-a-legacy", 20_000.0, 4000.0, Some(0.0)),
            line("rep-b-legacy", 10_000.0, 6000.0, Some(4.0)),
            r#"{"measure":"replicas-http","label":"rep-b-modern","run":1,"error":"HTTP 502"}"#
                .to_owned(),
        ];
        std::fs::write(&results, lines.join("\n")).unwrap();
        let row = |l: &str, n: &str| (l.to_owned(), n.to_owned());
        let o = ReportOpts {
            results,
            out: dir.join("B.md"),
            rep_servers: vec![
                row("rep-a-legacy", "A, legacy"),
                row("rep-b-legacy", "B, legacy"),
                row("rep-b-modern", "B, modern"),
            ],
            rep_notes: vec!["a note".into()],
            ..Default::default()
        };
        let absent = run(&o).unwrap();
        let md = std::fs::read_to_string(dir.join("B.md")).unwrap();
        assert!(md.contains("- a note"), "{md}");
        assert!(
            md.contains("| A, legacy | 20,000 | 2000 | 4000 | — | — | — |"),
            "{md}"
        );
        assert!(
            md.contains("| B, legacy | 10,000 | 3000 | 6000 | 0.50× | 1.50× | 1.50× |"),
            "{md}"
        );
        assert!(
            md.contains("| B, modern | failed | failed | failed |"),
            "{md}"
        );
        // other = busy − (10 + 20 + 30 + Redis)
        assert!(
            md.contains(
                "| B, legacy | 10.0 | 20.0 | 30.0 | 4.00 | 11.0 | 75.0 | 80.0 | 4.00 | 8.00 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| A, legacy | 10.0 | 20.0 | 30.0 | 0.00 | 15.0 |"),
            "{md}"
        );
        assert!(
            md.contains("- **B, legacy**: `evalsha` 2.00, `hget` 2.00\n"),
            "{md}"
        );
        assert_eq!(absent.len(), 3, "{absent:?}");
        assert!(absent.iter().all(|a| a.starts_with("rep-b-modern: ")));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
