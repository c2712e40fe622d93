//! The engine's gate and transform handlers for provider callbacks: a
//! `gate.check` / `transform.request` round trip each. The engine bounds
//! the wait; when it gives up, the drop guard forgets the pending entry so
//! a late answer is ignored.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use bridge_engine::{GateHandler, GateRequest, GateVerdict, TransformHandler};
use bridge_protocol::provider::{
    GateCheck, GateDecision, GateResult, GatewayMessage, TransformRequest,
};
use bridge_util::ids;
use tokio::sync::oneshot;

use crate::provider::{ProviderHandle, lock};

/// Removes a pending entry however the wait ends.
struct Forget<'a, T> {
    pending: &'a Mutex<HashMap<String, oneshot::Sender<T>>>,
    call_id: &'a str,
}

impl<T> Drop for Forget<'_, T> {
    fn drop(&mut self) {
        lock(self.pending).remove(self.call_id);
    }
}

/// `action: "gate"` of one provider instance.
pub(crate) struct ProviderGate {
    pub provider: Weak<ProviderHandle>,
}

#[async_trait]
impl GateHandler for ProviderGate {
    async fn check(&self, request: GateRequest) -> GateVerdict {
        let Some(provider) = self.provider.upgrade() else {
            return GateVerdict::Unavailable("the gate's provider is gone".to_owned());
        };
        let call_id = ids::unique_id("gate");
        let (tx, rx) = oneshot::channel();
        lock(&provider.pending_gates).insert(call_id.clone(), tx);
        let _forget = Forget {
            pending: &provider.pending_gates,
            call_id: &call_id,
        };
        let sent = provider.out.send(GatewayMessage::GateCheck(GateCheck {
            gate_id: request.gate_id.clone(),
            call_id: call_id.clone(),
            session_id: request.session_id.to_string(),
            tool: request.tool,
            args: request.args,
        }));
        if !sent {
            return GateVerdict::Unavailable(format!(
                "provider '{}' is disconnected",
                provider.name
            ));
        }
        match rx.await {
            Ok(result) => verdict(result),
            Err(_) => GateVerdict::Unavailable(format!(
                "provider '{}' disconnected with the gate pending",
                provider.name
            )),
        }
    }
}

fn verdict(result: GateResult) -> GateVerdict {
    let reason = result.reason.unwrap_or_default();
    match result.decision {
        GateDecision::Allow => GateVerdict::Allow,
        GateDecision::Deny if reason.is_empty() => GateVerdict::Deny("no reason given".to_owned()),
        GateDecision::Deny => GateVerdict::Deny(reason),
        GateDecision::Context if reason.is_empty() => GateVerdict::Allow,
        GateDecision::Context => GateVerdict::Context(reason),
    }
}

/// `action: "callback"` of one provider instance.
pub(crate) struct ProviderTransform {
    pub provider: Weak<ProviderHandle>,
}

#[async_trait]
impl TransformHandler for ProviderTransform {
    async fn transform(
        &self,
        session_id: Arc<str>,
        section: String,
        current: String,
    ) -> Option<String> {
        let provider = self.provider.upgrade()?;
        let call_id = ids::unique_id("tx");
        let (tx, rx) = oneshot::channel();
        lock(&provider.pending_transforms).insert(call_id.clone(), tx);
        let _forget = Forget {
            pending: &provider.pending_transforms,
            call_id: &call_id,
        };
        let sent = provider
            .out
            .send(GatewayMessage::TransformRequest(TransformRequest {
                call_id: call_id.clone(),
                session_id: session_id.to_string(),
                section,
                current,
            }));
        if !sent {
            return None;
        }
        // A disconnect drops the sender: the current text stays.
        rx.await.ok()
    }
}
