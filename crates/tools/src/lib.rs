//! The workspace tools: what an agent may do to the files and processes of a
//! workspace, behind one [`Tool`] trait.
//!
//! Every door calls them through one decision (bridge-engine's
//! `Session::call_tool`), which checks what a call declared it will do
//! ([`Tool::accesses`]: the paths it reads and writes, the commands it runs)
//! before the tool runs, and redacts and audits after. A tool must do
//! nothing it did not declare, must never touch a path that did not come
//! from [`ToolContext::resolve_read`] / [`ToolContext::resolve_write`], and
//! must never run a process that is not one of its declared commands (or a
//! command the user configured: tasks, formatters).

mod error;
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
use bridge_policy::LiveGuard;
use bridge_policy::access::{Access, path_arguments};
use bridge_protocol::{Decision, ToolEffect, ToolSpec};
use serde_json::Value;

pub use error::{MAX_ERROR_TEXT_CHARS, ToolError};
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

    /// What a call with `args` will do, for the decision to check before
    /// it runs. By default: a reading tool reads, and a writing tool
    /// writes, the paths named by its path-like arguments. A writing tool
    /// that names no path, and every tool that runs commands, must say
    /// more (override this) or is refused: nothing runs unchecked.
    fn accesses(&self, args: &Value) -> Result<Vec<Access>, ToolError> {
        let paths = path_arguments(args).into_iter().map(str::to_owned);
        match self.effect() {
            ToolEffect::Read => Ok(paths.map(Access::Read).collect()),
            ToolEffect::Write => {
                let writes: Vec<Access> = paths.map(Access::Write).collect();
                if writes.is_empty() {
                    return Err(ToolError::InvalidArguments(format!(
                        "{} changes files but its arguments name none",
                        self.name()
                    )));
                }
                Ok(writes)
            }
            ToolEffect::Execute => Err(ToolError::denied(Decision::deny(format!(
                "{} runs commands but does not declare them; copilot-bridge cannot check it",
                self.name()
            )))),
        }
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            input_schema: self.input_schema(),
            effect: self.effect(),
        }
    }
}

/// What a tool call may use: the guard of its workspace (following edits
/// of its policy file) and the settings.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub guard: Arc<LiveGuard>,
    pub settings: Arc<ToolSettings>,
}

impl ToolContext {
    pub fn new(guard: Arc<LiveGuard>, settings: Arc<ToolSettings>) -> Self {
        Self { guard, settings }
    }

    /// A path the tool will read, contained in the workspace.
    pub fn resolve_read(&self, path: &str) -> Result<PathBuf, ToolError> {
        self.guard
            .current()
            .resolve_read(path)
            .map_err(ToolError::denied)
    }

    /// A path the tool will write: contained, and allowed by read-only mode
    /// and the workspace policy's write globs.
    pub fn resolve_write(&self, path: &str) -> Result<PathBuf, ToolError> {
        self.guard
            .current()
            .resolve_write(path)
            .map_err(ToolError::denied)
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
