//! What a lint rule reports: [`Rule`] (a stable id and a severity), [`Severity`] and
//! [`Finding`].

use std::fmt;
use std::str::FromStr;

pub use toolwright_toolfile::error::Location;

/// How serious a finding is. Ordered: `Info < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing; the definition works as it is.
    Info,
    /// Works, but models or clients will use the tool worse than they could.
    Warning,
    /// Breaks clients, models or the spec.
    Error,
}

impl Severity {
    /// The lower-case name: `info`, `warning` or `error`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = crate::LintError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "info" => Ok(Severity::Info),
            "warning" | "warn" => Ok(Severity::Warning),
            "error" => Ok(Severity::Error),
            _ => Err(crate::LintError::UnknownSeverity(s.to_owned())),
        }
    }
}

macro_rules! rules {
    ($($(#[doc = $doc:literal])* $variant:ident = $id:literal, $sev:ident;)*) => {
        /// A lint rule. Each has a stable id (used in reports and `--ignore`) and a fixed
        /// severity.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Rule {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Rule {
            /// Every rule, in the order reports list them.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant,)*];

            /// The stable id, e.g. `name-snake-case`.
            pub const fn id(self) -> &'static str {
                match self { $(Rule::$variant => $id,)* }
            }

            /// How serious a finding of this rule is.
            pub const fn severity(self) -> Severity {
                match self { $(Rule::$variant => Severity::$sev,)* }
            }

            /// What the rule checks, in one line (its doc comment).
            pub fn description(self) -> &'static str {
                match self { $(Rule::$variant => concat!($($doc),*).trim_start(),)* }
            }
        }
    };
}

rules! {
    /// The tool is not an object, or its `name` or `inputSchema` is missing or mistyped.
    ToolShape = "tool-shape", Error;
    /// The name uses characters outside `A-Za-z0-9_-.`.
    NameCharset = "name-charset", Error;
    /// The name is empty or longer than 128 characters.
    NameLength = "name-length", Error;
    /// The name is not snake_case.
    NameSnakeCase = "name-snake-case", Warning;
    /// The name says nothing about what the tool does (`doThing`, `x`, `my-tool-1`).
    NameVague = "name-vague", Warning;
    /// Another tool of the same server has this name.
    NameDuplicate = "name-duplicate", Error;
    /// The tool has no description.
    DescriptionMissing = "description-missing", Warning;
    /// The description is too short to tell a model when to use the tool.
    DescriptionShort = "description-short", Warning;
    /// The description only restates the name or uses filler words.
    DescriptionVague = "description-vague", Warning;
    /// The description does not say what the tool returns.
    DescriptionNoReturn = "description-no-return", Info;
    /// `inputSchema` is not an object schema with `type: "object"`.
    InputRootNotObject = "input-root-not-object", Error;
    /// `required` names a property that `properties` does not define.
    RequiredMissingProperty = "required-missing-property", Error;
    /// A property has no `type` (nor `enum`, `const`, `$ref` or a composition).
    PropertyNoType = "property-no-type", Warning;
    /// A property has no `description`.
    PropertyNoDescription = "property-no-description", Warning;
    /// A `default` fails the schema it sits in.
    DefaultInvalid = "default-invalid", Error;
    /// `enum` is empty: no value is valid.
    EnumEmpty = "enum-empty", Error;
    /// `enum` lists a value twice.
    EnumDuplicate = "enum-duplicate", Warning;
    /// An `enum` value does not have the schema's `type`.
    EnumTypeMismatch = "enum-type-mismatch", Error;
    /// `minimum` above `maximum` (or the exclusive forms): no number is valid.
    RangeInverted = "range-inverted", Error;
    /// `minLength` above `maxLength` (or items, properties, contains): nothing is valid.
    LengthInverted = "length-inverted", Error;
    /// An `array` without `items`: the model cannot know what to put in it.
    ArrayNoItems = "array-no-items", Warning;
    /// A key that looks like a misspelled keyword (`require`, `minimun`).
    KeywordTypo = "keyword-typo", Warning;
    /// The schema does not compile under its dialect.
    SchemaInvalid = "schema-invalid", Error;
    /// A `$ref` to another document: it cannot be resolved without fetching it.
    RefNetwork = "ref-network", Error;
    /// `outputSchema` root is not `type: "object"` (clients before 2026-07-28 break).
    OutputRootNotObject = "output-root-not-object", Warning;
    /// A read-only tool sets `destructiveHint`/`idempotentHint` against its own claim.
    HintMeaningless = "hint-meaningless", Warning;
    /// A hint left to its default although the name suggests otherwise.
    HintDefaultSuspicious = "hint-default-suspicious", Warning;
    /// An `x-mcp-header` declaration that clients must reject.
    XMcpHeaderInvalid = "x-mcp-header-invalid", Error;
    /// What `toolwright serve --config` refuses to load: a field of the wrong type or an
    /// unknown one, a pattern, URL or setting it cannot use.
    DeclaredInvalid = "declared-invalid", Error;
    /// A declared tool with no action (`command`, `http` or `sql`).
    ActionMissing = "action-missing", Error;
    /// A template (argv element, URL, header, ...) that does not parse.
    TemplateInvalid = "template-invalid", Error;
    /// A placeholder that names no property of `inputSchema`.
    PlaceholderUnknown = "placeholder-unknown", Error;
    /// A placeholder whose property's type its position cannot take (`{x...}` on a
    /// string, `{x}` on an array).
    PlaceholderType = "placeholder-type", Error;
    /// The program (`argv[0]`) holds a placeholder: an argument would choose what runs.
    ProgramPlaceholder = "program-placeholder", Error;
    /// An argv element always present names a property that is not `required`.
    ArgvNotRequired = "argv-not-required", Error;
    /// A shell runs a script given in argv (`sh -c`, `cmd /c`, `pwsh -Command`).
    ShellProgram = "shell-program", Error;
    /// A property of `inputSchema` that the action never uses.
    PropertyUnused = "property-unused", Warning;
    /// `readOnlyHint: true` on an HTTP method other than GET or HEAD.
    HintReadOnlyMethod = "hint-read-only-method", Error;
    /// A `sql` statement whose placeholders do not match its `params` one to one.
    SqlPlaceholders = "sql-placeholders", Error;
    /// `readOnlyHint: true` on a `sql` statement that writes (INSERT, UPDATE, DELETE, DDL).
    HintReadOnlySql = "hint-read-only-sql", Error;
    /// A declared tool without annotations: it is served as not read-only, destructive and
    /// open-world (the spec's defaults).
    AnnotationsMissing = "annotations-missing", Warning;
}

