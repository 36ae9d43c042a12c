//! `toolwright_client::Peer`, the gateway's concurrent upstream connection, against real
//! servers: `toolwright serve` (both eras, stdio and HTTP, with the probe and
//! conformance fixtures) and the pinned reference `server-everything`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolwright_client::{
    BoxFuture, Call, CancellationToken, ClientError, ConnectOptions, Era, EraChoice, Peer,
    PeerHandler, PeerOptions, Target,
};
use toolwright_jsonrpc::ErrorObject;
use toolwright_protocol::ClientCapabilities;

use crate::client::{everything, toolwright_serve};
use crate::http_client::HttpServer;

/// Records what the connection's handler is given, and answers requests with `answer`.
#[derive(Default)]
struct Recorder {
    notes: Mutex<Vec<String>>,
    requests: Mutex<Vec<String>>,
    closed: Mutex<Vec<String>>,
    answer: Value,
}

impl Recorder {
    fn answering(answer: Value) -> Arc<Recorder> {
        Arc::new(Recorder {
            answer,
            ..Recorder::default()
        })
    }

    fn notes(&self) -> Vec<String> {
        self.notes.lock().unwrap().clone()
    }

    /// Waits up to `within` for a notification `method`.
    async fn wait_note(&self, method: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.notes().iter().any(|n| n == method) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }
}

impl PeerHandler for Recorder {
    fn request(
        &self,
        method: String,
        _params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        self.requests.lock().unwrap().push(method);
        let answer = self.answer.clone();
        Box::pin(async move {
            if answer.is_null() {
                Err(ErrorObject::new(-32601, "not here"))
            } else {
                Ok(answer)
            }
        })
    }
    fn notification(&self, method: &str, _params: &Value) {
        self.notes.lock().unwrap().push(method.to_owned());
    }
    fn closed(&self, why: &str) {
        self.closed.lock().unwrap().push(why.to_owned());
    }
}

fn options(era: EraChoice) -> PeerOptions {
    PeerOptions {
        connect: ConnectOptions {
            era,
            probe_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(20),
            ..ConnectOptions::default()
        },
        capabilities: ClientCapabilities {
            sampling: Some(json!({})),
            elicitation: Some(json!({})),
            roots: Some(json!({})),
            ..ClientCapabilities::default()
        },
        ..PeerOptions::default()
    }
}

fn serve(fixtures: &str) -> Target {
    Target::command(&toolwright_serve(&["--fixtures", fixtures]))
}

async fn connect(target: Target, era: EraChoice, handler: Arc<Recorder>) -> Peer {
    Peer::connect(target, options(era), handler)
        .await
        .expect("connect")
}

fn tool(name: &str, arguments: Value) -> Call {
    Call {
        name: Some(name.to_owned()),
        ..Call::new("tools/call", json!({"name": name, "arguments": arguments}))
    }
}

/// The transports and eras `toolwright serve` is reached in; the HTTP server lives as
/// long as the returned guard.
fn every_way(fixtures: &str) -> Vec<(Target, EraChoice, Option<HttpServer>)> {
    let mut out = Vec::new();
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        out.push((serve(fixtures), era, None));
        // HttpServer adds the probe fixtures itself.
        let others: Vec<&str> = fixtures.split(',').filter(|f| *f != "probe").collect();
        let others = others.join(",");
        let args: &[&str] = if others.is_empty() {
            &[]
        } else {
            &["--fixtures", &others]
        };
        let http = HttpServer::start(args);
        let url = http.url();
        out.push((Target::Http { url }, era, Some(http)));
    }
    out
}

// ------------------------------------------------------------------ concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_calls_in_flight_each_get_their_own_answer() {
    for (target, era, _http) in every_way("probe") {
        let what = format!("{} {era:?}", target.describe());
        let peer = connect(target, era, Arc::new(Recorder::default())).await;
        let started = Instant::now();
        let calls = (0..50u64).map(|i| {
            let peer = peer.clone();
            // The later calls are the shorter ones: answers come back out of order.
            let ms = (50 - i) * 6;
            async move {
                let r = peer.request(tool("probe_sleep", json!({"ms": ms}))).await;
                (ms, r)
            }
        });
        let results = futures_join_all(calls).await;
        for (ms, r) in results {
            let r = r.unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(r["structuredContent"]["slept_ms"], ms, "{what}: {r}");
        }
        // One at a time this would take 50 × 150 ms on average.
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{what}: the calls did not overlap ({:?})",
            started.elapsed()
        );
        peer.close().await;
    }
}

