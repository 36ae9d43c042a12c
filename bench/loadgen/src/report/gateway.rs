//! The report's section on toolwright as a gateway (issues 17 and 38): `add` called directly on
//! the upstream and through `toolwright serve --config` (`servers:`), and through the
//! peers that do the same job, in four configurations (upstream transport → downstream
//! transport). Servers are rows, one table per configuration: the direct upstream (where
//! the configuration has one), toolwright's gateway, then the peers.

use std::fmt::Write;

use super::{Collected, Figure, Lookup, Table, Target, fig, fmt_num, fmt_ratio, target_rows};

/// Label of the direct row (the upstream called without a gateway).
pub const DIRECT: &str = "gw-direct";
/// Label of toolwright's gateway.
pub const SUBJECT: &str = "gw-toolwright";

macro_rules! cfg_figures {
    ($($cfg:literal),*) => {
        &[$(
            fig(concat!("gw_", $cfg, "_p50_us"), "p50", "µs", concat!("gw-", $cfg, "-seq"), "p50_us", 1.0, false),
            fig(concat!("gw_", $cfg, "_p99_us"), "p99", "µs", concat!("gw-", $cfg, "-seq"), "p99_us", 1.0, false),
            fig(concat!("gw_", $cfg, "_calls_per_s"), "throughput", "calls/s", concat!("gw-", $cfg, "-tput"), "calls_per_s", 1.0, true),
            fig(concat!("gw_", $cfg, "_cpu_us"), "CPU per call", "µs", concat!("gw-", $cfg, "-tput"), "cpu_us_per_call", 1.0, false),
        )*]
    };
}

/// The figures of the section: per configuration, p50 and p99 of sequential calls,
/// throughput, and the server's CPU per call in the throughput run (the gateway's with the
/// upstream it spawns; absent for a server loadgen did not start).
pub const FIGURES: &[Figure] = cfg_figures!("ss", "hh", "sh", "hs");

/// The configurations, in table order: (key, title, the added-p50 bound in µs if any).
pub const CONFIGS: &[(&str, &str, Option<f64>)] = &[
    (
        "ss",
        "stdio upstream → stdio client",
        Some(ADDED_P50_STDIO_US),
    ),
    (
        "hh",
        "Streamable HTTP upstream → Streamable HTTP client",
        Some(ADDED_P50_HTTP_US),
    ),
    ("sh", "stdio upstream → Streamable HTTP client", None),
    ("hs", "Streamable HTTP upstream → stdio client", None),
];

/// Most µs the gateway may add to the direct stdio p50 (issue 38).
const ADDED_P50_STDIO_US: f64 = 30.0;
/// Most µs the gateway may add to the direct HTTP p50 (issue 38).
const ADDED_P50_HTTP_US: f64 = 60.0;
/// Least share of the direct throughput the gateway keeps.
const DIRECT_SHARE: f64 = 0.5;
/// Most multiple of the direct server's CPU per call the gateway may spend.
const CPU_BOUND: f64 = 3.0;
/// Least multiple of every peer's throughput.
const PEER_BOUND: f64 = 10.0;

/// The configuration whose direct row is this one's reference: its own, or for a
/// configuration without one, the direct upstream of its upstream's transport (what the
/// gateway's throughput cannot exceed).
fn reference(cfg: &str) -> &'static str {
    match cfg {
        "ss" | "sh" => "ss",
        _ => "hh",
    }
}

/// The key of figure `what` of configuration `cfg`.
fn key_of(cfg: &str, what: &str) -> &'static str {
    let want = format!("gw_{cfg}_{what}");
    FIGURES
        .iter()
        .map(|f| f.key)
        .find(|k| *k == want)
        .unwrap_or("?")
}

/// One table: a configuration and its rows (label, display name).
pub struct Group {
    /// Configuration key (`ss`, `hh`, `sh`, `hs`).
    pub cfg: &'static str,
    /// Sub-heading.
    pub title: &'static str,
    /// Bound on the µs added to the direct p50, if the configuration has one.
    pub added_bound: Option<f64>,
    /// Rows: the direct upstream (optional), toolwright's gateway, peers.
    pub servers: Vec<(String, String)>,
}

