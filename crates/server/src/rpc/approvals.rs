//! `approvals.*`: the daemon's one queue of asks (docs/approvals.md), seen
//! and answered from any client that holds the approver token.
//!
//! The token agents are given (`gateway.json`'s, the facade's API key)
//! may not use these methods: an agent that could answer would approve
//! itself with one request. An ask is never answered from the session that
//! raised it (the queue checks), and the first answer wins.

use std::path::PathBuf;
use std::time::Duration;

use bridge_engine::approvals::{Answer, AnswerError, event_json};
use bridge_policy::{Scope, Surface};
use bridge_protocol::jsonrpc::ErrorObject;
use serde_json::{Value, json};

use super::params::invalid;
use super::{Caller, MethodTable, Params, RpcResult, SERVER_ERROR};
use crate::app::ServerContext;

/// The caller may not answer approvals (it holds an agent's token).
pub const NOT_AN_APPROVER: i64 = -32010;
/// No ask has that id (never, or long ago).
pub const ASK_NOT_FOUND: i64 = -32011;
/// Someone else answered first, or the ask timed out or was withdrawn.
pub const ASK_ALREADY_ANSWERED: i64 = -32012;

/// The longest `approvals.watch` holds a request open.
const MAX_WATCH_WAIT: Duration = Duration::from_secs(60);
/// The longest a rule may be kept for (`expiresInSecs`): a year.
const MAX_RULE_SECS: u64 = 366 * 24 * 60 * 60;
/// The longest reason kept with a deny.
const MAX_REASON_CHARS: usize = 1000;

pub fn register(table: &mut MethodTable) {
    table.insert("approvals.list", list);
    table.insert("approvals.answer", answer);
    table.insert("approvals.watch", watch);
    table.insert("approvals.subscribe", subscribe);
    table.insert("approvals.rules", rules);
    table.insert("approvals.revoke", revoke);
    table.insert("approvals.wait", super::hook_waits::approvals_wait);
}

pub(super) fn approver_only(params: &Params, method: &str) -> Result<(), ErrorObject> {
    match params.caller() {
        Caller::Approver => Ok(()),
        Caller::Agent => Err(ErrorObject::new(
            NOT_AN_APPROVER,
            format!(
                "{method} needs the approver token (`approver-token` in the state directory); \
                 the token agents are given cannot see or answer approvals"
            ),
        )),
    }
}

async fn list(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "approvals.list")?;
    params.only(&["session"])?;
    let session = params.optional_str("session")?;
    let session = session.map(|id| {
        ctx.session(id)
            .map_or_else(|| id.to_owned(), |s| s.id().to_owned())
    });
    Ok(json!({
        "asks": ctx.approvals.list(session.as_deref()),
        "timeoutSecs": ctx.approval_timeout.as_secs(),
    }))
}

async fn answer(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "approvals.answer")?;
    params.only(&[
        "id",
        "decision",
        "scope",
        "expiresInSecs",
        "reason",
        "surface",
    ])?;
    let id = params.required_str("id")?;
    let allow = match params.required_str("decision")? {
        "allow" => true,
        "deny" => false,
        _ => return Err(invalid("decision", "must be \"allow\" or \"deny\"")),
    };
    let expires_in = params.optional_u64("expiresInSecs")?;
    if expires_in.is_some_and(|secs| secs == 0 || secs > MAX_RULE_SECS) {
        return Err(invalid(
            "expiresInSecs",
            &format!("must be 1 to {MAX_RULE_SECS} seconds"),
        ));
    }
    let scope = match params.optional_str("scope")? {
        None | Some("once") => Scope::Once,
        Some("session") => Scope::Session,
        Some("rule") => Scope::Rule {
            expires_at: expires_in.map(|secs| bridge_policy::approval::grants::unix_now() + secs),
        },
        Some(_) => {
            return Err(invalid(
                "scope",
                "must be \"once\", \"session\" or \"rule\"",
            ));
        }
    };
    if expires_in.is_some() && !matches!(scope, Scope::Rule { .. }) {
        return Err(invalid("expiresInSecs", "applies to scope \"rule\" only"));
    }
    if !allow && scope != Scope::Once {
        return Err(invalid("scope", "a deny is for this call only"));
    }
    let reason = params.optional_str("reason")?;
    if reason.is_some_and(|reason| reason.chars().count() > MAX_REASON_CHARS) {
        return Err(invalid(
            "reason",
            &format!("must be at most {MAX_REASON_CHARS} characters"),
        ));
    }
    let surface = match params.optional_str("surface")? {
        None => Surface::Rpc,
        // Who answered is the person's surface; an agent's own prompt is
        // never an answer given here.
        Some(name) => Surface::from_name(name)
            .filter(|surface| *surface != Surface::Agent)
            .ok_or_else(|| invalid("surface", "must be cli, rpc, web, chat or vscode"))?,
    };
    let given = Answer {
        allow,
        scope,
        reason: reason.map(str::to_owned),
        surface,
    };
    ctx.approvals
        .answer(id, given, None)
        .map_err(answer_error)?;
    Ok(json!({"id": id, "decision": if allow { "allow" } else { "deny" }, "scope": scope.name()}))
}

