//! A session's own tools for an agent CLI the hub runs: the CLI is another
//! process, so the tools it should have from the session (OpenClaw's memory,
//! say) reach it as an MCP server this process serves for the length of one
//! run. What serves them is the host's business (bridge-mcp has the MCP
//! server); a runner only asks for the server and hands it to the agent.
//!
//! Every call through such a server is the session's `Session::call_tool`:
//! the decision, the audit record and the redaction happen there, so the
//! agent's own hooks let these tools through without deciding them twice
//! (crates/engine/src/runner/copilot/policy.rs).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::session::Session;

/// Serves some of a session's tools to an agent CLI for one run.
#[async_trait]
pub trait SessionToolServer: Send + Sync + std::fmt::Debug {
    /// The server for `session`'s run, or `None` when the session has none
    /// of the tools it serves (so the agent is not given an empty server).
    async fn serve(&self, session: &Arc<Session>) -> Result<Option<ServedTools>, String>;
}

/// A running server: where the agent reaches it, and what stops it.
#[derive(Debug)]
pub struct ServedTools {
    /// The server's name in the agent's configuration.
    pub name: String,
    /// Its streamable HTTP endpoint (loopback).
    pub url: String,
    /// Headers the agent must send (its bearer token).
    pub headers: BTreeMap<String, String>,
    /// Stops the server when the run's value is dropped.
    pub stop: DropGuard,
}

impl ServedTools {
    pub fn new(
        name: impl Into<String>,
        url: impl Into<String>,
        headers: BTreeMap<String, String>,
        stop: CancellationToken,
    ) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            headers,
            stop: stop.drop_guard(),
        }
    }
}
