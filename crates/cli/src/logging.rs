//! Logging: `tracing` events to stderr, as text or one JSON object a line, at the levels
//! `TOOLWRIGHT_LOG` names.

use std::io::IsTerminal;

/// Logging to stderr as text, at `TOOLWRIGHT_LOG`'s levels (warnings and errors by default).
pub(crate) fn init_logging() {
    init_logging_as(false);
}

/// Logging to stderr, as text or (`json`) one JSON object a line, each with the fields of
/// the span it was written in (the trace and span ids of the request being handled).
pub(crate) fn init_logging_as(json: bool) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let default = if json {
        tracing::Level::INFO
    } else {
        tracing::Level::WARN
    };
    let filter = log_filter(std::env::var("TOOLWRIGHT_LOG").ok().as_deref(), default);
    // Colour only for a person at a terminal: a file, a pipe or a client's log gets plain
    // text, and NO_COLOR (https://no-color.org) turns it off there too.
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .finish()
            .with(filter)
            .try_init()
    } else {
        builder.finish().with(filter).try_init()
    };
}

/// `TOOLWRIGHT_LOG` as `tracing-subscriber`'s target filter: a level (`debug`), targets
/// with levels (`toolwright_server=debug,h2=info`), or both (`warn,toolwright_http=trace`).
/// Without it, `default`. A spec that does not parse is said on stderr and `default` used.
fn log_filter(spec: Option<&str>, default: tracing::Level) -> tracing_subscriber::filter::Targets {
    let fallback = tracing_subscriber::filter::Targets::new().with_default(default);
    match spec.map(str::trim).filter(|s| !s.is_empty()) {
        None => fallback,
        Some(spec) => spec.parse().unwrap_or_else(|e| {
            eprintln!(
                "toolwright: TOOLWRIGHT_LOG={spec:?} is not understood ({e}): expected a level or target=level pairs, such as debug or toolwright_server=debug,info; logging at {default}"
            );
            fallback
        }),
    }
}
