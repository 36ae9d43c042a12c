//! `take_screenshot` on a real headless Chromium, against pages this test serves on
//! 127.0.0.1 with known geometry: a 1000 px wide body of three 1000 px bands, red, green
//! and blue, 3000 px in all.
//!
//! Tests that need the browser skip (saying so) when Chromium is not installed, unless `CI`
//! is set, where they fail instead. They run one at a time (each starts a browser). Refused
//! URLs are checked with `--chromium /nonexistent`, which proves the refusal comes before
//! any browser starts; no test sends traffic to a non-loopback address (the browser's own
//! connections go to the server's refusing proxy, never out).

use crate::http_client::{HttpServer, LEGACY, LegacySession, request};
use crate::util::Server;
use base64::Engine;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const BANDS: &str = "<!doctype html><html><head><style>\
    html, body { margin: 0; padding: 0; }\
    div { width: 1000px; height: 1000px; }\
    </style></head><body>\
    <div style=\"background: #ff0000\"></div>\
    <div style=\"background: #00ff00\"></div>\
    <div style=\"background: #0000ff\"></div>\
    </body></html>";

/// The bands page with `extra` laid over its top left corner (not changing its size).
fn bands_with(extra: &str) -> String {
    BANDS.replace(
        "</body>",
        &format!("<div style=\"position: absolute; top: 0; left: 0\">{extra}</div></body>"),
    )
}

const RED: [u8; 3] = [255, 0, 0];
const GREEN: [u8; 3] = [0, 255, 0];
const BLUE: [u8; 3] = [0, 0, 255];

// ---------------------------------------------------------------------------------------
// Skipping, serializing

fn chromium_installed() -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
        "chrome",
    ]
    .iter()
    .any(|name| std::env::split_paths(&path).any(|d| d.join(name).is_file()))
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Holds the browser tests to one at a time; `None` (after saying so) when they must skip.
pub(crate) fn browser_test(name: &str) -> Option<MutexGuard<'static, ()>> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    if !chromium_installed() {
        assert!(
            !ci(),
            "{name}: CI is set but Chromium is not installed (apt-get install -y chromium)"
        );
        eprintln!(
            "SKIPPED {name}: Chromium is not installed (apt-get install chromium); with CI=true this fails"
        );
        return None;
    }
    Some(ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner()))
}

// ---------------------------------------------------------------------------------------
// Pages served on 127.0.0.1

/// A tiny HTTP server on 127.0.0.1; records the paths it was asked for.
pub(crate) struct Pages {
    addr: SocketAddr,
    hits: Arc<Mutex<Vec<String>>>,
}

impl Pages {
    pub(crate) fn start() -> Pages {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let recorded = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let hits = recorded.clone();
                std::thread::spawn(move || answer(stream, &hits, addr.port()));
            }
        });
        Pages { addr, hits }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}

fn answer(mut stream: TcpStream, hits: &Mutex<Vec<String>>, port: u16) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {}
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_owned();
    hits.lock().unwrap().push(path.clone());
    let html = |body: String| {
        (
            "200 OK",
            vec![("Content-Type", "text/html".to_owned())],
            body,
        )
    };
    let redirect = |to: &str| {
        (
            "302 Found",
            vec![("Location", to.to_owned())],
            String::new(),
        )
    };
    let (status, headers, body) = match path.as_str() {
        "/bands" => html(BANDS.to_owned()),
        "/redirect-local" => redirect("/bands"),
        "/redirect-private" => redirect("http://10.0.0.1/secret"),
        "/private-image" => html(bands_with(&format!(
            "<img src=\"http://10.0.0.1/x.png\"><img src=\"http://0.0.0.0:{port}/leak-image\">\
             <img src=\"http://[::ffff:0:a00:1]/translated.png\">"
        ))),
        // Sockets to private addresses, and an image that keeps the page loading meanwhile.
        "/ws-private" => html(bands_with(
            "<script>new WebSocket('ws://10.0.0.7:8080/exfil?data=secret');\
             new WebSocket('wss://10.0.0.8/')</script><img src=\"/slow\">",
        )),
        p if p.starts_with("/ws-to/") => html(bands_with(&format!(
            "<script>new WebSocket('ws://0.0.0.0:{}/exfil?data=secret')</script><img src=\"/slow\">",
            &p["/ws-to/".len()..]
        ))),
        // localhost is another site than 127.0.0.1: the frame runs in its own process.
        "/framed" => html(bands_with(&format!(
            "<iframe src=\"http://localhost:{port}/frame-inner\"></iframe><img src=\"/slow\">"
        ))),
        "/frame-inner" => html(format!("<img src=\"http://0.0.0.0:{port}/leak-frame\">")),
        "/worker" => html(bands_with(
            "<script>new Worker('/worker.js')</script><img src=\"/slow\">",
        )),
        "/worker.js" => (
            "200 OK",
            vec![("Content-Type", "text/javascript".to_owned())],
            format!("fetch('http://0.0.0.0:{port}/leak-worker').catch(() => {{}});"),
        ),
        "/websocket" => html(bands_with(&format!(
            "<script>new WebSocket('ws://0.0.0.0:{port}/leak-websocket')</script><img src=\"/slow\">"
        ))),
        "/slow" => {
            std::thread::sleep(Duration::from_millis(1500));
            ("404 Not Found", vec![], String::new())
        }
        _ => ("404 Not Found", vec![], "not found".to_owned()),
    };
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

