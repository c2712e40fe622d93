//! Provider → gateway: the 16 message types a provider may send, and ours
//! for chat models (`chat.*`, [`super::chat`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::chat::{ChatDelta, ChatEnd, ChatModels, ChatToolCall};

/// One message from a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ProviderMessage {
    #[serde(rename = "auth")]
    Auth(Auth),
    #[serde(rename = "auth.confirm")]
    AuthConfirm(AuthConfirm),
    #[serde(rename = "hello")]
    Hello(Box<Hello>),
    #[serde(rename = "goodbye")]
    Goodbye(Goodbye),
    #[serde(rename = "session.ready")]
    SessionReady(SessionRef),
    #[serde(rename = "tool.result")]
    ToolResult(ToolResult),
    #[serde(rename = "tool.progress")]
    ToolProgress(ToolProgress),
    #[serde(rename = "gate.result")]
    GateResult(GateResult),
    #[serde(rename = "transform.result")]
    TransformResult(TransformResult),
    #[serde(rename = "push")]
    Push(Push),
    #[serde(rename = "tools.update")]
    ToolsUpdate(ToolsUpdate),
    #[serde(rename = "hooks.update")]
    HooksUpdate(HooksUpdate),
    #[serde(rename = "context.update")]
    ContextUpdate(ContextUpdate),
    #[serde(rename = "filter.set")]
    FilterSet(FilterSet),
    #[serde(rename = "stream.query")]
    StreamQuery(StreamQuery),
    #[serde(rename = "shutdown.ready")]
    ShutdownReady(SessionRef),
    #[serde(rename = "chat.models")]
    ChatModels(ChatModels),
    #[serde(rename = "chat.delta")]
    ChatDelta(ChatDelta),
    #[serde(rename = "chat.toolCall")]
    ChatToolCall(ChatToolCall),
    #[serde(rename = "chat.end")]
    ChatEnd(ChatEnd),
    /// A type this gateway does not know: answered with `UNKNOWN_TYPE`,
    /// never a disconnect.
    #[serde(other)]
    Unknown,
}

impl ProviderMessage {
    /// The wire `type`, for `replyTo` and logs.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Auth(_) => "auth",
            Self::AuthConfirm(_) => "auth.confirm",
            Self::Hello(_) => "hello",
            Self::Goodbye(_) => "goodbye",
            Self::SessionReady(_) => "session.ready",
            Self::ToolResult(_) => "tool.result",
            Self::ToolProgress(_) => "tool.progress",
            Self::GateResult(_) => "gate.result",
            Self::TransformResult(_) => "transform.result",
            Self::Push(_) => "push",
            Self::ToolsUpdate(_) => "tools.update",
            Self::HooksUpdate(_) => "hooks.update",
            Self::ContextUpdate(_) => "context.update",
            Self::FilterSet(_) => "filter.set",
            Self::StreamQuery(_) => "stream.query",
            Self::ShutdownReady(_) => "shutdown.ready",
            Self::ChatModels(_) => "chat.models",
            Self::ChatDelta(_) => "chat.delta",
            Self::ChatToolCall(_) => "chat.toolCall",
            Self::ChatEnd(_) => "chat.end",
            Self::Unknown => "unknown",
        }
    }
}

/// `auth`: a token (project or issued external token), or `mode: "pair"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Auth {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Ours, optional: the session a pairing request is for (default: the
    /// foreground session). Other gateways ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Ours, optional: shown next to the pairing code so the user knows who
    /// is asking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthConfirm {
    pub code: String,
}

/// `hello`: register as a provider (or rebind, when sent again).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    pub name: String,
    pub protocol_version: u32,
    /// A session id, `"all"`, or omitted (the gateway stamps the session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconnect_token: Option<String>,
    #[serde(
        default,
        rename = "startup_context",
        skip_serializing_if = "Option::is_none"
    )]
    pub startup_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ProviderTool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<Hooks>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscribe: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<Concurrency>,
}

/// A tool as a provider declares it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments; `{}` or omitted means "no arguments".
    #[serde(default)]
    pub parameters: Value,
    /// Milliseconds before the gateway sends `tool.cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Ours: what a call does to the session's workspace, checked by the
    /// policy before the call is sent (docs/providers.md, "Declared
    /// access").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<ToolAccess>,
}

