//! The built-in methods: `session.*` and `gateway.*`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bridge_engine::{CallOrigin, RegistryError, Session, SessionSpec, ToolFailure, ToolOwner};
use bridge_protocol::jsonrpc::ErrorObject;
use serde_json::{Value, json};

use super::params::invalid;
use super::{
    MethodTable, POLICY_DENIED, Params, RpcResult, SERVER_ERROR, SESSION_ENDING, SESSION_NOT_FOUND,
    TOOL_FAILED,
};
use crate::app::{DEFAULT_ALIAS, ServerContext};

/// How long after answering `gateway.shutdown` the daemon starts stopping,
/// so the answer reaches the caller before its connection closes.
const SHUTDOWN_AFTER_ANSWER: Duration = Duration::from_millis(100);

/// Every built-in method. Later namespaces (`mcp.*`) add theirs to this
/// table.
pub fn builtin() -> MethodTable {
    let mut table = MethodTable::new();
    table.insert("session.list", session_list);
    table.insert("session.create", session_create);
    table.insert("session.end", session_end);
    table.insert("session.tools.list", session_tools_list);
    table.insert("session.tools.call", session_tools_call);
    table.insert("session.render", session_render);
    table.insert("gateway.status", gateway_status);
    table.insert("gateway.pairings", gateway_pairings);
    table.insert("gateway.providerToken", gateway_provider_token);
    table.insert("gateway.shutdown", gateway_shutdown);
    table.insert("bridge.status", super::status::bridge_status);
    table.insert("agent.hook", super::agent_hook::agent_hook);
    super::toolbus::register(&mut table);
    super::approvals::register(&mut table);
    super::person::register(&mut table);
    super::orchestrate::register(&mut table);
    super::transcripts::register(&mut table);
    super::chat::register(&mut table);
    super::activity::register(&mut table);
    table
}

pub(super) fn session_json(ctx: &ServerContext, session: &Session) -> Value {
    let info = session.info();
    json!({
        "id": info.id,
        "label": info.label,
        "cwd": info.cwd,
        "foreground": info.foreground,
        "door": info.door,
        "state": session.state(),
        "default": session.id() == ctx.facts.default_session,
        "createdAt": info.created_at,
    })
}

/// The session named by `field` (`default` = the daemon's default session).
fn resolve(ctx: &ServerContext, params: &Params, field: &str) -> Result<Arc<Session>, ErrorObject> {
    let id = params.required_str(field)?;
    ctx.session(id).ok_or_else(|| no_session(ctx, id))
}

pub(super) fn no_session(ctx: &ServerContext, id: &str) -> ErrorObject {
    let message = if id == DEFAULT_ALIAS {
        format!(
            "the default session ({}) has ended; `default` does not move to another workspace: name a session id (see session.list)",
            ctx.facts.default_session
        )
    } else {
        format!("session {id} does not exist (see session.list)")
    };
    ErrorObject::new(SESSION_NOT_FOUND, message).with_data(json!({"session": id}))
}

fn registry_error(ctx: &ServerContext, err: RegistryError) -> ErrorObject {
    match err {
        RegistryError::NotFound(id) => no_session(ctx, &id),
        RegistryError::Ending(id) => {
            ErrorObject::new(SESSION_ENDING, format!("session {id} is already ending"))
                .with_data(json!({"session": id}))
        }
        other => ErrorObject::new(SERVER_ERROR, other.to_string()),
    }
}

async fn session_list(ctx: ServerContext, params: Params) -> RpcResult {
    params.expect_named()?;
    Ok(Value::Array(sessions_json(&ctx)))
}

/// Every session of the daemon, as `session.list` shows them.
fn sessions_json(ctx: &ServerContext) -> Vec<Value> {
    ctx.registry()
        .list()
        .iter()
        .map(|session| session_json(ctx, session))
        .collect()
}

async fn session_create(ctx: ServerContext, params: Params) -> RpcResult {
    let cwd = PathBuf::from(params.required_str("cwd")?);
    if !cwd.is_absolute() {
        return Err(invalid(
            "cwd",
            "must be an absolute path (the daemon's working directory is not the caller's)",
        ));
    }
    let cwd = super::params::named_workspace(&ctx, "cwd", &cwd).await?;
    let label = match params.optional_str("label")? {
        Some(label) => label.to_owned(),
        None => super::params::dir_label(&cwd),
    };
    let foreground = params.optional_bool("foreground")?.unwrap_or(false);
    let registry = ctx.registry().clone();
    let spec = SessionSpec {
        id: None,
        label,
        cwd,
        foreground,
        door: bridge_engine::Door::Rpc,
    };
    // Opening a workspace reads its policy file.
    let created = tokio::task::spawn_blocking(move || registry.create(spec))
        .await
        .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("session.create failed: {err}")))?;
    let session = created.map_err(|err| registry_error(&ctx, err))?;
    Ok(session_json(&ctx, &session))
}

async fn session_end(ctx: ServerContext, params: Params) -> RpcResult {
    let session = resolve(&ctx, &params, "session")?;
    let deadline = params
        .optional_u64("deadlineMs")?
        .map(Duration::from_millis);
    let id = session.id().to_owned();
    ctx.registry()
        .end(&id, deadline)
        .await
        .map_err(|err| registry_error(&ctx, err))?;
    Ok(json!({"ended": id}))
}

