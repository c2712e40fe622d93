//! `GET /healthz`: is the daemon up, how busy, and which chat backends
//! answer. No secrets, no token.

use std::time::Duration;

use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::ServerContext;

/// The longest `/healthz` waits for backend probes; slower ones answer
/// from the cache (their probe goes on in the background).
pub(crate) const HEALTH_PROBE_WAIT: Duration = Duration::from_millis(500);

/// `GET /healthz`'s query.
#[derive(Debug, Deserialize)]
pub(crate) struct HealthQuery {
    /// `false`: the answer without `backends`, so without waiting for a
    /// probe or starting one — what a client that only wants to know the
    /// daemon (every `hook` call, through `find_running`) asks for.
    backends: Option<bool>,
}

pub(crate) async fn healthz(
    State(ctx): State<ServerContext>,
    Query(query): Query<HealthQuery>,
) -> Json<Value> {
    let status = ctx.gateway.status();
    let backends = match query.backends {
        Some(false) => None,
        _ => Some(
            ctx.backends
                .health_within(HEALTH_PROBE_WAIT)
                .await
                .into_iter()
                .map(|(name, seen)| (name, Value::from(seen.as_str())))
                .collect::<serde_json::Map<String, Value>>(),
        ),
    };
    let mut answer = json!({
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
    });
    if let Some(backends) = backends {
        answer["backends"] = Value::Object(backends);
    }
    Json(answer)
}
