//! Trust: the annotations clients see for an upstream tool ([`effective_annotations`]), what
//! a call to it needs ([`decide`]: allow, confirm or deny), and the confirmation form the
//! gateway sends a client before a call that needs one ([`confirmation_request`],
//! [`read_confirmation`]).
//!
//! An untrusted server's annotations are claims a tool makes about itself, so they are
//! replaced by the operator's values (the server's `annotations:`, then the tool's) or, where
//! the operator says nothing, the spec's pessimistic defaults, written out explicitly. A
//! trusted server's pass through, under the tool's own overrides. The policy is applied to
//! the effective hints, so a server cannot talk its way past it.

use serde_json::{Map, Value, json};
use std::fmt;
use toolwright_toolfile::servers::{Action, PolicySpec, TrustSpec};

/// The spec's defaults for absent hints, the worst case: not read-only, destructive, not
/// idempotent, open-world.
pub const PESSIMISTIC: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// The four behaviour hints, absent ones at the spec's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// `readOnlyHint`.
    pub read_only: bool,
    /// `destructiveHint` (meaningful only when not read-only).
    pub destructive: bool,
    /// `idempotentHint`.
    pub idempotent: bool,
    /// `openWorldHint`.
    pub open_world: bool,
}

impl Hints {
    /// The hints of an `annotations` object; a hint that is absent or not a boolean takes
    /// the spec's default ([`PESSIMISTIC`]).
    pub fn of(annotations: &Map<String, Value>) -> Hints {
        let get = |k: &str, d: bool| annotations.get(k).and_then(Value::as_bool).unwrap_or(d);
        Hints {
            read_only: get("readOnlyHint", PESSIMISTIC.read_only),
            destructive: get("destructiveHint", PESSIMISTIC.destructive),
            idempotent: get("idempotentHint", PESSIMISTIC.idempotent),
            open_world: get("openWorldHint", PESSIMISTIC.open_world),
        }
    }
}

/// The annotations clients see for one upstream tool.
///
/// - trusted: the upstream's own (`upstream`, when it is an object), then `tool`'s keys
///   over them; absent hints stay absent (clients apply the spec's defaults).
/// - untrusted: the upstream's are dropped whole; `server`'s keys, then `tool`'s over them,
///   then every hint still missing at the spec's pessimistic default, written out (a
///   read-only tool's `destructiveHint` is irrelevant, but explicit too).
pub fn effective_annotations(
    trust: TrustSpec,
    upstream: Option<&Value>,
    server: Option<&Map<String, Value>>,
    tool: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    let mut out = Map::new();
    let mut over = |m: Option<&Map<String, Value>>| {
        for (k, v) in m.into_iter().flatten() {
            out.insert(k.clone(), v.clone());
        }
    };
    match trust {
        TrustSpec::Trusted => {
            over(upstream.and_then(Value::as_object));
            over(tool);
        }
        TrustSpec::Untrusted => {
            over(server);
            over(tool);
            let pessimistic = [
                ("readOnlyHint", PESSIMISTIC.read_only),
                ("destructiveHint", PESSIMISTIC.destructive),
                ("idempotentHint", PESSIMISTIC.idempotent),
                ("openWorldHint", PESSIMISTIC.open_world),
            ];
            for (k, d) in pessimistic {
                if !out.get(k).is_some_and(Value::is_boolean) {
                    out.insert(k.to_owned(), Value::Bool(d));
                }
            }
        }
    }
    out
}

/// Which setting decided a call's [`Action`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The tool's own `policy:` (`servers.S.tools.T.policy`).
    Tool,
    /// `policy.not_read_only`: the tool is not read-only.
    NotReadOnly,
    /// `policy.destructive`: the tool is not read-only and destructive.
    Destructive,
    /// No rule matched (a read-only tool, or nothing set): allowed.
    Default,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::Tool => "the tool's policy",
            Rule::NotReadOnly => "policy.not_read_only (the tool is not read-only)",
            Rule::Destructive => "policy.destructive (the tool is destructive)",
            Rule::Default => "no policy",
        })
    }
}

/// What a call needs, and which setting said so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Allow, confirm or deny.
    pub action: Action,
    /// The setting that decided it.
    pub rule: Rule,
}

/// How strict an action is: allow < confirm < deny.
fn rank(a: Action) -> u8 {
    match a {
        Action::Allow => 0,
        Action::Confirm => 1,
        Action::Deny => 2,
    }
}

/// The stricter of two actions.
pub fn stricter(a: Action, b: Action) -> Action {
    if rank(b) > rank(a) { b } else { a }
}

