use super::*;
use crate::config::from_env_with;

fn config(vars: &[(&str, &str)]) -> Config {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    from_env_with(&|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
        .unwrap()
        .unwrap()
}

#[test]
fn the_endpoint_follows_the_specification() {
    let http = |vars: &[(&str, &str)]| endpoint(&config(vars));
    assert_eq!(
        http(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]),
        "http://c:4318/v1/traces"
    );
    assert_eq!(
        http(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/base/")]),
        "http://c:4318/base/v1/traces"
    );
    assert_eq!(
        http(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://t/custom")
        ]),
        "https://t/custom",
        "the traces endpoint is used as given"
    );
    assert_eq!(
        http(&[("OTEL_TRACES_EXPORTER", "otlp")]),
        "http://localhost:4318/v1/traces"
    );
    let grpc = [("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")];
    assert_eq!(
        http(&[grpc[0], ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317")]),
        "http://c:4317"
    );
    assert_eq!(
        http(&[grpc[0], ("OTEL_TRACES_EXPORTER", "otlp")]),
        "http://localhost:4317"
    );
}

#[test]
fn the_exporter_checks_what_it_is_given() {
    let resource = Resource::builder_empty().build();
    let made = |vars: &[(&str, &str)]| OtlpExporter::new(&config(vars), &resource);
    let e = made(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://")])
        .err()
        .unwrap();
    assert!(
        e.contains("names no host") || e.contains("not a URL"),
        "{e}"
    );
    let e = made(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c"),
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem"),
    ])
    .err()
    .unwrap();
    assert!(e.contains("/nonexistent/ca.pem"), "{e}");
    let ok = made(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://[::1]:4318"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,x-tenant=t"),
    ])
    .unwrap();
    assert_eq!(ok.collector.host, "::1");
    assert_eq!(ok.collector.port, 4318);
    assert_eq!(ok.collector.path, "/v1/traces");
    assert_eq!(ok.headers["api-key"], "a b", "percent-decoded");
    assert!(ok.collector.tls.is_some());
}

#[test]
fn grpc_frames_round_trip() {
    let message = ExportTraceServiceResponse {
        partial_success: Some(
            opentelemetry_proto::tonic::collector::trace::v1::ExportTracePartialSuccess {
                rejected_spans: 3,
                error_message: "too old".into(),
            },
        ),
    };
    let framed = frame(&message);
    assert_eq!(framed[0], 0, "not compressed");
    assert_eq!(
        u32::from_be_bytes(framed[1..5].try_into().unwrap()) as usize,
        framed.len() - 5
    );
    let back = ExportTraceServiceResponse::decode(unframe(framed).unwrap()).unwrap();
    assert_eq!(back, message);
    assert_eq!(unframe(Bytes::from_static(&[0, 0, 0])), None, "short");
    assert_eq!(
        unframe(Bytes::from_static(&[1, 0, 0, 0, 0])),
        None,
        "compressed"
    );
    assert_eq!(
        unframe(Bytes::from_static(&[0, 0, 0, 0, 9, 1])),
        None,
        "truncated"
    );
}

#[test]
fn grpc_status_comes_from_trailers_or_headers() {
    let mut t = HeaderMap::new();
    let h = HeaderMap::new();
    assert!(grpc_status(&t, &h).unwrap_err().contains("no grpc-status"));
    t.insert("grpc-status", HeaderValue::from_static("0"));
    grpc_status(&t, &h).unwrap();
    let mut only = HeaderMap::new();
    only.insert("grpc-status", HeaderValue::from_static("14"));
    only.insert("grpc-message", HeaderValue::from_static("not%20ready"));
    assert_eq!(
        grpc_status(&HeaderMap::new(), &only).unwrap_err(),
        "gRPC status 14: not ready"
    );
}
