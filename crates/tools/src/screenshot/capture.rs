//! One capture: a fresh browser context whose connections all go through a policy proxy of
//! its own, a tab, the page loaded within the deadline, the image taken, and the context
//! disposed whatever happens.
//!
//! The proxy (`proxy`) is where the policy is enforced: every connection of the context
//! (documents, redirects, subresources, frames, workers, service workers, WebSockets,
//! WebRTC over TURN) is resolved, checked and opened there, and a refused one never
//! reaches its target. `proxyBypassList: "<-loopback>"` stops Chromium from going around
//! it for loopback addresses, which it does otherwise.
//!
//! The `Fetch` domain still pauses every request of the tab (and of the targets attached
//! under it) for what only it can see: the scheme (`file:` and the like are refused), the
//! whole URL of a refused request (the proxy sees only `host:port` of `https`), and which
//! request is the main document. A refused main document, or a redirect to a refused URL,
//! ends the call with an error, whether `Fetch` or the proxy refused it; refused
//! subresources and WebSockets are listed in the result's `_meta`, and the screenshot is
//! taken. Service workers are bypassed for the page's own requests.

use super::browser::Browser;
use super::cdp::Cdp;
use super::error::{ImageError, Refusal, ScreenshotError};
use super::image::{self, Format};
use super::policy::{Policy, RequestChecker};
use super::proxy::{Outcome, Proxy, Resolve, Rules};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use url::Url;

/// Widest image taken of a full page, in pixels.
const MAX_WIDTH: u32 = 16_384;

/// Subresources listed as blocked in `_meta`, at most.
const MAX_BLOCKED_LISTED: usize = 20;

/// What to capture.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// The page (already admitted by the policy).
    pub url: Url,
    /// The whole scrollable page, or only the viewport.
    pub full_page: bool,
    /// Viewport width and height, CSS pixels.
    pub viewport: (u32, u32),
    /// Image format.
    pub format: Format,
    /// JPEG quality, 1–100.
    pub quality: u32,
}

/// Limits from the server's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// From navigation to the load event.
    pub timeout: Duration,
    /// Tallest image.
    pub max_height: u32,
}

/// A captured image and what was learned on the way.
#[derive(Debug)]
pub(crate) struct Shot {
    /// The encoded image.
    pub bytes: Vec<u8>,
    /// Its width in pixels, read from the image.
    pub width: u32,
    /// Its height in pixels, read from the image.
    pub height: u32,
    /// The page's URL after redirects.
    pub final_url: Option<String>,
    /// The HTTP status of the main document.
    pub status: Option<u64>,
    /// The page's full size, CSS pixels.
    pub page_size: (u32, u32),
    /// True when the page was taller than the height cap.
    pub truncated: bool,
    /// Requests the policy refused (subresources).
    pub blocked: Vec<String>,
    /// How many were refused in all.
    pub blocked_count: usize,
    /// Milliseconds spent opening the tab, loading the page, and capturing it.
    pub phases_ms: [(&'static str, u64); 3],
}

/// What the event loop learned.
#[derive(Debug, Default)]
struct State {
    loaded: HashSet<String>,
    main_refusal: Option<Refusal>,
    /// `host:port` of every main-document request (the first one and its redirects).
    main_authorities: Vec<String>,
    blocked: Vec<String>,
    blocked_count: usize,
    /// URLs of the WebSockets the page opened.
    sockets: Vec<String>,
    final_url: Option<String>,
    status: Option<u64>,
    crashed: bool,
}

/// Disposes the tab's browser context (closing the tab) when the capture ends, however it
/// ends; stops the event loop.
struct Tab {
    browser: Arc<Browser>,
    context: String,
    session: Option<String>,
    events: Option<tokio::task::JoinHandle<()>>,
    _proxy: Arc<Proxy>,
}

impl Drop for Tab {
    fn drop(&mut self) {
        if let Some(t) = self.events.take() {
            t.abort();
        }
        if let Some(s) = &self.session {
            self.browser.cdp.unsubscribe(s);
        }
        let (browser, context) = (self.browser.clone(), std::mem::take(&mut self.context));
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let params = json!({"browserContextId": context});
                if let Err(e) = browser
                    .cdp
                    .call(None, "Target.disposeBrowserContext", params)
                    .await
                {
                    tracing::debug!("disposing a browser context: {e}");
                }
            });
        }
    }
}

fn field(v: &Value, name: &str, method: &str) -> Result<String, ScreenshotError> {
    v.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ScreenshotError::Protocol {
            method: method.into(),
            message: format!("the answer has no {name}: {v}"),
        })
}

