//! Redirects: followed on the same origin (scheme, host and port) up to `max` times; to
//! another host only when `redirects.hosts` lists it. Each hop connects through the same
//! policed connector, so the address policy is applied again.

use crate::error::{Problem, RunError};
use http::Method;
use toolwright_toolfile::model::RedirectSpec;
use url::Url;

/// The redirect statuses followed.
pub(crate) fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The next hop's method, and whether the body goes with it: 303 becomes GET (HEAD stays
/// HEAD), and so do 301 and 302 after a POST, as browsers do; 307 and 308 keep both.
pub(crate) fn next_method(status: u16, method: &Method) -> (Method, bool) {
    match status {
        303 if method != Method::HEAD => (Method::GET, false),
        301 | 302 if method == Method::POST => (Method::GET, false),
        _ => (method.clone(), true),
    }
}

/// How redirects are followed, compiled.
#[derive(Debug, Clone)]
pub(crate) struct RedirectRules {
    /// Most hops.
    pub max: u32,
    /// Other hosts allowed: the host, and the port (`None`: the scheme's default port).
    hosts: Vec<(String, Option<u16>)>,
}

impl RedirectRules {
    /// Compiles `redirects:`, reporting under `http.redirects.hosts[i]`.
    pub(crate) fn compile(spec: Option<&RedirectSpec>) -> Result<RedirectRules, Problem> {
        let Some(spec) = spec else {
            return Ok(RedirectRules {
                max: 5,
                hosts: Vec::new(),
            });
        };
        let mut hosts = Vec::new();
        for (i, entry) in spec.hosts.iter().enumerate() {
            let bad = || {
                Problem::new(
                    [
                        "redirects".into(),
                        "hosts".into(),
                        crate::error::Seg::Index(i),
                    ],
                    format!("{entry:?} is not `host` or `host:port`"),
                )
            };
            let parsed = Url::parse(&format!("http://{entry}/")).map_err(|_| bad())?;
            let plain = parsed.username().is_empty()
                && parsed.password().is_none()
                && parsed.path() == "/"
                && parsed.query().is_none()
                && !entry.contains(['/', '?', '#', '@']);
            let explicit = entry
                .rsplit_once(':')
                .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            let port = if explicit {
                parsed.port_or_known_default()
            } else {
                None
            };
            match parsed.host_str() {
                Some(h) if plain => hosts.push((h.to_owned(), port)),
                _ => return Err(bad()),
            }
        }
        Ok(RedirectRules {
            max: spec.max.unwrap_or(5),
            hosts,
        })
    }

    /// Where a redirect from `from` with `location` goes, and whether it stays on the
    /// same origin.
    ///
    /// # Errors
    ///
    /// [`RunError::Refused`] naming the target host when it is another host not listed,
    /// [`RunError::Http`] for a `Location` that is not a URL.
    pub(crate) fn follow(&self, from: &Url, location: &str) -> Result<(Url, bool), RunError> {
        let to = from.join(location).map_err(|e| {
            RunError::Http(format!(
                "the server redirected to a malformed location: {e}"
            ))
        })?;
        if !matches!(to.scheme(), "http" | "https") {
            return Err(RunError::Refused(format!(
                "a redirect to a {} URL (only http and https are followed)",
                to.scheme()
            )));
        }
        let host = to.host_str().unwrap_or_default();
        let same = to.scheme() == from.scheme()
            && host == from.host_str().unwrap_or_default()
            && to.port_or_known_default() == from.port_or_known_default();
        if same {
            return Ok((to, true));
        }
        let listed = self.hosts.iter().any(|(h, p)| {
            h == host
                && match p {
                    Some(p) => to.port_or_known_default() == Some(*p),
                    None => to.port().is_none(),
                }
        });
        if listed {
            return Ok((to, false));
        }
        let target = match to.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_owned(),
        };
        Err(RunError::Refused(format!(
            "a redirect to {target} ({} URL), another host than the tool's; list it in http.redirects.hosts to follow it",
            to.scheme()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(hosts: &[&str]) -> RedirectRules {
        RedirectRules::compile(Some(&RedirectSpec {
            max: None,
            hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
        }))
        .unwrap()
    }

    #[test]
    fn decisions() {
        let from = Url::parse("http://api.example.com:8080/a/b").unwrap();
        let r = rules(&[
            "other.example.com",
            "third.example.com:9000",
            "[::1]:81",
            "four.example:80",
        ]);
        #[rustfmt::skip]
        let cases = [
            ("/c", Some(("http://api.example.com:8080/c", true))),
            ("c?d=1", Some(("http://api.example.com:8080/a/c?d=1", true))),
            ("http://API.example.com:8080/x", Some(("http://api.example.com:8080/x", true))),
            ("http://api.example.com:8081/x", None),
            ("https://api.example.com:8080/x", None),
            ("http://other.example.com/x", Some(("http://other.example.com/x", false))),
            ("https://other.example.com/x", Some(("https://other.example.com/x", false))),
            ("http://other.example.com:81/x", None),
            ("http://third.example.com:9000/", Some(("http://third.example.com:9000/", false))),
            ("http://third.example.com/", None),
            ("http://[::1]:81/", Some(("http://[::1]:81/", false))),
            ("http://evil.example/", None),
            ("http://127.0.0.1:8080/", None),
            ("file:///etc/passwd", None),
            ("//evil.example/x", None),
            ("http://four.example/", Some(("http://four.example/", false))),
            ("https://four.example/", None),
        ];
        for (location, want) in cases {
            let got = r.follow(&from, location).ok();
            let got = got.as_ref().map(|(u, same)| (u.as_str(), *same));
            assert_eq!(got, want, "{location}");
        }
        let e = r
            .follow(&from, "http://evil.example:99/x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("evil.example:99") && e.contains("redirects.hosts"),
            "{e}"
        );
    }

    #[test]
    fn methods() {
        assert_eq!(next_method(303, &Method::POST), (Method::GET, false));
        assert_eq!(next_method(303, &Method::HEAD), (Method::HEAD, true));
        assert_eq!(next_method(302, &Method::POST), (Method::GET, false));
        assert_eq!(next_method(302, &Method::PUT), (Method::PUT, true));
        assert_eq!(next_method(307, &Method::POST), (Method::POST, true));
        assert_eq!(next_method(308, &Method::DELETE), (Method::DELETE, true));
    }

    #[test]
    fn host_entries() {
        for bad in ["", "a/b", "user@h", "h:notaport", "h?x"] {
            let spec = RedirectSpec {
                max: None,
                hosts: vec![bad.to_owned()],
            };
            assert!(RedirectRules::compile(Some(&spec)).is_err(), "{bad:?}");
        }
        assert_eq!(RedirectRules::compile(None).unwrap().max, 5);
    }
}