impl Group {
    fn key(&self, what: &str) -> &'static str {
        key_of(self.cfg, what)
    }

    fn figure(&self, what: &str) -> &'static Figure {
        let key = self.key(what);
        FIGURES.iter().find(|f| f.key == key).unwrap_or(&FIGURES[0])
    }

    fn has_direct(&self) -> bool {
        self.servers.iter().any(|(l, _)| l == DIRECT)
    }

    fn peers(&self) -> impl Iterator<Item = &(String, String)> {
        self.servers
            .iter()
            .filter(|(l, _)| l != DIRECT && l != SUBJECT)
    }

    fn targets(&self, g: &Lookup<'_>) -> Vec<Target> {
        let short = self.cfg_short();
        let mut v = Vec::new();
        if self.has_direct()
            && let Some(bound) = self.added_bound
        {
            v.push((
                format!("{short}: gateway adds ≤ {bound} µs to the direct p50"),
                self.key("p50_us"),
                g(DIRECT, self.key("p50_us")).map(|d| d + bound),
                false,
            ));
        }
        let refer = reference(self.cfg);
        let of = if refer == self.cfg {
            "direct".to_owned()
        } else {
            format!(
                "the direct {} upstream",
                if refer == "ss" { "stdio" } else { "HTTP" }
            )
        };
        v.push((
            format!(
                "{short}: throughput ≥ {}% of {of}",
                (DIRECT_SHARE * 100.0) as u32
            ),
            self.key("calls_per_s"),
            g(DIRECT, key_of(refer, "calls_per_s")).map(|d| d * DIRECT_SHARE),
            true,
        ));
        if let Some(cpu) = g(DIRECT, self.key("cpu_us")) {
            v.push((
                format!("{short}: CPU per forwarded call ≤ {CPU_BOUND}× the direct server's"),
                self.key("cpu_us"),
                Some(cpu * CPU_BOUND),
                false,
            ));
        }
        for (label, name) in self.peers() {
            v.push((
                format!("{short}: throughput ≥ {PEER_BOUND}× {name}"),
                self.key("calls_per_s"),
                g(label, self.key("calls_per_s")).map(|p| p * PEER_BOUND),
                true,
            ));
        }
        v
    }

    fn cfg_short(&self) -> &'static str {
        match self.cfg {
            "ss" => "stdio→stdio",
            "hh" => "HTTP→HTTP",
            "sh" => "stdio→HTTP",
            _ => "HTTP→stdio",
        }
    }

    /// The figure pairs (label: key) this group should have produced and has not.
    pub fn absent(&self, t: &Table<'_>) -> Vec<String> {
        let mut out = Vec::new();
        for (label, _) in &self.servers {
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
        let cell = t.cell(label, self.figure(what));
        if cell == "—" && c.missing.contains_key(label) {
            return "missing".into();
        }
        cell
    }

    fn write(&self, md: &mut String, c: &Collected, t: &Table<'_>) {
        let _ = writeln!(md, "\n### {}\n", self.title);
        let direct_p50 = t.get(DIRECT, self.key("p50_us"));
        let direct_tput = t.get(DIRECT, self.key("calls_per_s"));
        let subject_tput = t.get(SUBJECT, self.key("calls_per_s"));
        let _ = writeln!(
            md,
            "| Server | p50 ↓ (µs) | p99 ↓ (µs) | Throughput ↑ (calls/s) | p50 − direct (µs) | Throughput ÷ direct | toolwright gateway throughput ÷ this |\n|---|---:|---:|---:|---:|---:|---:|"
        );
        for (label, name) in &self.servers {
            let p50 = t.get(label, self.key("p50_us"));
            let tput = t.get(label, self.key("calls_per_s"));
            let added = match (p50, direct_p50) {
                (Some(a), Some(d)) if label != DIRECT => {
                    format!("{}{}", if a >= d { "+" } else { "" }, fmt_num(a - d))
                }
                _ => "—".into(),
            };
            let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) if b != 0.0 => fmt_ratio(a / b),
                _ => "—".into(),
            };
            let _ = writeln!(
                md,
                "| {name} | {} | {} | {} | {added} | {} | {} |",
                self.cell(c, t, label, "p50_us"),
                self.cell(c, t, label, "p99_us"),
                self.cell(c, t, label, "calls_per_s"),
                if label == DIRECT {
                    "—".into()
                } else {
                    ratio(tput, direct_tput)
                },
                if label == SUBJECT {
                    "—".into()
                } else {
                    ratio(subject_tput, tput)
                },
            );
        }
    }
}

/// Builds the groups from `(cfg, label, display name)` rows, in the order of [`CONFIGS`].
pub fn groups(rows: &[(String, String, String)]) -> Vec<Group> {
    CONFIGS
        .iter()
        .filter_map(|&(cfg, title, added_bound)| {
            let servers: Vec<(String, String)> = rows
                .iter()
                .filter(|(c, _, _)| c == cfg)
                .map(|(_, l, n)| (l.clone(), n.clone()))
                .collect();
            (!servers.is_empty()).then_some(Group {
                cfg,
                title,
                added_bound,
                servers,
            })
        })
        .collect()
}