/// Loads `req.url` in a new tab of `browser` and captures it.
pub(crate) async fn capture(
    browser: Arc<Browser>,
    req: &Request,
    policy: Policy,
    limits: Limits,
    resolver: Arc<dyn Resolve>,
) -> Result<Shot, ScreenshotError> {
    let t0 = Instant::now();
    let mut opened = open_tab(browser.clone(), policy, resolver).await?;
    let cdp = &browser.cdp;
    let s = Some(opened.session.as_str());
    configure(cdp, s, req.viewport).await?;

    let t1 = Instant::now();
    let deadline = t1 + limits.timeout;
    load(cdp, &mut opened, req, limits, deadline).await?;
    let s = Some(opened.session.as_str());

    let t2 = Instant::now();
    // Web fonts that are still loading would render as fallbacks; wait for them a little.
    let fonts =
        json!({"expression": "document.fonts.ready.then(() => true)", "awaitPromise": true});
    let fonts_deadline = deadline.min(Instant::now() + Duration::from_secs(5));
    let _ = tokio::time::timeout_at(fonts_deadline, cdp.call(s, "Runtime.evaluate", fonts)).await;

    let image = take_image(cdp, s, req, limits).await?;
    finish(&opened, req, image, [t0, t1, t2]).await
}

/// A tab open in a context of its own, its event loop running.
struct Opened {
    /// Disposes the context when dropped; kept for the whole capture.
    _tab: Tab,
    /// The tab's CDP session.
    session: String,
    /// What the event loop learned so far.
    state: watch::Receiver<State>,
    /// The context's policy proxy.
    proxy: Arc<Proxy>,
}

/// Starts a policy proxy, a browser context going through it, a blank tab in that context
/// and the event loop of the tab's session.
async fn open_tab(
    browser: Arc<Browser>,
    policy: Policy,
    resolver: Arc<dyn Resolve>,
) -> Result<Opened, ScreenshotError> {
    let cdp = &browser.cdp;
    let proxy = Proxy::start(Rules::Policy(policy), browser.guarded_ports(), resolver)
        .await
        .map(Arc::new)
        .map_err(|e| ScreenshotError::Proxy(e.to_string()))?;
    let params = json!({"proxyServer": proxy.url(), "proxyBypassList": "<-loopback>"});
    let created = cdp
        .call(None, "Target.createBrowserContext", params)
        .await?;
    let context = field(&created, "browserContextId", "Target.createBrowserContext")?;
    let mut tab = Tab {
        browser: browser.clone(),
        context: context.clone(),
        session: None,
        events: None,
        _proxy: proxy.clone(),
    };

    let params = json!({"url": "about:blank", "browserContextId": context});
    let target = field(
        &cdp.call(None, "Target.createTarget", params).await?,
        "targetId",
        "Target.createTarget",
    )?;
    let params = json!({"targetId": target, "flatten": true});
    let attached = cdp.call(None, "Target.attachToTarget", params).await?;
    let session = field(&attached, "sessionId", "Target.attachToTarget")?;
    tab.session = Some(session.clone());

    let events = cdp.subscribe(&session);
    let (state_tx, state) = watch::channel(State::default());
    let checker = Arc::new(RequestChecker::new(policy));
    // The main frame's id is the page target's id.
    let loop_ctx = Loop {
        browser: browser.clone(),
        main_session: session.clone(),
        main_frame: target,
        checker,
    };
    tab.events = Some(tokio::spawn(loop_ctx.run(events, state_tx)));
    Ok(Opened {
        _tab: tab,
        session,
        state,
        proxy,
    })
}

/// Enables the domains the capture listens to and sets the viewport.
async fn configure(cdp: &Cdp, s: Option<&str>, (w, h): (u32, u32)) -> Result<(), ScreenshotError> {
    let setup: [(&str, Value); 7] = [
        ("Page.enable", json!({})),
        ("Page.setLifecycleEventsEnabled", json!({"enabled": true})),
        ("Network.enable", json!({})),
        ("Network.setBypassServiceWorker", json!({"bypass": true})),
        ("Fetch.enable", fetch_patterns()),
        ("Target.setAutoAttach", auto_attach()),
        (
            "Emulation.setDeviceMetricsOverride",
            json!({"width": w, "height": h, "deviceScaleFactor": 1, "mobile": false}),
        ),
    ];
    // Independent commands: sent at once, answered in order, all done before navigating.
    futures_util::future::try_join_all(setup.map(|(method, params)| cdp.call(s, method, params)))
        .await?;
    Ok(())
}

