//! `take_screenshot`: the tool-type seed's example tool, on a real headless Chromium driven
//! over the DevTools protocol.
//!
//! The definition is the seed's, to the letter (input `url`, `fullPage` defaulting to true;
//! output `width`, `height`, `format`; read-only, idempotent, open-world), plus optional
//! `viewportWidth`, `viewportHeight`, `format` (`png` or `jpeg`) and `quality`. A call
//! returns the image as `image` content, the structured `{width, height, format}` read from
//! the encoded image, the same JSON as text, and diagnostics under
//! `_meta["toolwright/screenshot"]` (browser pid and instance, final URL, HTTP status, page
//! size, blocked requests and connections, and how many connections of the browser's own
//! background services were refused so far).
//!
//! Layout:
//! - `policy`: which URLs and addresses may be loaded (schemes, the caller's URL, DNS).
//! - `toolwright_net` (outside this crate): the class of an address and which classes the
//!   policy admits, shared with declared HTTP tools.
//! - `proxy`: the policy point every connection of the browser goes through (its tests in
//!   `proxy_tests.rs`).
//! - `browser`: finding Chromium, starting it lazily, reusing and restarting it, and
//!   removing everything it wrote.
//! - `cdp`: the DevTools protocol client (one WebSocket, flat sessions).
//! - `capture`: one capture in its own browser context and proxy.
//! - `image`: formats, and the pixel size read from PNG and JPEG headers.
//! - `error`: why a capture failed, worded for the caller.
//!
//! The URL is checked before anything else happens (a refused URL never starts the browser
//! or opens a connection). Calls run concurrently up to [`Settings::concurrency`].

mod browser;
mod capture;
mod cdp;
mod error;
mod image;
mod policy;
mod proxy;

use browser::Pool;
use capture::{Limits, Request};
use error::ScreenshotError;
use image::Format;
use policy::{Loopback, Policy};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use toolwright_protocol::{CallToolResult, Content, TaskSupport, ToolAnnotations};
use toolwright_server::{Tool, ToolContext, ToolDefinition, ToolError, ToolFuture};

/// Default viewport, CSS pixels (and image pixels: the device scale factor is 1).
pub const DEFAULT_VIEWPORT: (u32, u32) = (1280, 800);
/// Smallest and largest viewport side accepted.
pub const VIEWPORT_RANGE: (u32, u32) = (100, 4096);
/// Default navigation timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cap on the height of a full-page image, pixels.
pub const DEFAULT_MAX_HEIGHT: u32 = 16_384;
/// Default number of captures that run at once.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// The `_meta` key of the diagnostics in a result.
pub const META_KEY: &str = "toolwright/screenshot";

/// Closes every browser `take_screenshot` started in this process and removes the
/// directories they wrote to. Call it when the process is about to exit: dropping the tool
/// does the same, but a tool that something still holds at exit (a cycle, a task that was
/// never dropped) is never dropped.
pub fn close_browsers() {
    browser::close_all();
}

/// Settings of `take_screenshot`, from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The browser executable (a path, or a name looked up on `PATH`); `None` tries
    /// `chromium`, `chromium-browser`, `google-chrome`… on `PATH`.
    pub chromium: Option<PathBuf>,
    /// Time from navigation to the page's load event (default 30 s).
    pub timeout: Duration,
    /// Tallest full-page image, pixels (default 16384); taller pages are cut.
    pub max_height: u32,
    /// Allow private, link-local and other non-public addresses (default false).
    pub allow_private: bool,
    /// Allow loopback addresses (default true, so local pages can be captured).
    pub allow_loopback: bool,
    /// Captures that run at once (default 4); more wait their turn.
    pub concurrency: usize,
    /// Run Chromium in its sandbox (default true; it is always off as root, where the
    /// sandbox cannot start).
    pub sandbox: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            chromium: None,
            timeout: DEFAULT_TIMEOUT,
            max_height: DEFAULT_MAX_HEIGHT,
            allow_private: false,
            allow_loopback: true,
            concurrency: DEFAULT_CONCURRENCY,
            sandbox: true,
        }
    }
}

/// `take_screenshot`.
pub struct TakeScreenshot {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Settings,
    pool: Pool,
    slots: Semaphore,
    resolver: Arc<dyn proxy::Resolve>,
}

