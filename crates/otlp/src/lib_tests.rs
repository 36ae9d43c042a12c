use super::*;
use std::collections::HashMap;

fn read(vars: &[(&str, &str)]) -> Result<Option<Config>, Error> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    from_env_with(&|v| map.get(v).cloned())
}

fn error(vars: &[(&str, &str)]) -> String {
    read(vars).expect_err("a bad setting").to_string()
}

#[test]
fn export_is_off_unless_an_endpoint_or_the_exporter_is_named() {
    assert!(read(&[]).unwrap().is_none());
    assert!(read(&[("OTEL_SERVICE_NAME", "x")]).unwrap().is_none());
    assert!(
        read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "")])
            .unwrap()
            .is_none()
    );
    assert!(read(&[("OTEL_TRACES_EXPORTER", "otlp")]).unwrap().is_some());
    let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
    assert_eq!(read(&on).unwrap().unwrap().protocol, Protocol::HttpProtobuf);
    let sdk_off = [on[0], ("OTEL_SDK_DISABLED", "true")];
    assert!(read(&sdk_off).unwrap().is_none());
    let none = [on[0], ("OTEL_TRACES_EXPORTER", "none")];
    assert!(read(&none).unwrap().is_none());
}

#[test]
fn the_traces_protocol_wins_over_the_general_one() {
    let c = read(&[
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://h:4317"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(c.protocol, Protocol::Grpc);
    assert_eq!(c.timeout, Duration::from_millis(2500));
}

#[test]
fn headers_merge_with_the_traces_ones_winning_and_are_decoded() {
    let c = read(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "Api-Key=general, x-a=1"),
        ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api-key=traces%2Conly"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(
        c.headers,
        [
            ("x-a".to_owned(), "1".to_owned()),
            ("api-key".to_owned(), "traces,only".to_owned())
        ]
    );
    assert_eq!(
        c.certificate.as_deref(),
        Some(std::path::Path::new("/etc/ca.pem"))
    );
    assert_eq!(c.endpoint.as_deref(), Some("http://h:4318"));
    assert_eq!(c.traces_endpoint, None);
}

#[test]
fn bad_settings_are_errors_that_name_the_variable() {
    let on = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318");
    for (vars, expected) in [
        (
            vec![on, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
            "http/json is not built",
        ),
        (
            vec![on, ("OTEL_EXPORTER_OTLP_PROTOCOL", "udp")],
            "OTEL_EXPORTER_OTLP_PROTOCOL=\"udp\"",
        ),
        (
            vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "h:4318")],
            "http:// or https://",
        ),
        (
            vec![on, ("OTEL_TRACES_EXPORTER", "zipkin")],
            "OTEL_TRACES_EXPORTER=\"zipkin\"",
        ),
        (
            vec![on, ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")],
            "milliseconds",
        ),
        (
            vec![on, ("OTEL_EXPORTER_OTLP_HEADERS", "a=1,b")],
            "\"b\" is not a key=value pair",
        ),
        (
            vec![on, ("OTEL_TRACES_SAMPLER", "sometimes")],
            "OTEL_TRACES_SAMPLER=",
        ),
        (
            vec![
                on,
                ("OTEL_TRACES_SAMPLER", "traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "2"),
            ],
            "a ratio from 0 to 1",
        ),
        (vec![on, ("OTEL_SDK_DISABLED", "yes")], "true or false"),
        (
            vec![on, ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")],
            "OTEL_EXPORTER_OTLP_COMPRESSION=\"gzip\": gzip is not built into toolwright",
        ),
        (
            vec![on, ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "zstd")],
            "expected none",
        ),
        (vec![on, ("OTEL_BSP_MAX_QUEUE_SIZE", "0")], "positive"),
    ] {
        let e = error(&vars);
        assert!(e.contains(expected), "{vars:?}: {e}");
    }
}

#[test]
fn the_sampler_decides_the_sampled_flag() {
    use toolwright_telemetry::{SpanContext, SpanKind};
    let on = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9");
    let off = Exporter::start(
        read(&[on, ("OTEL_TRACES_SAMPLER", "parentbased_always_off")])
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    let sink = off.sink();
    let sampled_parent = SpanContext::child_of(None);
    let trace = sampled_parent.trace_id;
    assert!(!sink.sampled(None, &trace, "x", SpanKind::Server));
    assert!(sink.sampled(Some(&sampled_parent), &trace, "x", SpanKind::Server));
    let unsampled = SpanContext {
        flags: 0,
        ..sampled_parent
    };
    assert!(!sink.sampled(Some(&unsampled), &trace, "x", SpanKind::Client));
    off.shutdown(Duration::from_secs(1));
}
