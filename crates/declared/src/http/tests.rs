//! The action against real loopback listeners that record the raw bytes they receive:
//! what a server actually sees for each injection attempt, and the connections that the
//! policy and the redirect rules keep from being made.

use super::*;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

type Respond = Arc<dyn Fn(&[u8]) -> Vec<u8> + Send + Sync>;

#[derive(Clone)]
enum Reply {
    /// Read one request, answer with these bytes, close.
    With(Respond),
    /// Read one request, never answer.
    Hang,
    /// Record the first bytes that arrive, close (for a TLS hello).
    First,
}

/// A listener on 127.0.0.1 that counts connections and keeps each request's raw bytes.
struct Recorder {
    addr: SocketAddr,
    conns: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Recorder {
    async fn start(reply: Reply) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let conns = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (c, s) = (conns.clone(), seen.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(handle(stream, reply.clone(), s.clone()));
            }
        });
        Recorder { addr, conns, seen }
    }

    async fn fixed(status: &str, headers: &[&str], body: &[u8]) -> Recorder {
        let bytes = response(status, headers, body);
        Recorder::start(Reply::With(Arc::new(move |_| bytes.clone()))).await
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn connections(&self) -> usize {
        self.conns.load(Ordering::SeqCst)
    }

    /// The requests received, as text.
    fn requests(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .collect()
    }

    fn last(&self) -> String {
        self.requests().pop().expect("a request arrived")
    }
}

async fn handle(mut stream: TcpStream, reply: Reply, seen: Arc<Mutex<Vec<Vec<u8>>>>) {
    if let Reply::First = reply {
        let mut buf = vec![0; 4096];
        let n = stream.read(&mut buf).await.unwrap_or(0);
        seen.lock().unwrap().push(buf[..n].to_vec());
        return;
    }
    let raw = read_request(&mut stream).await;
    seen.lock().unwrap().push(raw.clone());
    match reply {
        Reply::With(f) => {
            let _ = stream.write_all(&f(&raw)).await;
            let _ = stream.shutdown().await;
        }
        Reply::Hang => tokio::time::sleep(Duration::from_secs(60)).await,
        Reply::First => unreachable!(),
    }
}

/// One request: the head up to the blank line, then `Content-Length` bytes of body.
async fn read_request(stream: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return buf,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    while buf.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    buf
}

fn response(status: &str, headers: &[&str], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nconnection: close\r\n");
    for h in headers {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn schema() -> InputInfo {
    InputInfo::of(&json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"}, "q": {"type": "string"}, "note": {"type": "string"},
            "text": {"type": "string"}, "n": {"type": "integer"}, "tags": {"type": "array"}
        },
        // Placeholders in a URL must name required arguments (checked at load).
        "required": ["id", "q", "n"]
    }))
}

fn action(spec: Value) -> HttpAction {
    let spec: HttpSpec = serde_json::from_value(spec).unwrap();
    HttpAction::compile(&spec, &schema()).unwrap()
}

const SECRET: &str = "s3cr3t-Token-9f1c";

fn env(var: &str) -> Option<String> {
    match var {
        "TOKEN" => Some(SECRET.to_owned()),
        "BROKEN" => Some(format!("{SECRET}\r\nX-Evil: 1")),
        _ => None,
    }
}

async fn call(a: &HttpAction, args: Value) -> Result<Output, RunError> {
    call_within(a, args, Duration::from_secs(10), &CancellationToken::new()).await
}

