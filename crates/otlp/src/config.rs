//! The standard `OTEL_*` environment variables, read once at start-up; a bad value is an
//! error that names the variable.

use crate::Error;
use opentelemetry_sdk::trace::Sampler;
use std::time::Duration;

/// How spans travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: POST `/v1/traces`, a protobuf body.
    HttpProtobuf,
    /// `grpc`: the collector's `TraceService/Export`.
    Grpc,
}

/// What the environment asks for, when it asks for export at all.
#[derive(Debug, Clone)]
pub struct Config {
    /// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else
    /// `http/protobuf`.
    pub protocol: Protocol,
    /// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds),
    /// else 10 s: how long one export may take.
    pub timeout: Duration,
    /// `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`; `parentbased_always_on` by default.
    pub sampler: Sampler,
    /// `OTEL_BSP_SCHEDULE_DELAY` (milliseconds, default 5000): the longest a span waits.
    pub delay: Duration,
    /// `OTEL_BSP_MAX_QUEUE_SIZE` (default 2048): spans beyond it are dropped.
    pub queue: usize,
    /// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (default 512).
    pub batch: usize,
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the collector's URL, used as given.
    pub traces_endpoint: Option<String>,
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, when there is no traces endpoint: for HTTP,
    /// `/v1/traces` is added after it. With neither, `http://localhost:4318/v1/traces`
    /// (HTTP) or `http://localhost:4317` (gRPC).
    pub endpoint: Option<String>,
    /// `OTEL_EXPORTER_OTLP_HEADERS` and then `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, their
    /// values percent-decoded: sent with each export (a traces header replaces a general
    /// one of the same name).
    pub headers: Vec<(String, String)>,
    /// `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE`, else `OTEL_EXPORTER_OTLP_CERTIFICATE`: a
    /// PEM file of CA certificates trusted beside the webpki roots for an `https://`
    /// collector.
    pub certificate: Option<std::path::PathBuf>,
}

fn bad(var: &'static str, value: &str, why: impl Into<String>) -> Error {
    Error::Setting {
        var,
        value: value.to_owned(),
        why: why.into(),
    }
}