/// A server on 127.0.0.1 that accepts connections and never answers.
fn silent_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            match stream {
                Ok(s) => held.push(s),
                Err(_) => break,
            }
        }
    });
    addr
}

// ---------------------------------------------------------------------------------------
// The server under test

/// `toolwright serve` that, when dropped, closes stdin and waits, so the server exits on
/// its own and takes its browser down with it.
struct Shooter(Server);

impl Shooter {
    fn start(args: &[&str]) -> Shooter {
        Shooter(Server::legacy("2025-11-25", args))
    }

    /// Calls take_screenshot and returns the result (the response must be a result).
    fn shoot(&mut self, args: Value) -> Value {
        let r = self.0.request(
            "tools/call",
            json!({"name": "take_screenshot", "arguments": args}),
        );
        assert!(r.get("result").is_some(), "expected a result: {r}");
        r["result"].clone()
    }

    /// Shuts the server down and returns its exit status.
    fn stop(&mut self) -> Option<std::process::ExitStatus> {
        self.0.close_stdin();
        self.0.wait_exit(Duration::from_secs(15))
    }
}

impl Deref for Shooter {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.0
    }
}

impl DerefMut for Shooter {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.0
    }
}

impl Drop for Shooter {
    fn drop(&mut self) {
        self.stop();
    }
}

// ---------------------------------------------------------------------------------------
// Reading results

fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected isError: {result}");
    result["content"][0]["text"]
        .as_str()
        .expect("an error text")
        .to_owned()
}

fn diag(result: &Value) -> &Value {
    &result["_meta"]["toolwright/screenshot"]
}

pub(crate) fn pid(result: &Value) -> u32 {
    diag(result)["browserPid"]
        .as_u64()
        .expect("browserPid in _meta") as u32
}

/// A decoded PNG: width, height and RGB(A) rows.
pub(crate) struct Image {
    width: u32,
    height: u32,
    channels: usize,
    stride: usize,
    pixels: Vec<u8>,
}

impl Image {
    fn rgb(&self, x: u32, y: u32) -> [u8; 3] {
        let at = y as usize * self.stride + x as usize * self.channels;
        [self.pixels[at], self.pixels[at + 1], self.pixels[at + 2]]
    }

    pub(crate) fn assert_color(&self, x: u32, y: u32, want: [u8; 3]) {
        let got = self.rgb(x, y);
        let close = got.iter().zip(want).all(|(g, w)| g.abs_diff(w) <= 3);
        assert!(close, "pixel ({x}, {y}) is {got:?}, expected {want:?}");
    }
}

/// Checks the shape of a successful result and decodes its PNG; its size must equal
/// `structuredContent`'s and the text block must be that JSON.
pub(crate) fn decode(result: &Value) -> Image {
    assert_ne!(
        result["isError"], true,
        "the call failed: {}",
        result["content"]
    );
    let sc = &result["structuredContent"];
    assert_eq!(sc["format"], "png");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "image");
    assert_eq!(content[0]["mimeType"], "image/png");
    assert_eq!(content[1]["type"], "text");
    let text: Value = serde_json::from_str(content[1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, sc, "the text block must be the structured content");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(content[0]["data"].as_str().unwrap())
        .unwrap();
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    let image = Image {
        width: info.width,
        height: info.height,
        channels,
        stride: info.line_size,
        pixels,
    };
    assert_eq!(
        sc["width"], image.width,
        "structuredContent width vs the PNG"
    );
    assert_eq!(
        sc["height"], image.height,
        "structuredContent height vs the PNG"
    );
    image
}