/// What a call to a tool with these (effective) hints needs. The tool's own `policy`
/// replaces the server's; otherwise `not_read_only` applies to a tool that is not
/// read-only, `destructive` to one that is not read-only and is destructive, and the
/// stricter of those that apply wins.
pub fn decide(policy: &PolicySpec, tool: Option<Action>, hints: &Hints) -> Decision {
    if let Some(action) = tool {
        return Decision {
            action,
            rule: Rule::Tool,
        };
    }
    let mut decision = Decision {
        action: Action::Allow,
        rule: Rule::Default,
    };
    if hints.read_only {
        return decision;
    }
    let mut consider = |action: Action, rule: Rule| {
        if rank(action) > rank(decision.action) {
            decision = Decision { action, rule };
        }
    };
    consider(policy.not_read_only, Rule::NotReadOnly);
    if hints.destructive {
        consider(policy.destructive, Rule::Destructive);
    }
    decision
}

/// The most bytes of arguments shown in a confirmation message.
pub const MAX_SHOWN_ARGUMENTS: usize = 2000;

/// The `elicitation/create` params asking the user to confirm one call: a message naming
/// the server, the tool (as the client knows it, and the upstream's name when it differs)
/// and the arguments (cut at [`MAX_SHOWN_ARGUMENTS`] bytes), and a form of one required
/// boolean, `confirm`.
pub fn confirmation_request(server: &str, tool: &str, upstream: &str, arguments: &Value) -> Value {
    let mut shown = serde_json::to_string_pretty(arguments).unwrap_or_default();
    if shown.len() > MAX_SHOWN_ARGUMENTS {
        let cut = shown.floor_char_boundary(MAX_SHOWN_ARGUMENTS);
        shown.truncate(cut);
        shown.push_str("\n… (cut)");
    }
    let also = if upstream == tool {
        String::new()
    } else {
        format!(" (`{upstream}` upstream)")
    };
    json!({
        "message": format!(
            "The gateway's policy asks you to confirm this call.\nServer: {server}\nTool: {tool}{also}\nArguments:\n{shown}"
        ),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "confirm": {
                    "type": "boolean",
                    "title": "Run this call",
                    "description": format!("Let {tool} of server {server} run with these arguments"),
                    "default": false
                }
            },
            "required": ["confirm"]
        }
    })
}

/// The user's answer to a confirmation form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// `action: accept` with `confirm: true`: the call goes ahead.
    Confirmed,
    /// `action: accept` without `confirm: true`.
    Unchecked,
    /// `action: decline`.
    Declined,
    /// `action: cancel` (the user dismissed the form).
    Cancelled,
    /// An answer of no known shape.
    Invalid,
}

impl Confirmation {
    /// Whether the call may go ahead.
    pub fn is_confirmed(self) -> bool {
        self == Confirmation::Confirmed
    }
}

impl fmt::Display for Confirmation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Confirmation::Confirmed => "confirmed",
            Confirmation::Unchecked => "not confirmed: the form came back without confirm: true",
            Confirmation::Declined => "not confirmed: the user declined",
            Confirmation::Cancelled => "not confirmed: the user cancelled",
            Confirmation::Invalid => "not confirmed: the client's answer has no known shape",
        })
    }
}

