//! The exporter's thread: it builds the OTLP exporter (`wire.rs`) on a runtime of its own,
//! then sends the queued spans in batches until it is shut down.

use crate::Error;
use crate::config::Config;
use opentelemetry::trace::{
    Link, SpanContext as OtelContext, SpanId, SpanKind as OtelKind, Status, TraceContextExt,
    TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    Sampler, SamplingDecision, ShouldSample, SpanData, SpanEvents, SpanLinks,
};
use std::borrow::Cow;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use toolwright_telemetry::spans::{FinishedSpan, SpanKind, SpanSink, Value};

/// The queue's end the servers hold: [`SpanSink`] for toolwright-telemetry.
pub(crate) struct Sink {
    sampler: Sampler,
    queue: mpsc::Sender<FinishedSpan>,
    pub(crate) dropped: AtomicU64,
}

fn otel_context(c: &toolwright_telemetry::SpanContext, remote: bool) -> OtelContext {
    OtelContext::new(
        TraceId::from_bytes(c.trace_id),
        SpanId::from_bytes(c.span_id),
        TraceFlags::new(c.flags),
        remote,
        c.state
            .as_deref()
            .and_then(|s| TraceState::from_str(s).ok())
            .unwrap_or_default(),
    )
}

fn otel_kind(kind: SpanKind) -> OtelKind {
    match kind {
        SpanKind::Server => OtelKind::Server,
        SpanKind::Client => OtelKind::Client,
    }
}

impl SpanSink for Sink {
    fn sampled(
        &self,
        parent: Option<&toolwright_telemetry::SpanContext>,
        trace_id: &[u8; 16],
        name: &str,
        kind: SpanKind,
    ) -> bool {
        let parent = parent.map(|p| Context::new().with_remote_span_context(otel_context(p, true)));
        let decision = self.sampler.should_sample(
            parent.as_ref(),
            TraceId::from_bytes(*trace_id),
            name,
            &otel_kind(kind),
            &[],
            &[],
        );
        matches!(decision.decision, SamplingDecision::RecordAndSample)
    }

    fn export(&self, span: FinishedSpan) {
        if self.queue.try_send(span).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A finished span as the SDK's exporter takes it.
pub(crate) fn span_data(span: FinishedSpan, scope: &InstrumentationScope) -> SpanData {
    // (SpanLinks is non-exhaustive: its fields are set on the default.)
    let mut links = SpanLinks::default();
    links.links = span
        .links
        .iter()
        .map(|l| Link::with_context(otel_context(l, true)))
        .collect();
    SpanData {
        span_context: otel_context(&span.context, false),
        parent_span_id: span
            .parent
            .as_ref()
            .map_or(SpanId::INVALID, |p| SpanId::from_bytes(p.span_id)),
        parent_span_is_remote: span.parent.is_some() && span.parent_remote,
        span_kind: otel_kind(span.kind),
        name: Cow::Owned(span.name),
        start_time: span.start,
        end_time: span.end,
        attributes: span
            .attributes
            .into_iter()
            .map(|(k, v)| match v {
                Value::Str(s) => KeyValue::new(k, s),
                Value::Int(n) => KeyValue::new(k, n),
            })
            .collect(),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links,
        status: match span.error {
            Some(e) => Status::error(e),
            None => Status::Unset,
        },
        instrumentation_scope: scope.clone(),
    }
}

/// The resource every span is sent with: `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME`
/// as the SDK reads them, `service.name` = `toolwright` when neither names one.
fn resource() -> Resource {
    let from_env = Resource::builder().build();
    let named = from_env
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|v| !v.as_str().starts_with("unknown_service"));
    if named {
        from_env
    } else {
        Resource::builder().with_service_name("toolwright").build()
    }
}

/// Starts the exporter's thread.
pub(crate) fn start(config: Config) -> Result<crate::Exporter, Error> {
    let (queue, spans) = mpsc::channel(config.queue);
    let (stop, stopped) = oneshot::channel::<oneshot::Sender<()>>();
    let (ready, is_ready) = std::sync::mpsc::channel::<Result<(), Error>>();
    let sink = Arc::new(Sink {
        sampler: config.sampler.clone(),
        queue,
        dropped: AtomicU64::new(0),
    });
    let thread = std::thread::Builder::new()
        .name("toolwright-otlp".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready.send(Err(Error::Build(format!("starting its runtime: {e}"))));
                    return;
                }
            };
            rt.block_on(async move {
                let exporter = match crate::wire::OtlpExporter::new(&config, &resource())
                    .map_err(Error::Setup)
                {
                    Ok(e) => {
                        let _ = ready.send(Ok(()));
                        e
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                run(exporter, &config, spans, stopped).await;
            });
        })
        .map_err(|e| Error::Build(format!("starting its thread: {e}")))?;
    match is_ready.recv() {
        Ok(Ok(())) => Ok(crate::Exporter {
            sink,
            stop: Some(stop),
            thread: Some(thread),
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Error::Build("its thread ended at start-up".into())),
    }
}

/// Sends batches: when one is full, when the oldest span has waited `config.delay`, and at
/// the end (what is queued then is sent before the answer to `stopped`).
async fn run(
    mut exporter: crate::wire::OtlpExporter,
    config: &Config,
    mut spans: mpsc::Receiver<FinishedSpan>,
    mut stopped: oneshot::Receiver<oneshot::Sender<()>>,
) {
    let scope = InstrumentationScope::builder("toolwright")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    let mut batch: Vec<SpanData> = Vec::with_capacity(config.batch);
    // When the oldest span of the batch must be sent.
    let mut due: Option<tokio::time::Instant> = None;
    let done = loop {
        let at = due.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            biased;
            reply = &mut stopped => break reply.ok(),
            got = spans.recv() => match got {
                Some(s) => {
                    if batch.is_empty() {
                        due = Some(tokio::time::Instant::now() + config.delay);
                    }
                    batch.push(span_data(s, &scope));
                    if batch.len() >= config.batch {
                        send(&mut exporter, &mut batch).await;
                        due = None;
                    }
                }
                None => break None,
            },
            () = tokio::time::sleep_until(at), if due.is_some() => {
                send(&mut exporter, &mut batch).await;
                due = None;
            }
        }
    };
    spans.close();
    while let Ok(s) = spans.try_recv() {
        batch.push(span_data(s, &scope));
        if batch.len() >= config.batch {
            send(&mut exporter, &mut batch).await;
        }
    }
    send(&mut exporter, &mut batch).await;
    if let Some(reply) = done {
        let _ = reply.send(());
    }
}

/// The target of the exporter's own log events (a failed export, dropped spans).
///
/// They are `tracing` events, so they honour `TOOLWRIGHT_LOG` and `--log-format json`. They
/// cannot feed back into export: the spans exported come from the server's telemetry hook
/// ([`toolwright_telemetry::SpanSink`]), not from a `tracing` layer, and an event is no
/// span. Should spans ever be taken from `tracing`, that layer must skip this target.
pub(crate) const LOG_TARGET: &str = "toolwright_otlp::export";

async fn send(exporter: &mut crate::wire::OtlpExporter, batch: &mut Vec<SpanData>) {
    if batch.is_empty() {
        return;
    }
    let n = batch.len();
    if let Err(e) = exporter.export(std::mem::take(batch)).await {
        tracing::warn!(
            target: LOG_TARGET,
            spans = n,
            "OTLP export of {n} spans failed: {e}"
        );
    }
}
