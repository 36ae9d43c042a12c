//! OTLP export of toolwright's spans.
//!
//! [`from_env`] reads the standard `OTEL_*` variables (export is off unless
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
//! `OTEL_TRACES_EXPORTER=otlp` is set, and `OTEL_SDK_DISABLED=true` turns it off);
//! [`Exporter::start`] builds the exporter on a thread of its own (opentelemetry-proto's
//! messages, posted over hyper's HTTP/1.1 client for HTTP/protobuf or as one unary call
//! over its HTTP/2 client for gRPC), and
//! [`Exporter::sink`] is what `toolwright-telemetry` hands finished spans to. The spans keep
//! the ids toolwright propagates (`traceparent`), so they are built here as the SDK's
//! `SpanData` directly rather than through a tracer; the configured sampler decides.
//!
//! Layout: `config.rs` reads the environment, `export.rs` runs the exporter's thread and
//! batches, `wire.rs` sends a batch.

mod config;
mod export;
mod wire;

pub use config::{Config, Protocol, from_env_with};
pub use wire::{ExportError, Failure, SetupError};

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::oneshot;
use toolwright_telemetry::SpanSink;

/// A setting that is not understood, or an exporter that cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An environment variable has a value that is not understood.
    #[error("{var}={value:?}: {why}")]
    Setting {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// The OTLP exporter could not be built.
    #[error("the OTLP exporter could not be built: {0}")]
    Build(String),
    /// The endpoint, headers or certificate could not be used.
    #[error("the OTLP exporter could not be built: {0}")]
    Setup(#[source] wire::SetupError),
}

/// Reads the process's environment; `Ok(None)` when export is off.
///
/// # Errors
///
/// [`Error::Setting`] for a value that is not understood.
pub fn from_env() -> Result<Option<Config>, Error> {
    from_env_with(&|v| std::env::var(v).ok())
}

/// The running exporter. Call [`Exporter::shutdown`] before the process exits, so the
/// spans still queued are sent.
pub struct Exporter {
    sink: Arc<export::Sink>,
    stop: Option<oneshot::Sender<oneshot::Sender<()>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter").finish_non_exhaustive()
    }
}

impl Exporter {
    /// Builds the exporter `config` describes and starts its thread.
    ///
    /// # Errors
    ///
    /// [`Error::Build`] when the OTLP exporter cannot be built (a malformed endpoint).
    pub fn start(config: Config) -> Result<Exporter, Error> {
        export::start(config)
    }

    /// Where finished spans go ([`toolwright_telemetry::Settings::spans`]).
    pub fn sink(&self) -> Arc<dyn SpanSink> {
        self.sink.clone()
    }

    /// Sends what is queued and stops, waiting at most `timeout` for the collector.
    pub fn shutdown(mut self, timeout: Duration) {
        self.stop_within(timeout);
    }

    fn stop_within(&mut self, timeout: Duration) {
        let Some(stop) = self.stop.take() else {
            return;
        };
        let (tx, rx) = oneshot::channel();
        if stop.send(tx).is_ok() {
            // Not on a runtime's thread: a plain blocking wait, bounded.
            let (done_tx, done_rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = rx.blocking_recv();
                let _ = done_tx.send(());
            });
            let _ = done_rx.recv_timeout(timeout);
        }
        let dropped = self.sink.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(
                target: export::LOG_TARGET,
                dropped,
                "{dropped} spans were dropped (the OTLP queue was full)"
            );
        }
        if let Some(t) = self.thread.take()
            && t.is_finished()
        {
            let _ = t.join();
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop_within(Duration::from_secs(5));
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