/// Runs the futures concurrently (on tasks) and returns their outputs in order.
async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

// ------------------------------------------------------------------ progress

/// One progress report: progress and total.
type Tick = (f64, Option<f64>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_goes_to_the_call_that_asked() {
    for (target, era, _http) in every_way("probe") {
        let what = format!("{} {era:?}", target.describe());
        let peer = connect(target, era, Arc::new(Recorder::default())).await;
        let seen: [Arc<Mutex<Vec<Tick>>>; 2] = Default::default();
        let calls = [3u64, 5].into_iter().zip(seen.clone()).map(|(steps, log)| {
            let peer = peer.clone();
            async move {
                let call = Call {
                    progress: Some(Arc::new(move |p, t, _| log.lock().unwrap().push((p, t)))),
                    ..tool("probe_progress", json!({"steps": steps, "delay_ms": 30}))
                };
                peer.request(call).await
            }
        });
        for r in futures_join_all(calls).await {
            r.unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        let got: Vec<Vec<Tick>> = seen.iter().map(|s| s.lock().unwrap().clone()).collect();
        assert_eq!(
            got,
            [
                vec![(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))],
                (1..=5).map(|i| (f64::from(i), Some(5.0))).collect(),
            ],
            "{what}"
        );
        peer.close().await;
    }
}

// ------------------------------------------------------------------ cancellation, timeouts

async fn stats(peer: &Peer) -> Value {
    peer.request(tool("probe_stats", json!({})))
        .await
        .expect("probe_stats")["structuredContent"]
        .clone()
}

/// Waits for the server to count `n` cancelled sleeps.
async fn cancelled_upstream(peer: &Peer, n: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = stats(peer).await;
        if s["cancelled"] == n || Instant::now() > deadline {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A token that fires after `ms`.
fn cancel_after(ms: u64) -> CancellationToken {
    let token = CancellationToken::new();
    let fire = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        fire.cancel();
    });
    token
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_and_timeouts_reach_the_server() {
    for (target, era, _http) in every_way("probe") {
        let what = format!("{} {era:?}", target.describe());
        let peer = connect(target, era, Arc::new(Recorder::default())).await;
        let call = Call {
            cancel: Some(cancel_after(300)),
            ..tool("probe_sleep", json!({"ms": 60_000}))
        };
        let started = Instant::now();
        let err = peer.request(call).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Cancelled { method } if method == "tools/call"),
            "{what}: {err}"
        );
        assert!(started.elapsed() < Duration::from_secs(2), "{what}: slow");
        let s = cancelled_upstream(&peer, 1).await;
        assert_eq!(s["cancelled"], 1, "{what}: the server did not see it: {s}");

        let call = Call {
            timeout: Some(Duration::from_millis(300)),
            ..tool("probe_sleep", json!({"ms": 60_000}))
        };
        let err = peer.request(call).await.unwrap_err();
        assert!(matches!(err, ClientError::Timeout { .. }), "{what}: {err}");
        let s = cancelled_upstream(&peer, 2).await;
        assert_eq!(
            s["cancelled"], 2,
            "{what}: the timeout was not cancelled upstream: {s}"
        );
        // Still serving.
        let r = peer
            .request(tool("probe_sleep", json!({"ms": 1})))
            .await
            .unwrap();
        assert_eq!(r["structuredContent"]["slept_ms"], 1, "{what}");
        peer.close().await;
    }
}

