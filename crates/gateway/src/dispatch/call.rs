//! One provider tool call: routing to an instance, the concurrency slot,
//! the `tool.call` round trip with its timeout and cancellation, file
//! references, and one retry on another instance when the provider says
//! the failure is retryable.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use bridge_engine::{ToolFailure, ToolHandler, ToolInvocation};
use bridge_policy::Access;
use bridge_protocol::provider::{
    ErrorCode, ErrorMessage, GatewayMessage, ToolAccess, ToolCall, ToolCancel, ToolResult,
    tool_error_code,
};
use serde_json::Value;
use tokio::sync::oneshot;

use super::files;
use super::groups::{InstanceGroup, Route};
use super::limits::scope_key;
use crate::provider::{PendingCall, ProviderHandle, lock};
use crate::state::GatewayInner;

/// The session's handler of one tool name of a provider group.
pub(crate) struct GroupToolHandler {
    gw: Weak<GatewayInner>,
    group: Arc<InstanceGroup>,
    tool: String,
    /// What the tool declared it reads and writes (docs/providers.md,
    /// "Declared access").
    access: Option<ToolAccess>,
}

impl GroupToolHandler {
    pub(crate) fn new(
        gw: &Arc<GatewayInner>,
        group: &Arc<InstanceGroup>,
        tool: &str,
        access: Option<ToolAccess>,
    ) -> Self {
        Self {
            gw: Arc::downgrade(gw),
            group: group.clone(),
            tool: tool.to_owned(),
            access,
        }
    }
}

/// How one attempt ended.
struct Failed {
    failure: ToolFailure,
    /// The provider marked it `retryable`.
    retryable: bool,
}

impl From<ToolFailure> for Failed {
    fn from(failure: ToolFailure) -> Self {
        Self {
            failure,
            retryable: false,
        }
    }
}

#[async_trait]
impl ToolHandler for GroupToolHandler {
    fn accesses(&self, args: &Value) -> Result<Vec<Access>, ToolFailure> {
        match &self.access {
            Some(access) => super::access::declared(&self.tool, access, args),
            None => Ok(Vec::new()),
        }
    }

    async fn call(&self, mut invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        let Some(gw) = self.gw.upgrade() else {
            return Err(ToolFailure::new(
                tool_error_code::DISCONNECTED,
                "the gateway is shutting down",
            ));
        };
        let mut args = std::mem::take(&mut invocation.args);
        let multi = self.group.is_multi();
        let target = if multi { take_target(&mut args)? } else { None };
        let default_timeout = gw.settings.default_tool_timeout;
        let route = self
            .group
            .route(&self.tool, target.as_deref(), None, default_timeout)?;
        // Only a group of instances has another one to retry on; the
        // arguments are copied for that case alone.
        let retry_args = (multi && target.is_none()).then(|| args.clone());
        let first = attempt(
            &gw,
            &self.group,
            &route,
            &invocation,
            &invocation.call_id,
            args,
        )
        .await;
        match first {
            Ok(value) => Ok(value),
            Err(failed) if failed.retryable && retry_args.is_some() => {
                let Ok(second) =
                    self.group
                        .route(&self.tool, None, Some(&route.handle), default_timeout)
                else {
                    return Err(failed.failure);
                };
                let args = retry_args.unwrap_or_default();
                tracing::debug!(provider = %self.group.name, tool = %self.tool, "retrying a retryable failure on another instance");
                let retry_id = format!("{}-retry", invocation.call_id);
                attempt(&gw, &self.group, &second, &invocation, &retry_id, args)
                    .await
                    .map_err(|failed| failed.failure)
            }
            Err(failed) => Err(failed.failure),
        }
    }
}

/// Removes the gateway's `target` argument; it never reaches a provider.
fn take_target(args: &mut Value) -> Result<Option<String>, ToolFailure> {
    let Some(object) = args.as_object_mut() else {
        return Ok(None);
    };
    match object.remove("target") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(target)) => Ok(Some(target)),
        Some(other) => Err(ToolFailure::new(
            "invalid_arguments",
            format!("target must be an instance id string, not {other}"),
        )),
    }
}

/// Cancels the call at the provider if the caller stops waiting (or the
/// call timed out), unless a terminal result already arrived.
struct CancelOnDrop {
    provider: Arc<ProviderHandle>,
    call_id: String,
    session_id: String,
    reason: &'static str,
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
                    reason: self.reason.to_owned(),
                }));
        }
    }
}

