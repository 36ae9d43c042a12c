//! Security schemes as request headers (or query parameters) filled from the server's
//! environment (`${VAR}`), which the `http` action marks secret and never shows:
//!
//! | scheme | sent as |
//! |---|---|
//! | `apiKey` in a header | that header: `${VAR}` |
//! | `apiKey` in the query | that query parameter: `${VAR}` |
//! | `apiKey` in a cookie | `Cookie: NAME=${VAR}` |
//! | `http` `bearer` | `Authorization: Bearer ${VAR}` |
//! | `http` `basic` | `Authorization: Basic ${VAR}` (VAR holds base64 of `user:password`) |
//! | `oauth2`, `openIdConnect` | `Authorization: Bearer ${VAR}` (an access token got elsewhere) |
//!
//! Other schemes (`mutualTLS`, other `http` schemes) cannot be sent; an operation that
//! needs one is written without it, and a note says so.

use crate::load::Spec;
use crate::operation::{Skip, is_token, skip};
use crate::text::env_name;
use serde_json::Value;

/// An environment variable the written file reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar {
    /// Its name.
    pub name: String,
    /// What it holds.
    pub holds: String,
}

/// What one operation sends for its security requirement.
#[derive(Debug, Clone, Default)]
pub struct Auth {
    /// Headers: name, template.
    pub headers: Vec<(String, String)>,
    /// Query parameters: name, template.
    pub query: Vec<(String, String)>,
    /// The variables named.
    pub vars: Vec<EnvVar>,
    /// Why a requirement could not be met, when none could.
    pub unmet: Option<String>,
}

/// What `op` (or the description, when the operation says nothing) requires, as the first
/// alternative every scheme of which can be sent. Variables are named `PREFIX_SCHEME`.
pub fn auth_for(spec: &Spec, op: &Value, prefix: &str) -> Auth {
    let requirement = op
        .get("security")
        .or_else(|| spec.doc().get("security"))
        .and_then(Value::as_array);
    let Some(alternatives) = requirement else {
        return Auth::default();
    };
    if alternatives.is_empty() {
        return Auth::default();
    }
    let mut reasons = Vec::new();
    for alt in alternatives {
        let Some(schemes) = alt.as_object() else {
            continue;
        };
        if schemes.is_empty() {
            // Anonymous access is one of the alternatives.
            return Auth::default();
        }
        let mut auth = Auth::default();
        let mut ok = true;
        for name in schemes.keys() {
            if let Err(why) = add_scheme(spec, name, prefix, &mut auth) {
                reasons.push(format!("{name}: {why}"));
                ok = false;
                break;
            }
        }
        if ok {
            return auth;
        }
    }
    Auth {
        unmet: Some(reasons.join("; ")),
        ..Auth::default()
    }
}

