//! The report's section on declared tools (issue 16; the SQL group, issue 41): a
//! command-backed, an HTTP-backed and a SQL-backed tool call, each against its floor (the same work done directly by the harness) and
//! against the peers that wrap commands or HTTP APIs. Servers are rows here: a group has
//! one floor, one subject and any number of peers.

use std::fmt::Write;

use super::{Collected, Figure, Lookup, Table, Target, fig, fmt_ratio, target_rows};

/// The figures of the section, in column order within each group.
pub const FIGURES: &[Figure] = &[
    fig(
        "cmd_p50_us",
        "Command-backed call p50",
        "µs",
        "cmd-seq",
        "p50_us",
        1.0,
        false,
    ),
    fig(
        "cmd_p99_us",
        "Command-backed call p99",
        "µs",
        "cmd-seq",
        "p99_us",
        1.0,
        false,
    ),
    fig(
        "cmd_calls_per_s",
        "Command-backed throughput",
        "calls/s",
        "cmd-tput",
        "calls_per_s",
        1.0,
        true,
    ),
    fig(
        "httptool_p50_us",
        "HTTP-backed call p50",
        "µs",
        "httptool-seq",
        "p50_us",
        1.0,
        false,
    ),
    fig(
        "httptool_p99_us",
        "HTTP-backed call p99",
        "µs",
        "httptool-seq",
        "p99_us",
        1.0,
        false,
    ),
    fig(
        "httptool_calls_per_s",
        "HTTP-backed throughput",
        "calls/s",
        "httptool-tput",
        "calls_per_s",
        1.0,
        true,
    ),
    fig(
        "sql_p50_us",
        "SQL-backed call p50",
        "µs",
        "sql-seq",
        "p50_us",
        1.0,
        false,
    ),
    fig(
        "sql_p99_us",
        "SQL-backed call p99",
        "µs",
        "sql-seq",
        "p99_us",
        1.0,
        false,
    ),
    fig(
        "sql_calls_per_s",
        "SQL-backed throughput",
        "calls/s",
        "sql-tput",
        "calls_per_s",
        1.0,
        true,
    ),
];

/// One table of the section: (label, display name) of the floor, the subject, then peers.
pub struct Group<'a> {
    /// Sub-heading.
    pub title: &'static str,
    /// What the floor is called in ratios ("bare spawn").
    pub floor_word: &'static str,
    /// Figure key prefix (`cmd`, `httptool`).
    pub prefix: &'static str,
    /// Bound on the subject's p50 as a multiple of the floor's.
    pub p50_bound: f64,
    /// Floor, subject, peers.
    pub servers: &'a [(String, String)],
}

/// The bound on throughput against every peer: subject ≥ this × peer.
const THROUGHPUT_BOUND: f64 = 3.0;