/// The state letter of a process (`None` once it is gone).
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.trim_start().chars().next()
}

/// True until the process has fully exited. A killed process shows as a zombie while its
/// other threads still tear down; it has exited once only the zombie leader is left.
fn running(pid: u32) -> bool {
    let threads = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:")?.trim().parse::<u32>().ok())
            .unwrap_or(0)
    };
    match process_state(pid) {
        None | Some('X') => false,
        Some('Z') => threads() > 1,
        Some(_) => true,
    }
}

pub(crate) fn wait_until_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while running(pid) {
        assert!(Instant::now() < deadline, "process {pid} did not go away");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------------
// Tests that need no browser

#[test]
fn definition_matches_the_seed() {
    let mut s = Server::legacy("2025-11-25", &["--chromium", "/nonexistent"]);
    let list = s.request("tools/list", json!({}));
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "take_screenshot")
        .expect("take_screenshot is listed")
        .clone();
    let input = &tool["inputSchema"];
    assert_eq!(input["required"], json!(["url"]));
    assert_eq!(input["properties"]["url"]["type"], "string");
    assert_eq!(
        input["properties"]["fullPage"],
        json!({"type": "boolean", "description": input["properties"]["fullPage"]["description"], "default": true})
    );
    let output = &tool["outputSchema"];
    assert_eq!(output["required"], json!(["width", "height", "format"]));
    assert_eq!(
        [
            &output["properties"]["width"]["type"],
            &output["properties"]["height"]["type"],
            &output["properties"]["format"]["type"]
        ],
        ["number", "number", "string"]
    );
    assert_eq!(
        tool["annotations"],
        json!({"title": "Screenshot Capture Tool", "readOnlyHint": true, "destructiveHint": false,
               "idempotentHint": true, "openWorldHint": true})
    );
    assert!(tool["description"].as_str().unwrap().contains("Use it to"));
}

#[test]
fn missing_browser_is_an_error_that_says_how_to_install_it() {
    let pages = Pages::start();
    let mut s = Shooter::start(&["--chromium", "/nonexistent/chromium"]);
    let r = s.shoot(json!({"url": pages.url("/bands")}));
    let text = error_text(&r);
    assert!(
        text.contains("apt-get install chromium") && text.contains("--chromium PATH"),
        "{text}"
    );
    assert!(text.contains("/nonexistent/chromium"), "{text}");
    s.assert_alive();
    assert!(
        pages.hits().is_empty(),
        "nothing may be fetched without a browser"
    );
}

#[test]
fn refused_urls_are_errors_before_any_connection() {
    // With no browser to start, each answer proves the policy ran first.
    let mut s = Shooter::start(&["--chromium", "/nonexistent"]);
    let cases = [
        ("file:///etc/passwd", "only http and https"),
        ("javascript:alert(1)", "only http and https"),
        ("data:text/html,<h1>hi</h1>", "only http and https"),
        ("chrome://version", "only http and https"),
        ("about:blank", "only http and https"),
        ("http://10.0.0.1/", "10.0.0.0/8 (private)"),
        ("http://192.168.1.1:8080/admin", "192.168.0.0/16"),
        ("http://172.16.5.4/", "172.16.0.0/12"),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.0.0/16 (link-local)",
        ),
        ("http://[fe80::1]/", "fe80::/10"),
        ("http://[fd00::1]/", "fc00::/7"),
        ("http://[::ffff:10.0.0.1]/", "10.0.0.0/8"),
        ("http://0.0.0.0/", "0.0.0.0/32"),
        ("http://0.1.2.3/", "0.0.0.0/8"),
        // IPv4-translated, NAT64, 6to4 and Teredo forms are judged by the IPv4 they reach.
        (
            "http://[::ffff:0:a00:1]/",
            "::ffff:0:a00:1 is in 10.0.0.0/8 (private)",
        ),
        ("http://[64:ff9b::a9fe:a9fe]/", "169.254.0.0/16"),
        ("http://[2002:c0a8:101::]/", "192.168.0.0/16"),
        ("http://[2001:0:808:808::f5ff:fffe]/", "10.0.0.0/8"),
        // Special-purpose blocks of the IANA registries.
        ("http://192.0.0.9/", "192.0.0.9/32"),
        ("http://192.31.196.1/", "192.31.196.0/24"),
        ("http://192.52.193.1/", "192.52.193.0/24"),
        ("http://192.175.48.1/", "192.175.48.0/24"),
        ("http://255.255.255.255/", "255.255.255.255/32"),
        ("http://[100:0:0:1::1]/", "100:0:0:1::/64"),
        ("http://[2620:4f:8000::1]/", "2620:4f:8000::/48"),
        ("http://[3fff::1]/", "3fff::/20"),
        ("http://[5f00::1]/", "5f00::/16"),
        ("http:///nohost", "refused"),
        ("not a url", "not a valid URL"),
    ];
    for (url, want) in cases {
        let text = error_text(&s.shoot(json!({"url": url})));
        assert!(text.contains(want), "{url}: {text}");
        assert!(
            !text.contains("Chromium browser found"),
            "{url} reached the browser: {text}"
        );
    }
    let text = error_text(&s.shoot(json!({"url": "http://10.0.0.1/"})));
    assert!(text.contains("--screenshot-allow-private"), "{text}");
}

