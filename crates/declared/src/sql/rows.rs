//! Parameters as values a driver binds, rows collected as JSON within the limits, and the
//! text table beside the structured result.

use super::{Fetched, Limits};
use serde_json::Value;

/// An argument's value as a parameter: its JSON type decides the bound type (integer → a
/// 64-bit integer, number → a double, boolean, string → text, null → NULL, object or array →
/// JSON). The driver binds it; it never becomes text of the statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// NULL (an absent argument too).
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number that is not an integer that fits in 64 bits.
    Float(f64),
    /// Text.
    Text(String),
    /// An object or an array, bound as JSON (text for SQLite, `json`/`jsonb` for
    /// PostgreSQL).
    Json(Value),
}

impl Param {
    /// The parameter of an argument's value.
    pub fn of(value: &Value) -> Param {
        match value {
            Value::Null => Param::Null,
            Value::Bool(b) => Param::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Param::Int(i),
                None => Param::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Param::Text(s.clone()),
            Value::Array(_) | Value::Object(_) => Param::Json(value.clone()),
        }
    }
}

/// Collects rows up to the limits.
#[derive(Debug)]
pub struct Collector {
    fetched: Fetched,
    bytes: u64,
    limits: Limits,
}

impl Collector {
    /// A collector of rows with these columns.
    pub fn new(columns: Vec<String>, limits: Limits) -> Collector {
        Collector {
            fetched: Fetched {
                columns,
                ..Fetched::default()
            },
            bytes: 0,
            limits,
        }
    }

    /// Whether another row may be taken; `false` marks the result truncated.
    pub fn wants_more(&mut self) -> bool {
        if self.fetched.rows.len() as u64 >= self.limits.rows {
            self.fetched.truncated = true;
            return false;
        }
        true
    }

    /// Adds a row (its values in column order); `false` when it passed the byte limit (it
    /// is left out and the result truncated).
    pub fn push(&mut self, values: Vec<Value>) -> bool {
        let size: u64 = values
            .iter()
            .zip(&self.fetched.columns)
            .map(|(v, c)| json_len(v) + c.len() as u64 + 4)
            .sum();
        if self.bytes + size > self.limits.bytes {
            self.fetched.truncated = true;
            return false;
        }
        self.bytes += size;
        let row = self.fetched.columns.iter().cloned().zip(values).collect();
        self.fetched.rows.push(row);
        true
    }

    /// Records the rows a statement without result rows changed.
    pub fn affected(&mut self, n: u64) {
        self.fetched.affected = Some(n);
    }

    /// What was collected.
    pub fn finish(self) -> Fetched {
        self.fetched
    }
}

/// The length of a value's JSON text.
fn json_len(v: &Value) -> u64 {
    serde_json::to_string(v).map_or(0, |s| s.len() as u64)
}

/// The text table of a result: a header, a rule, one line per row, columns aligned; then
/// the count of rows (and whether some were left out).
pub fn table(f: &Fetched) -> String {
    let cell = |v: &Value| match v {
        Value::String(s) => s.replace(['\n', '\r', '\t'], " "),
        Value::Null => "NULL".to_owned(),
        other => other.to_string(),
    };
    let cells: Vec<Vec<String>> = f
        .rows
        .iter()
        .map(|r| {
            f.columns
                .iter()
                .map(|c| r.get(c).map_or_else(String::new, cell))
                .collect()
        })
        .collect();
    let widths: Vec<usize> = f
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([c.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: &[String]| {
        let padded: Vec<String> = values
            .iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v:<w$}"))
            .collect();
        padded.join(" | ").trim_end().to_owned()
    };
    let mut out = String::new();
    if !f.columns.is_empty() {
        out.push_str(&line(&f.columns));
        out.push('\n');
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&rule.join("-+-"));
        out.push('\n');
        for r in &cells {
            out.push_str(&line(r));
            out.push('\n');
        }
    }
    let n = f.rows.len();
    match (f.affected, f.truncated) {
        (Some(a), _) if f.columns.is_empty() => out.push_str(&format!("({a} rows affected)")),
        (_, true) => out.push_str(&format!(
            "({n} row{}, truncated at the tool's limit)",
            if n == 1 { "" } else { "s" }
        )),
        _ => out.push_str(&format!("({n} row{})", if n == 1 { "" } else { "s" })),
    }
    out
}