impl TakeScreenshot {
    /// A tool with these settings. Nothing starts until the first call.
    pub fn new(settings: Settings) -> Self {
        let pool = Pool::new(settings.chromium.clone(), settings.sandbox);
        let slots = Semaphore::new(settings.concurrency.max(1));
        TakeScreenshot {
            inner: Arc::new(Inner {
                settings,
                pool,
                slots,
                resolver: Arc::new(proxy::SystemResolver),
            }),
        }
    }
}

fn input_schema() -> Value {
    let (lo, hi) = VIEWPORT_RANGE;
    json!({
        "type": "object",
        "properties": {
            "url": {
                "type": "string",
                "description": "URL to capture: an http:// or https:// address of a web page"
            },
            "fullPage": {
                "type": "boolean",
                "description": "Capture full page: true captures the whole scrollable page, \
                                false only the visible viewport",
                "default": true
            },
            "viewportWidth": {
                "type": "integer",
                "description": "Width of the browser viewport in CSS pixels (the image is at least this wide)",
                "minimum": lo, "maximum": hi, "default": DEFAULT_VIEWPORT.0
            },
            "viewportHeight": {
                "type": "integer",
                "description": "Height of the browser viewport in CSS pixels (the image height when fullPage is false)",
                "minimum": lo, "maximum": hi, "default": DEFAULT_VIEWPORT.1
            },
            "format": {
                "type": "string",
                "description": "Image format: png (lossless) or jpeg (smaller)",
                "enum": ["png", "jpeg"],
                "default": "png"
            },
            "quality": {
                "type": "integer",
                "description": "JPEG quality from 1 to 100 (ignored for png)",
                "minimum": 1, "maximum": 100, "default": 80
            }
        },
        "required": ["url"],
        "additionalProperties": false
    })
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "width": {"type": "number", "description": "Width of the image in pixels"},
            "height": {"type": "number", "description": "Height of the image in pixels"},
            "format": {"type": "string", "description": "Image format: png or jpeg"}
        },
        "required": ["width", "height", "format"]
    })
}

/// Reads the arguments (already valid against the input schema).
fn request_from(args: &Value) -> Result<(String, Request), ToolError> {
    let url = args["url"]
        .as_str()
        .ok_or_else(|| ToolError::InvalidArguments("url must be a string".into()))?;
    let side = |k: &str, d: u32| {
        args.get(k)
            .and_then(crate::integers::as_u64)
            .map_or(d, |v| {
                v.clamp(VIEWPORT_RANGE.0.into(), VIEWPORT_RANGE.1.into()) as u32
            })
    };
    let format = match args.get("format").and_then(Value::as_str) {
        None => Format::Png,
        Some(f) => Format::from_name(f).ok_or_else(|| {
            ToolError::InvalidArguments(format!("format must be png or jpeg, not {f:?}"))
        })?,
    };
    let request = Request {
        // Replaced by the normalized URL once the policy admitted it.
        url: url::Url::parse("about:blank").expect("a valid URL"),
        full_page: args
            .get("fullPage")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        viewport: (
            side("viewportWidth", DEFAULT_VIEWPORT.0),
            side("viewportHeight", DEFAULT_VIEWPORT.1),
        ),
        format,
        quality: args
            .get("quality")
            .and_then(crate::integers::as_u64)
            .map_or(80, |q| q.clamp(1, 100) as u32),
    };
    Ok((url.to_owned(), request))
}

impl Inner {
    fn policy(&self) -> Policy {
        let s = &self.settings;
        let loopback = if s.allow_loopback {
            Loopback::Allowed
        } else {
            Loopback::Disabled
        };
        Policy {
            allow_private: s.allow_private,
            loopback,
        }
    }

    async fn run(
        self: Arc<Self>,
        url: String,
        mut req: Request,
        ctx: ToolContext,
    ) -> Result<CallToolResult, ScreenshotError> {
        let started = Instant::now();
        let policy = self.policy();
        let admitted = policy::check(&policy, &url, true)
            .await
            .map_err(ScreenshotError::Refused)?;
        req.url = admitted.url;
        let page_policy = policy.for_page(admitted.on_loopback);
        let (browser, shot) = self.capture(&req, page_policy, &ctx).await?;
        ctx.progress(3.0, Some(3.0), Some("captured"));
        Ok(result(&browser, &shot, &req, started))
    }