#[test]
fn loopback_is_refused_with_no_loopback() {
    let pages = Pages::start();
    let mut s = Shooter::start(&["--screenshot-no-loopback", "--chromium", "/nonexistent"]);
    let port = pages.addr.port();
    for url in [
        pages.url("/bands"),
        format!("http://localhost:{port}/bands"),
        format!("http://[::1]:{port}/"),
        format!("http://[::ffff:0:127.0.0.1]:{port}/"),
    ] {
        let text = error_text(&s.shoot(json!({"url": url})));
        assert!(
            text.contains("loopback") && text.contains("--screenshot-no-loopback"),
            "{url}: {text}"
        );
    }
    assert!(pages.hits().is_empty());
}

#[test]
fn unknown_arguments_are_refused_by_the_schema() {
    let mut s = Shooter::start(&["--chromium", "/nonexistent"]);
    let r = s.shoot(json!({"url": "http://127.0.0.1/", "full_page": false}));
    assert_eq!(r["isError"], true, "{r}");
    let r = s.shoot(json!({"url": "http://127.0.0.1/", "viewportWidth": 5}));
    assert_eq!(r["isError"], true, "{r}");
}

// ---------------------------------------------------------------------------------------
// Tests on the real browser

#[test]
fn full_page_captures_the_whole_page() {
    let Some(_one) = browser_test("full_page_captures_the_whole_page") else {
        return;
    };
    let pages = Pages::start();
    let mut s = Shooter::start(&[]);
    let r = s.shoot(json!({"url": pages.url("/bands"), "viewportWidth": 1000}));
    let img = decode(&r);
    assert_eq!((img.width, img.height), (1000, 3000));
    for (y, color) in [
        (0, RED),
        (500, RED),
        (999, RED),
        (1000, GREEN),
        (1500, GREEN),
        (2000, BLUE),
        (2999, BLUE),
    ] {
        for x in [0, 500, 999] {
            img.assert_color(x, y, color);
        }
    }
    let d = diag(&r);
    assert_eq!(
        (d["pageWidth"].as_u64(), d["pageHeight"].as_u64()),
        (Some(1000), Some(3000))
    );
    assert_eq!(d["httpStatus"], 200);
    assert_eq!(d["truncated"], false);
}

#[test]
fn full_page_is_the_default_and_false_captures_the_viewport() {
    let Some(_one) = browser_test("full_page_is_the_default_and_false_captures_the_viewport")
    else {
        return;
    };
    let pages = Pages::start();
    let mut s = Shooter::start(&[]);
    let viewport = decode(&s.shoot(json!({"url": pages.url("/bands"), "fullPage": false})));
    assert_eq!(
        (viewport.width, viewport.height),
        (1280, 800),
        "the default viewport"
    );
    viewport.assert_color(500, 799, RED);
    viewport.assert_color(1100, 400, [255, 255, 255]); // right of the 1000 px body
    let sized = decode(&s.shoot(json!({"url": pages.url("/bands"), "fullPage": false, "viewportWidth": 1000, "viewportHeight": 1500})));
    assert_eq!((sized.width, sized.height), (1000, 1500));
    sized.assert_color(500, 999, RED);
    sized.assert_color(500, 1499, GREEN);
    let full = decode(&s.shoot(json!({"url": pages.url("/bands")})));
    assert_eq!(
        (full.width, full.height),
        (1280, 3000),
        "full page at the default width"
    );
    full.assert_color(500, 2999, BLUE);
}

