//! `copilot-bridge mcp memory`: OpenClaw's memory, read-only, over stdio.

use std::process::ExitCode;

use bridge_config::BridgeConfig;
use bridge_mcp::memory::{MemoryLayout, MemoryServer};
use tokio_util::sync::CancellationToken;

use crate::args::McpMemoryArgs;
use crate::exit::Failure;

pub async fn run(config: &BridgeConfig, args: McpMemoryArgs) -> Result<ExitCode, Failure> {
    // An openclaw.json that could not be used changes which workspace is
    // served: say so (on stderr, which MCP clients keep as the server's log).
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    let layout = MemoryLayout::detect(args.workspace.as_deref(), &config.openclaw);
    // Debug, not info: the first log line costs ~7 ms of start-up, and
    // agents spawn this server for every session.
    tracing::debug!(
        root = %layout.root.display(),
        layout = layout.kind.as_str(),
        agent = layout.agent_id.as_deref().unwrap_or_default(),
        reason = %layout.reason,
        "serving OpenClaw's memory over stdio"
    );
    // The index is kept in the state directory: an agent's session starts
    // this server afresh, and its first search then reads only what changed.
    let server = MemoryServer::new(layout).with_state_dir(&config.home);
    bridge_mcp::serve::serve_stdio(server, CancellationToken::new())
        .await
        .map_err(|err| Failure::internal(err.to_string()))?;
    Ok(ExitCode::SUCCESS)
}
