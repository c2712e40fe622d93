//! Taking the daemon's port: refused beyond loopback without a chosen
//! token, and a port in use said with who holds it (this state
//! directory's daemon, another copilot-bridge, or something else).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use bridge_config::BridgeConfig;
use tokio::net::TcpListener;

use super::DaemonError;
use crate::client::find_running;
use crate::state_file::GatewayFile;

/// Where clients connect for a daemon bound to `ip`.
pub(super) fn connect_host(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        other => other,
    }
}

/// Beyond loopback, anyone on the network can reach the port; the random
/// per-start token protects only while no one else can read gateway.json,
/// so the user must choose the token (and so know that they exposed it).
pub(super) fn refuse_open_bind_without_token(config: &BridgeConfig) -> Result<(), DaemonError> {
    if config.bind_address.is_loopback() || config.token.is_some() {
        return Ok(());
    }
    Err(DaemonError::Config(format!(
        "bind_address {} (from {}) is reachable from other machines, and no token is set; \
         binding beyond loopback requires an explicit bearer token: set COPILOT_BRIDGE_TOKEN \
         (or `token` in config.toml) to a long random value, e.g. `openssl rand -hex 32`, \
         or bind to 127.0.0.1",
        config.bind_address,
        config.source_of(bridge_config::keys::BIND_ADDRESS),
    )))
}

pub(super) async fn bind(home: &Path, ip: IpAddr, port: u16) -> Result<TcpListener, DaemonError> {
    let address = SocketAddr::new(ip, port);
    match TcpListener::bind(address).await {
        Ok(listener) => Ok(listener),
        Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => {
            // Another daemon of this state directory may have won a race.
            if let Some(running) = find_running(home).await {
                return Err(DaemonError::AlreadyRunning {
                    address: running.address(),
                    pid: running.file().pid,
                });
            }
            Err(DaemonError::PortInUse {
                ip,
                port,
                by: describe_port_owner(connect_host(ip), port).await,
            })
        }
        Err(err) => Err(DaemonError::Bind {
            address,
            reason: err.to_string(),
        }),
    }
}

/// " by another copilot-bridge daemon (pid N, another state directory)" when
/// the port's owner answers `/healthz` like one of us.
async fn describe_port_owner(host: IpAddr, port: u16) -> String {
    let probe = GatewayFile {
        port,
        pid: 0,
        host: host.to_string(),
        token: String::new(),
        provider_token: String::new(),
        default_session: String::new(),
        started_at: String::new(),
        version: String::new(),
    };
    let Ok(client) = crate::client::GatewayClient::new(probe) else {
        return String::new();
    };
    match client.identity().await {
        Ok(health) if crate::client::is_our_daemon(&health) => format!(
            " by another copilot-bridge daemon (pid {}) with a different state directory",
            health["pid"]
        ),
        _ => String::new(),
    }
}