impl Rule {
    /// The rule with this id.
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|r| r.id() == id)
    }
}

impl FromStr for Rule {
    type Err = crate::LintError;

    /// The rule with this id, as [`Rule::from_id`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rule::from_id(s).ok_or_else(|| crate::LintError::UnknownRule(s.to_owned()))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// One problem in one tool definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule that fired.
    pub rule: Rule,
    /// Its severity (the rule's).
    pub severity: Severity,
    /// Position of the tool in the input, from 0.
    pub index: usize,
    /// The tool's name, or `#<index>` when it has none.
    pub tool: String,
    /// JSON Pointer (RFC 6901) into the tool definition, e.g. `/inputSchema/properties/a`.
    pub pointer: String,
    /// What is wrong, in one line.
    pub message: String,
    /// How to fix it, in one line.
    pub fix: String,
    /// Where in the file, for a file of declared tools (see [`crate::lint_declared`]).
    pub location: Option<Location>,
}

/// Collects the findings of one tool.
pub(crate) struct Sink<'a> {
    /// Position of the tool in the input.
    pub index: usize,
    /// The tool's display name in reports.
    pub tool: &'a str,
    /// Rules not to report.
    pub disabled: &'a [Rule],
    /// Where findings go.
    pub out: &'a mut Vec<Finding>,
}

impl Sink<'_> {
    /// Records a finding of `rule` at `pointer`.
    pub fn add(
        &mut self,
        rule: Rule,
        pointer: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        if self.disabled.contains(&rule) {
            return;
        }
        self.out.push(Finding {
            rule,
            severity: rule.severity(),
            index: self.index,
            tool: self.tool.to_owned(),
            pointer: pointer.into(),
            message: message.into(),
            fix: fix.into(),
            location: None,
        });
    }

    /// Whether a finding of `rule` was already recorded at `pointer`.
    pub fn has(&self, rule: Rule, pointer: &str) -> bool {
        self.out
            .iter()
            .any(|f| f.index == self.index && f.rule == rule && f.pointer == pointer)
    }
}

/// The findings that `check` records for one tool (the first, named `t`), every rule on.
#[cfg(test)]
pub(crate) fn findings_of(check: impl FnOnce(&mut Sink<'_>)) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut sink = Sink {
        index: 0,
        tool: "t",
        disabled: &[],
        out: &mut out,
    };
    check(&mut sink);
    out
}

/// `base` with one JSON Pointer token appended, escaped.
pub(crate) fn push_pointer(base: &str, token: &str) -> String {
    let mut p = String::with_capacity(base.len() + token.len() + 1);
    p.push_str(base);
    toolwright_schema::push_segment(&mut p, token);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_round_trip() {
        for r in Rule::ALL {
            assert_eq!(Rule::from_id(r.id()), Some(*r));
        }
        let mut ids: Vec<_> = Rule::ALL.iter().map(|r| r.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), Rule::ALL.len());
    }

    #[test]
    fn every_rule_says_what_it_checks_in_one_line() {
        for r in Rule::ALL {
            let d = r.description();
            assert!(
                d.ends_with('.') && !d.contains('\n') && !d.contains("  "),
                "{r}: {d:?}"
            );
            assert!(
                d.starts_with(|c: char| c.is_uppercase() || c == '`'),
                "{r}: {d:?}"
            );
        }
        assert_eq!(
            Rule::DeclaredInvalid.description(),
            "What `toolwright serve --config` refuses to load: a field of the wrong type or \
             an unknown one, a pattern, URL or setting it cannot use."
        );
    }

    #[test]
    fn rules_parse() {
        assert_eq!("name-vague".parse::<Rule>().unwrap(), Rule::NameVague);
        assert_eq!(
            "loud".parse::<Rule>().unwrap_err().to_string(),
            "unknown rule \"loud\"; see toolwright lint --rules"
        );
    }

    #[test]
    fn severities_parse_and_order() {
        assert_eq!("warn".parse::<Severity>().unwrap(), Severity::Warning);
        assert!("loud".parse::<Severity>().is_err());
        assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Error);
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(push_pointer("", "a/b~c"), "/a~1b~0c");
        assert_eq!(push_pointer("/x", "y"), "/x/y");
    }
}
