//! The tool files' `views:` ([`toolwright_toolfile::views`]) as the server's
//! [`Views`](toolwright_server::Views): each view's name test is the file's own
//! include/exclude filter, so one glob rule serves the gateway and the views alike.

use std::collections::HashMap;
use std::sync::Arc;
use toolwright_server::{Override, View, Views, When};
use toolwright_toolfile::views::{ViewConfig, ViewWhen};

/// The server's views of `configs`, in file order.
pub(crate) fn views(configs: &[ViewConfig]) -> Views {
    Views::new(configs.iter().map(view).collect())
}

fn view(c: &ViewConfig) -> View {
    let filter = c.filter.clone();
    let when = c.when.as_ref().map(|w| match w {
        ViewWhen::Scope(s) => When::Scope(s.clone()),
        ViewWhen::Claim(name, value) => When::Claim(name.clone(), value.clone()),
        // `ViewWhen` is non-exhaustive; a selector this binary does not know admits no one.
        _ => When::Scope(String::new()),
    });
    let overrides: HashMap<String, Override> = c
        .tools
        .iter()
        .map(|(name, o)| {
            let o = Override::new(
                o.title.clone(),
                o.description.clone(),
                o.annotations.clone(),
            );
            (name.clone(), o)
        })
        .collect();
    View::new(
        c.name.clone(),
        Arc::new(move |name: &str| filter.allows(name)),
        when,
        overrides,
    )
}
