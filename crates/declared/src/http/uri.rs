//! The URL template: scheme, host and port literal; placeholders in the path (each
//! encoded as one segment's text) and in the query (each encoded as a component); none in
//! the fragment, which is never sent anyway.

use super::encode::{self, Env, UrlPart};
use crate::error::{Problem, RunError, Seg};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use toolwright_toolfile::fill::Filled;
use toolwright_toolfile::input::InputInfo;
use toolwright_toolfile::template::{Part, RenderError, Template};

/// Where a piece of the URL template stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Region {
    /// `scheme://host:port`.
    Origin,
    /// `/a/b`.
    Path,
    /// After `?`.
    Query,
    /// After `#`.
    Fragment,
}

/// A compiled URL.
#[derive(Debug, Clone)]
pub(crate) struct UrlTemplate {
    /// `http://host:port` as the URL parser normalized it (host lower case, IPv4 forms
    /// canonical, IDNA applied, default port left out).
    pub origin: String,
    /// The path's pieces (literals already in URI form).
    path: Vec<Part>,
    /// The query's pieces, without the `?` (literals in URI form).
    query: Vec<Part>,
    /// `query:` entries: the encoded name, and the value.
    params: Vec<(String, Template)>,
}

impl UrlTemplate {
    /// Compiles `url` and `query`, reporting under `http.url` / `http.query.NAME`.
    pub(crate) fn compile(
        url: &str,
        query: &BTreeMap<String, String>,
        input: &InputInfo,
    ) -> Result<UrlTemplate, Problem> {
        let at = |s: &str| Problem::new(["url"], s.to_owned());
        let t = Template::parse(url).map_err(|e| at(&e.to_string()))?;
        input.check_template(&t, &[Seg::from("url")])?;
        let (origin_text, path, query_parts) = split(&t).map_err(|e| at(&e.to_string()))?;
        let parsed = url::Url::parse(&origin_text)
            .map_err(|e| at(&format!("{origin_text:?} is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(at(&format!(
                "the scheme must be http or https, not {:?}",
                parsed.scheme()
            )));
        }
        let Some(host) = parsed.host_str() else {
            return Err(at("the URL has no host"));
        };
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(at(
                "credentials in the URL are not supported; send them in a header from ${VAR}",
            ));
        }
        let origin = match parsed.port() {
            Some(p) => format!("{}://{host}:{p}", parsed.scheme()),
            None => format!("{}://{host}", parsed.scheme()),
        };
        if has_dot_segment(&path) {
            return Err(at(
                "the path has a `.` or `..` segment; write the path it stands for",
            ));
        }
        let mut params = Vec::new();
        for (name, value) in query {
            let here = [Seg::from("query"), Seg::from(name.as_str())];
            let v =
                Template::parse(value).map_err(|e| Problem::new(here.clone(), e.to_string()))?;
            input.check_template(&v, &here)?;
            if let Some(a) = v.args().find(|a| a.spread) {
                return Err(Problem::new(
                    here,
                    format!("{{{}...}} is for argv only", a.name),
                ));
            }
            params.push((encode::component(name), v));
        }
        // The URL cannot leave a piece out: what it names, every call must carry.
        if let Some(a) = t.args().find(|a| !input.required.contains(&a.name)) {
            return Err(at(&format!(
                "`{0}` is not required, so a call can leave it out of the URL; add {0} to required, or pass it in `query:` (left out when absent)",
                a.name
            )));
        }
        Ok(UrlTemplate {
            origin,
            path,
            query: query_parts,
            params,
        })
    }

    /// The arguments the URL and `query:` name.
    pub(crate) fn args(&self) -> impl Iterator<Item = &str> {
        let parts = self.path.iter().chain(&self.query).filter_map(|p| match p {
            Part::Arg(a) => Some(a.name.as_str()),
            _ => None,
        });
        parts.chain(
            self.params
                .iter()
                .flat_map(|(_, t)| t.args().map(|a| a.name.as_str())),
        )
    }

    /// The request target, `origin` + path + query; `secret` when `${VAR}` filled part
    /// of it, and `secrets` where.
    pub(crate) fn render(
        &self,
        args: &Map<String, Value>,
        env: Env<'_>,
    ) -> Result<Filled, RunError> {
        let mut out = Filled {
            text: self.origin.clone(),
            ..Filled::default()
        };
        out.push(&render_path(&self.path, args, env)?);
        // The query, its marks relative to its start (after the `?`).
        let mut query = Filled::default();
        if !self.query.is_empty() {
            query.push(&required(&self.query, args, env, encode::component)?);
        }
        for (name, value) in &self.params {
            let Some(v) = encode::fill(value.parts(), args, env, &mut UrlPart(encode::component))?
            else {
                continue;
            };
            if !query.text.is_empty() {
                query.text.push('&');
            }
            query.text.push_str(name);
            query.text.push('=');
            query.push(&v);
        }
        if query.text.is_empty() {
            out.secret |= query.secret;
        } else {
            out.text.push('?');
            out.push(&query);
        }
        Ok(out)
    }

    /// The URL `filled` as telemetry, logs and errors may show it: the origin and the path,
    /// each path segment that holds any of a `${VAR}`'s text written [`REDACTED`], and no
    /// query (a query may carry a secret too, and arguments).
    pub(crate) fn public(&self, filled: &Filled) -> String {
        let text = &filled.text;
        let start = self.origin.len().min(text.len());
        let end = text[start..].find('?').map_or(text.len(), |i| start + i);
        let mut out = text[..start].to_owned();
        let mut at = start;
        for (i, segment) in text[start..end].split('/').enumerate() {
            if i > 0 {
                out.push('/');
            }
            let range = at..at + segment.len();
            if !segment.is_empty() && filled.holds_secret(&range) {
                out.push_str(REDACTED);
            } else {
                out.push_str(segment);
            }
            at = range.end + 1;
        }
        out
    }
}