/// The error of a capture that ran out of time.
fn timed_out(req: &Request, limits: Limits) -> ScreenshotError {
    ScreenshotError::Timeout {
        url: req.url.to_string(),
        limit: limits.timeout,
    }
}

/// Navigates to `req.url` and waits, until `deadline`, for its load event (or a crash or
/// refusal, which fail the capture).
async fn load(
    cdp: &Cdp,
    opened: &mut Opened,
    req: &Request,
    limits: Limits,
    deadline: Instant,
) -> Result<(), ScreenshotError> {
    let s = Some(opened.session.as_str());
    let nav = tokio::time::timeout_at(
        deadline,
        cdp.call(s, "Page.navigate", json!({"url": req.url.as_str()})),
    )
    .await
    .map_err(|_| timed_out(req, limits))??;
    page_ok(&opened.state.borrow(), req, &opened.proxy)?;
    if let Some(err) = nav
        .get("errorText")
        .and_then(Value::as_str)
        .filter(|e| !e.is_empty())
    {
        return Err(ScreenshotError::Navigation {
            url: req.url.to_string(),
            reason: err.to_owned(),
        });
    }
    let loader = nav
        .get("loaderId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let loaded = opened.state.wait_for(|st| {
        st.crashed
            || st.main_refusal.is_some()
            || match &loader {
                Some(l) => st.loaded.contains(l),
                None => !st.loaded.is_empty(),
            }
    });
    match tokio::time::timeout_at(deadline, loaded).await {
        Err(_) => return Err(timed_out(req, limits)),
        Ok(Err(_)) => return Err(ScreenshotError::BrowserGone),
        Ok(Ok(_)) => {}
    }
    page_ok(&opened.state.borrow(), req, &opened.proxy)?;
    Ok(())
}

/// The image taken, and the page's size.
struct Image {
    bytes: Vec<u8>,
    width: u32,
    height: u32,
    page_size: (u32, u32),
    truncated: bool,
}

/// Measures the loaded page and captures it: the viewport, or the whole page up to the
/// size caps.
async fn take_image(
    cdp: &Cdp,
    s: Option<&str>,
    req: &Request,
    limits: Limits,
) -> Result<Image, ScreenshotError> {
    let metrics = cdp.call(s, "Page.getLayoutMetrics", json!({})).await?;
    let css = |k: &str| {
        metrics["cssContentSize"][k]
            .as_f64()
            .unwrap_or(0.0)
            .ceil()
            .max(1.0) as u32
    };
    let page_size = (css("width").max(req.viewport.0), css("height"));
    let mut shot_params = json!({"format": req.format.name(), "fromSurface": true});
    if req.format == Format::Jpeg {
        shot_params["quality"] = json!(req.quality);
    }
    let mut truncated = false;
    if req.full_page {
        let width = page_size.0.min(MAX_WIDTH);
        let height = page_size.1.min(limits.max_height);
        truncated = page_size.1 > limits.max_height;
        shot_params["captureBeyondViewport"] = json!(true);
        shot_params["clip"] = json!({"x": 0, "y": 0, "width": width, "height": height, "scale": 1});
    }
    let captured = tokio::time::timeout(
        limits.timeout,
        cdp.call(s, "Page.captureScreenshot", shot_params),
    )
    .await
    .map_err(|_| timed_out(req, limits))??;
    let data = field(&captured, "data", "Page.captureScreenshot")?;
    let bytes = base64_decode(&data)?;
    let (width, height) = image::dimensions(req.format, &bytes)?;
    Ok(Image {
        bytes,
        width,
        height,
        page_size,
        truncated,
    })
}

/// Waits a little for the proxy's verdict on each WebSocket the page opened, so that it can
/// be listed, checks the page once more and puts the result together (its phases
/// timed from three instants: when the tab was asked for, when navigation began and when the
/// page had loaded).
async fn finish(
    opened: &Opened,
    req: &Request,
    image: Image,
    [t0, t1, t2]: [Instant; 3],
) -> Result<Shot, ScreenshotError> {
    let proxy = &opened.proxy;
    let sockets = opened.state.borrow().sockets.clone();
    let verdicts = Instant::now() + SOCKET_VERDICT_WAIT;
    while Instant::now() < verdicts && !all_decided(&sockets, proxy) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let st = opened.state.borrow();
    page_ok(&st, req, proxy)?;
    let (blocked, blocked_count) = blocked_list(&st, proxy);
    Ok(Shot {
        bytes: image.bytes,
        width: image.width,
        height: image.height,
        final_url: st.final_url.clone(),
        status: st.status,
        page_size: image.page_size,
        truncated: image.truncated,
        blocked,
        blocked_count,
        phases_ms: [
            ("tab", ms(t1 - t0)),
            ("load", ms(t2 - t1)),
            ("capture", ms(t2.elapsed())),
        ],
    })
}