async fn call_within(
    a: &HttpAction,
    args: Value,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Output, RunError> {
    let ctx = RunContext {
        roots: &[],
        timeout,
        cancel,
        trace: None,
        observed: None,
    };
    a.run_with_env(args.as_object().unwrap(), &ctx, &env).await
}

fn request_line(raw: &str) -> &str {
    raw.lines().next().unwrap_or_default()
}

#[tokio::test]
async fn path_and_query_injections_arrive_encoded() {
    let server = Recorder::fixed("200 OK", &[], b"ok").await;
    let a = action(json!({"url": server.url("/items/{id}/raw?q={q}"), "query": {"n": "{n}"}}));
    #[rustfmt::skip]
    let cases = [
        ("../../admin", "..%2F..%2Fadmin"),
        ("%2f", "%252f"),
        ("%2E%2E", "%252E%252E"),
        ("a/b", "a%2Fb"),
        ("a?x=1#f", "a%3Fx%3D1%23f"),
        ("a b", "a%20b"),
        ("é/日", "%C3%A9%2F%E6%97%A5"),
        (" HTTP/1.1\r\nX-Evil: 1\r\n", "%20HTTP%2F1.1%0D%0AX-Evil%3A%201%0D%0A"),
        ("; rm -rf / $(id) `id`", "%3B%20rm%20-rf%20%2F%20%24%28id%29%20%60id%60"),
    ];
    for (value, encoded) in cases {
        let out = call(&a, json!({"id": value, "q": value, "n": 5}))
            .await
            .unwrap();
        assert_eq!(out.bytes, b"ok");
        assert_eq!(out.meta["status"], json!(200));
        let raw = server.last();
        assert_eq!(
            request_line(&raw),
            format!("GET /items/{encoded}/raw?q={encoded}&n=5 HTTP/1.1"),
            "{value:?}"
        );
        // Exactly the request line and the client's own headers: nothing was split off.
        let names: Vec<String> = raw
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .map(|l| l.split(':').next().unwrap_or_default().to_ascii_lowercase())
            .collect();
        assert_eq!(names, ["host"], "{raw}");
    }
    let before = server.connections();
    for dots in [".", ".."] {
        let e = call(&a, json!({"id": dots, "q": "x"})).await.unwrap_err();
        assert!(matches!(e, RunError::Render(_)), "{e}");
    }
    assert_eq!(
        server.connections(),
        before,
        "a refused path made no connection"
    );
}

#[tokio::test]
async fn header_values_cannot_split_headers() {
    let server = Recorder::fixed("200 OK", &[], b"").await;
    let a = action(json!({"url": server.url("/"), "headers": {"X-Note": "note: {note}"}}));
    for bad in ["a\r\nX-Injected: 1", "a\nX-Injected: 1", "a\rb", "a\u{0}b"] {
        let e = call(&a, json!({"note": bad})).await.unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, RunError::Header { .. }), "{text}");
        assert!(
            text.contains("x-note") && !text.contains("Injected"),
            "{text}"
        );
    }
    assert_eq!(server.connections(), 0, "a refused header sent nothing");
    call(&a, json!({"note": "fine: \"quoted\" \\ ;"}))
        .await
        .unwrap();
    let raw = server.last();
    let lines: Vec<&str> = raw.lines().collect();
    assert!(
        lines.contains(&"x-note: note: fine: \"quoted\" \\ ;"),
        "{raw}"
    );
    // An absent argument drops the header.
    call(&a, json!({})).await.unwrap();
    assert!(!server.last().contains("x-note"));
}

#[tokio::test]
async fn json_body_parses_back_to_the_arguments() {
    let server = Recorder::fixed("201 Created", &[], b"{}").await;
    let a = action(json!({
        "method": "post",
        "url": server.url("/notes"),
        "body": {"text": "{text}", "title": "note: {text}", "n": "{n}", "tags": "{tags}",
                 "opt": "{note}", "kind": "memo"}
    }));
    assert_eq!(a.method(), "POST");
    #[rustfmt::skip]
    let texts = [
        "plain",
        "\", \"admin\": true, \"x\": \"",
        "back\\slash \\\" \\u0000",
        "line\nbreak\r\nand\ttab",
        "}]} {\"",
        "ünï ☃ \u{1F600}",
    ];
    for text in texts {
        let tags = json!(["a", {"b": [1, null]}]);
        call(&a, json!({"text": text, "n": 3, "tags": tags}))
            .await
            .unwrap();
        let raw = server.last();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("content-type: application/json"), "{head}");
        let got: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            got,
            json!({"text": text, "title": format!("note: {text}"), "n": 3, "tags": tags, "kind": "memo"}),
            "{text:?}"
        );
    }
}

