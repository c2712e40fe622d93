//! `orchestrate.*`: start a plan, watch it, cancel it, list them
//! (docs/rpc.md, docs/orchestrator.md).

use std::path::PathBuf;
use std::time::Duration;

use bridge_engine::orchestrate::{DEFAULT_MAX_CONCURRENCY, MAX_CONCURRENCY, TaskPlan};
use bridge_protocol::jsonrpc::ErrorObject;
use serde_json::{Value, json};

use super::params::invalid;
use super::{MethodTable, PLAN_NOT_FOUND, Params, RpcResult, SERVER_ERROR};
use crate::app::ServerContext;
use crate::orchestrations::{RunningPlan, StartRequest};

/// Longest a watch waits for news.
const MAX_WAIT_MS: u64 = 60_000;

pub fn register(table: &mut MethodTable) {
    table.insert("orchestrate.start", start);
    table.insert("orchestrate.watch", watch);
    table.insert("orchestrate.cancel", cancel);
    table.insert("orchestrate.list", list);
}

fn not_found(id: &str) -> ErrorObject {
    ErrorObject::new(
        PLAN_NOT_FOUND,
        format!("the daemon has no orchestration {id} (see orchestrate.list)"),
    )
    .with_data(json!({"id": id}))
}

fn find(ctx: &ServerContext, params: &Params) -> Result<std::sync::Arc<RunningPlan>, ErrorObject> {
    let id = params.required_str("id")?;
    ctx.orchestrations.get(id).ok_or_else(|| not_found(id))
}

async fn start(ctx: ServerContext, params: Params) -> RpcResult {
    params.only(&[
        "task",
        "plan",
        "cwd",
        "session",
        "maxConcurrency",
        "timeoutSecs",
    ])?;
    let task = params
        .optional_str("task")?
        .unwrap_or_default()
        .trim()
        .to_owned();
    let plan = match params.optional_value("plan")? {
        None => None,
        Some(value) => {
            let plan: TaskPlan = serde_json::from_value(value.clone())
                .map_err(|err| invalid("plan", &format!("is not a TaskPlan: {err}")))?;
            plan.waves()
                .map_err(|err| invalid("plan", &format!("is refused: {err}")))?;
            Some(plan)
        }
    };
    if task.is_empty() && plan.is_none() {
        return Err(invalid("task", "is required (or give a plan)"));
    }
    bridge_engine::orchestrate::check_task(&task)
        .map_err(|err| invalid("task", &format!("is refused: {err}")))?;
    let cwd = match (params.optional_str("cwd")?, params.optional_str("session")?) {
        (Some(_), Some(_)) => return Err(invalid("cwd", "and `session` exclude each other")),
        (Some(dir), None) => {
            let dir = PathBuf::from(dir);
            if !dir.is_absolute() || !dir.is_dir() {
                return Err(invalid(
                    "cwd",
                    "must be an absolute path of an existing directory",
                ));
            }
            super::params::named_workspace(&ctx, "cwd", &dir).await?
        }
        (None, session) => {
            let id = session.unwrap_or(crate::app::DEFAULT_ALIAS);
            ctx.session(id)
                .ok_or_else(|| super::methods::no_session(&ctx, id))?
                .cwd()
                .to_path_buf()
        }
    };
    let max_concurrency = match params.optional_u64("maxConcurrency")? {
        None => DEFAULT_MAX_CONCURRENCY,
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|n| (1..=MAX_CONCURRENCY).contains(n))
            .ok_or_else(|| {
                invalid(
                    "maxConcurrency",
                    &format!("must be between 1 and {MAX_CONCURRENCY}"),
                )
            })?,
    };
    let timeout = match params.optional_u64("timeoutSecs")? {
        Some(0) => return Err(invalid("timeoutSecs", "must be at least 1")),
        other => other.map(Duration::from_secs),
    };
    let task = if task.is_empty() {
        "the given plan".to_owned()
    } else {
        task
    };
    let request = StartRequest {
        task,
        plan,
        cwd,
        max_concurrency,
        timeout,
    };
    let running = ctx
        .orchestrations
        .start(ctx.registry(), &ctx.backends, request, &ctx.shutdown, None)
        .await
        .map_err(|reason| ErrorObject::new(SERVER_ERROR, format!("cannot start: {reason}")))?;
    Ok(
        json!({"id": running.id, "waves": running.waves, "plan": running.plan, "source": running.source}),
    )
}

async fn watch(ctx: ServerContext, params: Params) -> RpcResult {
    params.only(&["id", "since", "waitMs"])?;
    let running = find(&ctx, &params)?;
    let since = params.optional_u64("since")?.unwrap_or(0);
    let wait = params.optional_u64("waitMs")?.unwrap_or(0).min(MAX_WAIT_MS);
    let (events, result) = running.watch(since, Duration::from_millis(wait)).await;
    let last = events
        .last()
        .and_then(|e| e["seq"].as_u64())
        .unwrap_or(since);
    let mut answer =
        json!({"id": running.id, "done": result.is_some(), "events": events, "next": last});
    if since == 0 {
        // A watcher from the start sees the plan the events are about.
        answer["plan"] = serde_json::to_value(&running.plan).unwrap_or(Value::Null);
        answer["waves"] = json!(running.waves);
    }
    if let Some(result) = result {
        let mut value = serde_json::to_value(result).unwrap_or(Value::Null);
        bridge_policy::redact_value(&mut value);
        answer["result"] = value;
    }
    Ok(answer)
}

async fn cancel(ctx: ServerContext, params: Params) -> RpcResult {
    params.only(&["id"])?;
    let running = find(&ctx, &params)?;
    let done = running.result().is_some();
    running.cancel();
    Ok(json!({"id": running.id, "cancelled": !done, "done": done}))
}

async fn list(ctx: ServerContext, params: Params) -> RpcResult {
    params.only(&[])?;
    Ok(Value::Array(
        ctx.orchestrations
            .list()
            .iter()
            .map(|p| {
                let result = p.result();
                json!({"id": p.id, "done": result.is_some(),
                       "status": result.as_ref().map(|r| r.status),
                       "tasks": p.plan.tasks.len()})
            })
            .collect(),
    ))
}