fn ms(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

fn base64_decode(data: &str) -> Result<Vec<u8>, ScreenshotError> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| ScreenshotError::BadImage(ImageError::Base64(e)))
}

/// How long to wait, after the image, for the proxy to see the page's WebSockets.
const SOCKET_VERDICT_WAIT: Duration = Duration::from_secs(1);

/// `host:port` of a URL, as a proxy request names it.
fn authority(url: &str) -> Option<String> {
    let u = Url::parse(url).ok()?;
    Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?))
}

/// True when the proxy has seen a connection for every one of `sockets`.
fn all_decided(sockets: &[String], proxy: &Proxy) -> bool {
    let (attempts, _, _) = proxy.attempts();
    sockets.iter().filter_map(|s| authority(s)).all(|a| {
        attempts
            .iter()
            .any(|t| t.authority.eq_ignore_ascii_case(&a))
    })
}

/// The same refusal, about `url`.
fn about(r: &Refusal, new_url: String) -> Refusal {
    let mut r = r.clone();
    match &mut r {
        Refusal::Address { url, .. }
        | Refusal::Unresolvable { url, .. }
        | Refusal::Internal { url, .. } => *url = new_url,
        _ => {}
    }
    r
}

/// What `Fetch` refused, then what the proxy refused (a WebSocket named by its URL), and
/// how many in all.
fn blocked_list(st: &State, proxy: &Proxy) -> (Vec<String>, usize) {
    let (attempts, refused, _) = proxy.attempts();
    let mut listed = st.blocked.clone();
    for a in &attempts {
        let Outcome::Refused(r) = &a.outcome else {
            continue;
        };
        if listed.len() >= MAX_BLOCKED_LISTED {
            break;
        }
        let socket = st
            .sockets
            .iter()
            .find(|s| authority(s).is_some_and(|x| x.eq_ignore_ascii_case(&a.authority)));
        listed.push(match socket {
            Some(url) if a.target.starts_with("CONNECT ") => about(r, url.clone()).to_string(),
            _ => r.to_string(),
        });
    }
    (listed, st.blocked_count + refused)
}

/// Fails when the event loop or the proxy saw something that voids the capture: a refused
/// main document (or redirect), or one the proxy could not connect to.
fn page_ok(st: &State, req: &Request, proxy: &Proxy) -> Result<(), ScreenshotError> {
    let is_main = |authority: &str| {
        st.main_authorities
            .iter()
            .any(|m| m.eq_ignore_ascii_case(authority))
    };
    let (attempts, _, _) = proxy.attempts();
    let mut main_refusal = st.main_refusal.clone();
    for a in attempts.iter().filter(|a| is_main(&a.authority)) {
        match &a.outcome {
            Outcome::Refused(r) if main_refusal.is_none() => main_refusal = Some(r.clone()),
            Outcome::Failed(reason) if main_refusal.is_none() => {
                return Err(ScreenshotError::Navigation {
                    url: req.url.to_string(),
                    reason: reason.clone(),
                });
            }
            _ => {}
        }
    }
    if let Some(r) = main_refusal {
        let first = authority(req.url.as_str());
        let same = match &r {
            Refusal::Address { url, .. }
            | Refusal::Unresolvable { url, .. }
            | Refusal::Internal { url, .. } => {
                url == req.url.as_str() || first.as_deref() == Some(url.as_str())
            }
            _ => false,
        };
        return Err(if same {
            ScreenshotError::Refused(r)
        } else {
            ScreenshotError::RedirectRefused(r)
        });
    }
    if st.crashed {
        return Err(ScreenshotError::PageCrashed {
            url: req.url.to_string(),
        });
    }
    Ok(())
}

fn fetch_patterns() -> Value {
    json!({"patterns": [{"urlPattern": "*", "requestStage": "Request"}]})
}

fn auto_attach() -> Value {
    json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true})
}

/// The tab's event loop: answers paused requests, follows attached targets, and records
/// loads, redirects, statuses and crashes.
struct Loop {
    browser: Arc<Browser>,
    main_session: String,
    main_frame: String,
    checker: Arc<RequestChecker>,
}

