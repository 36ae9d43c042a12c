//! The `sql` action and the file's `sources:` as a person writes them, and what the loader
//! and `toolwright lint` both read of a statement without a database: its placeholders and
//! whether it writes ([`scan`]).
//!
//! The scanner is small and honest: it walks the statement once, skipping string literals,
//! quoted identifiers, comments and (for PostgreSQL) dollar-quoted bodies, and reports the
//! placeholders and the words it met. It is not a parser: the database is what enforces a
//! read-only tool (a read-only transaction, a read-only SQLite connection); the scan finds a
//! mistake before the first call does.

use crate::model::{ByteSize, DurationSpec};
use serde::Deserialize;
use std::collections::BTreeSet;

/// `sql:` on a tool: one fixed statement against a named source, each parameter an
/// argument's value bound by the driver.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlSpec {
    /// The name of an entry of the file's `sources:`.
    pub source: String,
    /// The statement: fixed text, `$1, $2, ...` (PostgreSQL) or `?` / `?1` (SQLite) where
    /// the parameters go.
    pub statement: String,
    /// The arguments bound to the placeholders, in order (`$1` is the first).
    #[serde(default)]
    pub params: Vec<String>,
    /// What the structured result is [default: rows].
    #[serde(default)]
    pub result: ResultShape,
    /// Most rows returned; more are not fetched and the result says `truncated: true`
    /// [default: 1000].
    #[serde(default)]
    pub max_rows: Option<u64>,
    /// Most bytes of row data (as JSON) returned; the rows past it are left out and the
    /// result says `truncated: true` [default: 1MiB].
    #[serde(default)]
    pub max_bytes: Option<ByteSize>,
    /// How long the statement may run; past it, it is cancelled on the server [default: 5s].
    #[serde(default)]
    pub timeout: Option<DurationSpec>,
}

/// The structured result of a `sql` tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultShape {
    /// `{rows: [{column: value, ...}, ...]}`.
    #[default]
    Rows,
    /// The one row as an object; no row, or more than one, fails the call.
    One,
}

/// An entry of `sources:`: a database, by URL or by file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    /// A PostgreSQL URL (`postgres://user:${PASSWORD}@host:port/db`); `${VAR}` is the
    /// server's environment variable, read when the source connects.
    #[serde(default)]
    pub postgres: Option<String>,
    /// A SQLite database file (relative paths are from the tool file's directory).
    #[serde(default)]
    pub sqlite: Option<String>,
    /// Most connections kept open to a PostgreSQL source [default: 4].
    #[serde(default)]
    pub max_connections: Option<u32>,
}

/// The database dialect of a source, which decides how placeholders are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// `$1`, `$2`, ...; `'...'`, `E'...'`, `$tag$...$tag$` strings.
    Postgres,
    /// `?` and `?N`; `'...'` strings.
    Sqlite,
}

/// The refusal of a `sources:` entry naming neither or both engines.
pub const ONE_ENGINE: &str =
    "a source is one database: `postgres: URL` or `sqlite: FILE`, exactly one of them";

/// What [`scan`] found in a statement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// How many parameters the statement takes (the highest `$N`, or the `?` count).
    pub placeholders: usize,
    /// Numbers of `$N` / `?N` that are missing below the highest (`$1` and `$3` but no `$2`).
    pub gaps: Vec<usize>,
    /// The first keyword (upper case), when there is one.
    pub first: Option<String>,
    /// Every keyword-like word outside literals and comments, upper case.
    pub words: BTreeSet<String>,
    /// More than one statement (text after a `;`).
    pub several: bool,
    /// A named placeholder (`:name`, `@name`, `$name` in SQLite), which is not supported.
    pub named: Option<String>,
    /// Both `?` and `?N` in one statement.
    pub mixed: bool,
    /// A numbered placeholder past [`MAX_PLACEHOLDER`] (not counted).
    pub too_high: Option<usize>,
}

/// The highest placeholder number a statement may use: the most parameters PostgreSQL's
/// protocol carries (SQLite's default limit is lower, and it says so itself).
pub const MAX_PLACEHOLDER: usize = 65_535;

