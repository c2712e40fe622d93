//! `bridge.status`: what `copilot-bridge status` shows — the daemon's
//! endpoints, its chat backends and whether they answer, providers,
//! sessions, and whether the default session may write.

use std::net::{IpAddr, SocketAddr};

use serde_json::{Value, json};

use super::{Params, RpcResult};
use crate::app::ServerContext;
use crate::health::HEALTH_PROBE_WAIT;
use bridge_compose::PromptStyle;

/// The URLs of every door of a daemon reached at `host:port`.
pub fn endpoints(host: IpAddr, port: u16) -> Value {
    let authority = SocketAddr::new(host, port).to_string();
    let http = |path: &str| format!("http://{authority}{path}");
    json!({
        "provider": format!("ws://{authority}/"),
        "openai": http("/v1"),
        "anthropic": http("/v1/messages"),
        "rpc": {
            "websocket": format!("ws://{authority}/rpc"),
            "http": http("/rpc"),
        },
        "mcp": {
            "code": http("/mcp/code"),
            "memory": http("/mcp/memory"),
            "session": http("/mcp/session"),
        },
        "health": http("/healthz"),
    })
}

pub(crate) async fn bridge_status(ctx: ServerContext, params: Params) -> RpcResult {
    params.expect_named()?;
    let availability = ctx.backends.health_within(HEALTH_PROBE_WAIT).await;
    let default_backend = ctx.backends.default_entry().map(|e| e.name.clone());
    let backends: Vec<Value> = ctx
        .backends
        .listed()
        .map(|entry| {
            let (style, turns) = match entry.style {
                PromptStyle::Chat => ("chat", None),
                PromptStyle::SinglePrompt { turns } => ("single-prompt", Some(turns)),
            };
            json!({
                "name": entry.name,
                "kind": entry.kind,
                "baseUrl": entry.base_url,
                "defaultModel": entry.default_model,
                "models": entry.models,
                "style": style,
                "historyTurns": turns,
                "default": default_backend.as_deref() == Some(entry.name.as_str()),
                "availability": availability
                    .get(&entry.name)
                    .map_or("unavailable", |seen| seen.as_str()),
            })
        })
        .collect();
    let gateway = ctx.gateway.status();
    let provider_names: Vec<&str> = gateway.providers.iter().map(|p| p.name.as_str()).collect();
    let default_session = ctx.default_session();
    let policy = match &default_session {
        Some(session) => {
            let guard = session.guard();
            let summary = guard.workspace_policy().to_summary();
            let live = session.live_guard();
            json!({
                "readOnly": guard.read_only(),
                "workspacePolicy": summary["file"],
                "writesAllow": summary["writes"]["allow"],
                "workspacePolicyLoadedAt": live.loaded_at(),
                "workspacePolicyProblem": live.problem(),
            })
        }
        None => json!({"readOnly": Value::Null, "workspacePolicy": Value::Null}),
    };
    Ok(json!({
        "version": crate::VERSION,
        "pid": ctx.facts.pid,
        "startedAt": ctx.facts.started_at,
        "bindAddress": ctx.facts.bind_address.to_string(),
        "stateDir": ctx.facts.home,
        "config": ctx.config.status(),
        "endpoints": endpoints(ctx.facts.connect_host, ctx.facts.port),
        "defaultBackend": default_backend,
        "backends": backends,
        "modelRoutes": model_routes(&ctx.backends.routes()),
        "providers": {
            "count": provider_names.len(),
            "names": provider_names,
        },
        "sessions": {
            "count": ctx.registry().list().len(),
            "default": default_session.as_ref().map(|s| s.id().to_owned()),
        },
        "policy": policy,
        "requestLog": request_log(&ctx),
        "telemetry": {"exporting": ctx.otlp.is_some(), "metricsServed": ctx.metrics_token.is_some()},
        "openclaw": crate::openclaw::status(&ctx),
        "openclawMemory": {
            "offered": ctx.openclaw_memory.offered(),
            "root": ctx.openclaw_memory.server().layout().root,
            "summary": ctx.openclaw_memory.describe(),
        },
        "vscode": crate::vscode::status(&ctx.gateway),
    }))
}

/// `request_log` as it is: off, written to its file, or refused with why.
fn request_log(ctx: &ServerContext) -> Value {
    match (&ctx.request_journal, &ctx.request_log_refused) {
        (Some(journal), _) => json!({
            "enabled": true,
            "path": journal.path(),
            "error": journal.failure(),
        }),
        (None, Some(reason)) => json!({"enabled": false, "error": reason}),
        (None, None) => json!({"enabled": false, "error": Value::Null}),
    }
}

/// `[models]` as `status` shows it: one row per rule, in the order they
/// apply.
fn model_routes(routes: &bridge_config::ModelRoutes) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut row = |rule: String, target: &bridge_config::ModelTarget| {
        rows.push(json!({"rule": rule, "target": target.to_string()}));
    };
    if let Some(target) = &routes.long_context {
        row(
            format!("long_context (over {} tokens)", routes.long_context_tokens),
            target,
        );
    }
    if let Some(target) = &routes.background {
        row("background (haiku-class models)".to_owned(), target);
    }
    if let Some(target) = &routes.think {
        row("think (thinking asked for)".to_owned(), target);
    }
    for mapping in &routes.map {
        row(mapping.pattern.clone(), &mapping.target);
    }
    if let Some(target) = &routes.default {
        row("default".to_owned(), target);
    }
    rows
}