/// Adds what scheme `name` sends to `auth`, or says why it cannot be sent.
fn add_scheme(spec: &Spec, name: &str, prefix: &str, auth: &mut Auth) -> Result<(), Skip> {
    let raw = spec
        .doc()
        .get("components")
        .and_then(|c| c.get("securitySchemes"))
        .and_then(|s| s.get(name))
        .ok_or_else(|| skip("not defined under components.securitySchemes"))?;
    let scheme = spec
        .deref(raw, &spec.root_key)
        .map_err(|e| skip(e.to_string()))?
        .value;
    let kind = scheme.get("type").and_then(Value::as_str).unwrap_or("");
    let var = env_name(&[prefix, name]);
    let bearer = |holds: &str, scheme_word: &str, auth: &mut Auth| {
        auth.headers
            .push(("Authorization".into(), format!("{scheme_word} ${{{var}}}")));
        auth.vars.push(EnvVar {
            name: var.clone(),
            holds: holds.to_owned(),
        });
    };
    match kind {
        "apiKey" => {
            let key = scheme.get("name").and_then(Value::as_str).unwrap_or("");
            if key.is_empty() {
                return Err(skip("an apiKey scheme without a name"));
            }
            let template = format!("${{{var}}}");
            let place = scheme.get("in").and_then(Value::as_str);
            // A header's or a cookie's name goes into the request as it is: it must be an
            // HTTP token (no spaces, separators or control characters).
            if matches!(place, Some("header" | "cookie")) && !is_token(key) {
                return Err(skip(format!(
                    "an apiKey {} whose name is not an HTTP token",
                    place.unwrap_or_default()
                )));
            }
            match place {
                Some("header") => auth.headers.push((key.to_owned(), template)),
                Some("query") => auth.query.push((key.to_owned(), template)),
                Some("cookie") => {
                    auth.headers
                        .push(("Cookie".into(), format!("{key}={template}")));
                }
                other => return Err(skip(format!("an apiKey in {other:?}"))),
            }
            auth.vars.push(EnvVar {
                name: var,
                holds: format!("the API key `{key}` ({name})"),
            });
        }
        "http" => {
            match scheme
                .get("scheme")
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase)
                .as_deref()
            {
                Some("bearer") => bearer(&format!("the bearer token ({name})"), "Bearer", auth),
                Some("basic") => bearer(
                    &format!("base64 of user:password ({name}, HTTP basic)"),
                    "Basic",
                    auth,
                ),
                other => return Err(skip(format!("HTTP scheme {other:?} is not sent"))),
            }
        }
        "oauth2" | "openIdConnect" => bearer(
            &format!("an OAuth access token, obtained elsewhere ({name}, {kind})"),
            "Bearer",
            auth,
        ),
        other => {
            return Err(skip(format!(
                "a {other:?} scheme cannot be sent from a tool file"
            )));
        }
    }
    // Two schemes on one header: the later replaces the earlier, as a header can hold one.
    let mut seen = Vec::new();
    auth.headers.reverse();
    auth.headers.retain(|(h, _)| {
        let fresh = !seen.contains(&h.to_ascii_lowercase());
        seen.push(h.to_ascii_lowercase());
        fresh
    });
    auth.headers.reverse();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{FilesOnly, Location};
    use serde_json::json;

    fn spec(security: Value) -> Spec {
        let doc = json!({"openapi": "3.0.0", "security": security, "components": {"securitySchemes": {
            "key": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            "badkey": {"type": "apiKey", "in": "header", "name": "X-Key\u{e}\r\nX-Evil: 1"},
            "badcookie": {"type": "apiKey", "in": "cookie", "name": "a b"},
            "qkey": {"type": "apiKey", "in": "query", "name": "api_key"},
            "bearerAuth": {"type": "http", "scheme": "bearer"},
            "basic": {"type": "http", "scheme": "basic"},
            "mtls": {"type": "mutualTLS"},
            "oauth": {"type": "oauth2", "flows": {}},
        }}});
        Spec::with_root(Location::File("a.json".into()), doc, &FilesOnly).unwrap()
    }

    #[test]
    fn schemes() {
        table! { |security: Value, headers: &[(&str, &str)], query: &[(&str, &str)], unmet: bool| {
                let a = auth_for(&spec(security.clone()), &json!({}), "pets");
                let h: Vec<(&str, &str)> = a.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
                let q: Vec<(&str, &str)> = a.query.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
                assert_eq!((h.as_slice(), q.as_slice(), a.unmet.is_some()), (headers, query, unmet), "{security}");
            };
            (json!([{"key": []}]), &[("X-API-Key", "${PETS_KEY}")], &[], false);
            (json!([{"qkey": []}]), &[], &[("api_key", "${PETS_QKEY}")], false);
            (json!([{"bearerAuth": []}]), &[("Authorization", "Bearer ${PETS_BEARER_AUTH}")], &[], false);
            (json!([{"basic": []}]), &[("Authorization", "Basic ${PETS_BASIC}")], &[], false);
            (json!([{"oauth": ["read"]}]), &[("Authorization", "Bearer ${PETS_OAUTH}")], &[], false);
            (json!([{"mtls": []}, {"key": []}]), &[("X-API-Key", "${PETS_KEY}")], &[], false);
            (json!([{"mtls": []}]), &[], &[], true);
            (json!([{"badkey": []}]), &[], &[], true);
            (json!([{"badcookie": []}]), &[], &[], true);
            (json!([{"badkey": []}, {"key": []}]), &[("X-API-Key", "${PETS_KEY}")], &[], false);
            (json!([{}, {"key": []}]), &[], &[], false);
            (json!([]), &[], &[], false);
        }
    }
}