    /// Waits for a slot and captures `req` in the pool's browser; a browser found gone is
    /// discarded, and the capture tried once more on a new one.
    async fn capture(
        &self,
        req: &Request,
        page_policy: Policy,
        ctx: &ToolContext,
    ) -> Result<(Arc<browser::Browser>, capture::Shot), ScreenshotError> {
        let limits = Limits {
            timeout: self.settings.timeout,
            max_height: self.settings.max_height.max(1),
        };
        ctx.progress(1.0, Some(3.0), Some("waiting for the browser"));
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| ScreenshotError::BrowserGone)?;
        let mut retried = false;
        loop {
            let browser = self.pool.get().await?;
            ctx.progress(2.0, Some(3.0), Some("loading the page"));
            match capture::capture(
                browser.clone(),
                req,
                page_policy,
                limits,
                self.resolver.clone(),
            )
            .await
            {
                Ok(shot) => return Ok((browser, shot)),
                Err(e) if e.is_browser_gone() && !retried => {
                    // Killed or crashed between calls and not noticed yet: once more, fresh.
                    tracing::warn!(
                        pid = browser.pid,
                        "the browser went away; retrying on a new one"
                    );
                    self.pool.discard(&browser).await;
                    retried = true;
                }
                Err(e) => {
                    if e.is_browser_gone() {
                        self.pool.discard(&browser).await;
                    }
                    return Err(e);
                }
            }
        }
    }
}

/// The tool's result: the image, its size as structured content, a note when the page was
/// cut at the height cap, and what was learned on the way under [`META_KEY`].
fn result(
    browser: &browser::Browser,
    shot: &capture::Shot,
    req: &Request,
    started: Instant,
) -> CallToolResult {
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(&shot.bytes);
    let structured =
        json!({"width": shot.width, "height": shot.height, "format": req.format.name()});
    let mut content = vec![
        Content::image(data, req.format.mime()),
        Content::text(structured.to_string()),
    ];
    if shot.truncated {
        content.push(Content::text(format!(
            "The page is {} px tall; the image shows its top {} px (the server's \
             --screenshot-max-height).",
            shot.page_size.1, shot.height
        )));
    }
    let mut diag = json!({
        "browserPid": browser.pid,
        "browserInstance": browser.instance,
        "requestedUrl": req.url.as_str(),
        "pageWidth": shot.page_size.0,
        "pageHeight": shot.page_size.1,
        "truncated": shot.truncated,
        "blockedRequests": shot.blocked_count,
        "browserOwnConnectionsRefused": browser.own_connections_refused(),
        "elapsedMs": started.elapsed().as_millis() as u64,
        "phasesMs": shot.phases_ms.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<Map<_, _>>(),
    });
    if let Some(u) = &shot.final_url {
        diag["finalUrl"] = json!(u);
    }
    if let Some(s) = shot.status {
        diag["httpStatus"] = json!(s);
    }
    if !shot.blocked.is_empty() {
        diag["blocked"] = json!(shot.blocked);
    }
    let mut meta = Map::new();
    meta.insert(META_KEY.into(), diag);
    CallToolResult {
        content,
        structured_content: Some(structured),
        meta: Some(meta),
        ..Default::default()
    }
}