#[tokio::test]
async fn secrets_never_appear_in_errors() {
    let server = Recorder::fixed("200 OK", &[], b"").await;
    let good =
        action(json!({"url": server.url("/"), "headers": {"Authorization": "Bearer ${TOKEN}"}}));
    call(&good, json!({})).await.unwrap();
    assert!(
        server
            .last()
            .contains(&format!("authorization: Bearer {SECRET}"))
    );

    // A value from the environment that would split the header.
    let broken =
        action(json!({"url": server.url("/"), "headers": {"Authorization": "Bearer ${BROKEN}"}}));
    // A variable that is not set.
    let unset =
        action(json!({"url": server.url("/"), "headers": {"Authorization": "Bearer ${NOPE}"}}));
    // Nothing listens there.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let unreachable = action(
        json!({"url": format!("http://{closed}/"), "headers": {"Authorization": "Bearer ${TOKEN}"}}),
    );
    let refused = action(
        json!({"url": server.url("/"), "allow_loopback": false, "headers": {"Authorization": "${TOKEN}"}}),
    );
    let failing = Recorder::fixed("401 Unauthorized", &[], b"no").await;
    let status = action(json!({"url": failing.url("/"), "headers": {"Authorization": "${TOKEN}"}}));
    for (a, want) in [
        (&broken, "`BROKEN`"),
        (&unset, "`NOPE`"),
        (&unreachable, "could not connect"),
        (&refused, "loopback"),
        (&status, "HTTP 401"),
    ] {
        let e = call(a, json!({})).await.unwrap_err();
        let text = format!("{e} {e:?}");
        assert!(text.contains(want), "{text}");
        assert!(!text.contains(SECRET) && !text.contains("s3cr3t"), "{text}");
    }
}

#[tokio::test]
async fn loopback_off_refuses_before_connecting() {
    let server = Recorder::fixed("200 OK", &[], b"").await;
    let port = server.addr.port();
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
    ] {
        let a = action(json!({"url": url, "allow_loopback": false}));
        let e = call(&a, json!({})).await.unwrap_err();
        assert!(matches!(e, RunError::Refused(_)), "{url}: {e}");
        assert!(e.to_string().contains("127.0.0.0/8"), "{e}");
    }
    assert_eq!(server.connections(), 0);
    // Loopback is allowed by default.
    call(&action(json!({"url": server.url("/")})), json!({}))
        .await
        .unwrap();
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn private_addresses_need_allow_private() {
    for url in [
        "http://10.255.255.1:9/",
        "http://169.254.169.254/latest/meta-data/",
        "http://0.0.0.0:9/",
    ] {
        let a = action(json!({"url": url}));
        let e = call(&a, json!({})).await.unwrap_err();
        assert!(matches!(e, RunError::Refused(_)), "{url}: {e}");
        assert!(e.to_string().contains("allow_private"), "{e}");
    }
}

#[tokio::test]
async fn redirects_stay_on_the_origin_unless_listed() {
    let other = Recorder::fixed("200 OK", &[], b"other").await;
    let to_other = format!("location: http://localhost:{}/landed", other.addr.port());
    let origin = Recorder::fixed("302 Found", &[to_other.as_str()], b"").await;
    let spec = |hosts: Value| {
        json!({"url": origin.url("/start"), "headers": {"Authorization": "Bearer ${TOKEN}", "X-Plain": "1"},
               "redirects": {"hosts": hosts}})
    };
    let e = call(&action(spec(json!([]))), json!({})).await.unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, RunError::Refused(_)), "{text}");
    assert!(
        text.contains(&format!("localhost:{}", other.addr.port())),
        "{text}"
    );
    assert_eq!(other.connections(), 0, "the other host saw no connection");

    let listed = action(spec(json!([format!("localhost:{}", other.addr.port())])));
    let out = call(&listed, json!({})).await.unwrap();
    assert_eq!(out.bytes, b"other");
    assert_eq!(other.connections(), 1);
    let raw = other.last();
    assert_eq!(request_line(&raw), "GET /landed HTTP/1.1");
    assert!(raw.contains("x-plain: 1"), "{raw}");
    assert!(
        !raw.contains(SECRET),
        "credentials stay on the tool's origin: {raw}"
    );

    // A listed host is still under the address policy.
    let policed = action(json!({"url": origin.url("/start"), "allow_loopback": false,
                                "redirects": {"hosts": [format!("localhost:{}", other.addr.port())]}}));
    assert!(matches!(
        call(&policed, json!({})).await,
        Err(RunError::Refused(_))
    ));
    assert_eq!(other.connections(), 1);
}

