//! Sessions of copilot-bridge: the registry every door shares.
//!
//! A session has a workspace, a tool table (workspace tools, provider tools,
//! MCP tools), a hook chain (the policy, then provider rules and gates),
//! prompt transforms, ambient context and a timeline of events. The provider
//! gateway, the tool bus, the MCP servers and the agent loop all reach tools
//! through [`Session::call_tool`], so one policy sees every call. Around it:
//! the session event log ([`log`]), the runners ([`runner`]: our agentic loop
//! and the Copilot CLI) and the MCP client ([`mcp`]).
//!
//! This crate must not know the provider wire format: the gateway adapts
//! Provider Interface v2 onto the handler traits here ([`ToolHandler`],
//! [`GateHandler`], [`TransformHandler`]), and nothing here serializes a
//! provider message. No tool runs except through `Session::call_tool`, and no tool is allowed
//! except by `Session::decide` (which `call_tool` uses).

mod agent_calls;
pub mod agent_names;
pub mod approvals;
mod call;
mod decide;
mod door;
mod events;
mod hooks;
pub mod log;
pub mod mcp_client;
pub mod orchestrate;
mod registry;
pub mod runner;
mod session;
pub mod task;
pub mod telemetry;
mod tools;
mod transforms;
mod workspace;

pub use agent_calls::AgentCall;
pub use call::{CallOrigin, CallOutcome, ToolFailure};
pub use decide::Verdict;
pub use door::Door;
pub use events::{SessionEvent, TimelineEntry};
pub use hooks::{
    GateHandler, GateRequest, GateVerdict, HookRule, RuleAction, RuleError, RuleMatch,
    compile_regex,
};
pub use registry::{
    RegistryError, RegistrySettings, SessionDefaults, SessionListener, SessionRegistry,
    SessionSpec, ShutdownWaiter,
};
pub use session::{EventSink, Session, SessionInfo, SessionState};
pub use tools::{ToolConflict, ToolEntry, ToolHandler, ToolInvocation, ToolOwner};
pub use transforms::{PROTECTED_SECTIONS, Transform, TransformError, TransformHandler};
pub use workspace::WorkspaceTool;
