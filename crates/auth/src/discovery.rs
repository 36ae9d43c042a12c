//! Authorization server discovery: from the issuer to its `jwks_uri`. The metadata is
//! looked for where the MCP authorization spec says (RFC 8414 with the issuer's path
//! inserted, then OpenID Connect Discovery; `url::metadata_urls`); the first document
//! found must name the configured issuer exactly (RFC 8414 §3.3, against a mix-up of
//! authorization servers) and a `jwks_uri` that is `https` (or `http` to this machine).

use crate::error::Error;
use crate::fetch::Fetcher;
use crate::url;
use serde_json::Value;

/// The issuer's `jwks_uri`, from the first of its metadata documents found.
///
/// # Errors
///
/// [`Error::BadUrl`] for an unusable issuer or `jwks_uri`; [`Error::Discovery`] when no
/// document is found (each URL tried and what it answered), or the one found names another
/// issuer or no `jwks_uri`.
pub(crate) async fn jwks_uri(fetcher: &Fetcher, issuer: &str) -> Result<String, Error> {
    let checked = url::check("issuer", issuer, true)?;
    let fail = |reason: String| Error::Discovery {
        issuer: issuer.to_owned(),
        reason,
    };
    let mut tried = Vec::new();
    for at in url::metadata_urls(&checked) {
        let doc = match fetcher.get_json(&at).await {
            Ok(fetched) => fetched.json,
            // Not there (or no answer): the next place may still answer.
            Err(e) => {
                tracing::debug!(url = %at, "no authorization server metadata: {e}");
                tried.push(format!("{at}: {e}"));
                continue;
            }
        };
        return read(&doc, issuer, &at);
    }
    Err(fail(format!(
        "no metadata document was found ({})",
        tried.join("; ")
    )))
}

/// What a resource uses of the issuer's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Endpoints {
    /// `jwks_uri`, checked.
    pub jwks_uri: Option<String>,
    /// `introspection_endpoint` (RFC 8414), checked.
    pub introspection: Option<String>,
}

/// The issuer's `jwks_uri` and `introspection_endpoint`, either of which may be missing,
/// from the first of its metadata documents found.
///
/// # Errors
///
/// As [`jwks_uri`], except that a document without a `jwks_uri` is not one.
pub(crate) async fn endpoints(fetcher: &Fetcher, issuer: &str) -> Result<Endpoints, Error> {
    let checked = url::check("issuer", issuer, true)?;
    let mut tried = Vec::new();
    for at in url::metadata_urls(&checked) {
        let doc = match fetcher.get_json(&at).await {
            Ok(fetched) => fetched.json,
            Err(e) => {
                tried.push(format!("{at}: {e}"));
                continue;
            }
        };
        let jwks_uri = match read(&doc, issuer, &at) {
            Ok(uri) => Some(uri),
            Err(Error::Discovery { reason, .. }) if reason.ends_with("no \"jwks_uri\"") => None,
            Err(e) => return Err(e),
        };
        let introspection = match doc.get("introspection_endpoint").and_then(Value::as_str) {
            Some(u) => {
                url::check("introspection_endpoint", u, false).map_err(|e| Error::Discovery {
                    issuer: issuer.to_owned(),
                    reason: format!("{at}: {e}"),
                })?;
                Some(u.to_owned())
            }
            None => None,
        };
        return Ok(Endpoints {
            jwks_uri,
            introspection,
        });
    }
    Err(Error::Discovery {
        issuer: issuer.to_owned(),
        reason: format!("no metadata document was found ({})", tried.join("; ")),
    })
}

/// The `jwks_uri` of a metadata document (fetched from `at`), once its `issuer` is `issuer`.
fn read(doc: &Value, issuer: &str, at: &str) -> Result<String, Error> {
    let fail = |why: String| Error::Discovery {
        issuer: issuer.to_owned(),
        reason: format!("{at}: {why}"),
    };
    let found = doc.get("issuer").and_then(Value::as_str);
    if found != Some(issuer) {
        return Err(fail(match found {
            Some(other) => format!("it names issuer {other:?}, not the configured one"),
            None => "it has no \"issuer\"".to_owned(),
        }));
    }
    let jwks = doc
        .get("jwks_uri")
        .and_then(Value::as_str)
        .ok_or_else(|| fail("it has no \"jwks_uri\"".to_owned()))?;
    url::check("jwks_uri", jwks, false).map_err(|e| fail(e.to_string()))?;
    Ok(jwks.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolwright_testkit::table;

    #[test]
    fn documents_are_read() {
        let iss = "https://auth.example.com/t1";
        table! { |doc: Value, want: Result<&str, &str>| {
                let got = read(&doc, iss, "https://auth.example.com/m").map_err(|e| e.to_string());
                match want {
                    Ok(uri) => assert_eq!(got.as_deref(), Ok(uri), "{doc}"),
                    Err(part) => assert!(got.as_ref().is_err_and(|e| e.contains(part) && e.contains("/m: ")), "{doc}: {got:?}"),
                }
            };
            (json!({"issuer": iss, "jwks_uri": "https://auth.example.com/keys"}), Ok("https://auth.example.com/keys"));
            (json!({"issuer": "https://auth.example.com/t1/", "jwks_uri": "https://a/k"}), Err("names issuer"));
            (json!({"issuer": "https://evil.example/t1", "jwks_uri": "https://a/k"}), Err("names issuer"));
            (json!({"jwks_uri": "https://a/k"}), Err("no \"issuer\""));
            (json!({"issuer": iss}), Err("no \"jwks_uri\""));
            (json!({"issuer": iss, "jwks_uri": "http://auth.example.com/keys"}), Err("plain http"));
            (json!({"issuer": iss, "jwks_uri": 7}), Err("no \"jwks_uri\""));
        }
    }
}

#[cfg(test)]
mod fetched {
    use super::*;
    use crate::stand_in;
    use serde_json::json;
    use std::time::Duration;

    /// RFC 8414's place answers 404, OpenID's path-inserted place has the document.
    #[tokio::test]
    async fn the_openid_document_is_the_fallback() {
        let issuer = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
        let known = issuer.clone();
        let (base, served) = stand_in::serve(move |path| {
            let iss = known.get().unwrap();
            (path == "/.well-known/openid-configuration/tenant")
                .then(|| json!({"issuer": iss, "jwks_uri": format!("{iss}/keys")}).to_string())
        })
        .await;
        let iss = format!("{base}/tenant");
        issuer.set(iss.clone()).unwrap();
        let fetcher = Fetcher::new(None, Duration::from_secs(10));
        assert_eq!(
            jwks_uri(&fetcher, &iss).await.unwrap(),
            format!("{iss}/keys")
        );
        assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Another issuer's name for the same server is refused, naming what it found.
        let e = jwks_uri(&fetcher, &format!("{base}/tenant/"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("names issuer"), "{e}");
        let e = jwks_uri(&fetcher, &format!("{base}/other"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("no metadata document"), "{e}");
        let e = jwks_uri(&fetcher, "http://auth.example.com")
            .await
            .unwrap_err();
        assert!(matches!(e, Error::BadUrl { .. }), "{e}");
    }
}