#[tokio::test]
async fn same_origin_redirects_and_method_changes() {
    let server = Recorder::start(Reply::With(Arc::new(|raw: &[u8]| {
        let raw = String::from_utf8_lossy(raw);
        match request_line(&raw).split(' ').nth(1).unwrap_or("") {
            "/post" => response("303 See Other", &["location: /after"], b""),
            "/keep" => response("307 Temporary Redirect", &["location: /kept"], b""),
            "/loop" => response("302 Found", &["location: /loop"], b""),
            _ => response("200 OK", &[], b"done"),
        }
    })))
    .await;
    let post = |path: &str| {
        action(json!({"method": "POST", "url": server.url(path), "body": {"text": "{text}"}}))
    };
    assert_eq!(
        call(&post("/post"), json!({"text": "x"}))
            .await
            .unwrap()
            .bytes,
        b"done"
    );
    let reqs = server.requests();
    assert!(request_line(&reqs[0]).starts_with("POST /post "));
    assert!(
        request_line(&reqs[1]).starts_with("GET /after "),
        "{}",
        reqs[1]
    );
    assert!(
        !reqs[1].contains("content-type") && reqs[1].ends_with("\r\n\r\n"),
        "{}",
        reqs[1]
    );

    call(&post("/keep"), json!({"text": "y"})).await.unwrap();
    let reqs = server.requests();
    let kept = &reqs[3];
    assert!(request_line(kept).starts_with("POST /kept "), "{kept}");
    assert!(kept.ends_with(r#"{"text":"y"}"#), "{kept}");

    let before = server.connections();
    let looping = action(json!({"url": server.url("/loop"), "redirects": {"max": 3}}));
    let e = call(&looping, json!({})).await.unwrap_err().to_string();
    assert!(e.contains("3 redirects"), "{e}");
    assert_eq!(
        server.connections() - before,
        4,
        "the first request and 3 hops"
    );

    let none = action(json!({"url": server.url("/loop"), "redirects": {"max": 0}}));
    assert!(matches!(
        call(&none, json!({})).await,
        Err(RunError::Status { status: 302, .. })
    ));
}

#[tokio::test]
async fn timeout_and_cancel() {
    let server = Recorder::start(Reply::Hang).await;
    let a = action(json!({"url": server.url("/slow")}));
    let start = std::time::Instant::now();
    let e = call_within(
        &a,
        json!({}),
        Duration::from_millis(200),
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, RunError::Timeout(_)), "{e}");
    assert!(start.elapsed() < Duration::from_secs(5));

    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.cancel();
    });
    let e = call_within(&a, json!({}), Duration::from_secs(30), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(e, RunError::Cancelled), "{e}");
}

#[tokio::test]
async fn response_body_is_capped() {
    let big = vec![b'x'; 2000];
    let sized = Recorder::fixed("200 OK", &[], &big).await;
    let chunked = Recorder::start(Reply::With(Arc::new(|_: &[u8]| {
        let mut r =
            b"HTTP/1.1 200 OK\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..4 {
            r.extend_from_slice(b"1f4\r\n");
            r.extend_from_slice(&[b'y'; 500]);
            r.extend_from_slice(b"\r\n");
        }
        r.extend_from_slice(b"0\r\n\r\n");
        r
    })))
    .await;
    for server in [&sized, &chunked] {
        let capped = action(json!({"url": server.url("/"), "max_response": 1000}));
        let e = call(&capped, json!({})).await.unwrap_err();
        assert!(
            matches!(
                e,
                RunError::TooLarge {
                    stream: Stream::Body,
                    limit: 1000
                }
            ),
            "{e}"
        );
        let roomy = action(json!({"url": server.url("/"), "max_response": "2000B"}));
        assert_eq!(call(&roomy, json!({})).await.unwrap().bytes.len(), 2000);
    }
}

