//! W3C trace context: the `traceparent` (and `tracestate`) a request
//! carries, read into a parent context, and the current context written
//! onto requests the hub sends (backends, MCP servers).

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct HeadersMut<'a>(&'a mut http::HeaderMap);

impl Injector for HeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// The remote parent `headers` name, if a valid `traceparent` is there
/// (a malformed one is ignored, as the W3C spec asks).
pub fn from_headers(headers: &http::HeaderMap) -> Option<Context> {
    let context = TraceContextPropagator::new().extract(&Headers(headers));
    context.span().span_context().is_valid().then_some(context)
}

/// The remote parent a `traceparent` string names (MCP's
/// `params._meta.traceparent`).
pub fn from_traceparent(traceparent: &str, tracestate: Option<&str>) -> Option<Context> {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "traceparent",
        http::HeaderValue::from_str(traceparent).ok()?,
    );
    if let Some(state) = tracestate.and_then(|state| http::HeaderValue::from_str(state).ok()) {
        headers.insert("tracestate", state);
    }
    from_headers(&headers)
}

/// Writes `context`'s span as `traceparent` (and `tracestate`) on `headers`.
pub fn inject(context: &Context, headers: &mut http::HeaderMap) {
    if context.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(context, &mut HeadersMut(headers));
    }
}

/// The current context as W3C fields (`traceparent`, and `tracestate` when
/// it has one), for a request that carries them in its body — MCP's
/// `params._meta`; empty when telemetry is off or nothing is traced.
pub fn current_fields() -> std::collections::HashMap<String, String> {
    let mut fields = std::collections::HashMap::new();
    if crate::active().is_some() {
        let context = Context::current();
        if context.span().span_context().is_valid() {
            TraceContextPropagator::new().inject_context(&context, &mut fields);
            fields.retain(|_, value| !value.is_empty());
        }
    }
    fields
}

/// The parent a request's headers name, when telemetry is on (nothing is
/// read otherwise).
pub fn parent_of(headers: &http::HeaderMap) -> Option<Context> {
    crate::active()?;
    from_headers(headers)
}

/// Runs `future` with `parent` as its current context (so the spans it
/// records — a tool call's — join that trace), or as it is without one.
pub async fn traced<F: std::future::Future>(parent: Option<Context>, future: F) -> F::Output {
    use opentelemetry::context::FutureExt as _;
    match parent {
        Some(parent) => future.with_context(parent).await,
        None => future.await,
    }
}
