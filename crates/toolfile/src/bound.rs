//! Identity-bound arguments: an argument whose value is the template `{claims.NAME}` is
//! filled, at each call, from claim `NAME` of the caller's verified access token (`sub`:
//! the subject). Such an argument is taken out of the advertised `inputSchema`; a call that
//! gives it itself is refused, as is a call that carries no such claim (no token: stdio,
//! or a server without `--auth-issuer`). The value is the claim as text.
//!
//! Declared tools bind them under `arguments:`; gateway servers under
//! `servers.NAME.tools.TOOL.arguments:`, beside literal fixed arguments.

use serde_json::{Map, Value};

/// The claim `value` binds, when it is exactly `{claims.NAME}` (`NAME`: letters, digits,
/// `_`, `-`, `.` and `:`).
pub fn claim_of(value: &Value) -> Option<&str> {
    let name = value
        .as_str()?
        .strip_prefix("{claims.")?
        .strip_suffix('}')?;
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
    ok.then_some(name)
}

/// Takes the arguments `names` out of a tool's `inputSchema`: out of `properties` and
/// `required`.
pub fn hide(schema: &mut Value, names: &[&str]) {
    let Some(schema) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for n in names {
            props.remove(*n);
        }
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r.as_str().is_none_or(|r| !names.contains(&r)));
    }
}

/// Why a call's identity-bound argument could not be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BoundError {
    /// The call gave the argument itself.
    #[error(
        "argument {argument:?} is bound to the caller's identity ({{claims.{claim}}}) and cannot be given in a call"
    )]
    Given {
        /// The argument.
        argument: String,
        /// The claim it is bound to.
        claim: String,
    },
    /// The call carries no such claim.
    #[error(
        "argument {argument:?} is bound to claim {claim:?} of the caller's access token, and this call carries no such claim (it needs a verified token: serve --http --auth-issuer)"
    )]
    NoClaim {
        /// The argument.
        argument: String,
        /// The claim it is bound to.
        claim: String,
    },
}

/// Sets each `(argument, claim)` of `bound` in `args` from `claim_text` (the caller's claim
/// as text, `None` without one).
///
/// # Errors
///
/// [`BoundError::Given`] when `args` has the argument already, [`BoundError::NoClaim`] when
/// `claim_text` has no such claim.
pub fn fill<'a>(
    args: &mut Map<String, Value>,
    bound: impl IntoIterator<Item = (&'a str, &'a str)>,
    claim_text: impl Fn(&str) -> Option<String>,
) -> Result<(), BoundError> {
    for (argument, claim) in bound {
        let (a, c) = (argument.to_owned(), claim.to_owned());
        if args.contains_key(argument) {
            return Err(BoundError::Given {
                argument: a,
                claim: c,
            });
        }
        let Some(value) = claim_text(claim) else {
            return Err(BoundError::NoClaim {
                argument: a,
                claim: c,
            });
        };
        args.insert(a, Value::String(value));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claims_named() {
        table! { |value: Value, claim: Option<&str>| assert_eq!(claim_of(&value), claim, "{value}");
            (json!("{claims.sub}"), Some("sub"));
            (json!("{claims.https://x}"), None);
            (json!("{claims.tenant_id}"), Some("tenant_id"));
            (json!("{claims.}"), None);
            (json!("{sub}"), None);
            (json!(" {claims.sub}"), None);
            (json!("{claims.sub} "), None);
            (json!(7), None);
        }
    }

    #[test]
    fn hidden_from_the_schema() {
        let mut s = json!({"type": "object", "properties": {"owner": {}, "q": {}}, "required": ["owner", "q"]});
        hide(&mut s, &["owner"]);
        assert_eq!(
            s,
            json!({"type": "object", "properties": {"q": {}}, "required": ["q"]})
        );
    }

    #[test]
    fn filled_or_refused() {
        let claims = |c: &str| (c == "sub").then(|| "alice".to_owned());
        table! { |given: Value, claim: &str, want: Result<Value, &str>| {
                let Value::Object(mut args) = given else { unreachable!() };
                match (fill(&mut args, [("owner", claim)], claims), want) {
                    (Ok(()), Ok(w)) => assert_eq!(Value::Object(args), w),
                    (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{e}"),
                    (got, w) => panic!("{got:?} / {w:?}"),
                }
            };
            (json!({"q": 1}), "sub", Ok(json!({"q": 1, "owner": "alice"})));
            (json!({"owner": "mallory"}), "sub", Err("cannot be given"));
            (json!({}), "tenant", Err("no such claim"));
        }
    }
}
