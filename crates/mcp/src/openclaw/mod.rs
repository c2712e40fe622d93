//! OpenClaw as tools: `openclaw_agent_ask` and `openclaw_sessions` through
//! its gateway, and its memory — `openclaw_memory_search` answered by the
//! gateway's `memory.search` when it is connected and by our own index of
//! the agent's workspace otherwise (the answer says which),
//! `openclaw_memory_read` and `openclaw_user_prefs` from the workspace.
//! Every session the hub creates gets them through [`SessionTools`]
//! (session_tools.rs); the daemon's memory MCP server offers the gateway's
//! too; all call [`GatewayTools`].
//!
//! Only reads and asks: nothing here writes a file.

mod session_tools;

pub use session_tools::{OWNER, SessionTools, ToolSet, owner};

use std::time::Duration;

use bridge_openclaw::{AgentAsk, ConnectionState, Gateway, GatewayError};
use serde_json::{Map, Value, json};

use crate::memory::tools::{self as memory_tools, Request};
use crate::memory::{MemoryHit, MemoryServer};

pub const AGENT_ASK: &str = "openclaw_agent_ask";
pub const SESSIONS: &str = "openclaw_sessions";
pub const MEMORY_SEARCH: &str = memory_tools::SEARCH;
pub const MEMORY_READ: &str = memory_tools::READ;
pub const USER_PREFS: &str = memory_tools::USER_PREFS;

/// How long `openclaw_agent_ask` waits for the reply unless told.
pub const DEFAULT_ASK_SECONDS: u64 = 300;
/// The longest wait a caller may ask for.
pub const MAX_ASK_SECONDS: u64 = 3600;
/// The longest message sent to an agent.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// The longest `agentId` / `sessionKey`.
const MAX_NAME_BYTES: usize = 256;

pub const AGENT_ASK_DESCRIPTION: &str = "Send a message to an OpenClaw agent through the OpenClaw gateway and wait for its reply (the agent runs with its own tools, memory and channels on the OpenClaw side). Returns {agentId, runId, status, reply}.";
pub const SESSIONS_DESCRIPTION: &str = "List OpenClaw's sessions (key, agent, title, kind, last update), most recent first, through the OpenClaw gateway.";

pub fn agent_ask_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "message": {"type": "string", "minLength": 1, "description": "What to ask or tell the agent."},
            "agentId": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_BYTES, "description": "The OpenClaw agent (default: OpenClaw's default agent, usually `main`)."},
            "sessionKey": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_BYTES, "description": "The OpenClaw session to continue, e.g. `agent:main:main` (default: the agent's main session)."},
            "timeoutSeconds": {"type": "integer", "minimum": 1, "maximum": MAX_ASK_SECONDS, "default": DEFAULT_ASK_SECONDS, "description": "How long to wait for the reply."}
        },
        "required": ["message"],
        "additionalProperties": false
    })
}

pub fn sessions_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "How many sessions to list."}
        },
        "additionalProperties": false
    })
}

/// Why a call failed: `code` as tool failures spell it (`invalid_arguments`,
/// `UNAVAILABLE`, `timeout`, `failed`), and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayToolError {
    pub code: &'static str,
    pub message: String,
}

impl std::fmt::Display for GatewayToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The three tools over one gateway connection (if any) and one memory
/// server (whose indexes stay warm between calls).
#[derive(Clone)]
pub struct GatewayTools {
    gateway: Option<Gateway>,
    memory: MemoryServer,
}

impl GatewayTools {
    pub fn new(gateway: Option<Gateway>, memory: MemoryServer) -> Self {
        Self { gateway, memory }
    }

    /// Runs `tool` with `args`: its JSON answer.
    pub async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<Value, GatewayToolError> {
        match tool {
            AGENT_ASK => self.ask(&args).await,
            SESSIONS => self.sessions(&args).await,
            MEMORY_SEARCH => self.search_memory(args).await,
            MEMORY_READ | USER_PREFS => self.read_memory(tool, args).await,
            other => Err(GatewayToolError {
                code: "unknown_tool",
                message: format!(
                    "no OpenClaw tool {other:?}; there are {AGENT_ASK}, {SESSIONS}, {MEMORY_SEARCH}, {MEMORY_READ}, {USER_PREFS}"
                ),
            }),
        }
    }

