//! `GET /healthz`: is the daemon up, and how busy. No secrets, no token.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::app::ServerContext;

pub(crate) async fn healthz(State(ctx): State<ServerContext>) -> Json<Value> {
    let status = ctx.gateway.status();
    Json(json!({
        "ok": true,
        "service": crate::client::SERVICE,
        "sessions": ctx.registry().list().len(),
        "providers": status.providers.len(),
        "connections": status.connections,
        "version": crate::VERSION,
        // Lets a client tell this daemon from another process that took the
        // port after a crash.
        "pid": ctx.facts.pid,
    }))
}
