//! Provider tools in session tables: registration (conflicts, reserved
//! names, multi-instance merging with `target`), routing, concurrency
//! limits, timeouts and cancellation, results and progress.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bridge_engine::{Session, ToolEntry, ToolFailure, ToolHandler, ToolInvocation, ToolOwner};
use bridge_protocol::provider::{
    ErrorCode, ErrorMessage, GatewayMessage, ProviderTool, ToolCall, ToolCancel, ToolProgress,
    ToolResult, tool_error_code,
};
use bridge_protocol::{ToolEffect, ToolSpec};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::connection::{Connection, Flow};
use crate::provider::{PendingCall, ProviderHandle, lock};
use crate::state::GatewayInner;

/// Provider instances per (session, provider name).
#[derive(Default)]
pub(crate) struct InstanceGroups {}

/// Concurrency limiters by scope key.
#[derive(Default)]
pub(crate) struct Limiters {}

/// Checks a tool list before anything is registered.
pub(crate) fn validate_tools(
    gw: &GatewayInner,
    provider: &str,
    tools: &[ProviderTool],
) -> Result<(), ErrorMessage> {
    let limit = gw.settings.max_tools_per_provider;
    if tools.len() > limit {
        return Err(ErrorMessage::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "{} tools declared; a provider may register at most {limit}",
                tools.len()
            ),
        ));
    }
    let _ = provider;
    Ok(())
}

/// Makes `tools` exactly what `handle` serves in `session`.
pub(crate) fn apply_tools(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    session: &Arc<Session>,
    tools: &[ProviderTool],
) -> Result<(), ErrorMessage> {
    let owner = ToolOwner::Provider(handle.name.clone());
    let entries = tools
        .iter()
        .map(|tool| ToolEntry {
            spec: ToolSpec {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: if tool.parameters.is_null() {
                    json!({"type": "object"})
                } else {
                    tool.parameters.clone()
                },
                effect: ToolEffect::Execute,
            },
            owner: owner.clone(),
            handler: Arc::new(ProviderToolHandler {
                provider: Arc::downgrade(handle),
                timeout: tool
                    .timeout
                    .map_or(gw.settings.default_tool_timeout, Duration::from_millis),
            }),
        })
        .collect();
    session.replace_tools(&owner, entries).map_err(|conflict| {
        ErrorMessage::new(
            ErrorCode::ToolConflict,
            format!(
                "Tool '{}' already registered by {}",
                conflict.name, conflict.existing
            ),
        )
        .session_id(session.id())
    })
}

/// Removes `handle`'s tools from `session`.
pub(crate) fn remove_tools(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    session: &Arc<Session>,
) {
    let _ = gw;
    session
        .replace_tools(&ToolOwner::Provider(handle.name.clone()), Vec::new())
        .ok();
}

struct ProviderToolHandler {
    provider: std::sync::Weak<ProviderHandle>,
    timeout: Duration,
}

/// Cancels the call at the provider if the caller stops waiting.
struct CancelOnDrop {
    provider: Arc<ProviderHandle>,
    call_id: String,
    session_id: String,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed
            && lock(&self.provider.pending_calls)
                .remove(&self.call_id)
                .is_some()
        {
            self.provider
                .out
                .send(GatewayMessage::ToolCancel(ToolCancel {
                    id: self.call_id.clone(),
                    session_id: self.session_id.clone(),
                    reason: "cancelled".to_owned(),
                }));
        }
    }
}

#[async_trait]
impl ToolHandler for ProviderToolHandler {
    async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        let Some(provider) = self.provider.upgrade() else {
            return Err(ToolFailure::new(
                tool_error_code::DISCONNECTED,
                "the provider is gone",
            ));
        };
        let (tx, rx) = oneshot::channel();
        let session_id = invocation.session_id.to_string();
        lock(&provider.pending_calls).insert(
            invocation.call_id.clone(),
            PendingCall {
                session_id: session_id.clone(),
                reply: tx,
            },
        );
        let mut guard = CancelOnDrop {
            provider: provider.clone(),
            call_id: invocation.call_id.clone(),
            session_id: session_id.clone(),
            armed: true,
        };
        let sent = provider.out.send(GatewayMessage::ToolCall(ToolCall {
            id: invocation.call_id.clone(),
            session_id,
            tool: invocation.tool.clone(),
            args: invocation.args,
        }));
        if !sent {
            guard.armed = false;
            lock(&provider.pending_calls).remove(&invocation.call_id);
            return Err(ToolFailure::new(
                tool_error_code::DISCONNECTED,
                "the provider's connection is gone",
            ));
        }
        let reply = match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => {
                guard.armed = false;
                return Err(ToolFailure::new(
                    tool_error_code::DISCONNECTED,
                    "the provider disconnected",
                ));
            }
            Err(_) => {
                // Timed out: tool.cancel goes out (the guard), the caller
                // gets CANCELLED now, and a late result is ignored.
                drop(guard);
                return Err(ToolFailure::new(
                    tool_error_code::CANCELLED,
                    format!(
                        "timed out after {} ms; tool.cancel sent",
                        self.timeout.as_millis()
                    ),
                ));
            }
        };
        guard.armed = false;
        result_to_outcome(reply)
    }
}

fn result_to_outcome(reply: ToolResult) -> Result<Value, ToolFailure> {
    if reply.is_error() {
        let code = reply
            .error_code
            .unwrap_or_else(|| tool_error_code::INTERNAL.to_owned());
        let message = reply.error.unwrap_or_else(|| code.clone());
        return Err(ToolFailure::new(code, message));
    }
    Ok(reply.data.unwrap_or(Value::Null))
}

/// The first terminal `tool.result` wins; later ones (and results for calls
/// this provider does not hold) are ignored.
pub(crate) fn on_tool_result(conn: &Connection, result: ToolResult) -> Flow {
    let Some(provider) = &conn.provider else {
        return Flow::Continue;
    };
    let pending = lock(&provider.pending_calls).remove(&result.id);
    if let Some(pending) = pending {
        let _ = pending.reply.send(result);
    }
    Flow::Continue
}

pub(crate) fn on_tool_progress(conn: &Connection, progress: ToolProgress) -> Flow {
    let Some(provider) = &conn.provider else {
        return Flow::Continue;
    };
    let session_id = lock(&provider.pending_calls)
        .get(&progress.id)
        .map(|p| p.session_id.clone());
    if let Some(session) = session_id.and_then(|id| conn.gw.registry.get(&id)) {
        session.log(&provider.name, &progress.message);
    }
    Flow::Continue
}