    /// The connection, if it is up; else why not.
    fn connected(&self, tool: &str) -> Result<&Gateway, GatewayToolError> {
        let unavailable = |why: String| GatewayToolError {
            code: "UNAVAILABLE",
            message: format!("{tool}: {why}"),
        };
        let gateway = self.gateway.as_ref().ok_or_else(|| {
            unavailable("no OpenClaw gateway connection here (only the daemon connects, when openclaw.gateway is on, or auto with OpenClaw configured on this machine; see docs/openclaw.md)".to_owned())
        })?;
        let status = gateway.status();
        if status.state == ConnectionState::Connected {
            return Ok(gateway);
        }
        let state = serde_json::to_value(status.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        Err(unavailable(match status.last_error {
            Some(error) => format!("the OpenClaw gateway at {} is {state}: {error}", status.url),
            None => format!("the OpenClaw gateway at {} is {state}", status.url),
        }))
    }

    async fn ask(&self, args: &Map<String, Value>) -> Result<Value, GatewayToolError> {
        let message = args
            .get("message")
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty())
            .ok_or_else(|| invalid(AGENT_ASK, "message is required: a non-empty string"))?;
        if message.len() > MAX_MESSAGE_BYTES {
            return Err(invalid(
                AGENT_ASK,
                &format!(
                    "the message is {} bytes; the limit is {MAX_MESSAGE_BYTES}",
                    message.len()
                ),
            ));
        }
        let seconds = bounded(
            args,
            AGENT_ASK,
            "timeoutSeconds",
            DEFAULT_ASK_SECONDS,
            MAX_ASK_SECONDS,
        )?;
        let ask = AgentAsk {
            message: message.to_owned(),
            agent_id: name(args, AGENT_ASK, "agentId")?,
            session_key: name(args, AGENT_ASK, "sessionKey")?,
            timeout: Duration::from_secs(seconds),
        };
        let gateway = self.connected(AGENT_ASK)?;
        let agent = ask.agent_id.clone();
        let reply = gateway
            .ask_agent(ask)
            .await
            .map_err(|err| failure(AGENT_ASK, &err))?;
        let mut answer = json!({
            "agentId": agent,
            "runId": reply.run_id,
            "status": reply.status,
            "reply": reply.text,
        });
        // A run that did not end well: what OpenClaw said about it.
        if reply.status != "ok" {
            answer["error"] = reply.raw["error"].clone();
            answer["stopReason"] = reply.raw["stopReason"].clone();
        }
        Ok(answer)
    }

    async fn sessions(&self, args: &Map<String, Value>) -> Result<Value, GatewayToolError> {
        if let Some(key) = args.keys().find(|key| key.as_str() != "limit") {
            return Err(invalid(SESSIONS, &format!("unknown argument {key:?}")));
        }
        let limit = bounded(args, SESSIONS, "limit", 20, 100)?;
        let gateway = self.connected(SESSIONS)?;
        let listed = gateway
            .request("sessions.list", json!({"limit": limit}))
            .await
            .map_err(|err| failure(SESSIONS, &err))?;
        let sessions: Vec<Value> = listed["sessions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|session| {
                json!({
                    "key": session["key"],
                    "agentId": session["agentId"],
                    "title": session["displayName"],
                    "kind": session["kind"],
                    "updatedAt": session["updatedAt"],
                })
            })
            .collect();
        Ok(json!({
            "count": sessions.len(),
            "totalCount": listed["totalCount"],
            "sessions": sessions,
        }))
    }

    /// The gateway's `memory.search` when connected, else our own index
    /// (with the reason); the results in OpenClaw's shape either way.
    pub async fn search_memory(&self, args: Map<String, Value>) -> Result<Value, GatewayToolError> {
        let call = memory_call(MEMORY_SEARCH, args)?;
        let Request::Search { query, limit } = call.request else {
            return Err(invalid(MEMORY_SEARCH, "not a search"));
        };
        let reason = match self.connected(MEMORY_SEARCH) {
            Ok(gateway) => {
                let mut params = json!({"query": query, "maxResults": limit});
                if let Some(agent) = &call.agent {
                    params["agentId"] = json!(agent);
                }
                match gateway.request("memory.search", params).await {
                    Ok(payload) => return Ok(from_gateway(&payload, limit)),
                    Err(err) => format!("the gateway's memory.search failed: {err}"),
                }
            }
            Err(why) => why.message,
        };
        let memory = self.memory.clone();
        let agent = call.agent.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            memory.search_agent(agent.as_deref(), &query, limit)
        })
        .await
        .map_err(|err| GatewayToolError {
            code: "failed",
            message: format!("{MEMORY_SEARCH}: the search failed: {err}"),
        })?
        .map_err(|err| invalid(MEMORY_SEARCH, &err.to_string()))?;
        Ok(json!({
            "source": LOCAL_SOURCE,
            "reason": reason,
            "agentId": call.agent,
            "results": outcome.hits.iter().map(local_hit).collect::<Vec<_>>(),
            "searched": outcome.searched,
        }))
    }

    /// `openclaw_memory_read` (a note, whole) or `openclaw_user_prefs`
    /// (`USER.md`), from the agent's workspace: the text.
    async fn read_memory(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<Value, GatewayToolError> {
        let call = memory_call(tool, args)?;
        let memory = self.memory.clone();
        let read = tokio::task::spawn_blocking(move || match call.request {
            Request::Read { file } => memory.read_blocking(call.agent.as_deref(), &file),
            _ => memory.user_prefs_blocking(call.agent.as_deref()),
        })
        .await
        .map_err(|err| GatewayToolError {
            code: "failed",
            message: format!("{tool}: the read failed: {err}"),
        })?;
        read.map(Value::String).map_err(|message| GatewayToolError {
            code: "failed",
            message: format!("{tool}: {message}"),
        })
    }
}

