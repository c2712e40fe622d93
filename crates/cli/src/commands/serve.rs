//! `copilot-bridge serve`: the daemon in the foreground (also what `daemon
//! start` runs detached).

use std::process::ExitCode;

use bridge_config::BridgeConfig;
use std::time::Duration;

use bridge_server::{ConnectionLimits, Daemon, DaemonError, DaemonOptions};

use crate::args::ServeArgs;
use crate::exit::{self, Failure};

/// Set by `daemon start` on the process it detaches.
pub const DETACHED_ENV: &str = "COPILOT_BRIDGE_DETACHED";
/// Open connections the daemon holds at most (HTTP and WebSocket).
pub const MAX_CONNECTIONS_ENV: &str = "COPILOT_BRIDGE_MAX_CONNECTIONS";
/// Milliseconds a client gets to send a request head.
pub const HEADER_TIMEOUT_ENV: &str = "COPILOT_BRIDGE_HEADER_TIMEOUT_MS";
/// Time a request body may take to arrive (ms).
pub const BODY_TIMEOUT_ENV: &str = "COPILOT_BRIDGE_BODY_TIMEOUT_MS";

pub async fn run(config: BridgeConfig, args: ServeArgs) -> Result<ExitCode, Failure> {
    let cwd = std::env::current_dir()
        .map_err(|err| Failure::internal(format!("cannot read the current directory: {err}")))?;
    let detached = std::env::var_os(DETACHED_ENV).is_some_and(|v| v == "1");
    let trust_project_providers = args.trust_project_providers || config.trust_project_providers;
    let options = DaemonOptions {
        config,
        cwd,
        detached,
        trust_project_providers,
        limits: connection_limits()?,
    };
    let daemon = Daemon::start(options).await.map_err(daemon_failure)?;
    daemon.run().await;
    Ok(ExitCode::SUCCESS)
}

/// The defaults, refined by the environment (for daemons that serve many
/// providers, or tests that cannot wait for the default timeout).
fn connection_limits() -> Result<ConnectionLimits, Failure> {
    let mut limits = ConnectionLimits::default();
    if let Some(max) = positive_env(MAX_CONNECTIONS_ENV)? {
        limits.max_connections = usize::try_from(max).unwrap_or(usize::MAX);
    }
    if let Some(millis) = positive_env(HEADER_TIMEOUT_ENV)? {
        limits.header_timeout = Duration::from_millis(millis);
    }
    if let Some(millis) = positive_env(BODY_TIMEOUT_ENV)? {
        limits.body_timeout = Duration::from_millis(millis);
    }
    Ok(limits)
}

fn positive_env(name: &str) -> Result<Option<u64>, Failure> {
    let Some(raw) = std::env::var_os(name) else {
        return Ok(None);
    };
    raw.to_str()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .filter(|n| *n > 0)
        .map(Some)
        .ok_or_else(|| {
            Failure::new(
                exit::CONFIG,
                format!(
                    "{name} must be a positive integer, not {:?}",
                    raw.to_string_lossy()
                ),
            )
        })
}

fn daemon_failure(err: DaemonError) -> Failure {
    let code = match err {
        DaemonError::Config(_) => exit::CONFIG,
        _ => exit::FAILED,
    };
    Failure::new(code, err.to_string())
}
