//! The composition root: the one place that turns a [`BridgeConfig`] into
//! the running parts — the chat backends and their routes ([`backends`]),
//! the settings runners and backends are built with ([`settings`]), a
//! host's session registry ([`registry()`], and [`task_registry()`] whose
//! sessions get OpenClaw's memory, [`openclaw`]), the runner of a task
//! ([`runner()`]), the orchestrator and its planner ([`orchestrator()`]) —
//! for the daemon and the CLI alike, so every door that runs a task runs it
//! with the same settings.
//!
//! This crate must not serve anything (no HTTP, no sockets: that is
//! bridge-server), print anything, or read the process environment:
//! everything comes from [`BridgeConfig`].

pub mod backends;
pub mod openclaw;
mod orchestrator;
mod registry;
mod runners;
pub mod settings;

pub use backends::{
    Availability, BackendEntry, Backends, PromptStyle, Route, RouteError, RouteRequest,
    build_backends,
};
pub use openclaw::OpenClawMemory;
pub use orchestrator::{PlanningBackend, orchestrator, planner};
pub use registry::{registry, task_registry, workspace_choice};
pub use runners::{BuiltRunner, runner};
pub use settings::{backend_settings, copilot_cli_config, native_settings, with_mcp_depth};

/// Why a running part could not be made from the configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComposeError {
    /// The configuration cannot be used.
    #[error("configuration error: {0}")]
    Config(String),
    /// No chat backend is usable; the message names the settings to set.
    #[error("{0}")]
    NoBackend(String),
    /// What was asked for is not available this way.
    #[error("{0}")]
    Unsupported(String),
}