/// A memory tool's arguments, `_depth` first, checked as the memory MCP
/// server checks them (crates/mcp/src/memory/tools.rs).
fn memory_call(
    tool: &str,
    args: Map<String, Value>,
) -> Result<memory_tools::Call, GatewayToolError> {
    memory_tools::parse(tool, Some(args)).map_err(|rejected| match rejected {
        memory_tools::Rejected::Error(err) => GatewayToolError {
            code: "invalid_arguments",
            message: err.message.into_owned(),
        },
        memory_tools::Rejected::TooDeep(depth) => GatewayToolError {
            code: "too_deep",
            message: format!("{tool}: {}", crate::depth::too_deep_message(depth)),
        },
    })
}

/// `source` of an answer from our own index.
pub const LOCAL_SOURCE: &str = "local index";
/// `source` of an answer from the gateway.
pub const GATEWAY_SOURCE: &str = "gateway";

fn local_hit(hit: &MemoryHit) -> Value {
    serde_json::to_value(hit).unwrap_or(Value::Null)
}

/// OpenClaw's answer cut to `limit` results with the fields its
/// `memory_search` documents (and our local answer has).
fn from_gateway(payload: &Value, limit: usize) -> Value {
    let results: Vec<Value> = payload["results"]
        .as_array()
        .into_iter()
        .flatten()
        .take(limit)
        .map(|hit| {
            json!({
                "path": hit["path"],
                "startLine": hit["startLine"],
                "endLine": hit["endLine"],
                "score": hit["score"],
                "snippet": hit["snippet"],
                "source": hit["source"],
            })
        })
        .collect();
    json!({
        "source": GATEWAY_SOURCE,
        "agentId": payload["agentId"],
        "results": results,
    })
}

fn bounded(
    args: &Map<String, Value>,
    tool: &str,
    key: &str,
    default: u64,
    max: u64,
) -> Result<u64, GatewayToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(value) => value
            .as_u64()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| invalid(tool, &format!("{key} must be an integer from 1 to {max}"))),
    }
}

fn name(
    args: &Map<String, Value>,
    tool: &str,
    key: &str,
) -> Result<Option<String>, GatewayToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if !text.trim().is_empty() && text.len() <= MAX_NAME_BYTES => {
            Ok(Some(text.clone()))
        }
        Some(_) => Err(invalid(
            tool,
            &format!("{key} must be a non-empty string of at most {MAX_NAME_BYTES} bytes"),
        )),
    }
}

fn invalid(tool: &str, message: &str) -> GatewayToolError {
    GatewayToolError {
        code: "invalid_arguments",
        message: format!("{tool}: {message}"),
    }
}

/// A gateway error with the code that says what kind it is.
fn failure(tool: &str, err: &GatewayError) -> GatewayToolError {
    let code = match err {
        GatewayError::NotConnected { .. } | GatewayError::Closed { .. } => "UNAVAILABLE",
        GatewayError::Timeout { .. } => "timeout",
        _ => "failed",
    };
    GatewayToolError {
        code,
        message: format!("{tool}: {err}"),
    }
}