impl Group<'_> {
    fn key(&self, what: &str) -> &'static str {
        let want = format!("{}_{what}", self.prefix);
        FIGURES
            .iter()
            .map(|f| f.key)
            .find(|k| *k == want)
            .unwrap_or("?")
    }

    fn figure(&self, what: &str) -> &'static Figure {
        let key = self.key(what);
        FIGURES.iter().find(|f| f.key == key).unwrap_or(&FIGURES[0])
    }

    fn floor(&self) -> Option<&str> {
        self.servers.first().map(|s| s.0.as_str())
    }

    fn subject(&self) -> Option<&(String, String)> {
        self.servers.get(1)
    }

    fn peers(&self) -> &[(String, String)] {
        self.servers.get(2..).unwrap_or(&[])
    }

    /// The targets of this group, bounds from `g` (label, key).
    fn targets(&self, g: &Lookup<'_>) -> Vec<Target> {
        let mut v = Vec::new();
        if let Some(floor) = self.floor() {
            v.push((
                format!(
                    "{} p50 ≤ {}× the {}",
                    self.figure("p50_us")
                        .title
                        .trim_end_matches(" p50")
                        .to_owned(),
                    self.p50_bound,
                    self.floor_word
                ),
                self.key("p50_us"),
                g(floor, self.key("p50_us")).map(|f| f * self.p50_bound),
                false,
            ));
        }
        for (label, name) in self.peers() {
            v.push((
                format!(
                    "{} ≥ {THROUGHPUT_BOUND}× {name}",
                    self.figure("calls_per_s").title
                ),
                self.key("calls_per_s"),
                g(label, self.key("calls_per_s")).map(|p| p * THROUGHPUT_BOUND),
                true,
            ));
        }
        v
    }

    /// The figure pairs (label: key) this group should have produced and has not.
    pub fn absent(&self, t: &Table<'_>) -> Vec<String> {
        let mut out = Vec::new();
        for (label, _) in self.servers {
            for what in ["p50_us", "p99_us", "calls_per_s"] {
                if t.get(label, self.key(what)).is_none() {
                    out.push(format!("{label}: {}", self.key(what)));
                }
            }
        }
        out
    }

    /// The group's figures of `label` for the JSON summary.
    pub fn summary(
        &self,
        t: &Table<'_>,
        label: &str,
        into: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        for what in ["p50_us", "p99_us", "calls_per_s"] {
            if let Some(v) = t.get(label, self.key(what)) {
                into.insert(self.key(what).into(), serde_json::json!(v));
            }
        }
    }

    fn cell(&self, c: &Collected, t: &Table<'_>, label: &str, what: &str) -> String {
        let f = self.figure(what);
        let cell = t.cell(label, f);
        // A peer that is absent from this run was not installed (the harness says why);
        // the floor and the subject are built, never installed.
        if cell == "missing" && self.servers.iter().skip(2).any(|(l, _)| l == label) {
            return "did not install".into();
        }
        if cell == "—" && c.missing.contains_key(label) {
            return "missing".into();
        }
        cell
    }

    fn write(&self, md: &mut String, c: &Collected, t: &Table<'_>) {
        let _ = writeln!(md, "\n### {}\n", self.title);
        let subject = self.subject().map_or("subject", |s| s.1.as_str());
        let _ = writeln!(
            md,
            "| Server | p50 ↓ (µs) | p99 ↓ (µs) | Throughput ↑ (calls/s) | p50 ÷ {} | {subject} throughput ÷ this |\n|---|---:|---:|---:|---:|---:|",
            self.floor_word
        );
        let floor_p50 = self.floor().and_then(|f| t.get(f, self.key("p50_us")));
        let subject_tput = self
            .subject()
            .and_then(|s| t.get(&s.0, self.key("calls_per_s")));
        for (i, (label, name)) in self.servers.iter().enumerate() {
            let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) if b != 0.0 => fmt_ratio(a / b),
                _ => "—".into(),
            };
            let p50 = t.get(label, self.key("p50_us"));
            let tput = t.get(label, self.key("calls_per_s"));
            let shown = if i == 0 {
                format!("{name} (floor)")
            } else {
                name.clone()
            };
            let _ = writeln!(
                md,
                "| {shown} | {} | {} | {} | {} | {} |",
                self.cell(c, t, label, "p50_us"),
                self.cell(c, t, label, "p99_us"),
                self.cell(c, t, label, "calls_per_s"),
                ratio(p50, floor_p50),
                ratio(subject_tput, tput),
            );
        }
    }
}

/// The section's groups that have servers in this run: command-backed, HTTP-backed and
/// SQL-backed, each with its floor's name and its p50 bound.
pub fn groups(o: &super::ReportOpts) -> Vec<Group<'_>> {
    let groups = [
        Group {
            title: "Command-backed tool (`/bin/true`), stdio",
            floor_word: "bare spawn",
            prefix: "cmd",
            p50_bound: 1.3,
            servers: &o.cmd_servers,
        },
        Group {
            title: "HTTP-backed tool (GET → `{\"ok\":true}`), stdio",
            floor_word: "direct request",
            prefix: "httptool",
            p50_bound: 1.5,
            servers: &o.http_servers,
        },
        Group {
            title: "SQL tool (primary-key lookup on PostgreSQL), stdio",
            floor_word: "prepared statement",
            prefix: "sql",
            p50_bound: 1.5,
            servers: &o.sql_servers,
        },
    ];
    groups
        .into_iter()
        .filter(|g| !g.servers.is_empty())
        .collect()
}