#[test]
fn tall_pages_are_cut_at_the_height_cap() {
    let Some(_one) = browser_test("tall_pages_are_cut_at_the_height_cap") else {
        return;
    };
    let pages = Pages::start();
    let mut s = Shooter::start(&["--screenshot-max-height", "1500"]);
    let r = s.shoot(json!({"url": pages.url("/bands"), "viewportWidth": 1000}));
    let img = decode(&r);
    assert_eq!((img.width, img.height), (1000, 1500));
    img.assert_color(500, 1499, GREEN);
    assert_eq!(diag(&r)["truncated"], true);
    let note = r["content"][2]["text"].as_str().unwrap();
    assert!(
        note.contains("3000 px tall") && note.contains("1500 px"),
        "{note}"
    );
}

#[test]
fn jpeg_on_request() {
    let Some(_one) = browser_test("jpeg_on_request") else {
        return;
    };
    let pages = Pages::start();
    let mut s = Shooter::start(&[]);
    let r = s.shoot(
        json!({"url": pages.url("/bands"), "viewportWidth": 1000, "format": "jpeg", "quality": 60}),
    );
    assert_eq!(
        r["structuredContent"],
        json!({"width": 1000, "height": 3000, "format": "jpeg"})
    );
    assert_eq!(r["content"][0]["mimeType"], "image/jpeg");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(r["content"][0]["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(&bytes[..2], &[0xFF, 0xD8], "a JPEG");
}

#[test]
fn redirects_are_checked_against_the_policy() {
    let Some(_one) = browser_test("redirects_are_checked_against_the_policy") else {
        return;
    };
    let pages = Pages::start();
    let mut s = Shooter::start(&[]);
    let text = error_text(&s.shoot(json!({"url": pages.url("/redirect-private")})));
    assert!(
        text.contains("redirected")
            && text.contains("http://10.0.0.1/secret")
            && text.contains("10.0.0.0/8"),
        "{text}"
    );
    // A redirect that stays on loopback is followed.
    let r = s.shoot(json!({"url": pages.url("/redirect-local"), "viewportWidth": 1000}));
    let img = decode(&r);
    assert_eq!((img.width, img.height), (1000, 3000));
    assert_eq!(diag(&r)["finalUrl"], pages.url("/bands"));
    let hits: Vec<String> = pages
        .hits()
        .into_iter()
        .filter(|p| p != "/favicon.ico")
        .collect();
    assert_eq!(hits, ["/redirect-private", "/redirect-local", "/bands"]);
}

#[test]
fn subresources_on_refused_addresses_are_blocked() {
    let Some(_one) = browser_test("subresources_on_refused_addresses_are_blocked") else {
        return;
    };
    let pages = Pages::start();
    let mut s = Shooter::start(&[]);
    // Images on the page, in a frame of another site (another process), from a worker; a
    // WebSocket. The refused targets are 0.0.0.0:port, which would reach this test's own
    // server: a request that got through shows up in its log.
    let cases = [
        (
            "/private-image",
            vec![
                "http://10.0.0.1/x.png",
                "/leak-image",
                "http://[::ffff:0:a00:1]/translated.png",
            ],
        ),
        ("/framed", vec!["/leak-frame"]),
        ("/worker", vec!["/leak-worker"]),
    ];
    for (page, blocked) in cases {
        let r = s.shoot(json!({"url": pages.url(page), "viewportWidth": 1000}));
        let img = decode(&r);
        assert_eq!((img.width, img.height), (1000, 3000), "{page}");
        let d = diag(&r);
        assert_eq!(d["blockedRequests"], blocked.len(), "{page}: {d}");
        for url in &blocked {
            let listed = d["blocked"].as_array().unwrap();
            assert!(
                listed.iter().any(|b| b
                    .as_str()
                    .is_some_and(|b| b.contains(url) && b.contains("refused"))),
                "{page}: {url} is not listed: {d}"
            );
        }
    }
    // A WebSocket is refused by the proxy before it connects; the page is still captured.
    let r = s.shoot(json!({"url": pages.url("/websocket"), "viewportWidth": 1000}));
    decode(&r);
    let listed = diag(&r)["blocked"].to_string();
    assert!(listed.contains("ws://0.0.0.0:"), "{listed}");
    std::thread::sleep(Duration::from_millis(300));
    let leaks: Vec<String> = pages
        .hits()
        .into_iter()
        .filter(|p| p.starts_with("/leak"))
        .collect();
    assert!(
        leaks.is_empty(),
        "requests that should have been blocked reached the server: {leaks:?}"
    );
}

#[test]
fn unreachable_and_hanging_pages_are_errors() {
    let Some(_one) = browser_test("unreachable_and_hanging_pages_are_errors") else {
        return;
    };
    let pages = Pages::start();
    let hanging = silent_server();
    // Bound but never listening: the port stays this test's and refuses connections (a
    // port given back could be another test's listener by the time the browser tries it).
    let refusing = tokio::net::TcpSocket::new_v4().unwrap();
    refusing.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let closed = refusing.local_addr().unwrap();
    let mut s = Shooter::start(&["--screenshot-timeout", "2"]);
    let started = Instant::now();
    let text = error_text(&s.shoot(json!({"url": format!("http://{hanging}/")})));
    assert!(text.contains("did not finish loading within 2 s"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the timeout was not applied"
    );
    let text = error_text(&s.shoot(json!({"url": format!("http://{closed}/")})));
    assert!(text.contains("ERR_CONNECTION_REFUSED"), "{text}");
    // The browser survives both.
    let img = decode(&s.shoot(json!({"url": pages.url("/bands"), "viewportWidth": 1000})));
    assert_eq!(img.height, 3000);
}

#[test]
fn the_browser_is_reused_across_calls() {
    let Some(_one) = browser_test("the_browser_is_reused_across_calls") else {
        return;
    };
    let pages = Pages::start();
    let mut s = Shooter::start(&[]);
    let args = json!({"url": pages.url("/bands"), "viewportWidth": 1000});
    let t = Instant::now();
    let first = s.shoot(args.clone());
    let cold = t.elapsed();
    let t = Instant::now();
    let second = s.shoot(args);
    let warm = t.elapsed();
    eprintln!("take_screenshot: first call {cold:?} (starts the browser), second {warm:?}");
    decode(&first);
    decode(&second);
    assert_eq!(pid(&first), pid(&second), "one browser for both calls");
    assert_eq!(
        (
            diag(&first)["browserInstance"].as_u64(),
            diag(&second)["browserInstance"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let browser = pid(&first);
    assert!(running(browser));
    assert!(
        s.stop().is_some_and(|st| st.success()),
        "the server exits when stdin closes"
    );
    wait_until_gone(browser);
}

#[test]
fn a_killed_browser_is_restarted_on_the_next_call() {
    let Some(_one) = browser_test("a_killed_browser_is_restarted_on_the_next_call") else {
        return;
    };
    let pages = Pages::start();
    let mut s = Shooter::start(&[]);
    let args = json!({"url": pages.url("/bands"), "viewportWidth": 1000});
    let first = s.shoot(args.clone());
    decode(&first);
    let old = pid(&first);
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &old.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_until_gone(old);
    let second = s.shoot(args.clone());
    decode(&second);
    assert_ne!(pid(&second), old, "a new browser");
    assert_eq!(diag(&second)["browserInstance"], 2);
    // Killed right before a call this time: the call notices and retries on a new browser.
    let current = pid(&second);
    std::process::Command::new("kill")
        .args(["-KILL", &current.to_string()])
        .status()
        .unwrap();
    let third = s.shoot(args);
    decode(&third);
    assert_eq!(diag(&third)["browserInstance"], 3);
}

#[test]
fn calls_run_concurrently_on_one_browser() {
    let Some(_one) = browser_test("calls_run_concurrently_on_one_browser") else {
        return;
    };
    let pages = Pages::start();
    let mut s = Shooter::start(&["--screenshot-concurrency", "2"]);
    let ids: Vec<i64> = (0..3)
        .map(|i| {
            let id = s.next_id();
            let args =
                json!({"url": pages.url("/bands"), "fullPage": i != 1, "viewportWidth": 1000});
            s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": "take_screenshot", "arguments": args}}));
            id
        })
        .collect();
    let results: Vec<Value> = ids
        .iter()
        .map(|id| s.response_to(&json!(id))["result"].clone())
        .collect();
    let heights: Vec<u32> = results.iter().map(|r| decode(r).height).collect();
    assert_eq!(heights, [3000, 800, 3000]);
    assert!(
        results.iter().all(|r| pid(r) == pid(&results[0])),
        "one browser"
    );
}

#[test]
fn modern_clients_get_the_same_result() {
    let Some(_one) = browser_test("modern_clients_get_the_same_result") else {
        return;
    };
    let pages = Pages::start();
    let mut s = Server::start(&[]);
    let r = s.modern("tools/call", json!({"name": "take_screenshot", "arguments": {"url": pages.url("/bands"), "fullPage": false}}));
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    let img = decode(result);
    assert_eq!((img.width, img.height), (1280, 800));
    s.close_stdin();
    s.wait_exit(Duration::from_secs(15));
}

// ---------------------------------------------------------------------------------------
// The network policy at the socket, and what the browser leaves behind

/// A TCP listener on 127.0.0.1 that counts the connections it accepts.
fn recording_listener() -> (u16, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(0));
    let count = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(_stream) = stream else { break };
            *count.lock().unwrap() += 1;
        }
    });
    (port, seen)
}

#[test]
fn websockets_to_private_addresses_are_refused_and_listed() {
    let Some(_one) = browser_test("websockets_to_private_addresses_are_refused_and_listed") else {
        return;
    };
    let pages = Pages::start();
    let mut s = Shooter::start(&[]);
    let r = s.shoot(json!({"url": pages.url("/ws-private"), "viewportWidth": 1000}));
    let img = decode(&r);
    assert_eq!((img.width, img.height), (1000, 3000));
    let d = diag(&r);
    let listed: Vec<&str> = d["blocked"]
        .as_array()
        .unwrap_or_else(|| panic!("no blocked list: {d}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for want in [
        "ws://10.0.0.7:8080/exfil?data=secret is refused: 10.0.0.7 is in 10.0.0.0/8 (private)",
        "wss://10.0.0.8/ is refused: 10.0.0.8 is in 10.0.0.0/8 (private)",
    ] {
        assert!(
            listed.iter().any(|b| b.starts_with(want)),
            "{want} is not listed: {listed:?}"
        );
    }
    assert!(d["blockedRequests"].as_u64() >= Some(2), "{d}");
}

#[test]
fn a_refused_websocket_never_reaches_its_target() {
    let Some(_one) = browser_test("a_refused_websocket_never_reaches_its_target") else {
        return;
    };
    // ws://0.0.0.0:PORT reaches this machine's 127.0.0.1:PORT, and the policy refuses
    // 0.0.0.0: the listener standing in for the target must see no connection at all
    // (before the proxy, it saw the handshake every time).
    let (port, seen) = recording_listener();
    let pages = Pages::start();
    let mut s = Shooter::start(&[]);
    for _ in 0..2 {
        let r = s.shoot(json!({"url": pages.url(&format!("/ws-to/{port}"))}));
        decode(&r);
        let listed = diag(&r)["blocked"].to_string();
        assert!(
            listed.contains(&format!("ws://0.0.0.0:{port}/exfil?data=secret is refused")),
            "{listed}"
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        *seen.lock().unwrap(),
        0,
        "the refused target was connected to"
    );
}

/// The names in `dir`.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A pid no process has.
fn unused_pid() -> u32 {
    (4_000_000..)
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .unwrap()
}

#[test]
fn browser_directories_are_removed_when_stdin_closes_and_after_a_crash() {
    let Some(_one) =
        browser_test("browser_directories_are_removed_when_stdin_closes_and_after_a_crash")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // Left by a server that was killed: swept at the first launch. One of a live server
    // (this test's process) stays.
    let stale = tmp
        .path()
        .join(format!("toolwright-chromium-{}-abc", unused_pid()));
    std::fs::create_dir_all(stale.join("profile")).unwrap();
    let live = tmp
        .path()
        .join(format!("toolwright-chromium-{}-abc", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    let pages = Pages::start();
    let server = Server::start_with_env(&[], None, &[("TMPDIR", tmp.path())]);
    let mut s = Shooter(server.handshake("2025-11-25"));
    let args = json!({"url": pages.url("/bands"), "fullPage": false});
    let first = s.shoot(args.clone());
    decode(&first);
    assert!(!stale.exists(), "the stale directory was not swept");
    assert!(live.exists(), "a live server's directory was swept");
    std::fs::remove_dir(&live).unwrap();
    decode(&s.shoot(json!({"url": pages.url("/ws-private"), "fullPage": false})));
    // A crashed browser: its directory goes when the next one starts.
    let old = pid(&first);
    std::process::Command::new("kill")
        .args(["-KILL", &old.to_string()])
        .status()
        .unwrap();
    wait_until_gone(old);
    let after = s.shoot(args.clone());
    decode(&after);
    let left = names(tmp.path());
    assert_eq!(left.len(), 1, "one directory for the one browser: {left:?}");
    assert!(left[0].starts_with("toolwright-chromium-"), "{left:?}");
    decode(&s.shoot(args));
    let browser = pid(&after);
    assert!(s.stop().is_some_and(|st| st.success()));
    wait_until_gone(browser);
    assert_eq!(names(tmp.path()), Vec::<String>::new(), "left in TMPDIR");
}

/// Calls take_screenshot over HTTP.
fn shoot_http(s: &HttpServer, session: &LegacySession, id: i64, args: Value) -> Value {
    let r = session.post(
        s,
        &request(
            id,
            "tools/call",
            json!({"name": "take_screenshot", "arguments": args}),
        ),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["result"].clone()
}

#[test]
fn browser_directories_are_removed_on_sigterm() {
    let Some(_one) = browser_test("browser_directories_are_removed_on_sigterm") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let tmp_str = tmp.path().to_str().unwrap();
    let pages = Pages::start();
    let mut s = HttpServer::start_with_env(&[], &[("TMPDIR", tmp_str)]);
    let session = LegacySession::open(&s, LEGACY);
    let args = json!({"url": pages.url("/bands"), "fullPage": false});
    let first = shoot_http(&s, &session, 2, args.clone());
    decode(&first);
    decode(&shoot_http(&s, &session, 3, args));
    assert!(!names(tmp.path()).is_empty());
    s.terminate();
    assert!(
        s.wait_exit(Duration::from_secs(15)).is_some(),
        "the server did not exit"
    );
    wait_until_gone(pid(&first));
    assert_eq!(names(tmp.path()), Vec::<String>::new(), "left in TMPDIR");
}

/// Over stdio too: SIGTERM drains the server (see stdio_robustness), which then closes its
/// browsers and removes their directories before exiting 0.
#[test]
fn browser_directories_are_removed_on_sigterm_over_stdio() {
    let Some(_one) = browser_test("browser_directories_are_removed_on_sigterm_over_stdio") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let pages = Pages::start();
    let server = Server::start_with_env(&[], None, &[("TMPDIR", tmp.path())]);
    let mut s = Shooter(server.handshake("2025-11-25"));
    let first = s.shoot(json!({"url": pages.url("/bands"), "fullPage": false}));
    decode(&first);
    assert!(!names(tmp.path()).is_empty());
    let st = std::process::Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let status = s
        .wait_exit(Duration::from_secs(15))
        .expect("the server exits");
    assert_eq!(status.code(), Some(0), "{status:?}");
    wait_until_gone(pid(&first));
    assert_eq!(names(tmp.path()), Vec::<String>::new(), "left in TMPDIR");
}

#[test]
fn the_browsers_own_connections_go_to_the_refusing_proxy() {
    let Some(_one) = browser_test("the_browsers_own_connections_go_to_the_refusing_proxy") else {
        return;
    };
    // Chromium's background services (accounts, update, time…) use the browser-wide
    // network context, whose proxy refuses everything: the count shows in `_meta` and
    // each refusal is logged at debug level.
    let pages = Pages::start();
    let s = HttpServer::start_with_env(&[], &[("TOOLWRIGHT_LOG", "toolwright::proxy=debug")]);
    let session = LegacySession::open(&s, LEGACY);
    let args = json!({"url": pages.url("/bands"), "fullPage": false});
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut id = 2;
    let refused = loop {
        let r = shoot_http(&s, &session, id, args.clone());
        decode(&r);
        let n = diag(&r)["browserOwnConnectionsRefused"].as_u64();
        assert!(n.is_some(), "no browserOwnConnectionsRefused: {}", diag(&r));
        if n > Some(0) || Instant::now() > deadline {
            break n.unwrap();
        }
        id += 1;
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(
        refused > 0,
        "no connection of the browser's own was seen in 30 s"
    );
    let stderr = s.stderr.lock().unwrap().clone();
    let lines: Vec<&String> = stderr
        .iter()
        .filter(|l| l.contains("the browser's own connections"))
        .collect();
    assert!(!lines.is_empty(), "not logged: {stderr:?}");
    eprintln!("the browser's own connections, refused: {lines:#?}");
}
