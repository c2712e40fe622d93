//! Project providers: declared in a session workspace's `tap.config.json`,
//! spawned with a project token in `TAP_PROVIDER_TOKEN`, bound to that
//! session and stopped with it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The project config file, at the root of a session's workspace.
pub const PROJECT_CONFIG_FILE: &str = "tap.config.json";

/// `tap.config.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectProviderConfig {
    #[serde(default)]
    pub providers: Vec<ProjectProviderSpec>,
}

/// One provider to spawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectProviderSpec {
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment (the provider otherwise gets a scrubbed one).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory relative to the workspace (default: its root).
    #[serde(default)]
    pub cwd: Option<String>,
}

/// Processes spawned for sessions.
#[derive(Default)]
pub(crate) struct SpawnedProviders {}

impl SpawnedProviders {
    pub(crate) async fn stop_all(&self) {}
}

use std::sync::Arc;

use bridge_engine::{Session, ShutdownWaiter};

use crate::state::GatewayInner;

/// Spawns the project providers of `session`'s workspace, if trusted.
pub(crate) fn spawn_for_session(gw: &Arc<GatewayInner>, session: &Arc<Session>) {
    let _ = (gw, session);
}

/// Waiters that complete when `session_id`'s spawned providers exited.
pub(crate) fn stop_waiters(gw: &Arc<GatewayInner>, session_id: &str) -> Vec<ShutdownWaiter> {
    let _ = (gw, session_id);
    Vec::new()
}

/// Stops what is still running for an ended session.
pub(crate) fn stop_for_session(gw: &Arc<GatewayInner>, session_id: &str) {
    let _ = (gw, session_id);
}
