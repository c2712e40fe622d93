//! `copilot-bridge mcp session [--session ID]`: the provider tools of a
//! daemon session over stdio. The providers connect to the daemon, so this
//! forwards to the daemon's `/mcp/session`, starting the daemon (detached,
//! as `daemon start` does) when none runs.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use async_trait::async_trait;
use bridge_config::BridgeConfig;
use bridge_mcp::session::{APPROVE_TOOL, DaemonEndpoint, DaemonLocator, SessionProxy};
use bridge_server::{GatewayClient, find_running};
use tokio_util::sync::CancellationToken;

use crate::args::{GlobalArgs, McpSessionArgs};
use crate::commands::daemon::{Launched, launch, serve_command_args};
use crate::exit::Failure;

pub async fn run(
    global: &GlobalArgs,
    config: &BridgeConfig,
    args: McpSessionArgs,
) -> Result<ExitCode, Failure> {
    serve(proxy(global, config, args)).await
}

/// `copilot-bridge mcp approvals [--session ID]`: the daemon's
/// permission-prompt tool alone, over stdio (docs/approvals.md).
pub async fn run_approvals(
    global: &GlobalArgs,
    config: &BridgeConfig,
    args: McpSessionArgs,
) -> Result<ExitCode, Failure> {
    serve(proxy(global, config, args).only(&[APPROVE_TOOL])).await
}

fn proxy(global: &GlobalArgs, config: &BridgeConfig, args: McpSessionArgs) -> SessionProxy {
    let locator = CliLocator {
        home: config.home.clone(),
        serve_args: serve_command_args(global, config, false),
    };
    SessionProxy::new(Box::new(locator), args.session)
}

async fn serve(proxy: SessionProxy) -> Result<ExitCode, Failure> {
    bridge_mcp::serve::serve_stdio(proxy, CancellationToken::new())
        .await
        .map_err(|err| Failure::internal(err.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// The daemon of this configuration's home, from its `gateway.json`.
struct CliLocator {
    home: PathBuf,
    serve_args: Vec<OsString>,
}

#[async_trait]
impl DaemonLocator for CliLocator {
    async fn locate(&self, start: bool) -> Result<DaemonEndpoint, String> {
        if let Some(client) = find_running(&self.home).await {
            return Ok(endpoint(&client));
        }
        if !start {
            return Err(format!(
                "no copilot-bridge daemon is running for {}",
                self.home.display()
            ));
        }
        tracing::info!(home = %self.home.display(), "no daemon running; starting one");
        match launch(&self.home, &self.serve_args).await {
            Ok(Launched::Started(client) | Launched::Already(client)) => Ok(endpoint(&client)),
            Err(failure) => Err(format!("cannot start the daemon: {}", failure.message)),
        }
    }
}

fn endpoint(client: &GatewayClient) -> DaemonEndpoint {
    DaemonEndpoint {
        base_url: client.file().http_url(""),
        token: client.file().token.clone(),
    }
}
