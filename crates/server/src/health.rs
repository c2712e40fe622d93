//! `GET /healthz`: is the daemon up, how busy, and which chat backends
//! answer. No secrets, no token.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::app::ServerContext;

/// The longest `/healthz` waits for backend probes; slower ones answer
/// from the cache (their probe goes on in the background).
pub(crate) const HEALTH_PROBE_WAIT: Duration = Duration::from_millis(500);

pub(crate) async fn healthz(State(ctx): State<ServerContext>) -> Json<Value> {
    let status = ctx.gateway.status();
    let backends: serde_json::Map<String, Value> = ctx
        .backends
        .health_within(HEALTH_PROBE_WAIT)
        .await
        .into_iter()
        .map(|(name, seen)| (name, Value::from(seen.as_str())))
        .collect();
    Json(json!({
        "backends": backends,
        "ok": true,
        "service": crate::client::SERVICE,
        "sessions": ctx.registry().list().len(),
        "providers": status.providers.len(),
        "connections": status.connections,
        "openclaw": crate::openclaw::status(&ctx),
        "vscode": crate::vscode::status(&ctx.gateway),
        "version": crate::VERSION,
        // Lets a client tell this daemon from another process that took the
        // port after a crash.
        "pid": ctx.facts.pid,
    }))
}