fn owner_name(owner: &ToolOwner) -> String {
    match owner {
        ToolOwner::Workspace => "workspace".to_owned(),
        ToolOwner::Provider(name) => format!("provider:{name}"),
        ToolOwner::Mcp(name) => format!("mcp:{name}"),
        ToolOwner::Service(name) => format!("service:{name}"),
        ToolOwner::Agent(agent) => format!("agent:{}", agent.name()),
    }
}

/// The longest section text `session.render` takes.
const MAX_SECTION_BYTES: usize = 256 * 1024;

/// `{content}`: `content` of prompt `section` after the session's provider
/// transforms, for an agent that builds its own system prompt (the Copilot
/// CLI extension).
async fn session_render(ctx: ServerContext, params: Params) -> RpcResult {
    params.only(&["session", "section", "content"])?;
    let session = resolve(&ctx, &params, "session")?;
    let section = params.required_str("section")?;
    if section.len() > 64
        || !section
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(invalid(
            "section",
            "must be a section name such as custom_instructions",
        ));
    }
    let content = params.optional_str("content")?.unwrap_or("");
    if content.len() > MAX_SECTION_BYTES {
        return Err(invalid(
            "content",
            &format!("is larger than {MAX_SECTION_BYTES} bytes"),
        ));
    }
    let rendered = session.render_section(section, content).await;
    Ok(json!({"content": rendered}))
}

async fn session_tools_list(ctx: ServerContext, params: Params) -> RpcResult {
    let session = resolve(&ctx, &params, "session")?;
    let tools: Vec<Value> = session
        .tools()
        .iter()
        .map(|entry| {
            json!({
                "name": entry.spec.name,
                "description": entry.spec.description,
                "inputSchema": entry.spec.input_schema,
                "owner": owner_name(&entry.owner),
            })
        })
        .collect();
    Ok(Value::Array(tools))
}

/// Success: `{callId, result, context?}`. Failure: a JSON-RPC error,
/// `POLICY_DENIED` for denials and `TOOL_FAILED` otherwise, with
/// `data = {code, message, details?, context?, callId}`.
async fn session_tools_call(ctx: ServerContext, params: Params) -> RpcResult {
    let session = resolve(&ctx, &params, "session")?;
    let name = params.required_str("name")?.to_owned();
    let arguments = params.object_or_empty("arguments")?;
    let outcome = session.call_tool(&name, arguments, CallOrigin::Rpc).await;
    match outcome.result {
        Ok(result) => {
            let mut answer = json!({"callId": outcome.call_id, "result": result});
            if !outcome.context.is_empty() {
                answer["context"] = json!(outcome.context);
            }
            Ok(answer)
        }
        Err(failure) => Err(call_failure(&failure, &outcome.call_id, &outcome.context)),
    }
}

/// A failed tool call as a JSON-RPC error: `POLICY_DENIED` for denials,
/// `TOOL_FAILED` otherwise, `data = {code, message, details?, context?, callId}`.
pub(super) fn call_failure(
    failure: &ToolFailure,
    call_id: &str,
    context: &[String],
) -> ErrorObject {
    let code = if failure.is_denied() {
        POLICY_DENIED
    } else {
        TOOL_FAILED
    };
    let mut data = json!({
        "code": failure.code,
        "message": failure.message,
        "callId": call_id,
    });
    if let Some(details) = &failure.details {
        data["details"] = details.clone();
    }
    if !context.is_empty() {
        data["context"] = json!(context);
    }
    ErrorObject::new(code, failure.to_string()).with_data(data)
}

async fn gateway_status(ctx: ServerContext, params: Params) -> RpcResult {
    params.expect_named()?;
    let status = ctx.gateway.status();
    let sessions = sessions_json(&ctx);
    Ok(json!({
        "version": crate::VERSION,
        "pid": ctx.facts.pid,
        "port": ctx.facts.port,
        "startedAt": ctx.facts.started_at,
        "defaultSession": ctx.default_session().map(|s| s.id().to_owned()),
        "sessions": sessions,
        "connections": status.connections,
        "providers": status.providers,
        "pendingPairings": status.pending_pairings,
    }))
}

async fn gateway_pairings(ctx: ServerContext, params: Params) -> RpcResult {
    params.expect_named()?;
    Ok(json!(ctx.gateway.pending_pairings()))
}

async fn gateway_provider_token(ctx: ServerContext, params: Params) -> RpcResult {
    let session = match params.optional_str("session")? {
        Some(id) => ctx.session(id).ok_or_else(|| no_session(&ctx, id))?,
        None => ctx
            .default_session()
            .ok_or_else(|| no_session(&ctx, DEFAULT_ALIAS))?,
    };
    let token = ctx
        .gateway
        .issue_project_token(session.id())
        .map_err(|err| match err {
            bridge_gateway::GatewayError::NoSuchSession(id) => no_session(&ctx, &id),
            other => ErrorObject::new(SERVER_ERROR, other.to_string()),
        })?;
    Ok(json!({"token": token, "session": session.id()}))
}

async fn gateway_shutdown(ctx: ServerContext, params: Params) -> RpcResult {
    params.expect_named()?;
    tracing::info!("gateway.shutdown requested over /rpc");
    let shutdown = ctx.shutdown.clone();
    tokio::spawn(async move {
        tokio::time::sleep(SHUTDOWN_AFTER_ANSWER).await;
        shutdown.cancel();
    });
    Ok(json!({"shuttingDown": true, "pid": ctx.facts.pid}))
}
