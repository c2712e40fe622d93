//! The OpenClaw gateway inside the daemon: the client
//! (`bridge_openclaw::Gateway`) started from the configuration, and its
//! state for `/healthz` and `bridge.status`. The tools it gives every hub
//! session (`openclaw_agent_ask`, `openclaw_sessions`, and OpenClaw's
//! memory when `openclaw.memory` says so) are
//! `bridge_mcp::openclaw::SessionTools`, given by
//! `bridge_compose::OpenClawMemory::session_tools` (docs/openclaw.md).

use bridge_config::BridgeConfig;
use bridge_openclaw::{Gateway, GatewaySettings};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::app::ServerContext;

/// The gateway client, when the configuration asks for one
/// (`openclaw.gateway`: `on`, or `auto` with OpenClaw configured here).
pub fn start_gateway(config: &BridgeConfig, stop: &CancellationToken) -> Option<Gateway> {
    if !config.openclaw.gateway_enabled() {
        return None;
    }
    let settings = GatewaySettings {
        url: config.openclaw.gateway_url(),
        token: config.openclaw.gateway_token.clone(),
        identity_file: Some(config.home.join("openclaw-device.json")),
        request_timeout: bridge_openclaw::DEFAULT_REQUEST_TIMEOUT,
        client_version: crate::VERSION.to_owned(),
    };
    Some(Gateway::start(settings, stop.child_token()))
}

/// The connection as `/healthz` and `bridge.status` show it (`state:
/// "off"` without one).
pub fn status(ctx: &ServerContext) -> Value {
    match &ctx.openclaw {
        Some(gateway) => serde_json::to_value(gateway.status()).unwrap_or(Value::Null),
        None => json!({"state": "off"}),
    }
}
