//! The workspace tools: what an agent may do to the files and processes of a
//! workspace, behind one [`Tool`] trait.
//!
//! The engine, the JSON-RPC tool bus, the MCP servers and the `tool` command all
//! call tools through a [`ToolRunner`], which asks the policy [`Guard`] before a
//! call runs and redacts secrets after. A tool must never touch a path that did
//! not come from [`ToolContext::resolve_read`] / [`ToolContext::resolve_write`],
//! and must never run a process that [`Guard::check_shell`] did not allow.

mod error;
mod runner;
mod settings;

pub mod format;
pub mod list;
pub mod patch;
pub mod read;
pub mod search;
pub mod shell;
pub mod symbols;
pub mod write;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use bridge_policy::Guard;
use bridge_protocol::{ToolEffect, ToolSpec};
use serde_json::Value;

pub use error::{MAX_ERROR_TEXT_CHARS, ToolError};
pub use runner::{Approver, DenyAll, ToolRunner};
pub use settings::{TaskSettings, ToolSettings};

/// One workspace tool.
#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object.
    fn input_schema(&self) -> Value;
    fn effect(&self) -> ToolEffect;
    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            input_schema: self.input_schema(),
            effect: self.effect(),
        }
    }
}

/// What a tool call may use: the guard of its workspace and the settings.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub guard: Arc<Guard>,
    pub settings: Arc<ToolSettings>,
}

impl ToolContext {
    pub fn new(guard: Arc<Guard>, settings: Arc<ToolSettings>) -> Self {
        Self { guard, settings }
    }

    /// A path the tool will read, contained in the workspace.
    pub fn resolve_read(&self, path: &str) -> Result<PathBuf, ToolError> {
        self.guard.resolve_read(path).map_err(ToolError::denied)
    }

    /// A path the tool will write: contained, and allowed by read-only mode
    /// and the workspace policy's write globs.
    pub fn resolve_write(&self, path: &str) -> Result<PathBuf, ToolError> {
        self.guard.resolve_write(path).map_err(ToolError::denied)
    }

    /// The workspace-relative form of an absolute path, for results.
    pub fn relative(&self, path: &std::path::Path) -> String {
        self.guard.root().relative(path)
    }
}

/// Every built-in tool, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: std::collections::BTreeMap<String, Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    /// The workspace tools this crate provides.
    pub fn builtin() -> Self {
        let mut registry = Self::default();
        for tool in read::tools()
            .into_iter()
            .chain(list::tools())
            .chain(search::tools())
            .chain(symbols::tools())
            .chain(write::tools())
            .chain(patch::tools())
            .chain(format::tools())
            .chain(shell::tools())
        {
            registry.register(tool);
        }
        registry
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name().to_owned(), tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|tool| tool.spec()).collect()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }
}