/// Writes the section; returns each target's name and whether it was met.
pub fn write(
    md: &mut String,
    c: &Collected,
    t: &Table<'_>,
    groups: &[Group<'_>],
    notes: &[String],
) -> Vec<(String, &'static str)> {
    let _ = writeln!(
        md,
        "\n## Declared tools: command-backed, HTTP-backed and SQL-backed calls\n"
    );
    let _ = writeln!(
        md,
        "Tools declared in a file (`toolwright serve --config`, issue 16) against the same work \
         done directly by the harness (the floor) and against servers that wrap commands or HTTP \
         APIs or databases, each called through its own tool over stdio. Cells are medians over runs; \
         \"did not install\" = the peer's install step failed on this machine (the reason is \
         below)."
    );
    if !notes.is_empty() {
        md.push('\n');
    }
    for n in notes {
        let _ = writeln!(md, "- {n}");
    }
    for g in groups {
        g.write(md, c, t);
    }
    let _ = writeln!(md, "\n### Targets of issues 16 and 41\n");
    let _ = writeln!(
        md,
        "\"Met\" is checked on the medians of the tables; \"Runs met\" checks each run against \
         the same run's floor and peers, and \"Run median\" is the median over runs of value ÷ \
         bound.\n"
    );
    let subject = groups
        .iter()
        .find_map(|g| g.subject())
        .map_or("subject", |s| s.1.as_str());
    let _ = writeln!(
        md,
        "| Target | {subject} | Bound | Met | Runs met | Run median (value ÷ bound) |\n|---|---:|---:|---|---:|---:|"
    );
    let mut met = Vec::new();
    for g in groups {
        if let Some((label, _)) = g.subject() {
            met.extend(target_rows(md, c, t, label, &|get| g.targets(get)));
        }
    }
    met
}

#[cfg(test)]
mod tests {
    use super::super::{ReportOpts, run};

    fn line(measure: &str, label: &str, run: u32, p50: f64, tput: f64) -> String {
        format!(
            r#"{{"measure":"{measure}","label":"{label}","run":{run},"p50_us":{p50},"p99_us":{},"calls_per_s":{tput}}}"#,
            p50 * 2.0
        )
    }

    #[test]
    fn section_tables_ratios_and_targets() {
        let dir = std::env::temp_dir().join(format!("loadgen-declared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let results = dir.join("r.jsonl");
        let lines = [
            line("cmd-seq", "spawn", 1, 1000.0, 0.0),
            line("cmd-tput", "spawn", 1, 0.0, 2000.0),
            line("cmd-seq", "toolwright", 1, 1200.0, 0.0),
            line("cmd-tput", "toolwright", 1, 0.0, 1500.0),
            line("cmd-seq", "shell", 1, 4000.0, 0.0),
            line("cmd-tput", "shell", 1, 0.0, 400.0),
            line("httptool-seq", "direct", 1, 40.0, 0.0),
            line("httptool-tput", "direct", 1, 0.0, 20000.0),
            line("httptool-seq", "toolwright", 1, 80.0, 0.0),
            line("httptool-tput", "toolwright", 1, 0.0, 9000.0),
            r#"{"measure":"missing","label":"toolbox","error":"npm ci failed"}"#.to_owned(),
            line("sql-seq", "pg", 1, 100.0, 0.0),
            line("sql-tput", "pg", 1, 0.0, 30000.0),
            line("sql-seq", "toolwright-sql", 1, 140.0, 0.0),
            line("sql-tput", "toolwright-sql", 1, 0.0, 12000.0),
            line("sql-seq", "toolbox-sql", 1, 600.0, 0.0),
            line("sql-tput", "toolbox-sql", 1, 0.0, 3000.0),
        ];
        std::fs::write(&results, lines.join("\n")).unwrap();
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        let o = ReportOpts {
            results,
            out: dir.join("B.md"),
            cmd_servers: vec![
                pair("spawn", "bare spawn"),
                pair("toolwright", "toolwright"),
                pair("shell", "mcp-shell-server"),
            ],
            http_servers: vec![
                pair("direct", "direct request"),
                pair("toolwright", "toolwright"),
                pair("toolbox", "MCP Toolbox"),
            ],
            sql_servers: vec![
                pair("pg", "prepared statement"),
                pair("toolwright-sql", "toolwright"),
                pair("toolbox-sql", "MCP Toolbox"),
            ],
            ..Default::default()
        };
        let absent = run(&o).unwrap();
        let md = std::fs::read_to_string(dir.join("B.md")).unwrap();
        assert!(
            md.contains("| toolwright | 1200 | 2400 | 1500 | 1.20× | 1.00× |"),
            "{md}"
        );
        assert!(
            md.contains("| mcp-shell-server | 4000 | 8000 | 400 | 4.00× | 3.75× |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| MCP Toolbox | did not install | did not install | did not install | — | — |"
            ),
            "{md}"
        );
        assert!(md.contains("| Command-backed call p50 ≤ 1.3× the bare spawn | 1200 | ≤ 1300 | yes | 1/1 | 0.92× |"), "{md}");
        assert!(
            md.contains(
                "| Command-backed throughput ≥ 3× mcp-shell-server | 1500 | ≥ 1200 | yes | 1/1 | 1.25× |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| HTTP-backed call p50 ≤ 1.5× the direct request | 80.0 | ≤ 60.0 | no |"),
            "{md}"
        );
        assert!(
            md.contains("| HTTP-backed throughput ≥ 3× MCP Toolbox | 9000 | ≥ — | n/a | — | — |"),
            "{md}"
        );
        assert!(
            md.contains("| prepared statement (floor) | 100 | 200 | 30,000 | 1.00× | 0.40× |"),
            "{md}"
        );
        assert!(
            md.contains("| SQL-backed call p50 ≤ 1.5× the prepared statement | 140 | ≤ 150 | yes | 1/1 | 0.93× |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| SQL-backed throughput ≥ 3× MCP Toolbox | 12,000 | ≥ 9000 | yes | 1/1 | 1.33× |"
            ),
            "{md}"
        );
        assert!(
            !md.contains("## Figures"),
            "no main table without main servers: {md}"
        );
        assert_eq!(absent.len(), 3, "{absent:?}");
        assert!(absent.iter().all(|a| a.starts_with("toolbox: ")));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