/// Reads an `elicitation/create` result: only `action: accept` with `content.confirm: true`
/// confirms.
pub fn read_confirmation(result: &Value) -> Confirmation {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => {
            if result.pointer("/content/confirm") == Some(&Value::Bool(true)) {
                Confirmation::Confirmed
            } else {
                Confirmation::Unchecked
            }
        }
        Some("decline") => Confirmation::Declined,
        Some("cancel") => Confirmation::Cancelled,
        _ => Confirmation::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolwright_toolfile::servers::Action::{Allow, Confirm, Deny};

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn untrusted_annotations_are_the_operators_or_the_worst_case() {
        let upstream = json!({"readOnlyHint": true, "destructiveHint": false, "title": "Nice"});
        let got = effective_annotations(TrustSpec::Untrusted, Some(&upstream), None, None);
        assert_eq!(
            Value::Object(got),
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
        );
        let server = map(json!({"readOnlyHint": true, "openWorldHint": false}));
        let tool = map(json!({"readOnlyHint": false, "destructiveHint": false}));
        let got = effective_annotations(
            TrustSpec::Untrusted,
            Some(&upstream),
            Some(&server),
            Some(&tool),
        );
        assert_eq!(
            Value::Object(got),
            json!({"readOnlyHint": false, "openWorldHint": false, "destructiveHint": false, "idempotentHint": false})
        );
        // A read-only tool keeps an explicit destructiveHint.
        let got = effective_annotations(TrustSpec::Untrusted, None, Some(&server), None);
        assert_eq!(got["destructiveHint"], json!(true));
    }

    #[test]
    fn trusted_annotations_pass_through_under_tool_overrides() {
        let upstream = json!({"readOnlyHint": true, "title": "Nice"});
        let server = map(json!({"readOnlyHint": false}));
        let tool = map(json!({"idempotentHint": true}));
        let got = effective_annotations(
            TrustSpec::Trusted,
            Some(&upstream),
            Some(&server),
            Some(&tool),
        );
        assert_eq!(
            Value::Object(got),
            json!({"readOnlyHint": true, "title": "Nice", "idempotentHint": true})
        );
        let got = effective_annotations(TrustSpec::Trusted, Some(&json!("junk")), None, None);
        assert!(got.is_empty());
    }

    fn check(
        not_read_only: Action,
        destructive: Action,
        tool: Option<Action>,
        hints: (bool, bool),
        want: Action,
        rule: Rule,
    ) {
        let policy = PolicySpec {
            not_read_only,
            destructive,
        };
        let hints = Hints {
            read_only: hints.0,
            destructive: hints.1,
            ..PESSIMISTIC
        };
        assert_eq!(
            decide(&policy, tool, &hints),
            Decision { action: want, rule },
            "{not_read_only:?} {destructive:?} {tool:?} {hints:?}"
        );
    }

    #[test]
    fn the_strictest_matching_rule_wins() {
        table! { check;
            (Allow, Allow, None, (false, true), Allow, Rule::Default);
            (Confirm, Allow, None, (false, false), Confirm, Rule::NotReadOnly);
            (Allow, Confirm, None, (false, true), Confirm, Rule::Destructive);
            (Allow, Confirm, None, (false, false), Allow, Rule::Default);
            (Confirm, Deny, None, (false, true), Deny, Rule::Destructive);
            (Deny, Confirm, None, (false, true), Deny, Rule::NotReadOnly);
            (Deny, Deny, None, (true, true), Allow, Rule::Default);
            (Deny, Deny, Some(Allow), (false, true), Allow, Rule::Tool);
            (Allow, Allow, Some(Deny), (true, false), Deny, Rule::Tool);
            (Allow, Allow, Some(Confirm), (true, false), Confirm, Rule::Tool);
        }
    }

    #[test]
    fn hints_default_to_the_worst_case() {
        assert_eq!(Hints::of(&Map::new()), PESSIMISTIC);
        let h = Hints::of(&map(json!({"readOnlyHint": true, "destructiveHint": "no"})));
        assert!(h.read_only && h.destructive);
        assert_eq!(stricter(Confirm, Allow), Confirm);
        assert_eq!(stricter(Confirm, Deny), Deny);
    }

    #[test]
    fn the_confirmation_form() {
        let p = confirmation_request("fs", "fs__rm", "rm", &json!({"path": "/tmp/x"}));
        let m = p["message"].as_str().unwrap();
        assert!(
            m.contains("Server: fs") && m.contains("Tool: fs__rm (`rm` upstream)"),
            "{m}"
        );
        assert!(m.contains("\"path\": \"/tmp/x\""), "{m}");
        assert_eq!(p["requestedSchema"]["required"], json!(["confirm"]));
        assert_eq!(
            p["requestedSchema"]["properties"]["confirm"]["type"],
            json!("boolean")
        );
        let big = json!({"s": "é".repeat(3000)});
        let p = confirmation_request("fs", "w", "w", &big);
        let m = p["message"].as_str().unwrap();
        assert!(m.len() < MAX_SHOWN_ARGUMENTS + 200 && m.ends_with("(cut)"));
        assert!(!m.contains("upstream)"));
    }

    fn answer(result: Value, want: Confirmation) {
        assert_eq!(read_confirmation(&result), want, "{result}");
    }

    #[test]
    fn only_accept_with_confirm_true_confirms() {
        table! { answer;
            (json!({"action": "accept", "content": {"confirm": true}}), Confirmation::Confirmed);
            (json!({"action": "accept", "content": {"confirm": false}}), Confirmation::Unchecked);
            (json!({"action": "accept", "content": {"confirm": "true"}}), Confirmation::Unchecked);
            (json!({"action": "accept"}), Confirmation::Unchecked);
            (json!({"action": "decline"}), Confirmation::Declined);
            (json!({"action": "cancel", "content": {"confirm": true}}), Confirmation::Cancelled);
            (json!({"content": {"confirm": true}}), Confirmation::Invalid);
            (json!(null), Confirmation::Invalid);
        }
        assert!(Confirmation::Confirmed.is_confirmed());
        assert!(!Confirmation::Declined.is_confirmed());
    }
}