impl Tool for TakeScreenshot {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new("take_screenshot", input_schema())
            .with_title("Screenshot Capture Tool")
            .with_description(
                "Captures a screenshot of a web page: loads the URL in a headless Chromium \
                 browser and returns the rendered page as an image (PNG by default, or JPEG), \
                 plus {width, height, format} giving the image's size in pixels. By default \
                 (fullPage true) the image covers the whole scrollable page, up to a height \
                 limit; with fullPage false only the viewport (1280x800 unless viewportWidth \
                 and viewportHeight say otherwise). Use it to see how a page looks (layout, \
                 styling, rendering problems, charts) when its HTML or text is not enough. \
                 Only http and https URLs are accepted; addresses on private networks are \
                 refused unless the server allows them.",
            )
            .with_output_schema(output_schema())
            .with_annotations(ToolAnnotations {
                title: Some("Screenshot Capture Tool".into()),
                read_only_hint: Some(true),
                destructive_hint: Some(false),
                idempotent_hint: Some(true),
                open_world_hint: Some(true),
            })
            .with_task_support(TaskSupport::Optional)
    }

    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        let inner = self.inner.clone();
        Box::pin(async move {
            let (url, req) = request_from(&args)?;
            let cancel = ctx.cancellation().clone();
            // A task of its own: the first poll of `call` happens on the transport's reader,
            // which must not wait for a process to spawn.
            let task = tokio::spawn(inner.run(url, req, ctx));
            let abort = task.abort_handle();
            tokio::select! {
                joined = task => match joined {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(e)) => Err(ToolError::Failed(e.to_string())),
                    Err(e) => Err(ToolError::Internal(format!("the capture task failed: {e}"))),
                },
                () = cancel.cancelled() => {
                    abort.abort();
                    Err(ToolError::Cancelled)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(tool: &TakeScreenshot, args: Value) -> Result<CallToolResult, ToolError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(tool.call(args, ToolContext::detached(vec![], None)))
    }

    fn failure(r: Result<CallToolResult, ToolError>) -> String {
        match r {
            Err(ToolError::Failed(m)) => m,
            other => panic!("expected a tool failure, got {other:?}"),
        }
    }

    #[test]
    fn definition_follows_the_seed() {
        let d = TakeScreenshot::new(Settings::default()).definition();
        assert_eq!(d.name, "take_screenshot");
        assert_eq!(d.input_schema["required"], json!(["url"]));
        assert_eq!(d.input_schema["properties"]["url"]["type"], "string");
        assert_eq!(d.input_schema["properties"]["fullPage"]["default"], true);
        let out = d.output_schema.clone().unwrap();
        assert_eq!(out["required"], json!(["width", "height", "format"]));
        for k in ["width", "height"] {
            assert_eq!(out["properties"][k]["type"], "number");
        }
        assert_eq!(out["properties"]["format"]["type"], "string");
        let a = d.annotations.clone().unwrap();
        assert_eq!(a.title.as_deref(), Some("Screenshot Capture Tool"));
        let h = d.hints();
        assert!(h.read_only() && !h.destructive() && h.idempotent() && h.open_world());
    }

    #[test]
    fn arguments() {
        let (url, r) = request_from(&json!({"url": "http://x/"})).unwrap();
        assert_eq!(
            (url.as_str(), r.full_page, r.viewport, r.format),
            ("http://x/", true, DEFAULT_VIEWPORT, Format::Png)
        );
        let (_, r) = request_from(&json!({"url": "u", "fullPage": false, "viewportWidth": 1000, "format": "jpeg", "quality": 50})).unwrap();
        assert_eq!(
            (r.full_page, r.viewport, r.format, r.quality),
            (false, (1000, 800), Format::Jpeg, 50)
        );
        // JSON Schema counts 1000.0 as an integer; so does the tool (it used the default).
        let (_, r) = request_from(
            &json!({"url": "u", "viewportWidth": 1000.0, "viewportHeight": 6e2, "quality": 50.0}),
        )
        .unwrap();
        assert_eq!((r.viewport, r.quality), ((1000, 600), 50));
    }

    #[test]
    fn refused_urls_never_reach_a_browser() {
        // A browser path that cannot run: the refusal must come first.
        let settings = Settings {
            chromium: Some("/nonexistent/chromium".into()),
            ..Settings::default()
        };
        let tool = TakeScreenshot::new(settings);
        let cases = [
            ("file:///etc/passwd", "only http and https"),
            ("javascript:alert(1)", "only http and https"),
            ("http://10.0.0.1/", "10.0.0.0/8"),
            ("http://169.254.169.254/latest/meta-data/", "169.254.0.0/16"),
            ("http://[fd00::1]/", "fc00::/7"),
        ];
        for (url, want) in cases {
            let m = failure(run(&tool, json!({"url": url})));
            assert!(m.contains(want), "{url}: {m}");
        }
    }

    #[test]
    fn missing_browser_says_how_to_install() {
        let settings = Settings {
            chromium: Some("/nonexistent/chromium".into()),
            ..Settings::default()
        };
        let m = failure(run(
            &TakeScreenshot::new(settings),
            json!({"url": "http://127.0.0.1:9/"}),
        ));
        assert!(
            m.contains("apt-get install chromium") && m.contains("--chromium"),
            "{m}"
        );
    }

    #[test]
    fn loopback_can_be_turned_off() {
        let settings = Settings {
            allow_loopback: false,
            chromium: Some("/nonexistent".into()),
            ..Settings::default()
        };
        let m = failure(run(
            &TakeScreenshot::new(settings),
            json!({"url": "http://localhost:9/"}),
        ));
        assert!(m.contains("--screenshot-no-loopback"), "{m}");
    }
}