/// What stands for a path segment that holds a secret wherever a URL is shown.
pub(crate) const REDACTED: &str = "REDACTED";

/// Fills parts whose arguments must all be present (a URL has no optional pieces).
fn required(
    parts: &[Part],
    args: &Map<String, Value>,
    env: Env<'_>,
    encode: fn(&str) -> String,
) -> Result<Filled, RunError> {
    match encode::fill(parts, args, env, &mut UrlPart(encode))? {
        Some(f) => Ok(f),
        None => Err(RunError::Missing(first_absent(parts, args))),
    }
}

fn first_absent(parts: &[Part], args: &Map<String, Value>) -> String {
    parts
        .iter()
        .find_map(|p| match p {
            Part::Arg(a) if !toolwright_toolfile::template::present(args, &a.name) => {
                Some(a.name.clone())
            }
            _ => None,
        })
        .unwrap_or_default()
}

/// The path, each placeholder one segment's text; a segment that comes out `.` or `..`
/// is refused (it would change the path rather than name something in it).
fn render_path(
    parts: &[Part],
    args: &Map<String, Value>,
    env: Env<'_>,
) -> Result<Filled, RunError> {
    let filled = required(parts, args, env, encode::segment)?;
    if filled.text.split('/').any(is_dot) {
        // Name an argument of the path: the literals held no dot segment (compile checked).
        let name = parts
            .iter()
            .find_map(|p| match p {
                Part::Arg(a) => Some(a.name.clone()),
                _ => None,
            })
            .unwrap_or_default();
        return Err(RenderError::Refused {
            name,
            reason: "a path segment that is `.` or `..` would change the path; refused".into(),
        }
        .into());
    }
    if filled.text.is_empty() {
        return Ok(Filled {
            text: "/".into(),
            secret: filled.secret,
            secrets: Vec::new(),
        });
    }
    Ok(filled)
}

