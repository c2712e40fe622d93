//! The OpenClaw tools in the sessions the hub creates: the gateway's
//! (`openclaw_agent_ask`, `openclaw_sessions`: the daemon's sessions) and
//! OpenClaw's memory (`openclaw_memory_search`, `openclaw_memory_read`,
//! `openclaw_user_prefs`: every session of `run`, `sessions resume`, the
//! daemon, `copilot_code*` tasks and orchestrated sub-tasks, when the
//! configuration says so: `bridge_compose::openclaw`).
//!
//! They are registered as [`ToolOwner::Service`] so every call still goes
//! through `Session::call_tool` (rules, audit log, redaction), and served
//! in-process by [`GatewayTools`] from the memory index this process keeps.
//! A tool `permissions.blocked_tools` names is not offered at all.

use std::sync::Arc;

use async_trait::async_trait;
use bridge_engine::{
    Session, SessionListener, ToolEntry, ToolFailure, ToolHandler, ToolInvocation, ToolOwner,
};
use bridge_protocol::{ToolEffect, ToolSpec};
use serde_json::Value;

use super::{
    AGENT_ASK, AGENT_ASK_DESCRIPTION, GatewayTools, MEMORY_READ, MEMORY_SEARCH, SESSIONS,
    SESSIONS_DESCRIPTION, USER_PREFS, agent_ask_schema, sessions_schema,
};
use crate::memory::tools as memory_tools;

/// The owner name of the tools in session tool tables.
pub const OWNER: &str = "openclaw";

/// Which of the tools sessions get.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolSet {
    /// `openclaw_agent_ask` and `openclaw_sessions` (they need the
    /// daemon's gateway connection).
    pub gateway: bool,
    /// The three memory tools.
    pub memory: bool,
}

/// Gives every session the OpenClaw tools of its [`ToolSet`] as it starts.
pub struct SessionTools {
    handler: Arc<Handler>,
    specs: Vec<ToolSpec>,
}

struct Handler(GatewayTools);

impl SessionTools {
    pub fn new(tools: GatewayTools, set: ToolSet) -> Self {
        let mut specs = Vec::new();
        if set.gateway {
            specs.extend(gateway_specs());
        }
        if set.memory {
            specs.extend(memory_specs());
        }
        Self {
            handler: Arc::new(Handler(tools)),
            specs,
        }
    }

    /// The tools a session gets (before its rules remove any).
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// Adds the tools to `session`, but those its rules block.
    pub fn register(&self, session: &Session) {
        let guard = session.guard();
        let entries: Vec<ToolEntry> = self
            .specs
            .iter()
            .filter(|spec| !guard.blocks_tool(&spec.name))
            .map(|spec| ToolEntry {
                spec: spec.clone(),
                owner: owner(),
                handler: self.handler.clone(),
            })
            .collect();
        if entries.is_empty() {
            return;
        }
        if let Err(err) = session.register_tools(&owner(), entries) {
            tracing::warn!(session = session.id(), error = %err, "the OpenClaw tools could not be added");
        }
    }
}

impl SessionListener for SessionTools {
    fn session_started(&self, session: &Arc<Session>) {
        self.register(session);
    }
}

/// Who owns the tools in a session's table.
pub fn owner() -> ToolOwner {
    ToolOwner::Service(OWNER.to_owned())
}

fn gateway_specs() -> [ToolSpec; 2] {
    [
        ToolSpec {
            name: AGENT_ASK.to_owned(),
            description: AGENT_ASK_DESCRIPTION.to_owned(),
            input_schema: agent_ask_schema(),
            effect: ToolEffect::Execute,
        },
        ToolSpec {
            name: SESSIONS.to_owned(),
            description: SESSIONS_DESCRIPTION.to_owned(),
            input_schema: sessions_schema(),
            effect: ToolEffect::Read,
        },
    ]
}

fn memory_specs() -> [ToolSpec; 3] {
    let read = |name: &str, description: &str, input_schema: Value| ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema,
        effect: ToolEffect::Read,
    };
    [
        read(
            MEMORY_SEARCH,
            memory_tools::SEARCH_DESCRIPTION,
            memory_tools::search_schema(),
        ),
        read(
            MEMORY_READ,
            memory_tools::READ_DESCRIPTION,
            memory_tools::read_schema(),
        ),
        read(
            USER_PREFS,
            memory_tools::USER_PREFS_DESCRIPTION,
            memory_tools::user_prefs_schema(),
        ),
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
