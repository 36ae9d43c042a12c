//! The result of a lint run, rendered for people (grouped by tool) or as JSON.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::{Value, json};

use crate::{Finding, Severity};

/// One tool that was linted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEntry {
    /// Position in the input, from 0.
    pub index: usize,
    /// The tool's name, or `#<index>` when it has none.
    pub name: String,
}

/// Every finding of one lint run, sorted by tool, then rule, then pointer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The tools linted, in input order.
    pub tools: Vec<ToolEntry>,
    /// What was found.
    pub findings: Vec<Finding>,
    /// The file linted, when the findings are placed in one (named in front of each
    /// finding's line and column).
    pub file: Option<String>,
    /// Findings outside every tool (the file's top level, `servers:`, `gateway:`), in file
    /// order: each one's `tool` names what it is in (`server docs`, `gateway`, or empty for
    /// the file itself), its `pointer` is from the file's root and its `index` means
    /// nothing.
    pub outside: Vec<Finding>,
}

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const GREEN: &str = "\x1b[32m";

fn severity_color(s: Severity) -> &'static str {
    match s {
        Severity::Error => "\x1b[1;31m",
        Severity::Warning => "\x1b[33m",
        Severity::Info => "\x1b[36m",
    }
}

impl Report {
    /// Every finding: outside the tools first, then the tools'.
    pub fn all(&self) -> impl Iterator<Item = &Finding> {
        self.outside.iter().chain(&self.findings)
    }

    /// How many findings have severity `s`.
    pub fn count(&self, s: Severity) -> usize {
        self.all().filter(|f| f.severity == s).count()
    }

    /// The most serious severity found, `None` when clean.
    pub fn max_severity(&self) -> Option<Severity> {
        self.all().map(|f| f.severity).max()
    }

    /// Whether any finding is at or above `deny`.
    pub fn fails(&self, deny: Severity) -> bool {
        self.max_severity().is_some_and(|s| s >= deny)
    }

