//! A session's tool table: every tool the session can call, whoever serves
//! it, under one namespace.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use bridge_policy::Access;
use bridge_policy::agent_tools::Agent;
use bridge_protocol::ToolSpec;
use serde_json::Value;

use crate::call::ToolFailure;

/// Who serves a tool. Conflicts are decided by owner: two owners can never
/// hold the same name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolOwner {
    /// The built-in workspace tools.
    Workspace,
    /// A provider, by name (all instances of a multi-instance provider share
    /// one owner).
    Provider(String),
    /// An MCP server, by name.
    Mcp(String),
    /// A service the hub itself is connected to, by name (`openclaw`: the
    /// OpenClaw gateway's tools, crates/server/src/openclaw.rs).
    Service(String),
    /// A coding agent that runs this tool itself (the Copilot CLI's
    /// `bash`): never in a tool table, only the subject of a decision.
    Agent(Agent),
}

impl ToolOwner {
    /// The provider name, for `match.provider` in hook rules.
    pub fn provider_name(&self) -> Option<&str> {
        match self {
            Self::Provider(name) => Some(name),
            _ => None,
        }
    }
}

impl std::fmt::Display for ToolOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Workspace => f.write_str("the workspace tools"),
            Self::Provider(name) => write!(f, "provider '{name}'"),
            Self::Mcp(name) => write!(f, "MCP server '{name}'"),
            Self::Service(name) => write!(f, "the hub's {name} service"),
            Self::Agent(agent) => write!(f, "the agent {}", agent.name()),
        }
    }
}

/// One call as a handler receives it.
#[derive(Debug, Clone)]
pub struct ToolInvocation {
    pub session_id: Arc<str>,
    /// Globally unique.
    pub call_id: String,
    pub tool: String,
    pub args: Value,
}

/// Runs a tool. Dropping the returned future cancels the call; a handler
/// that talks to another process tells it so.
#[async_trait]
pub trait ToolHandler: Send + Sync {
    async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure>;

    /// What a call with `args` will do to this session's workspace, for
    /// the decision to check first. Tools that do not act on the workspace
    /// (a provider's, an MCP server's) declare nothing.
    fn accesses(&self, _args: &Value) -> Result<Vec<Access>, ToolFailure> {
        Ok(Vec::new())
    }
}

/// A tool in a session's table.
#[derive(Clone)]
pub struct ToolEntry {
    pub spec: ToolSpec,
    pub owner: ToolOwner,
    pub handler: Arc<dyn ToolHandler>,
}

impl std::fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.spec.name)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// A name is already served by another owner.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool '{name}' is already registered by {existing}")]
pub struct ToolConflict {
    pub name: String,
    pub existing: ToolOwner,
}

#[derive(Default)]
pub(crate) struct ToolTable {
    entries: RwLock<HashMap<String, Arc<ToolEntry>>>,
}

impl ToolTable {
    pub(crate) fn get(&self, name: &str) -> Option<Arc<ToolEntry>> {
        read_lock(&self.entries).get(name).cloned()
    }

    pub(crate) fn list(&self) -> Vec<Arc<ToolEntry>> {
        let mut entries: Vec<_> = read_lock(&self.entries).values().cloned().collect();
        entries.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        entries
    }

    /// Adds or replaces `owner`'s entries, all or nothing: if any name is
    /// held by another owner, nothing changes.
    pub(crate) fn register(
        &self,
        owner: &ToolOwner,
        entries: Vec<ToolEntry>,
    ) -> Result<(), ToolConflict> {
        self.install(owner, entries, false)
    }

    /// Replaces everything `owner` holds with `entries`, all or nothing.
    pub(crate) fn replace_owner(
        &self,
        owner: &ToolOwner,
        entries: Vec<ToolEntry>,
    ) -> Result<(), ToolConflict> {
        self.install(owner, entries, true)
    }

    /// Puts `entries` in the table for `owner`, first taking out what the
    /// owner held when `replace`.
    fn install(
        &self,
        owner: &ToolOwner,
        entries: Vec<ToolEntry>,
        replace: bool,
    ) -> Result<(), ToolConflict> {
        let mut table = write_lock(&self.entries);
        check_conflicts(&table, owner, &entries)?;
        if replace {
            table.retain(|_, entry| &entry.owner != owner);
        }
        for entry in entries {
            table.insert(entry.spec.name.clone(), Arc::new(entry));
        }
        Ok(())
    }

    /// Removes `names` if `owner` holds them; returns how many went.
    pub(crate) fn unregister(&self, owner: &ToolOwner, names: &[String]) -> usize {
        let mut table = write_lock(&self.entries);
        let mut removed = 0;
        for name in names {
            if table.get(name).is_some_and(|entry| &entry.owner == owner) {
                table.remove(name);
                removed += 1;
            }
        }
        removed
    }

    pub(crate) fn unregister_owner(&self, owner: &ToolOwner) -> usize {
        let mut table = write_lock(&self.entries);
        let before = table.len();
        table.retain(|_, entry| &entry.owner != owner);
        before - table.len()
    }

    /// Who holds `name`, if anyone.
    pub(crate) fn owner_of(&self, name: &str) -> Option<ToolOwner> {
        read_lock(&self.entries)
            .get(name)
            .map(|entry| entry.owner.clone())
    }
}

/// The first of `entries` whose name another owner holds.
fn check_conflicts(
    table: &HashMap<String, Arc<ToolEntry>>,
    owner: &ToolOwner,
    entries: &[ToolEntry],
) -> Result<(), ToolConflict> {
    for entry in entries {
        if let Some(existing) = table.get(&entry.spec.name)
            && &existing.owner != owner
        {
            return Err(ToolConflict {
                name: entry.spec.name.clone(),
                existing: existing.owner.clone(),
            });
        }
    }
    Ok(())
}

// The table is left consistent by every change (a single insert or
// retain), so a panicked writer does not stop the reading.
pub(crate) use bridge_util::sync::{read as read_lock, write as write_lock};