// ------------------------------------------------------------------ server → client requests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_reach_the_calls_handler_or_the_connections() {
    let sampled = json!({"role": "assistant", "content": {"type": "text", "text": "from on_request"},
                         "model": "m", "stopReason": "endTurn"});
    let roots = json!({"roots": [{"uri": "file:///from-handler", "name": "h"}]});
    for (target, era, _http) in every_way("conformance,probe") {
        if era != EraChoice::Legacy {
            continue; // the modern era has no server requests (input_required instead)
        }
        let what = target.describe();
        let handler = Recorder::answering(roots.clone());
        let peer = connect(target, era, Arc::clone(&handler)).await;
        let on_request = Recorder::answering(sampled.clone());
        let call = Call {
            on_request: Some(on_request.clone()),
            ..tool("test_sampling", json!({"prompt": "hi"}))
        };
        let r = peer.request(call).await.unwrap();
        assert_eq!(
            r["content"][0]["text"], "LLM response: from on_request",
            "{what}: {r}"
        );
        assert_eq!(
            *on_request.requests.lock().unwrap(),
            ["sampling/createMessage"],
            "{what}"
        );
        // A call without its own handler: the connection's answers.
        let r = peer.request(tool("probe_roots", json!({}))).await.unwrap();
        assert_eq!(
            r["content"][0]["text"], "[\"file:///from-handler\"]",
            "{what}: {r}"
        );
        assert_eq!(*handler.requests.lock().unwrap(), ["roots/list"], "{what}");
        peer.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_input_required_is_returned_as_a_result() {
    let http = HttpServer::start(&["--fixtures", "conformance"]);
    for target in [serve("conformance"), Target::Http { url: http.url() }] {
        let what = target.describe();
        let peer = connect(target, EraChoice::Modern, Arc::new(Recorder::default())).await;
        assert_eq!(peer.era(), Era::Modern);
        let r = peer
            .request(tool("test_elicitation", json!({"message": "who?"})))
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(r["resultType"], "input_required", "{what}: {r}");
        let asks: Vec<&Value> = r["inputRequests"].as_object().unwrap().values().collect();
        assert_eq!(asks[0]["method"], "elicitation/create", "{what}: {r}");
        peer.close().await;
    }
}

// ------------------------------------------------------------------ death, list changes

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_child_fails_every_pending_call_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let serve = toolwright_serve(&["--fixtures", "probe"]).join(" ");
    let script = format!("echo $$ > {}; exec {serve}", pid_file.display());
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let handler = Arc::new(Recorder::default());
        let peer = connect(
            Target::command(&["sh", "-c", &script]),
            era,
            handler.clone(),
        )
        .await;
        let calls = (0..5).map(|_| {
            let peer = peer.clone();
            async move {
                peer.request(tool("probe_sleep", json!({"ms": 60_000})))
                    .await
            }
        });
        let handles: Vec<_> = calls.map(tokio::spawn).collect();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!peer.is_closed());
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let killed = std::process::Command::new("kill")
            .args(["-KILL", pid.trim()])
            .status()
            .unwrap();
        assert!(killed.success());
        let started = Instant::now();
        for h in handles {
            let err = h.await.unwrap().unwrap_err();
            assert!(matches!(err, ClientError::Closed { .. }), "{era:?}: {err}");
        }
        tokio::time::timeout(Duration::from_secs(1), peer.closed())
            .await
            .expect("closed() resolves");
        assert!(started.elapsed() < Duration::from_secs(1), "{era:?}: slow");
        assert!(peer.is_closed());
        let closed = handler.closed.lock().unwrap().clone();
        assert_eq!(closed.len(), 1, "{era:?}: {closed:?}");
        let err = peer
            .request(tool("probe_stats", json!({})))
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::Closed { .. }), "{era:?}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_reach_the_handler() {
    for (target, era, _http) in every_way("probe") {
        let what = format!("{} {era:?}", target.describe());
        let handler = Arc::new(Recorder::default());
        let peer = connect(target, era, handler.clone()).await;
        // The listen or GET stream opens in the background, at no moment the client is
        // told of: change the list until a change is heard (each toggle is one).
        let deadline = Instant::now() + Duration::from_secs(20);
        let (heard, mut registered) = loop {
            let r = peer.request(tool("probe_toggle", json!({}))).await.unwrap();
            let registered = r["structuredContent"]["registered"] == true;
            let heard = handler
                .wait_note(
                    "notifications/tools/list_changed",
                    Duration::from_millis(500),
                )
                .await;
            if heard || Instant::now() > deadline {
                break (heard, registered);
            }
        };
        assert!(heard, "{what}: got {:?}", handler.notes());
        if !registered {
            let r = peer.request(tool("probe_toggle", json!({}))).await.unwrap();
            registered = r["structuredContent"]["registered"] == true;
        }
        assert!(registered, "{what}");
        let names: Vec<Value> = peer
            .list_all("tools/list", "tools")
            .await
            .unwrap()
            .into_iter()
            .map(|t| t["name"].clone())
            .collect();
        assert!(names.contains(&json!("probe_extra")), "{what}");
        assert!(
            !handler
                .notes()
                .iter()
                .any(|n| n == "notifications/subscriptions/acknowledged"),
            "{what}: the acknowledgement is not a notification for the handler"
        );
        peer.close().await;
    }
}