/// Most missing placeholder numbers [`Scan::gaps`] lists.
const MAX_GAPS: usize = 8;

/// Words that begin a statement that changes data or schema.
pub const WRITING: &[&str] = &[
    "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "REPLACE", "CREATE", "DROP", "ALTER",
    "TRUNCATE", "GRANT", "REVOKE", "COPY", "VACUUM", "REINDEX", "CLUSTER", "COMMENT", "LOCK",
    "CALL", "DO", "ATTACH", "DETACH", "REFRESH", "IMPORT", "SECURITY", "SET", "RESET",
];

/// Words that make a `WITH ...` statement a writing one.
const DATA_CHANGING: &[&str] = &["INSERT", "UPDATE", "DELETE", "MERGE"];

impl Scan {
    /// Whether the statement writes: its first keyword is in [`WRITING`], or it is a `WITH`
    /// whose body holds INSERT, UPDATE, DELETE or MERGE.
    pub fn writes(&self) -> bool {
        match self.first.as_deref() {
            Some("WITH") => DATA_CHANGING.iter().any(|w| self.words.contains(*w)),
            Some(first) => WRITING.contains(&first),
            None => false,
        }
    }
}

/// Scans a statement for `engine`.
pub fn scan(statement: &str, engine: Engine) -> Scan {
    let b = statement.as_bytes();
    let mut s = Scan::default();
    let mut numbered: BTreeSet<usize> = BTreeSet::new();
    let mut bare = 0usize;
    let mut ended = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match c {
            b'-' if next == Some(b'-') => i = skip_until(b, i + 2, b"\n"),
            b'/' if next == Some(b'*') => i = skip_block_comment(b, i + 2),
            b'\'' => {
                let escapes = engine == Engine::Postgres
                    && i > 0
                    && matches!(b[i - 1], b'e' | b'E')
                    && !b.get(i.wrapping_sub(2)).is_some_and(|p| is_word(*p));
                i = skip_quoted(b, i + 1, b'\'', escapes);
            }
            b'"' | b'`' => i = skip_quoted(b, i + 1, c, false),
            b'[' if engine == Engine::Sqlite => i = skip_until(b, i + 1, b"]"),
            b';' => {
                ended = true;
                i += 1;
            }
            b'$' if engine == Engine::Postgres && next.is_some_and(|d| d.is_ascii_digit()) => {
                let (n, end) = number(b, i + 1);
                numbered_or_too_high(&mut numbered, &mut s.too_high, n);
                i = end;
            }
            b'$' if engine == Engine::Postgres && !(i > 0 && is_word(b[i - 1])) => {
                // `$$...$$` or `$tag$...$tag$`: a dollar-quoted body.
                let tag_end = (i + 1..b.len())
                    .find(|&j| !is_word(b[j]))
                    .unwrap_or(b.len());
                if b.get(tag_end) == Some(&b'$') {
                    let tag = &b[i..=tag_end];
                    i = skip_until(b, tag_end + 1, tag);
                } else {
                    i += 1;
                }
            }
            b'?' if engine == Engine::Sqlite => {
                if next.is_some_and(|d| d.is_ascii_digit()) {
                    let (n, end) = number(b, i + 1);
                    numbered_or_too_high(&mut numbered, &mut s.too_high, n);
                    i = end;
                } else {
                    bare += 1;
                    i += 1;
                }
            }
            b':' | b'@' | b'$'
                if engine == Engine::Sqlite && next.is_some_and(|d| d.is_ascii_alphabetic()) =>
            {
                let end = (i + 1..b.len())
                    .find(|&j| !is_word(b[j]))
                    .unwrap_or(b.len());
                s.named.get_or_insert_with(|| statement[i..end].to_owned());
                i = end;
            }
            _ if c.is_ascii_alphabetic() || c == b'_' => {
                let end = (i..b.len()).find(|&j| !is_word(b[j])).unwrap_or(b.len());
                let word = statement[i..end].to_ascii_uppercase();
                if ended {
                    s.several = true;
                }
                if s.first.is_none() {
                    s.first = Some(word.clone());
                }
                s.words.insert(word);
                i = end;
            }
            _ => {
                if ended && !c.is_ascii_whitespace() {
                    s.several = true;
                }
                i += 1;
            }
        }
    }
    let highest = numbered.last().copied().unwrap_or(0);
    s.gaps = (1..=highest)
        .filter(|n| !numbered.contains(n))
        .take(MAX_GAPS)
        .collect();
    s.mixed = bare > 0 && highest > 0;
    s.placeholders = highest.max(bare);
    s
}