/// Writes the section; returns each target's name and whether it was met.
pub fn write(
    md: &mut String,
    c: &Collected,
    t: &Table<'_>,
    groups: &[Group],
    notes: &[String],
) -> Vec<(String, &'static str)> {
    let _ = writeln!(md, "\n## Gateway: `add` directly and through a gateway\n");
    let _ = writeln!(
        md,
        "toolwright's gateway (`toolwright serve --config gw.yaml`, `servers: {{up: …}}`, issues 17 and 38) \
         in front of toolwright itself, against the same upstream called directly and against \
         the peers that do the same job. Each table is one configuration, upstream transport → \
         downstream transport. Cells are medians over runs; \"missing\" = the server was not \
         available in this run (the reason is below)."
    );
    let added: Vec<String> = groups
        .iter()
        .filter_map(|g| {
            let (a, d) = (
                t.get(SUBJECT, g.key("p50_us"))?,
                t.get(DIRECT, g.key("p50_us"))?,
            );
            Some(format!("{} {} µs", g.cfg_short(), fmt_num(a - d)))
        })
        .collect();
    if !added.is_empty() {
        let _ = writeln!(
            md,
            "\n**Added at p50** (gateway p50 − direct p50): {}.",
            added.join("; ")
        );
    }
    if !notes.is_empty() {
        md.push('\n');
    }
    for n in notes {
        let _ = writeln!(md, "- {n}");
    }
    for g in groups {
        g.write(md, c, t);
    }
    let _ = writeln!(md, "\n### Targets of issue 38\n");
    let _ = writeln!(
        md,
        "Checked on the medians of the tables; \"Runs met\" checks each run against the same \
         run's direct and peer figures, and \"Run median\" is the median over runs of value ÷ \
         bound. Reported, not asserted by any test.\n"
    );
    let _ = writeln!(
        md,
        "| Target | toolwright gateway | Bound | Met | Runs met | Run median (value ÷ bound) |\n|---|---:|---:|---|---:|---:|"
    );
    let mut met = Vec::new();
    for g in groups {
        met.extend(target_rows(md, c, t, SUBJECT, &|get| g.targets(get)));
    }
    met
}

#[cfg(test)]
mod tests {
    use super::super::{ReportOpts, run};

    fn seq(cfg: &str, label: &str, p50: f64) -> String {
        format!(
            r#"{{"measure":"gw-{cfg}-seq","label":"{label}","run":1,"p50_us":{p50},"p99_us":{}}}"#,
            p50 * 2.0
        )
    }
    fn tput(cfg: &str, label: &str, v: f64) -> String {
        format!(r#"{{"measure":"gw-{cfg}-tput","label":"{label}","run":1,"calls_per_s":{v}}}"#)
    }

    #[test]
    fn tables_added_microseconds_and_targets() {
        let dir = std::env::temp_dir().join(format!("loadgen-gateway-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let results = dir.join("r.jsonl");
        let lines = [
            seq("ss", "gw-direct", 100.0),
            tput("ss", "gw-direct", 200_000.0),
            seq("ss", "gw-toolwright", 125.0),
            tput("ss", "gw-toolwright", 90_000.0),
            seq("ss", "fastmcp", 5000.0),
            tput("ss", "fastmcp", 100.0),
            seq("sh", "gw-toolwright", 300.0),
            tput("sh", "gw-toolwright", 20_000.0),
            r#"{"measure":"missing","label":"mcpproxy","error":"pip install failed"}"#.to_owned(),
        ];
        std::fs::write(&results, lines.join("\n")).unwrap();
        let row = |c: &str, l: &str, n: &str| (c.to_owned(), l.to_owned(), n.to_owned());
        let o = ReportOpts {
            results,
            out: dir.join("B.md"),
            gw_servers: vec![
                row("ss", "gw-direct", "toolwright, direct"),
                row("ss", "gw-toolwright", "toolwright gateway"),
                row("ss", "fastmcp", "FastMCP proxy"),
                row("sh", "gw-toolwright", "toolwright gateway"),
                row("sh", "mcpproxy", "mcp-proxy"),
            ],
            ..Default::default()
        };
        let absent = run(&o).unwrap();
        let md = std::fs::read_to_string(dir.join("B.md")).unwrap();
        assert!(
            md.contains("**Added at p50** (gateway p50 − direct p50): stdio→stdio 25.0 µs."),
            "{md}"
        );
        assert!(
            md.contains("| toolwright gateway | 125 | 250 | 90,000 | +25.0 | 0.45× | — |"),
            "{md}"
        );
        assert!(
            md.contains("| FastMCP proxy | 5000 | 10,000 | 100 | +4900 | 5.0e-4× | 900.0× |"),
            "{md}"
        );
        assert!(
            md.contains("| mcp-proxy | missing | missing | missing | — | — | — |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| stdio→stdio: gateway adds ≤ 30 µs to the direct p50 | 125 | ≤ 130 | yes | 1/1 |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| stdio→stdio: throughput ≥ 50% of direct | 90,000 | ≥ 100,000 | no | 0/1 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| stdio→stdio: throughput ≥ 10× FastMCP proxy | 90,000 | ≥ 1000 | yes |"),
            "{md}"
        );
        assert!(
            md.contains("| stdio→HTTP: throughput ≥ 10× mcp-proxy | 20,000 | ≥ — | n/a |"),
            "{md}"
        );
        // A configuration without a direct row is held to its upstream's direct one.
        assert!(
            md.contains(
                "| stdio→HTTP: throughput ≥ 50% of the direct stdio upstream | 20,000 | ≥ 100,000 | no |"
            ),
            "{md}"
        );
        assert_eq!(absent.len(), 3, "{absent:?}");
        assert!(absent.iter().all(|a| a.starts_with("mcpproxy: ")));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
