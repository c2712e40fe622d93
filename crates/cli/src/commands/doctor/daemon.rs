//! The daemon of this state directory (`bridge_server::find_running`: its
//! gateway.json, its pid alive, `/healthz` answering as it), its version
//! against this binary's (`upgrade`), and the port it listens on or would.

use std::net::{SocketAddr, TcpListener};

use bridge_config::BridgeConfig;
use bridge_server::{GatewayClient, GatewayFile, find_running, process};

use super::upgrade::{restart_command, stale};
use super::{Check, NETWORK_TIMEOUT, invocation};

pub(super) async fn checks(config: &BridgeConfig) -> Vec<Check> {
    let running = tokio::time::timeout(NETWORK_TIMEOUT, find_running(&config.home))
        .await
        .ok()
        .flatten();
    match running {
        Some(client) => vec![daemon(config, &client).await, port_in_use(config, &client)],
        None => vec![not_running(config), free_port(config)],
    }
}

async fn daemon(config: &BridgeConfig, client: &GatewayClient) -> Check {
    let file = client.file();
    if let Some(stale) = stale(file).await {
        return Check::warn("daemon", stale.describe(file), restart_command(config));
    }
    Check::ok(
        "daemon",
        format!(
            "running: pid {}, version {}, on {}, started {}",
            file.pid,
            file.version,
            file.address(),
            file.started_at
        ),
    )
}

fn not_running(config: &BridgeConfig) -> Check {
    let file = GatewayFile::read(&config.home);
    if let Some(file) = &file
        && process::is_alive(file.pid)
    {
        return Check::warn(
            "daemon",
            format!(
                "gateway.json names pid {}, which runs but does not answer on {} as this state directory's daemon within {} s",
                file.pid,
                file.address(),
                NETWORK_TIMEOUT.as_secs()
            ),
            format!(
                "look at {} and, if pid {} is a hung copilot-bridge, kill {} && {} daemon start",
                config.home.join(super::super::daemon::LOG_FILE).display(),
                file.pid,
                file.pid,
                invocation(config)
            ),
        );
    }
    let stale = file
        .map(|file| {
            format!(
                " (gateway.json names pid {}, which is gone; the next start replaces it)",
                file.pid
            )
        })
        .unwrap_or_default();
    Check::ok(
        "daemon",
        format!(
            "not running{stale}; agents and commands start it when they need it ({} daemon start)",
            invocation(config)
        ),
    )
}

fn port_in_use(config: &BridgeConfig, client: &GatewayClient) -> Check {
    let file = client.file();
    if config.port != 0 && config.port != file.port {
        return Check::warn(
            "port",
            format!(
                "the daemon listens on {}, but the configuration says port {}: commands of this configuration find it by its gateway.json, agents set up for port {} do not",
                file.address(),
                config.port,
                config.port
            ),
            restart_command(config),
        );
    }
    Check::ok("port", format!("the daemon listens on {}", file.address()))
}

/// Whether the configured port is free for the daemon to take.
fn free_port(config: &BridgeConfig) -> Check {
    if config.port == 0 {
        return Check::ok("port", "0: the daemon takes a free port when it starts");
    }
    let address = SocketAddr::new(config.bind_address, config.port);
    match TcpListener::bind(address) {
        Ok(_) => Check::ok("port", format!("{address} is free for the daemon")),
        Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => Check::fail(
            "port",
            format!("{address} is taken by another program, not this state directory's daemon"),
            format!(
                "choose another port: `port = {}` in config.toml, --port or COPILOT_BRIDGE_PORT (or stop the program on {address})",
                config.port.saturating_add(1)
            ),
        ),
        Err(err) => Check::fail(
            "port",
            format!("cannot bind {address}: {err}"),
            "choose another port or bind_address in config.toml (see docs/configuration.md)",
        ),
    }
}
