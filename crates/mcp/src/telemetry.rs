//! An MCP request our servers serve as an OpenTelemetry server span
//! (`{mcp.method.name} {target}`, with `mcp.session.id`), continuing the
//! client's trace from `params._meta.traceparent` (docs/telemetry.md); the
//! tool calls it makes record under it. Nothing when telemetry is off.

use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, Extensions, RequestMetaObject};
use serde_json::Value;

/// Runs `call` (a `tools/call` of `tool`) inside its span.
pub(crate) async fn tools_call<F>(
    tool: &str,
    meta: Option<&RequestMetaObject>,
    extensions: &Extensions,
    call: F,
) -> Result<CallToolResponse, ErrorData>
where
    F: Future<Output = Result<CallToolResponse, ErrorData>>,
{
    let Some(telemetry) = bridge_telemetry::active() else {
        return call.await;
    };
    let text = |key: &str| {
        meta.and_then(|meta| meta.0.0.get(key))
            .and_then(Value::as_str)
    };
    let parent = text("traceparent").and_then(|traceparent| {
        bridge_telemetry::propagation::from_traceparent(traceparent, text("tracestate"))
    });
    let session = extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|value| value.to_str().ok());
    let span = telemetry.start_mcp_request("tools/call", tool, session, parent.as_ref());
    let answer = bridge_telemetry::propagation::traced(Some(span.context().clone()), call).await;
    let failed = match &answer {
        Ok(CallToolResponse::Complete(result)) => result.is_error == Some(true),
        Ok(_) => false,
        Err(_) => true,
    };
    if failed {
        span.end("error", Some("the tool call failed"));
    } else {
        span.end("ok", None);
    }
    answer
}
