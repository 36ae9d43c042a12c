use super::*;
use crate::config::from_env_with;
use tokio::net::TcpStream;

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
        .unwrap()
        .to_string();
    assert!(
        e.contains("names no host") || e.contains("not a URL"),
        "{e}"
    );
    let e = made(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c"),
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem"),
    ])
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("/nonexistent/ca.pem"), "{e}");
    let ok = made(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://[::1]:4318"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,x-tenant=t"),
    ])
    .unwrap();
    assert_eq!(ok.collector.host, "::1");
    assert_eq!(ok.collector.port, 4318);
    assert_eq!(ok.collector.target, "/v1/traces");
    assert_eq!(ok.collector.url, "https://[::1]:4318/v1/traces");
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
    assert!(
        grpc_status(&t, &h)
            .unwrap_err()
            .to_string()
            .contains("no grpc-status")
    );
    t.insert("grpc-status", HeaderValue::from_static("0"));
    grpc_status(&t, &h).unwrap();
    let mut only = HeaderMap::new();
    only.insert("grpc-status", HeaderValue::from_static("14"));
    only.insert("grpc-message", HeaderValue::from_static("not%20ready"));
    assert_eq!(
        grpc_status(&HeaderMap::new(), &only)
            .unwrap_err()
            .to_string(),
        "gRPC status 14: not ready"
    );
}

/// Reads one HTTP/1.1 request (head and `content-length` body) from `conn`.
async fn read_request(conn: &mut TcpStream) {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = conn.read(&mut buf).await.unwrap();
        assert!(n > 0, "the connection closed mid-request");
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            assert!(head.starts_with("post /v1/traces http/1.1"), "{head}");
            assert!(
                head.contains("content-type: application/x-protobuf"),
                "{head}"
            );
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map_or(0, |v| v.trim().parse().unwrap());
            while got.len() < end + 4 + len {
                let n = conn.read(&mut buf).await.unwrap();
                got.extend_from_slice(&buf[..n]);
            }
            return;
        }
    }
}

const OK: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";

/// A kept connection that the collector drops under the next request is replaced once, and
/// the export goes through on the new one; a new connection that fails is not retried.
#[tokio::test]
async fn a_kept_connection_that_dies_is_replaced_once() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut first, _) = listener.accept().await.unwrap();
        read_request(&mut first).await;
        first.write_all(OK).await.unwrap();
        read_request(&mut first).await;
        drop(first);
        let (mut second, _) = listener.accept().await.unwrap();
        read_request(&mut second).await;
        second.write_all(OK).await.unwrap();
        // A fresh exporter's first connection, dropped unanswered: an error, no retry.
        let (mut third, _) = listener.accept().await.unwrap();
        read_request(&mut third).await;
        drop(third);
        let retried = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await;
        assert!(
            retried.is_err(),
            "a failure on a new connection is not retried"
        );
        second
    });
    let url = format!("http://127.0.0.1:{port}");
    let cfg = config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str())]);
    let resource = Resource::builder_empty().build();
    let mut exporter = OtlpExporter::new(&cfg, &resource).unwrap();
    exporter.export(Vec::new()).await.unwrap();
    exporter.export(Vec::new()).await.unwrap();
    let mut fresh = OtlpExporter::new(&cfg, &resource).unwrap();
    let e = fresh.export(Vec::new()).await.unwrap_err().to_string();
    assert!(e.starts_with(&format!("{url}/v1/traces: ")), "{e}");
    drop(server.await.unwrap());
}
