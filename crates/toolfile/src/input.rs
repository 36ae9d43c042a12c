//! What an action needs to know of `inputSchema`: the properties it may name and which of
//! them a call always carries.

use crate::error::{Problem, Seg};
use crate::template::{ArgRef, Template};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The top-level properties of `inputSchema`.
#[derive(Debug, Clone, Default)]
pub struct InputInfo {
    /// Each property's schema.
    pub properties: BTreeMap<String, Value>,
    /// The properties every valid call carries (`required`).
    pub required: BTreeSet<String>,
}

impl InputInfo {
    /// Reads `properties` and `required` of a schema (anything else is left to the schema
    /// validator).
    pub fn of(schema: &Value) -> InputInfo {
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        InputInfo {
            properties,
            required,
        }
    }

    /// The JSON types a property's schema allows (`type`, a string or an array), empty when
    /// it does not say.
    pub fn types(&self, name: &str) -> Vec<&str> {
        match self.properties.get(name).and_then(|s| s.get("type")) {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// Checks that every placeholder of `template` names a property, that `{name...}` names
    /// one that can be an array and that one value never names an object or array.
    ///
    /// # Errors
    ///
    /// A [`Problem`] at `at`.
    pub fn check_template(&self, template: &Template, at: &[Seg]) -> Result<(), Problem> {
        for a in template.args() {
            self.check_ref(a, at)?;
        }
        Ok(())
    }

    /// [`InputInfo::check_template`] for one placeholder.
    ///
    /// # Errors
    ///
    /// A [`Problem`] at `at`.
    pub fn check_ref(&self, a: &ArgRef, at: &[Seg]) -> Result<(), Problem> {
        if !self.properties.contains_key(&a.name) {
            let known: Vec<&str> = self.properties.keys().map(String::as_str).collect();
            let known = if known.is_empty() {
                "inputSchema has no properties".to_owned()
            } else {
                format!("its properties are: {}", known.join(", "))
            };
            return Err(Problem::new(
                at.iter().cloned(),
                format!(
                    "placeholder {{{}}} names no property of inputSchema ({known})",
                    a.name
                ),
            ));
        }
        let types = self.types(&a.name);
        if a.spread {
            if !types.is_empty() && !types.contains(&"array") {
                return Err(Problem::new(
                    at.iter().cloned(),
                    format!(
                        "{{{}...}} spreads an array, but `{}` is not one",
                        a.name, a.name
                    ),
                ));
            }
        } else if !types.is_empty() && types.iter().all(|t| *t == "array" || *t == "object") {
            return Err(Problem::new(
                at.iter().cloned(),
                format!(
                    "placeholder {{{}}} takes one value, but `{}` is {} (use {{{}...}} in argv for an array)",
                    a.name,
                    a.name,
                    types.join(" or "),
                    a.name
                ),
            ));
        }
        Ok(())
    }
}