    /// The findings of the tool at `index`.
    pub fn findings_of(&self, index: usize) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.index == index)
    }

    /// The findings of each tool, by index, in report order.
    fn by_tool(&self) -> HashMap<usize, Vec<&Finding>> {
        let mut out: HashMap<usize, Vec<&Finding>> = HashMap::new();
        for f in &self.findings {
            out.entry(f.index).or_default().push(f);
        }
        out
    }

    /// The report for people: findings grouped by tool, then a summary line. ANSI colours
    /// only when `color` is true.
    pub fn render_human(&self, color: bool) -> String {
        let paint = |code: &str, text: &str| {
            if color {
                format!("{code}{text}{RESET}")
            } else {
                text.to_owned()
            }
        };
        let mut names: HashMap<&str, usize> = HashMap::new();
        for t in &self.tools {
            *names.entry(t.name.as_str()).or_default() += 1;
        }
        let mut groups: Vec<(String, Vec<&Finding>)> = Vec::new();
        for f in &self.outside {
            let header = match (f.tool.as_str(), &self.file) {
                ("", Some(file)) => file.clone(),
                ("", None) => "the file".to_owned(),
                (subject, _) => subject.to_owned(),
            };
            match groups.last_mut() {
                Some((h, fs)) if *h == header => fs.push(f),
                _ => groups.push((header, vec![f])),
            }
        }
        let mut of_tool = self.by_tool();
        for entry in &self.tools {
            let Some(findings) = of_tool.remove(&entry.index) else {
                continue;
            };
            let ambiguous = names.get(entry.name.as_str()).is_some_and(|n| *n > 1);
            let header = if ambiguous {
                format!("{} (#{})", entry.name, entry.index)
            } else {
                entry.name.clone()
            };
            groups.push((header, findings));
        }
        let mut out = String::new();
        for (header, findings) in groups {
            let _ = writeln!(out, "{}", paint(BOLD, &header));
            for f in findings {
                let label = format!("{}[{}]", f.severity, f.rule.id());
                let place = self.place(f).map(|p| format!(" {p}")).unwrap_or_default();
                let at = if f.pointer.is_empty() {
                    place
                } else {
                    format!("{place} {}", paint(DIM, &f.pointer))
                };
                let _ = writeln!(out, "  {}{at}", paint(severity_color(f.severity), &label));
                let _ = writeln!(out, "    {}", f.message);
                let _ = writeln!(out, "    {} {}", paint(GREEN, "fix:"), f.fix);
            }
            out.push('\n');
        }
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    /// `file:line:column` (or `line:column`) of a finding that has a location.
    pub fn place(&self, f: &Finding) -> Option<String> {
        let l = f.location?;
        Some(match &self.file {
            Some(file) => format!("{file}:{}:{}", l.line, l.column),
            None => format!("{}:{}", l.line, l.column),
        })
    }

    /// One line: how many tools, how many findings of each severity.
    pub fn summary(&self) -> String {
        let n = self.tools.len();
        let tools = format!("{n} tool{}", if n == 1 { "" } else { "s" });
        if self.findings.is_empty() && self.outside.is_empty() {
            return format!("{tools} checked: no findings");
        }
        let of_tool = self.by_tool();
        let with: usize = self
            .tools
            .iter()
            .filter(|t| of_tool.contains_key(&t.index))
            .count();
        let plural = |k: usize, word: &str| format!("{k} {word}{}", if k == 1 { "" } else { "s" });
        format!(
            "{tools} checked, {with} with findings: {}, {}, {} info",
            plural(self.count(Severity::Error), "error"),
            plural(self.count(Severity::Warning), "warning"),
            self.count(Severity::Info)
        )
    }

    /// The report as JSON: `{"tools": [...], "findings": [...], "summary": {...}}`; a
    /// finding placed in a file also has `line` and `column`, and one outside every tool
    /// has `tool` and `index` null, with `in` naming what it is in when that is not the
    /// file itself (`server docs`, `gateway`).
    pub fn to_json(&self) -> Value {
        let outside = self.outside.iter().map(|f| {
            let mut v = json!({
                "rule": f.rule.id(),
                "severity": f.severity.as_str(),
                "tool": null,
                "index": null,
                "pointer": f.pointer,
                "message": f.message,
                "fix": f.fix,
            });
            if !f.tool.is_empty() {
                v["in"] = json!(f.tool);
            }
            if let Some(l) = f.location {
                v["line"] = json!(l.line);
                v["column"] = json!(l.column);
            }
            v
        });
        json!({
            "tools": self.tools.iter().map(|t| json!({"index": t.index, "name": t.name})).collect::<Vec<_>>(),
            "findings": outside.chain(self.findings.iter().map(|f| {
                let mut v = json!({
                    "rule": f.rule.id(),
                    "severity": f.severity.as_str(),
                    "tool": f.tool,
                    "index": f.index,
                    "pointer": f.pointer,
                    "message": f.message,
                    "fix": f.fix,
                });
                if let Some(l) = f.location {
                    v["line"] = json!(l.line);
                    v["column"] = json!(l.column);
                }
                v
            })).collect::<Vec<_>>(),
            "summary": {
                "tools": self.tools.len(),
                "error": self.count(Severity::Error),
                "warning": self.count(Severity::Warning),
                "info": self.count(Severity::Info),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, lint};

    #[test]
    fn human_report_groups_by_tool_and_colours_on_request() {
        let tools = [
            json!({"name": "x", "description": "Adds two numbers and returns the sum.", "inputSchema": {"type": "object"}}),
            json!({"name": "ok_tool", "description": "Adds two numbers and returns the sum.", "inputSchema": {"type": "object"}}),
        ];
        let report = lint(&tools, &Options::default());
        let plain = report.render_human(false);
        assert_eq!(
            plain,
            "x\n  warning[name-vague] /name\n    \"x\" is too short to say what the tool does\n    fix: name the tool after what it does, verb then object, e.g. search_files or get_weather\n\n2 tools checked, 1 with findings: 0 errors, 1 warning, 0 info\n"
        );
        assert!(!plain.contains('\x1b'));
        assert!(
            report
                .render_human(true)
                .contains("\x1b[33mwarning[name-vague]\x1b[0m")
        );
        assert!(report.fails(Severity::Warning) && !report.fails(Severity::Error));
    }

    #[test]
    fn clean_report() {
        let report = lint(&[], &Options::default());
        assert_eq!(report.render_human(false), "0 tools checked: no findings\n");
        assert_eq!(
            report.to_json()["summary"],
            json!({"tools": 0, "error": 0, "warning": 0, "info": 0})
        );
        assert_eq!(report.max_severity(), None);
    }
}