async fn attempt(
    gw: &Arc<GatewayInner>,
    group: &InstanceGroup,
    route: &Route,
    invocation: &ToolInvocation,
    call_id: &str,
    args: Value,
) -> Result<Value, Failed> {
    let provider = &route.handle;
    let _slot = match &route.concurrency {
        Some(concurrency) => {
            let key = scope_key(
                concurrency,
                &provider.name,
                provider.instance.as_deref(),
                &invocation.tool,
            );
            let limiter = gw.limiters.get(&key, concurrency.max as usize);
            let slot = limiter
                .acquire(gw.settings.concurrency_queue_limit)
                .await
                .map_err(|full| {
                    ToolFailure::new(
                        tool_error_code::RATE_LIMITED,
                        format!(
                            "provider '{}' is at its concurrency limit ({} in flight, {} queued); retry after a second",
                            provider.name, full.in_flight, full.queued
                        ),
                    )
                })?;
            Some(slot)
        }
        None => None,
    };
    // A call that waited for its slot may outlive its instance (a
    // disconnect or rebind meanwhile): it must not reach the connection's
    // next registration.
    if !group.serves_through(provider) {
        return Err(ToolFailure::new(
            tool_error_code::DISCONNECTED,
            format!(
                "provider '{}' left before the call could start",
                provider.name
            ),
        )
        .into());
    }
    let (tx, rx) = oneshot::channel();
    let session_id = invocation.session_id.to_string();
    lock(&provider.pending_calls).insert(
        call_id.to_owned(),
        PendingCall {
            session_id: session_id.clone(),
            reply: tx,
        },
    );
    let mut guard = CancelOnDrop {
        provider: provider.clone(),
        call_id: call_id.to_owned(),
        session_id: session_id.clone(),
        reason: "cancelled",
        armed: true,
    };
    let sent = provider.out.send(GatewayMessage::ToolCall(ToolCall {
        id: call_id.to_owned(),
        session_id,
        tool: invocation.tool.clone(),
        args,
    }));
    if !sent {
        guard.armed = false;
        lock(&provider.pending_calls).remove(call_id);
        return Err(ToolFailure::new(
            tool_error_code::DISCONNECTED,
            format!("provider '{}' is disconnected", provider.name),
        )
        .into());
    }
    let reply = match tokio::time::timeout(route.timeout, rx).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(_)) => {
            guard.armed = false;
            return Err(ToolFailure::new(
                tool_error_code::DISCONNECTED,
                format!("provider '{}' disconnected", provider.name),
            )
            .into());
        }
        Err(_) => {
            // tool.cancel goes out (the guard), the caller hears CANCELLED
            // now, and a late result finds no pending call.
            guard.reason = "timeout";
            drop(guard);
            return Err(ToolFailure::new(
                tool_error_code::CANCELLED,
                format!(
                    "{} of provider '{}' timed out after {} ms; tool.cancel sent",
                    invocation.tool,
                    provider.name,
                    route.timeout.as_millis()
                ),
            )
            .into());
        }
    };
    guard.armed = false;
    outcome(provider, reply).await
}

async fn outcome(provider: &Arc<ProviderHandle>, reply: ToolResult) -> Result<Value, Failed> {
    if reply.is_error() {
        let code = reply
            .error_code
            .unwrap_or_else(|| tool_error_code::INTERNAL.to_owned());
        let message = reply.error.unwrap_or_else(|| code.clone());
        return Err(Failed {
            failure: ToolFailure::new(code, message),
            retryable: reply.retryable == Some(true),
        });
    }
    if let Some(file) = reply.file {
        let Some(dir) = provider.persist_dir.clone() else {
            return Err(ToolFailure::new(
                tool_error_code::UNAUTHORIZED,
                "file references are for local providers only",
            )
            .into());
        };
        return match files::read_file_ref(dir, file.clone()).await {
            Ok(value) => Ok(value),
            Err(failure) => {
                if failure.kind == bridge_protocol::FailureKind::Unauthorized {
                    provider.out.error(
                        ErrorMessage::new(ErrorCode::Unauthorized, failure.message.clone())
                            .reply_to("tool.result")
                            .provider_id(&provider.id),
                    );
                }
                Err(failure.into())
            }
        };
    }
    Ok(reply.data.unwrap_or(Value::Null))
}
