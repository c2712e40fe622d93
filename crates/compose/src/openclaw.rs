//! OpenClaw's memory in the sessions the hub creates (docs/openclaw.md,
//! "Memory in every session"): whether they get `openclaw_memory_search`,
//! `openclaw_memory_read` and `openclaw_user_prefs` (`openclaw.memory`:
//! `auto` when the default agent's workspace holds memory, found as
//! `mcp memory` finds it), the memory server that answers them with its
//! index kept in the state directory, and the session listener that adds
//! them — for the daemon and every CLI command that runs a task.

use std::sync::Arc;

use bridge_config::{AutoSwitch, BridgeConfig};
use bridge_engine::SessionListener;
use bridge_mcp::memory::{MemoryLayout, MemoryServer};
use bridge_mcp::openclaw::{GatewayTools, SessionTools, ToolSet};
use bridge_mcp::session::ServiceToolsForAgent;
use bridge_openclaw::Gateway;

/// The name of the server an agent CLI the hub runs gets the session's
/// OpenClaw tools from (its tools reach the model as `openclaw-…`), unless
/// one of `[mcp.servers]` has it: then [`AGENT_SERVER_SPARE_NAME`].
pub const AGENT_SERVER_NAME: &str = "openclaw";
pub const AGENT_SERVER_SPARE_NAME: &str = "copilot-bridge-openclaw";

/// OpenClaw's memory as the configuration and this machine have it.
#[derive(Debug, Clone)]
pub struct OpenClawMemory {
    server: MemoryServer,
    offered: bool,
    /// Whether the default agent's workspace holds memory notes.
    holds_memory: bool,
    mode: AutoSwitch,
}

impl OpenClawMemory {
    /// The default agent's memory (a few `stat`s, nothing read), and
    /// whether sessions get its tools.
    pub fn detect(config: &BridgeConfig) -> Self {
        let layout = MemoryLayout::detect(None, &config.openclaw);
        let mode = config.openclaw.memory_mode;
        let holds_memory = layout.holds_memory();
        let offered = match mode {
            AutoSwitch::On => true,
            AutoSwitch::Off => false,
            AutoSwitch::Auto => holds_memory,
        };
        Self {
            server: MemoryServer::new(layout).with_state_dir(&config.home),
            offered,
            holds_memory,
            mode,
        }
    }

    /// The daemon's view: with `auto`, a gateway connection to OpenClaw
    /// (`openclaw.gateway` on, or auto with OpenClaw configured here) also
    /// offers the memory, since the gateway's `memory.search` answers it
    /// even when the agent's workspace is not on this machine.
    #[must_use]
    pub fn with_gateway(mut self, gateway_enabled: bool) -> Self {
        if self.mode == AutoSwitch::Auto && gateway_enabled {
            self.offered = true;
        }
        self
    }

    /// Whether sessions get the memory tools.
    pub fn offered(&self) -> bool {
        self.offered
    }

    /// The server over the memory (its indexes shared by every clone).
    pub fn server(&self) -> &MemoryServer {
        &self.server
    }

    /// When sessions get the memory: its index brought up to date on a
    /// thread of its own (the kept index makes that a walk of `stat`s),
    /// so the first memory call of a run meets a warm index instead of a
    /// cold one. Nothing when they do not.
    pub fn warm_up_in_background(&self) {
        if !self.offered {
            return;
        }
        let server = self.server.clone();
        let spawned = std::thread::Builder::new()
            .name("openclaw-memory-warm-up".to_owned())
            .spawn(move || server.warm_up_blocking());
        if let Err(err) = spawned {
            tracing::debug!(error = %err, "the memory index is warmed by the first search instead");
        }
    }

    /// One sentence for `status` and `setup`: what sessions get, from
    /// where, and how to change it.
    pub fn describe(&self) -> String {
        let layout = self.server.layout();
        let root = layout.root.display();
        let off = "turn it off with `[openclaw] memory = \"off\"` in config.toml or COPILOT_BRIDGE_OPENCLAW_MEMORY=off";
        match (self.offered, self.mode) {
            (true, _) if self.holds_memory => format!(
                "every session gets OpenClaw's memory (openclaw_memory_search, openclaw_memory_read, openclaw_user_prefs) from {root}; {off}"
            ),
            (true, _) => format!(
                "every session gets OpenClaw's memory tools (openclaw_memory_search, openclaw_memory_read, openclaw_user_prefs); {root} holds no notes yet, so search answers from the OpenClaw gateway when connected; {off}"
            ),
            (false, AutoSwitch::Off) => {
                "sessions get no OpenClaw memory (openclaw.memory is off)".to_owned()
            }
            (false, _) => format!(
                "sessions get no OpenClaw memory: no OpenClaw workspace with memory at {root} (set OPENCLAW_WORKSPACE_DIR, or `[openclaw] memory = \"on\"`)"
            ),
        }
    }

    /// What gives each session its OpenClaw tools: the gateway's when
    /// `gateway` is `Some` (the daemon, connected or not), the memory
    /// tools when offered. `None` when there are none to give.
    pub fn session_tools(
        &self,
        gateway: Option<Option<Gateway>>,
    ) -> Option<Arc<dyn SessionListener>> {
        let set = ToolSet {
            gateway: gateway.is_some(),
            memory: self.offered,
        };
        if set == ToolSet::default() {
            return None;
        }
        let tools = GatewayTools::new(gateway.flatten(), self.server.clone());
        Some(Arc::new(SessionTools::new(tools, set)))
    }
}

/// What serves the session's OpenClaw tools to an agent CLI the hub runs,
/// under a name none of `config`'s MCP servers has.
pub fn agent_server(config: &BridgeConfig) -> ServiceToolsForAgent {
    let name = if config.mcp.servers.contains_key(AGENT_SERVER_NAME) {
        AGENT_SERVER_SPARE_NAME
    } else {
        AGENT_SERVER_NAME
    };
    ServiceToolsForAgent::new(bridge_mcp::openclaw::OWNER, name)
}
