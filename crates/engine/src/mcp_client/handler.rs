//! A session's entry for one MCP tool: `tools/call` on the server's current
//! connection, with the server's timeout, failing at once (never hanging)
//! while the server is down.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, RequestMetaObject};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

use crate::call::ToolFailure;
use crate::tools::{ToolHandler, ToolInvocation};

use super::supervisor::ServerShared;

/// The server is down, restarting or gave up.
pub const MCP_UNAVAILABLE: &str = "mcp_unavailable";
/// The call took longer than the server's `timeout_secs`.
pub const MCP_TIMEOUT: &str = "mcp_timeout";
/// The tool ran and reported an error (`isError: true`).
pub const MCP_TOOL_ERROR: &str = "mcp_tool_error";
/// The server answered with a JSON-RPC error or something unusable.
pub const MCP_ERROR: &str = "mcp_error";

/// How long a call whose connection just closed waits for the supervisor
/// to learn why (the exit status), so the failure can say.
const REASON_WAIT: Duration = Duration::from_secs(2);

pub(crate) struct McpToolHandler {
    pub(crate) server: Arc<ServerShared>,
    /// The tool's name on the server (the session knows it as `server__tool`).
    pub(crate) tool: String,
}

#[async_trait]
impl ToolHandler for McpToolHandler {
    async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        let server = &self.server;
        let live = server.live().ok_or_else(|| server.unavailable())?;
        let arguments = match invocation.args {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolFailure::new(
                    "invalid_arguments",
                    format!("arguments must be a JSON object, not {other}"),
                ));
            }
        };
        let mut params = CallToolRequestParams::new(self.tool.clone()).with_arguments(arguments);
        params.meta = trace_meta();
        let timeout = server.call_timeout();
        let call = tokio::time::timeout(timeout, live.peer.call_tool_once(params));
        let outcome = tokio::select! {
            outcome = call => outcome,
            () = live.closed.cancelled() => return Err(server.stopped_during_call(&self.tool)),
        };
        match outcome {
            Err(_) => Err(ToolFailure::new(
                MCP_TIMEOUT,
                format!(
                    "MCP server '{}' did not answer {} within {} s (timeout_secs); the call was cancelled",
                    server.name,
                    self.tool,
                    timeout.as_secs_f32()
                ),
            )),
            Ok(Ok(CallToolResponse::Complete(result))) => {
                map_result(&server.name, &self.tool, result)
            }
            Ok(Ok(_)) => Err(ToolFailure::new(
                MCP_ERROR,
                format!(
                    "MCP server '{}' asked for interactive input or started a task for {}; the bridge supports neither",
                    server.name, self.tool
                ),
            )),
            Ok(Err(ServiceError::McpError(error))) => {
                let failure = ToolFailure::new(
                    MCP_ERROR,
                    format!(
                        "MCP server '{}' refused {}: {} (JSON-RPC error {})",
                        server.name, self.tool, error.message, error.code.0
                    ),
                );
                Err(match error.data {
                    Some(data) => failure.with_details(json!({"data": data})),
                    None => failure,
                })
            }
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                // The supervisor is about to learn why; give it a moment so
                // the failure names the cause.
                let _ = tokio::time::timeout(REASON_WAIT, live.closed.cancelled()).await;
                Err(server.stopped_during_call(&self.tool))
            }
            Ok(Err(other)) => Err(ToolFailure::new(
                MCP_ERROR,
                format!(
                    "MCP server '{}' failed on {}: {other}",
                    server.name, self.tool
                ),
            )),
        }
    }
}

/// The trace the call runs in, as MCP passes it on (`params._meta.
/// traceparent`, docs/telemetry.md), so the server's spans join it; `None`
/// when telemetry is off or nothing is traced.
fn trace_meta() -> Option<RequestMetaObject> {
    let fields = bridge_telemetry::propagation::current_fields();
    if fields.is_empty() {
        return None;
    }
    let mut meta = RequestMetaObject::new();
    for (key, value) in fields {
        meta.insert(key, Value::String(value));
    }
    Some(meta)
}

/// `{content: [...], structuredContent?}` as the server sent them; an
/// `isError` result is a [`ToolFailure`] whose message is the text.
pub(crate) fn map_result(
    server: &str,
    tool: &str,
    result: CallToolResult,
) -> Result<Value, ToolFailure> {
    let is_error = result.is_error == Some(true);
    let content = serde_json::to_value(&result.content).unwrap_or(Value::Array(Vec::new()));
    let text: Vec<&str> = content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join("\n");
    if is_error {
        let message = if text.is_empty() {
            format!("{tool} on MCP server '{server}' reported an error without text")
        } else {
            text
        };
        return Err(ToolFailure::new(MCP_TOOL_ERROR, message)
            .with_details(json!({"server": server, "tool": tool, "content": content})));
    }
    let mut value = json!({"content": content});
    if let Some(structured) = result.structured_content {
        value["structuredContent"] = structured;
    }
    Ok(value)
}
