//! OpenTelemetry for the hub (docs/telemetry.md): the OTLP/HTTP export of
//! traces and metrics from `[telemetry]` (`bridge_config::TelemetryConfig`),
//! the spans of model calls and tool calls with their decisions by the
//! OpenTelemetry GenAI semantic conventions (the version pinned in
//! [`semconv::VERSION`]), and W3C trace context read from requests and put
//! on the ones the hub sends.
//!
//! Off (no endpoint set) it costs a pointer check per call site: every
//! recording function first asks [`active`], and builds nothing when there
//! is no exporter. On, spans are built after the fact from what the caller
//! measured (start time, duration, outcome) and queued to the SDK's batch
//! processor, which exports on its own thread; a collector that does not
//! answer costs a bounded queue (spans beyond it are dropped) and a
//! warning, never a caller's time.
//!
//! This crate must not read the environment (the configuration holds the
//! `OTEL_*` values; the SDK's builders are given them), block a caller, or
//! record content (prompts, answers, arguments, results) unless
//! `capture_content` is on — and then only redacted and cut by the caller.

mod export;
pub mod forward;
mod http_client;
pub mod propagation;
pub mod semconv;
pub mod spans;

use std::sync::OnceLock;

pub use export::{StartError, Telemetry};
/// A trace context (a parent for the spans recorded under it).
pub use opentelemetry::Context as TraceContext;
pub use spans::{ChatRecord, OpenSpan, ToolCallRecord};

static ACTIVE: OnceLock<Telemetry> = OnceLock::new();

/// The process's exporter, when telemetry is on.
#[inline]
pub fn active() -> Option<&'static Telemetry> {
    ACTIVE.get()
}
