//! The OpenClaw gateway inside the daemon: the client
//! (`bridge_openclaw::Gateway`) started from the configuration, and the
//! tools it gives every hub session (docs/openclaw.md):
//!
//! - `openclaw_agent_ask`: a message to an OpenClaw agent, its reply;
//! - `openclaw_sessions`: OpenClaw's sessions;
//! - `openclaw_memory_search`: OpenClaw's memory, answered by the gateway's
//!   `memory.search` when it is connected, by our own index of the agent's
//!   workspace otherwise (the answer says which).
//!
//! What the tools do is `bridge_mcp::openclaw::GatewayTools`, shared with
//! the memory MCP server; this module starts the connection and puts the
//! tools in the sessions' tables.
//!
//! The tools are registered as [`ToolOwner::Service`] so every call still
//! goes through `Session::call_tool` (rules, audit log, redaction).

use std::sync::Arc;

use async_trait::async_trait;
use bridge_config::BridgeConfig;
use bridge_engine::{
    Session, SessionListener, ToolEntry, ToolFailure, ToolHandler, ToolInvocation, ToolOwner,
};
use bridge_mcp::openclaw::{self, GatewayTools};
use bridge_openclaw::{Gateway, GatewaySettings};
use bridge_protocol::{ToolEffect, ToolSpec};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::app::ServerContext;

/// The owner name of the tools in session tool tables.
pub const SERVICE: &str = "openclaw";

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

/// Gives every session the OpenClaw tools as it starts.
pub struct OpenClawTools {
    tools: Arc<Handler>,
}

struct Handler(GatewayTools);

impl OpenClawTools {
    pub fn new(tools: GatewayTools) -> Self {
        Self {
            tools: Arc::new(Handler(tools)),
        }
    }

    fn entries(&self) -> Vec<ToolEntry> {
        specs()
            .into_iter()
            .map(|spec| ToolEntry {
                spec,
                owner: ToolOwner::Service(SERVICE.to_owned()),
                handler: self.tools.clone(),
            })
            .collect()
    }
}

impl SessionListener for OpenClawTools {
    fn session_started(&self, session: &Arc<Session>) {
        let owner = ToolOwner::Service(SERVICE.to_owned());
        if let Err(err) = session.register_tools(&owner, self.entries()) {
            tracing::warn!(session = session.id(), error = %err, "the OpenClaw tools could not be added");
        }
    }
}

fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: openclaw::AGENT_ASK.to_owned(),
            description: openclaw::AGENT_ASK_DESCRIPTION.to_owned(),
            input_schema: openclaw::agent_ask_schema(),
            effect: ToolEffect::Execute,
        },
        ToolSpec {
            name: openclaw::SESSIONS.to_owned(),
            description: openclaw::SESSIONS_DESCRIPTION.to_owned(),
            input_schema: openclaw::sessions_schema(),
            effect: ToolEffect::Read,
        },
        ToolSpec {
            name: openclaw::MEMORY_SEARCH.to_owned(),
            description: bridge_mcp::memory::tools::SEARCH_DESCRIPTION.to_owned(),
            input_schema: bridge_mcp::memory::tools::search_schema(),
            effect: ToolEffect::Read,
        },
    ]
}

#[async_trait]
impl ToolHandler for Handler {
    async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        let Value::Object(args) = invocation.args else {
            return Err(ToolFailure::new(
                "invalid_arguments",
                format!("{}: the arguments must be an object", invocation.tool),
            ));
        };
        self.0
            .call(&invocation.tool, args)
            .await
            .map_err(|err| ToolFailure::new(err.code, err.message))
    }
}