#[tokio::test]
async fn non_2xx_is_a_status_error_with_the_body_head() {
    let mut body = b"not found: ".to_vec();
    body.extend(std::iter::repeat_n(b'z', 5000));
    let server = Recorder::fixed("404 Not Found", &[], &body).await;
    let e = call(&action(json!({"url": server.url("/")})), json!({}))
        .await
        .unwrap_err();
    let RunError::Status { status, body_head } = &e else {
        panic!("{e}");
    };
    assert_eq!(*status, 404);
    assert!(
        body_head.starts_with("not found: zzz") && body_head.len() <= 1024,
        "{body_head}"
    );
    assert!(e.to_string().starts_with("HTTP 404:\nnot found"), "{e}");
}

#[tokio::test]
async fn https_speaks_tls() {
    let server = Recorder::start(Reply::First).await;
    let a = action(json!({"url": format!("https://localhost:{}/", server.addr.port())}));
    let e = call(&a, json!({})).await.unwrap_err();
    assert!(e.to_string().contains("TLS"), "{e}");
    let hello = server.seen.lock().unwrap()[0].clone();
    // A TLS record of type handshake (22), then a ClientHello (1) naming the server.
    assert_eq!(hello.first(), Some(&0x16), "{hello:?}");
    assert_eq!(hello.get(5), Some(&0x01), "{hello:?}");
    assert!(hello.windows(9).any(|w| w == b"localhost"));
}

#[test]
fn compile_refusals() {
    #[rustfmt::skip]
    let cases = [
        (json!({"url": "http://{id}.example.com/"}), "http.url", "host"),
        (json!({"url": "http://h:{n}/"}), "http.url", "port"),
        (json!({"url": "http://h/x#{id}"}), "http.url", "fragment"),
        (json!({"url": "ftp://h/"}), "http.url", "http or https"),
        (json!({"url": "http://h/", "method": "GE T"}), "http.method", "not an HTTP method"),
        (json!({"url": "http://h/", "method": "GET\r\nX"}), "http.method", "not an HTTP method"),
        (json!({"url": "http://h/", "method": ""}), "http.method", "not an HTTP method"),
        (json!({"url": "http://h/", "method": "connect"}), "http.method", "tunnel"),
        (json!({"url": "http://h/", "headers": {"Bad Name": "x"}}), "http.headers.Bad Name", "header name"),
        (json!({"url": "http://h/", "headers": {"X-A:": "x"}}), "http.headers.X-A:", "header name"),
        (json!({"url": "http://h/", "headers": {"Host": "evil"}}), "http.headers.Host", "cannot be set"),
        (json!({"url": "http://h/", "headers": {"Content-Length": "1"}}), "http.headers.Content-Length", "cannot be set"),
        (json!({"url": "http://h/", "headers": {"X-A": "{nope}"}}), "http.headers.X-A", "names no property"),
        (json!({"url": "http://h/", "headers": {"X-A": "{tags...}"}}), "http.headers.X-A", "argv"),
        (json!({"url": "http://h/", "query": {"a": "{nope}"}}), "http.query.a", "names no property"),
        (json!({"url": "http://h/", "body": {"a": ["{nope}"]}}), "http.body.a[0]", "names no property"),
        (json!({"url": "http://h/", "redirects": {"hosts": ["a/b"]}}), "http.redirects.hosts[0]", "host:port"),
    ];
    for (spec, at, want) in cases {
        let parsed: HttpSpec = serde_json::from_value(spec.clone()).unwrap();
        let e = HttpAction::compile(&parsed, &schema()).unwrap_err();
        assert_eq!(e.path_text(), at, "{spec}");
        assert!(e.message.contains(want), "{spec}: {e}");
    }
}

#[test]
fn args_used_and_method() {
    let a = action(json!({
        "url": "http://h/u/{id}?q={q}",
        "query": {"n": "{n}"},
        "headers": {"X-Note": "{note}"},
        "body": {"t": "{text}", "all": "{tags}"}
    }));
    let want: BTreeSet<String> = ["id", "q", "n", "note", "text", "tags"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(a.args_used(), want);
    assert_eq!(a.method(), "GET");
}