// ------------------------------------------------------------------ server-everything

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_concurrency_progress_sampling_and_cancellation() {
    let Some(argv) = everything() else { return };
    let sampled = json!({"role": "assistant", "content": {"type": "text", "text": "sampled here"},
                         "model": "m", "stopReason": "endTurn"});
    let handler = Arc::new(Recorder::default());
    let peer = connect(Target::command(&argv), EraChoice::Auto, handler.clone()).await;
    assert_eq!(peer.era(), Era::Legacy);
    let calls = (0..50).map(|i| {
        let peer = peer.clone();
        async move {
            let r = peer
                .request(tool("echo", json!({"message": format!("m{i}")})))
                .await;
            (i, r)
        }
    });
    for (i, r) in futures_join_all(calls).await {
        let text = r.unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(text.ends_with(&format!("m{i}")), "{text}");
    }
    // Progress, on the long-running operation.
    let ticks = Arc::new(Mutex::new(0));
    let count = ticks.clone();
    let call = Call {
        progress: Some(Arc::new(move |_, _, _| *count.lock().unwrap() += 1)),
        ..tool(
            "trigger-long-running-operation",
            json!({"duration": 0.3, "steps": 3}),
        )
    };
    peer.request(call).await.unwrap();
    assert_eq!(*ticks.lock().unwrap(), 3);
    // Sampling, answered by the call's own handler.
    let call = Call {
        on_request: Some(Recorder::answering(sampled)),
        ..tool("trigger-sampling-request", json!({"prompt": "p"}))
    };
    let r = peer.request(call).await.unwrap();
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("sampled here"),
        "{r}"
    );
    // Cancellation: the call returns at once, and the server keeps serving.
    let call = Call {
        cancel: Some(cancel_after(200)),
        ..tool(
            "trigger-long-running-operation",
            json!({"duration": 30, "steps": 30}),
        )
    };
    let started = Instant::now();
    let err = peer.request(call).await.unwrap_err();
    assert!(matches!(err, ClientError::Cancelled { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    let r = peer
        .request(tool("echo", json!({"message": "after"})))
        .await
        .unwrap();
    assert!(r["content"][0]["text"].as_str().unwrap().ends_with("after"));
    peer.close().await;
}

/// A modern-only server that answers only after the era probe timed out (a cold start) is
/// still reached, in the modern era: its refusal of the handshake says what it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_server_too_slow_for_the_probe_is_still_reached() {
    let Some(argv) = crate::gateway::modern_server() else {
        return;
    };
    let mut opts = options(EraChoice::Auto);
    opts.connect.probe_timeout = Duration::from_millis(300);
    // The server starts reading its stdin only after the probe's timeout has passed.
    let target = Target::Stdio {
        program: "/bin/sh".into(),
        args: vec![
            "-c".into(),
            "sleep 2; exec \"$0\" \"$1\"".into(),
            argv[0].clone(),
            argv[1].clone(),
        ],
    };
    let peer = Peer::connect(target, opts, Arc::new(Recorder::default()))
        .await
        .expect("connected, though the probe went unanswered");
    assert_eq!(peer.era(), Era::Modern);
    let r = peer
        .request(tool("add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(r["structuredContent"]["result"], 5, "{r}");
    peer.close().await;
}