/// A provider tool's declared access: argument names (top level) whose
/// values are workspace paths read or written, or unified diffs whose file
/// headers are written. Declaring can only add checks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAccess {
    /// `read`, `write` or `execute`; by default `write` when `writes` or
    /// `diffs` are declared, `read` when only `reads` are, else `execute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<crate::ToolEffect>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diffs: Vec<String>,
}

impl ToolAccess {
    /// The effect declared, or the one the declared arguments imply.
    pub fn effect(&self) -> crate::ToolEffect {
        use crate::ToolEffect;
        self.effect
            .unwrap_or(if !self.writes.is_empty() || !self.diffs.is_empty() {
                ToolEffect::Write
            } else if !self.reads.is_empty() {
                ToolEffect::Read
            } else {
                ToolEffect::Execute
            })
    }
}

/// `hooks` of `hello`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hooks {
    #[serde(
        default,
        rename = "onPreToolUse",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub on_pre_tool_use: Vec<HookRule>,
    /// Section name → transform; `null` removes (in `hooks.update`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub transforms: BTreeMap<String, Option<TransformSpec>>,
}

/// One `onPreToolUse` rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRule {
    #[serde(default, rename = "match")]
    pub matcher: HookMatch,
    pub action: HookAction,
    /// Why a `deny` denies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What a `context` rule injects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_id: Option<String>,
    /// A gate that times out allows instead of denying.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_open: bool,
}

/// What a rule matches; every present field must match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookMatch {
    /// Tool name; `*` and `?` globs allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Regex over the arguments as compact JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    /// Only tools of this provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Glob over the call's path-like arguments (`path`, `file`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HookAction {
    Deny,
    Context,
    Gate,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransformSpec {
    pub action: TransformAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransformAction {
    Append,
    Prepend,
    Replace,
    Callback,
}

/// `concurrency` of `hello`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Concurrency {
    pub max: u32,
    #[serde(default)]
    pub scope: ConcurrencyScope,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConcurrencyScope {
    #[default]
    Instance,
    Provider,
    Tool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Goodbye {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `session.ready` and `shutdown.ready`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRef {
    pub session_id: String,
}

/// `tool.result`: `data`, or `error` + `errorCode`, or a `file` reference.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileRef>,
}

impl ToolResult {
    /// A failed result: `error` or `errorCode` present.
    pub fn is_error(&self) -> bool {
        self.error.is_some() || self.error_code.is_some()
    }
}

/// A large result written under the provider's `persistDir`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileRef {
    pub path: String,
    pub mime_type: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolProgress {
    pub id: String,
    #[serde(default)]
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_id: Option<String>,
    pub call_id: String,
    pub decision: GateDecision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateDecision {
    Allow,
    Deny,
    /// Allow, and inject `reason` as context.
    Context,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransformResult {
    pub call_id: String,
    pub content: String,
}

/// `push`: an event into a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Push {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// For `"all"`-bound providers: every bound session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub broadcast: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    pub level: PushLevel,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PushLevel {
    /// Triggers an AI turn.
    Inject,
    /// Shown in the session timeline.
    Surface,
    /// Stored in the stream only.
    Keep,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsUpdate {
    pub request_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default)]
    pub tools: Vec<ProviderTool>,
    #[serde(default)]
    pub remove: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HooksUpdate {
    pub request_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Replaces the provider's rules when present.
    #[serde(
        default,
        rename = "onPreToolUse",
        skip_serializing_if = "Option::is_none"
    )]
    pub on_pre_tool_use: Option<Vec<HookRule>>,
    /// Per section: set, or remove with `null`; sections not named keep
    /// their transform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transforms: Option<BTreeMap<String, Option<TransformSpec>>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUpdate {
    pub request_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `null` clears the context.
    #[serde(default)]
    pub context: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilterSet {
    pub request_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub stream: String,
    /// First match wins; an empty list removes the filter.
    #[serde(default)]
    pub rules: Vec<FilterRule>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilterRule {
    #[serde(rename = "match")]
    pub pattern: String,
    pub outcome: FilterOutcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FilterOutcome {
    Drop,
    Inject,
    Surface,
    Keep,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamQuery {
    pub query_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `stream` (own) or `stream@provider`; empty means all own streams.
    #[serde(default)]
    pub streams: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<u32>,
}