/// `.` or `..`, also written with `%2E`.
fn is_dot(segment: &str) -> bool {
    let s = segment.to_ascii_lowercase().replace("%2e", ".");
    s == "." || s == ".."
}

fn has_dot_segment(path: &[Part]) -> bool {
    // Only the author's text: a placeholder stands for something that is not a dot
    // segment until a call shows otherwise.
    let mut text = String::new();
    for p in path {
        match p {
            Part::Literal(l) => text.push_str(l),
            _ => text.push('x'),
        }
    }
    text.split('/').any(is_dot)
}

/// Why a URL template cannot be split into its parts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SplitError {
    /// No `scheme://`.
    #[error("{0:?} is not an absolute URL (http://host/...)")]
    NotAbsolute(String),
    /// A placeholder (named as written) in the scheme, host or port.
    #[error(
        "{0} is in the scheme, host or port, which must be written out (http://host:port/...; placeholders go in the path or the query)"
    )]
    InOrigin(String),
    /// A placeholder (named as written) in the fragment.
    #[error(
        "{0} is in the fragment, which is never sent; placeholders go in the path or the query"
    )]
    InFragment(String),
    /// `{name...}`, which only argv takes.
    #[error("{{{0}...}} is for argv only")]
    Spread(String),
}

/// Splits a URL template into the origin's text, the path's parts and the query's parts
/// (literals put in URI form); a placeholder in the origin or the fragment is refused.
fn split(t: &Template) -> Result<(String, Vec<Part>, Vec<Part>), SplitError> {
    let mut region = Region::Origin;
    let mut origin = String::new();
    let mut path: Vec<Part> = Vec::new();
    let mut query: Vec<Part> = Vec::new();
    for part in t.parts() {
        match part {
            Part::Literal(l) => {
                let mut rest = l.as_str();
                while !rest.is_empty() {
                    let (end, next) = boundary(region, rest, &origin);
                    let piece = &rest[..end];
                    match region {
                        Region::Origin => origin.push_str(piece),
                        Region::Path => push_literal(&mut path, piece, encode::PATH_TEXT),
                        Region::Query => push_literal(&mut query, piece, encode::QUERY_TEXT),
                        Region::Fragment => {}
                    }
                    rest = &rest[end..];
                    if let Some((next, skip)) = next {
                        region = next;
                        if skip {
                            // `?` and `#` are separators, not part of what follows.
                            rest = &rest[1..];
                        }
                    }
                }
            }
            Part::Arg(a) => {
                let what = format!("placeholder {{{}}}", a.name);
                place(region, what, part, &mut path, &mut query)?;
            }
            Part::Env(v) => {
                let what = format!("${{{v}}}");
                place(region, what, part, &mut path, &mut query)?;
            }
        }
    }
    if !origin.contains("://") {
        return Err(SplitError::NotAbsolute(t.source().to_owned()));
    }
    Ok((origin, path, query))
}

/// Where the author's text `rest`, read in `region` (with `origin` the origin's text so
/// far), leaves that region: the length that stays in it, and the region that follows with
/// whether its first byte (`?`, `#`) is a separator to skip. `None` when all of `rest`
/// stays.
fn boundary(region: Region, rest: &str, origin: &str) -> (usize, Option<(Region, bool)>) {
    let after = |i: usize| match rest.as_bytes()[i] {
        b'/' => Region::Path,
        b'?' => Region::Query,
        _ => Region::Fragment,
    };
    let found = match region {
        Region::Origin => {
            // Scheme, `://`, then the authority runs to `/`, `?` or `#`.
            let from = if origin.contains("://") {
                Some(0)
            } else {
                rest.find("://").map(|i| i + 3)
            };
            from.and_then(|f| rest[f..].find(['/', '?', '#']).map(|i| f + i))
                .map(|i| (i, after(i), rest.as_bytes()[i] != b'/'))
        }
        Region::Path => rest.find(['?', '#']).map(|i| (i, after(i), true)),
        Region::Query => rest.find('#').map(|i| (i, Region::Fragment, true)),
        Region::Fragment => None,
    };
    match found {
        Some((i, next, skip)) => (i, Some((next, skip))),
        None => (rest.len(), None),
    }
}