/// Reads the environment through `env` (a variable set to the empty string counts as unset).
///
/// # Errors
///
/// [`Error::Setting`] for a value that is not understood.
pub fn from_env_with(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Config>, Error> {
    let get = |v: &str| {
        env(v)
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let Some(exporter_named) = exporter(&get)? else {
        return Ok(None);
    };
    let traces_endpoint = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let general_endpoint = get("OTEL_EXPORTER_OTLP_ENDPOINT");
    let endpoint = match (&traces_endpoint, &general_endpoint) {
        (Some(e), _) => Some(("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", e)),
        (None, Some(e)) => Some(("OTEL_EXPORTER_OTLP_ENDPOINT", e)),
        (None, None) => None,
    };
    if !exporter_named && endpoint.is_none() {
        return Ok(None);
    }
    if let Some((var, e)) = endpoint
        && !(e.starts_with("http://") || e.starts_with("https://"))
    {
        return Err(bad(var, e, "expected an http:// or https:// URL"));
    }
    let protocol = protocol(&get)?;
    let timeout = match first_set(
        &get,
        [
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ],
    ) {
        None => Duration::from_secs(10),
        Some((var, t)) => Duration::from_millis(number(var, &t)?),
    };
    let headers = headers(&get)?;
    no_compression(&get)?;
    let certificate = get("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE")
        .or(get("OTEL_EXPORTER_OTLP_CERTIFICATE"))
        .map(std::path::PathBuf::from);
    Ok(Some(Config {
        protocol,
        timeout,
        sampler: sampler(get("OTEL_TRACES_SAMPLER"), get("OTEL_TRACES_SAMPLER_ARG"))?,
        delay: Duration::from_millis(match get("OTEL_BSP_SCHEDULE_DELAY") {
            Some(d) => number("OTEL_BSP_SCHEDULE_DELAY", &d)?,
            None => 5000,
        }),
        queue: size(
            "OTEL_BSP_MAX_QUEUE_SIZE",
            get("OTEL_BSP_MAX_QUEUE_SIZE"),
            2048,
        )?,
        batch: size(
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
            get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
            512,
        )?,
        traces_endpoint,
        endpoint: general_endpoint,
        headers,
        certificate,
    }))
}

/// A variable's value as read: trimmed, `None` when unset or empty.
type Get<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The first of `vars` that is set, and its value.
fn first_set<const N: usize>(
    get: Get<'_>,
    vars: [&'static str; N],
) -> Option<(&'static str, String)> {
    vars.into_iter()
        .find_map(|v| get(v).map(|value| (v, value)))
}

/// Whether export may happen at all (`OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER`): `None`
/// when it is turned off, else whether `otlp` was named (rather than left to an endpoint).
fn exporter(get: Get<'_>) -> Result<Option<bool>, Error> {
    if let Some(v) = get("OTEL_SDK_DISABLED") {
        match v.to_ascii_lowercase().as_str() {
            "true" => return Ok(None),
            "false" => {}
            _ => return Err(bad("OTEL_SDK_DISABLED", &v, "expected true or false")),
        }
    }
    let exporter = get("OTEL_TRACES_EXPORTER");
    match exporter.as_deref() {
        Some("none") => Ok(None),
        Some("otlp") => Ok(Some(true)),
        None => Ok(Some(false)),
        Some(other) => Err(bad(
            "OTEL_TRACES_EXPORTER",
            other,
            "toolwright exports traces with otlp only (or none)",
        )),
    }
}

/// `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else
/// `http/protobuf`.
fn protocol(get: Get<'_>) -> Result<Protocol, Error> {
    match first_set(
        get,
        [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ],
    ) {
        None => Ok(Protocol::HttpProtobuf),
        Some((_, p)) if p == "http/protobuf" => Ok(Protocol::HttpProtobuf),
        Some((_, p)) if p == "grpc" => Ok(Protocol::Grpc),
        Some((var, p)) if p == "http/json" => Err(bad(
            var,
            &p,
            "http/json is not built into toolwright; use http/protobuf or grpc",
        )),
        Some((var, p)) => Err(bad(var, &p, "expected http/protobuf or grpc")),
    }
}

/// `OTEL_EXPORTER_OTLP_HEADERS` and then `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, a later
/// header replacing an earlier one of the same name.
fn headers(get: Get<'_>) -> Result<Vec<(String, String)>, Error> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for var in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        if let Some(h) = get(var) {
            for (k, v) in parse_headers(var, &h)? {
                headers.retain(|(old, _)| !old.eq_ignore_ascii_case(&k));
                headers.push((k, v));
            }
        }
    }
    Ok(headers)
}

/// Fails unless the compression asked for (traces', else the general one) is `none`.
fn no_compression(get: Get<'_>) -> Result<(), Error> {
    if let Some((var, c)) = first_set(
        get,
        [
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
            "OTEL_EXPORTER_OTLP_COMPRESSION",
        ],
    ) && c != "none"
    {
        let why = if c == "gzip" {
            "gzip is not built into toolwright; use none"
        } else {
            "expected none"
        };
        return Err(bad(var, &c, why));
    }
    Ok(())
}

fn number(var: &'static str, value: &str) -> Result<u64, Error> {
    value
        .parse()
        .map_err(|_| bad(var, value, "expected a whole number of milliseconds"))
}

fn size(var: &'static str, value: Option<String>, default: usize) -> Result<usize, Error> {
    match value {
        None => Ok(default),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(bad(var, &v, "expected a positive whole number")),
        },
    }
}

/// `key=value` pairs separated by commas, as the OTLP exporter specification gives them
/// (the W3C baggage format: a value may be percent-encoded).
fn parse_headers(var: &'static str, value: &str) -> Result<Vec<(String, String)>, Error> {
    let mut out = Vec::new();
    for pair in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                let v = percent_encoding::percent_decode_str(v.trim()).decode_utf8_lossy();
                out.push((k.trim().to_ascii_lowercase(), v.into_owned()));
            }
            _ => {
                return Err(bad(var, value, format!("{pair:?} is not a key=value pair")));
            }
        }
    }
    Ok(out)
}

fn sampler(name: Option<String>, arg: Option<String>) -> Result<Sampler, Error> {
    let ratio = || -> Result<f64, Error> {
        match &arg {
            None => Ok(1.0),
            Some(a) => match a.parse::<f64>() {
                Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
                _ => Err(bad(
                    "OTEL_TRACES_SAMPLER_ARG",
                    a,
                    "expected a ratio from 0 to 1",
                )),
            },
        }
    };
    let parent = |root: Sampler| Sampler::ParentBased(Box::new(root));
    Ok(match name.as_deref() {
        None | Some("parentbased_always_on") => parent(Sampler::AlwaysOn),
        Some("always_on") => Sampler::AlwaysOn,
        Some("always_off") => Sampler::AlwaysOff,
        Some("traceidratio") => Sampler::TraceIdRatioBased(ratio()?),
        Some("parentbased_always_off") => parent(Sampler::AlwaysOff),
        Some("parentbased_traceidratio") => parent(Sampler::TraceIdRatioBased(ratio()?)),
        Some(other) => {
            return Err(bad(
                "OTEL_TRACES_SAMPLER",
                other,
                "expected always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio",
            ));
        }
    })
}