fn answer_error(err: AnswerError) -> ErrorObject {
    let message = err.to_string();
    match err {
        AnswerError::NoSuchAsk(id) => {
            ErrorObject::new(ASK_NOT_FOUND, message).with_data(json!({"id": id}))
        }
        AnswerError::AlreadyAnswered { id, outcome, by } => {
            ErrorObject::new(ASK_ALREADY_ANSWERED, message)
                .with_data(json!({"id": id, "outcome": outcome, "by": by}))
        }
        AnswerError::ScopeNotOffered { choices, .. } => invalid(
            "scope",
            &format!("is not offered by this ask (it offers {choices:?})"),
        ),
        AnswerError::OwnSession(id) => {
            ErrorObject::new(NOT_AN_APPROVER, message).with_data(json!({"id": id}))
        }
    }
}

async fn watch(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "approvals.watch")?;
    params.only(&["since", "waitMs"])?;
    let since = params.optional_u64("since")?.unwrap_or(0);
    let wait = params
        .optional_u64("waitMs")?
        .map_or(Duration::ZERO, Duration::from_millis)
        .min(MAX_WATCH_WAIT);
    let (events, next) = tokio::select! {
        watched = ctx.approvals.watch(since, wait) => watched,
        // A stopping daemon answers its long polls at once.
        () = ctx.shutdown.cancelled() => (Vec::new(), since),
    };
    Ok(json!({
        "events": events.iter().map(event_json).collect::<Vec<Value>>(),
        "next": next,
    }))
}

/// `approvals.subscribe {since?}` on a WebSocket connection: every event
/// after `since` (default: from now on) comes as an `approvals.event`
/// notification, until the connection closes.
async fn subscribe(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "approvals.subscribe")?;
    params.only(&["since"])?;
    let Some(push) = params.push().cloned() else {
        return Err(ErrorObject::new(
            SERVER_ERROR,
            "approvals.subscribe needs a WebSocket connection to /rpc; over HTTP, poll approvals.watch",
        ));
    };
    let newest = *ctx.approvals.subscribe().borrow();
    let from = params.optional_u64("since")?.unwrap_or(newest);
    if push.subscribe_approvals() {
        let queue = ctx.approvals.clone();
        let shutdown = ctx.shutdown.clone();
        tokio::spawn(async move {
            let mut since = from;
            loop {
                let (events, next) = tokio::select! {
                    watched = queue.watch(since, MAX_WATCH_WAIT) => watched,
                    () = push.closed() => return,
                    () = shutdown.cancelled() => return,
                };
                for event in &events {
                    if !push.notify("approvals.event", event_json(event)).await {
                        return;
                    }
                }
                since = next;
            }
        });
    }
    Ok(json!({"subscribed": true, "since": from}))
}

async fn rules(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "approvals.rules")?;
    params.only(&["workspace"])?;
    let workspace = params.optional_str("workspace")?.map(PathBuf::from);
    let Some(store) = ctx.registry().approval_rules() else {
        return Ok(json!({"rules": []}));
    };
    let store = store.clone();
    let listed = tokio::task::spawn_blocking(move || store.list(workspace.as_deref()))
        .await
        .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("approvals.rules failed: {err}")))?
        .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("approvals.rules: {err}")))?;
    Ok(json!({"rules": listed}))
}

async fn revoke(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "approvals.revoke")?;
    params.only(&["rule", "workspace"])?;
    let rule = params.required_str("rule")?.to_owned();
    if bridge_policy::GrantKey::from_rule_text(&rule).is_none() {
        return Err(invalid(
            "rule",
            "is not a rule's text (e.g. \"run cargo test\" or \"tool apply_patch\"; see approvals.rules)",
        ));
    }
    let workspace = params.optional_str("workspace")?.map(PathBuf::from);
    let Some(store) = ctx.registry().approval_rules() else {
        return Ok(json!({"removed": []}));
    };
    let store = store.clone();
    let removed = tokio::task::spawn_blocking(move || store.revoke(&rule, workspace.as_deref()))
        .await
        .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("approvals.revoke failed: {err}")))?
        .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("approvals.revoke: {err}")))?;
    Ok(json!({"removed": removed}))
}