fn place(
    region: Region,
    what: String,
    part: &Part,
    path: &mut Vec<Part>,
    query: &mut Vec<Part>,
) -> Result<(), SplitError> {
    if let Part::Arg(a) = part
        && a.spread
    {
        return Err(SplitError::Spread(a.name.clone()));
    }
    match region {
        Region::Origin => Err(SplitError::InOrigin(what)),
        Region::Fragment => Err(SplitError::InFragment(what)),
        Region::Path => {
            path.push(part.clone());
            Ok(())
        }
        Region::Query => {
            query.push(part.clone());
            Ok(())
        }
    }
}

fn push_literal(parts: &mut Vec<Part>, text: &str, set: &'static percent_encoding::AsciiSet) {
    let mut out = String::new();
    encode::literal(text, set, &mut out);
    match parts.last_mut() {
        Some(Part::Literal(l)) => l.push_str(&out),
        _ if out.is_empty() => {}
        _ => parts.push(Part::Literal(out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input() -> InputInfo {
        InputInfo::of(&json!({
            "type": "object",
            "properties": {
                "id": {"type": "string"}, "q": {"type": "string"},
                "n": {"type": "integer"}, "tags": {"type": "array"}
            },
            "required": ["id", "q"]
        }))
    }

    fn compile(url: &str) -> Result<UrlTemplate, Problem> {
        UrlTemplate::compile(url, &BTreeMap::new(), &input())
    }

    fn render(url: &str, args: Value) -> Result<String, RunError> {
        let env = |v: &str| (v == "KEY").then(|| "k/1 2".to_owned());
        compile(url)
            .unwrap()
            .render(args.as_object().unwrap(), &env)
            .map(|f| f.text)
    }

    #[test]
    fn path_and_query_encoding() {
        let u = "http://Example.COM:8080/users/{id}/x?q={id}&lit=a b";
        #[rustfmt::skip]
        let cases = [
            ("plain", "http://example.com:8080/users/plain/x?q=plain&lit=a%20b"),
            ("../../etc/passwd", "http://example.com:8080/users/..%2F..%2Fetc%2Fpasswd/x?q=..%2F..%2Fetc%2Fpasswd&lit=a%20b"),
            ("%2f", "http://example.com:8080/users/%252f/x?q=%252f&lit=a%20b"),
            ("a/b", "http://example.com:8080/users/a%2Fb/x?q=a%2Fb&lit=a%20b"),
            ("a?b=c", "http://example.com:8080/users/a%3Fb%3Dc/x?q=a%3Fb%3Dc&lit=a%20b"),
            ("a#b", "http://example.com:8080/users/a%23b/x?q=a%23b&lit=a%20b"),
            ("a b+c&d", "http://example.com:8080/users/a%20b%2Bc%26d/x?q=a%20b%2Bc%26d&lit=a%20b"),
            ("é日", "http://example.com:8080/users/%C3%A9%E6%97%A5/x?q=%C3%A9%E6%97%A5&lit=a%20b"),
            ("...", "http://example.com:8080/users/.../x?q=...&lit=a%20b"),
        ];
        for (id, want) in cases {
            assert_eq!(render(u, json!({"id": id})).unwrap(), want, "{id:?}");
        }
    }

    #[test]
    fn dot_segments_refused() {
        for id in [".", "..", "%2E%2E"] {
            let got = render("http://h/a/{id}/b", json!({"id": id}));
            if id.starts_with('%') {
                // Encoded as data (%252E%252E), not a dot segment.
                assert_eq!(got.unwrap(), "http://h/a/%252E%252E/b");
            } else {
                let e = got.unwrap_err().to_string();
                assert!(e.contains("`id`") && e.contains("`..`"), "{e}");
            }
        }
        // In the query, `..` is data.
        assert_eq!(
            render("http://h/a?q={id}", json!({"id": ".."})).unwrap(),
            "http://h/a?q=.."
        );
    }

    #[test]
    fn query_map_and_absent() {
        let mut q = BTreeMap::new();
        q.insert("search term".to_owned(), "{q}".to_owned());
        q.insert("n".to_owned(), "{n}".to_owned());
        q.insert("key".to_owned(), "${KEY}".to_owned());
        let t = UrlTemplate::compile("http://h/s?fixed=1", &q, &input()).unwrap();
        let env = |v: &str| (v == "KEY").then(|| "k/1 2".to_owned());
        let args = json!({"q": "a&b=c"});
        let f = t.render(args.as_object().unwrap(), &env).unwrap();
        assert_eq!(
            f.text,
            "http://h/s?fixed=1&key=k%2F1%202&search%20term=a%26b%3Dc"
        );
        assert!(f.secret);
        let none = json!({});
        let f = t
            .render(none.as_object().unwrap(), &|_| None)
            .unwrap_err()
            .to_string();
        assert!(f.contains("KEY"), "{f}");
        let missing = render("http://h/u/{id}", json!({})).unwrap_err();
        assert!(matches!(missing, RunError::Missing(n) if n == "id"));
        assert_eq!(render("http://h", json!({})).unwrap(), "http://h/");
    }

    #[test]
    fn a_url_is_shown_with_its_secret_segments_redacted() {
        let env = |v: &str| (v == "KEY").then(|| "k/1 2".to_owned());
        let cases = [
            (
                "http://h/bot${KEY}/send",
                json!({}),
                "http://h/REDACTED/send",
            ),
            ("http://h/${KEY}", json!({}), "http://h/REDACTED"),
            (
                "http://h:8080/a/{id}/x${KEY}y/{id}?q={q}",
                json!({"id": "i", "q": "z"}),
                "http://h:8080/a/i/REDACTED/i",
            ),
            (
                "http://h/a/{id}?k=${KEY}",
                json!({"id": "i", "q": "z"}),
                "http://h/a/i",
            ),
            (
                "http://h/a/{id}/",
                json!({"id": "${KEY}"}),
                "http://h/a/%24%7BKEY%7D/",
            ),
            ("http://h", json!({}), "http://h/"),
        ];
        for (url, args, want) in cases {
            let t = compile(url).unwrap();
            let f = t.render(args.as_object().unwrap(), &env).unwrap();
            assert_eq!(t.public(&f), want, "{url}");
            assert!(!t.public(&f).contains("k%2F1"), "{url}");
        }
    }

    #[test]
    fn refusals() {
        #[rustfmt::skip]
        let cases = [
            ("http://{id}.example.com/", "host"),
            ("http://example.com:{n}/", "port"),
            ("{id}://example.com/", "scheme"),
            ("http://${HOST}/x", "host"),
            ("http://h/x#{id}", "fragment"),
            ("http://h/x?a=1#frag{id}", "fragment"),
            ("ftp://h/x", "http or https"),
            ("file:///etc/passwd", "http or https"),
            ("/relative/{id}", "scheme, host or port"),
            ("/relative/x", "absolute"),
            ("http://user:pw@h/", "credentials"),
            ("http://h/{nope}", "names no property"),
            ("http://h/{tags...}", "argv"),
            ("http://h/a/../b", "`..`"),
            ("http://h/{id", "not closed"),
            ("http://h/x/{n}", "`n` is not required, so a call can leave it out of the URL"),
        ];
        for (url, want) in cases {
            let e = compile(url).unwrap_err();
            assert!(e.message.contains(want), "{url}: {e}");
            assert_eq!(e.at, vec![Seg::from("url")], "{url}");
        }
        assert!(compile("https://h/x/{id}?a={q}#top").is_ok());
        assert!(compile("http://[::1]:9/x").is_ok());
    }
}