/// Every problem of a statement against its parameters and its tool's read-only hint, as
/// the loader reports them (`toolwright lint` shows the same).
pub fn problems(spec: &SqlSpec, engine: Engine, read_only: bool) -> Vec<String> {
    let scan = scan(&spec.statement, engine);
    let mut out = Vec::new();
    let written = match engine {
        Engine::Postgres => "$1, $2, ...",
        Engine::Sqlite => "? or ?1, ?2, ...",
    };
    if scan.several {
        out.push("the statement holds more than one statement (text after a `;`); a tool runs exactly one".to_owned());
    }
    if let Some(named) = &scan.named {
        out.push(format!(
            "{named} is a named placeholder; write {written} and list the arguments in `params`"
        ));
    }
    if let Some(n) = scan.too_high {
        out.push(format!(
            "placeholder {n} is past the highest a driver binds ({MAX_PLACEHOLDER})"
        ));
    }
    if scan.mixed {
        out.push("the statement mixes `?` and `?N` placeholders; use one kind".to_owned());
    }
    for gap in &scan.gaps {
        let p = if engine == Engine::Postgres { "$" } else { "?" };
        out.push(format!(
            "placeholder {p}{gap} is missing though a higher one is used; each parameter needs its placeholder"
        ));
    }
    if scan.placeholders != spec.params.len() {
        out.push(format!(
            "the statement has {} placeholder(s) ({written}) but `params` names {} argument(s); each placeholder needs exactly one parameter",
            scan.placeholders,
            spec.params.len()
        ));
    }
    if read_only && engine == Engine::Postgres && scan.words.contains("SET_CONFIG") {
        out.push("readOnlyHint: true, but the statement calls set_config, which can change the session a read-only tool's connection keeps; a read-only tool does not set settings".to_owned());
    }
    if read_only && scan.writes() {
        out.push(format!(
            "readOnlyHint: true, but the statement is a writing one ({}); it would be refused in the read-only transaction every call runs in",
            scan.first.as_deref().unwrap_or("")
        ));
    }
    out
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// The number starting at `i` (saturating), and the byte after it.
/// Counts placeholder `n`, unless it is past [`MAX_PLACEHOLDER`] (the first such is kept
/// to be named): a number so high would have the gaps below it fill memory.
fn numbered_or_too_high(numbered: &mut BTreeSet<usize>, too_high: &mut Option<usize>, n: usize) {
    if n > MAX_PLACEHOLDER {
        too_high.get_or_insert(n);
    } else {
        numbered.insert(n);
    }
}

fn number(b: &[u8], i: usize) -> (usize, usize) {
    let end = (i..b.len())
        .find(|&j| !b[j].is_ascii_digit())
        .unwrap_or(b.len());
    let n = b[i..end].iter().fold(0usize, |n, d| {
        n.saturating_mul(10).saturating_add(usize::from(d - b'0'))
    });
    (n, end)
}

/// The byte after the first `end` at or after `i` (the end of the text when there is none).
fn skip_until(b: &[u8], i: usize, end: &[u8]) -> usize {
    (i..b.len())
        .find(|&j| b[j..].starts_with(end))
        .map_or(b.len(), |j| j + end.len())
}

/// The byte after a `/* ... */` comment whose body starts at `i` (nested ones counted).
fn skip_block_comment(b: &[u8], mut i: usize) -> usize {
    let mut depth = 1;
    while i < b.len() {
        if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    b.len()
}

/// The byte after a quoted run whose body starts at `i`: a doubled quote is one quote, and
/// with `escapes` a backslash escapes the next byte.
fn skip_quoted(b: &[u8], mut i: usize, quote: u8, escapes: bool) -> usize {
    while i < b.len() {
        if escapes && b[i] == b'\\' {
            i += 2;
        } else if b[i] == quote {
            if b.get(i + 1) == Some(&quote) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_writes() {
        table! { |text: &str, engine: Engine, n: usize, writes: bool, several: bool| {
            let s = scan(text, engine);
            assert_eq!((s.placeholders, s.writes(), s.several), (n, writes, several), "{text}");
        };
            ("select * from t where id = $1", Engine::Postgres, 1, false, false);
            ("select $2, $1, $2", Engine::Postgres, 2, false, false);
            ("select '$1', \"$2\" -- $3\n /* $4 /* $5 */ */ from t", Engine::Postgres, 0, false, false);
            ("select $$ $1 $$, $q$ it's $2 $q$", Engine::Postgres, 0, false, false);
            ("select E'\\' $1' , $1", Engine::Postgres, 1, false, false);
            ("select data ? 'k' from t where id = $1", Engine::Postgres, 1, false, false);
            ("  -- hi\n INSERT into t values ($1)", Engine::Postgres, 1, true, false);
            ("with x as (delete from t returning *) select * from x", Engine::Postgres, 0, true, false);
            ("with x as (select 1) select * from x", Engine::Postgres, 0, false, false);
            ("select 'update'", Engine::Postgres, 0, false, false);
            ("select 1; drop table t", Engine::Postgres, 0, false, true);
            ("select 1;  ", Engine::Postgres, 0, false, false);
            ("/* x */ DROP TABLE t", Engine::Sqlite, 0, true, false);
            ("select * from t where a = ? and b = ?", Engine::Sqlite, 2, false, false);
            ("select * from t where a = ?2 and b = ?1", Engine::Sqlite, 2, false, false);
            ("select '?', \"?\", [?] from t -- ?", Engine::Sqlite, 0, false, false);
            ("update t set a = ?", Engine::Sqlite, 1, true, false);
        }
    }

    #[test]
    fn problems_named() {
        let spec = |statement: &str, params: &[&str]| SqlSpec {
            source: "s".into(),
            statement: statement.into(),
            params: params.iter().map(|p| (*p).to_owned()).collect(),
            result: ResultShape::Rows,
            max_rows: None,
            max_bytes: None,
            timeout: None,
        };
        table! { |text: &str, params: &[&str], engine: Engine, read_only: bool, want: &[&str]| {
            let got = problems(&spec(text, params), engine, read_only);
            assert_eq!(got.len(), want.len(), "{text}: {got:?}");
            for (g, w) in got.iter().zip(want) {
                assert!(g.contains(w), "{text}: {g:?} lacks {w:?}");
            }
        };
            ("select $1", &["id"], Engine::Postgres, true, &[]);
            ("select $1", &[], Engine::Postgres, false, &["1 placeholder(s)"]);
            ("select $1, $3", &["a", "b", "c"], Engine::Postgres, false, &["$2 is missing"]);
            ("select ?", &["a", "b"], Engine::Sqlite, false, &["but `params` names 2"]);
            ("select :a", &["a"], Engine::Sqlite, false, &[":a is a named placeholder", "0 placeholder(s)"]);
            ("select ?, ?1", &["a"], Engine::Sqlite, false, &["mixes"]);
            ("delete from t where id = $1", &["id"], Engine::Postgres, true, &["writing one (DELETE)"]);
            ("delete from t where id = $1", &["id"], Engine::Postgres, false, &[]);
            ("select 1; select 2", &[], Engine::Sqlite, false, &["more than one statement"]);
            ("select set_config('default_transaction_read_only', 'off', false)", &[], Engine::Postgres, true, &["calls set_config"]);
            ("select set_config('x.y', $1, true)", &["v"], Engine::Postgres, false, &[]);
            ("select ?2555555555555555555555555555", &[], Engine::Sqlite, false, &["past the highest"]);
            ("select $65536, $1", &["a"], Engine::Postgres, false, &["placeholder 65536 is past"]);
        }
    }
}