impl Loop {
    async fn run(
        self,
        mut events: mpsc::UnboundedReceiver<super::cdp::Event>,
        state: watch::Sender<State>,
    ) {
        let state = Arc::new(state);
        let this = Arc::new(self);
        while let Some(ev) = events.recv().await {
            let main = ev.session == this.main_session;
            let p = &ev.params;
            match ev.method.as_str() {
                "Fetch.requestPaused" => {
                    tokio::spawn(this.clone().decide(ev.session, ev.params, state.clone()));
                }
                "Target.attachedToTarget" => {
                    tokio::spawn(this.clone().follow(ev.params));
                }
                "Page.lifecycleEvent"
                    if main && p["name"] == "load" && p["frameId"] == *this.main_frame =>
                {
                    if let Some(loader) = p["loaderId"].as_str() {
                        state.send_modify(|s| {
                            s.loaded.insert(loader.to_owned());
                        });
                    }
                }
                "Page.frameNavigated" if main && p["frame"]["id"] == *this.main_frame => {
                    let url = p["frame"]["url"].as_str().map(str::to_owned);
                    state.send_modify(|s| s.final_url = url);
                }
                "Network.responseReceived" => this.response(main, p, &state),
                "Network.webSocketCreated" => {
                    if let Some(url) = p["url"].as_str() {
                        let url = url.to_owned();
                        state.send_modify(|s| {
                            if s.sockets.len() < MAX_BLOCKED_LISTED {
                                s.sockets.push(url);
                            }
                        });
                    }
                }
                "Inspector.targetCrashed" if main => state.send_modify(|s| s.crashed = true),
                _ => {}
            }
        }
    }

    /// Continues or fails one paused request.
    async fn decide(
        self: Arc<Self>,
        session: String,
        params: Value,
        state: Arc<watch::Sender<State>>,
    ) {
        let Some(id) = params["requestId"].as_str() else {
            return;
        };
        let url = params["request"]["url"].as_str().unwrap_or_default();
        let cdp = &self.browser.cdp;
        let is_main = session == self.main_session
            && params["resourceType"] == "Document"
            && params["frameId"] == *self.main_frame;
        if is_main && let Some(a) = authority(url) {
            state.send_modify(|s| s.main_authorities.push(a));
        }
        let verdict = self.checker.check(url);
        let (method, args) = match verdict {
            Ok(()) => ("Fetch.continueRequest", json!({"requestId": id})),
            Err(refusal) => {
                tracing::debug!("blocked: {refusal}");
                state.send_modify(|s| {
                    if is_main {
                        s.main_refusal.get_or_insert(refusal);
                    } else {
                        s.blocked_count += 1;
                        if s.blocked.len() < MAX_BLOCKED_LISTED {
                            s.blocked.push(refusal.to_string());
                        }
                    }
                });
                (
                    "Fetch.failRequest",
                    json!({"requestId": id, "errorReason": "BlockedByClient"}),
                )
            }
        };
        if let Err(e) = cdp.call(Some(&session), method, args).await {
            tracing::debug!("{method} {url}: {e}");
        }
    }

    /// Sets up a target attached under the tab (a frame in another process, a worker) like
    /// the tab itself, then lets it run.
    async fn follow(self: Arc<Self>, params: Value) {
        let Some(child) = params["sessionId"].as_str() else {
            return;
        };
        let cdp = &self.browser.cdp;
        for (method, args) in [
            ("Network.enable", json!({})),
            ("Fetch.enable", fetch_patterns()),
            ("Target.setAutoAttach", auto_attach()),
        ] {
            // Some target types lack some domains; what they lack they cannot use either.
            if let Err(e) = cdp.call(Some(child), method, args).await {
                tracing::debug!(
                    "{method} on an attached {}: {e}",
                    params["targetInfo"]["type"]
                );
            }
        }
        if params["waitingForDebugger"].as_bool() == Some(true) {
            let r = cdp
                .call(Some(child), "Runtime.runIfWaitingForDebugger", json!({}))
                .await;
            tracing::debug!(
                "resumed an attached {}: {r:?}",
                params["targetInfo"]["type"]
            );
        }
    }

    /// Records the main document's status. (Its `remoteIPAddress` is the proxy's.)
    fn response(&self, main: bool, p: &Value, state: &watch::Sender<State>) {
        if main && p["type"] == "Document" && p["frameId"] == *self.main_frame {
            let status = p["response"]["status"].as_f64().map(|s| s as u64);
            state.send_modify(|s| s.status = status);
        }
    }
}