/// `openclaw_agent_ask` and `openclaw_sessions` as the memory MCP server
/// lists them (with `_depth`) when it has a gateway.
pub fn mcp_tools() -> Vec<rmcp::model::Tool> {
    use rmcp::model::{Tool, ToolAnnotations};
    let tool = |name: &'static str, description: &'static str, schema: Value, notes| {
        let properties = schema["properties"].clone();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        Tool::new(
            name,
            description,
            std::sync::Arc::new(crate::depth::tool_schema(properties, &required)),
        )
        .with_annotations(notes)
    };
    vec![
        tool(
            AGENT_ASK,
            AGENT_ASK_DESCRIPTION,
            agent_ask_schema(),
            // The agent acts with its own tools and channels.
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .idempotent(false)
                .open_world(true),
        ),
        tool(
            SESSIONS,
            SESSIONS_DESCRIPTION,
            sessions_schema(),
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        ),
    ]
}

/// A memory MCP server's call of one of these tools: `None` when `name`
/// is none of them (the memory server answers itself). The call goes
/// through the default session of `sessions` (`Session::call_tool`: rules,
/// audit log, redaction), where the daemon put these tools; `_depth` is
/// checked as every tool of ours checks it.
pub async fn mcp_call(
    sessions: &dyn crate::code::SessionSource,
    name: &str,
    arguments: Option<rmcp::model::JsonObject>,
) -> Option<Result<rmcp::model::CallToolResult, rmcp::ErrorData>> {
    use rmcp::model::{CallToolResult, ContentBlock};
    if ![AGENT_ASK, SESSIONS, MEMORY_SEARCH].contains(&name) {
        return None;
    }
    let mut args = arguments.unwrap_or_default();
    match crate::depth::take_depth(&mut args) {
        Ok(_) => {}
        Err(crate::depth::DepthError::TooDeep(depth)) => {
            return Some(Ok(crate::depth::too_deep_result(depth)));
        }
        Err(crate::depth::DepthError::Invalid(message)) => {
            return Some(Err(rmcp::ErrorData::invalid_params(
                format!("{name}: {message}"),
                None,
            )));
        }
    }
    let session = match sessions.session(None).await {
        Ok(session) => session,
        Err(reason) => {
            return Some(Ok(CallToolResult::error(vec![ContentBlock::text(
                format!("{name}: no session to run it in: {reason}"),
            )])));
        }
    };
    // Sessions without OpenClaw's memory (`openclaw.memory`): the memory
    // server searches its own index.
    if name == MEMORY_SEARCH && session.tool(name).is_none() {
        return None;
    }
    let outcome = session
        .call_tool(name, Value::Object(args), bridge_engine::CallOrigin::Mcp)
        .await;
    Some(Ok(match outcome.result {
        Ok(value) => {
            let mut result =
                CallToolResult::success(vec![ContentBlock::text(answer_text(name, &value))]);
            result.structured_content = Some(value);
            result
        }
        Err(failure) if failure.code == "invalid_arguments" => {
            return Some(Err(rmcp::ErrorData::invalid_params(failure.message, None)));
        }
        Err(failure) => CallToolResult::error(vec![ContentBlock::text(failure.message)]),
    }))
}

/// What an agent reads of an answer: the reply, the sessions, or the
/// memory hits (`path:lines` and the snippet), with where they came from.
fn answer_text(name: &str, value: &Value) -> String {
    match name {
        AGENT_ASK => value["reply"].as_str().map_or_else(
            || format!("The run ended ({}) without a reply.", value["status"]),
            str::to_owned,
        ),
        MEMORY_SEARCH => {
            let results = value["results"].as_array().cloned().unwrap_or_default();
            let mut text = match value["reason"].as_str() {
                Some(reason) => format!(
                    "{} results from the local index ({reason}):\n",
                    results.len()
                ),
                None => format!("{} results from OpenClaw's memory.search:\n", results.len()),
            };
            for (rank, hit) in results.iter().enumerate() {
                text.push_str(&format!(
                    "\n{}. {}:{}-{}\n   {}",
                    rank + 1,
                    hit["path"].as_str().unwrap_or("?"),
                    hit["startLine"],
                    hit["endLine"],
                    hit["snippet"].as_str().unwrap_or_default()
                ));
            }
            text
        }
        _ => serde_json::to_string_pretty(value).unwrap_or_default(),
    }
}
