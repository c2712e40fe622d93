//! What sessions are doing, for the person watching (approver token only:
//! a transcript holds what agents said and were told):
//! `session.transcripts` (every live and kept transcript, and the task
//! logs on disk) and `session.events` (a transcript's events after a
//! sequence number, waiting for the next ones; a finished task from its
//! log). The dashboard's Sessions page reads them (crate::transcripts).

use std::path::PathBuf;
use std::time::Duration;

use bridge_engine::log::{self, LoggedEvent};
use bridge_protocol::jsonrpc::ErrorObject;
use serde_json::{Value, json};

use super::approvals::approver_only;
use super::push::Push;
use super::{MethodTable, Params, RpcResult, SERVER_ERROR, SESSION_NOT_FOUND};
use crate::app::ServerContext;
use crate::transcripts::{MAX_PAGE, Page, Transcript};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The longest `waitMs`.
const MAX_WAIT_MS: u64 = 60_000;
/// Task logs `session.transcripts` lists, newest first.
const LISTED_LOGS: usize = 100;

pub fn register(table: &mut MethodTable) {
    table.insert("session.transcripts", transcripts);
    table.insert("session.events", events);
}

async fn transcripts(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "session.transcripts")?;
    params.only(&[])?;
    let live = ctx.transcripts.list();
    let kept = ctx
        .transcripts
        .files()
        .map(crate::transcripts::TranscriptFiles::list)
        .unwrap_or_default();
    let dir = logs_dir(&ctx);
    let logs = tokio::task::spawn_blocking(move || log::list(&dir))
        .await
        .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("cannot list task logs: {err}")))?
        .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("cannot list task logs: {err}")))?;
    let logs: Vec<Value> = logs
        .into_iter()
        .take(LISTED_LOGS)
        .map(|summary| {
            json!({
                "id": summary.id,
                "createdAt": summary.created,
                "updatedAt": summary.updated,
                "events": summary.events,
                "firstPrompt": summary.first_prompt.map(|p| bridge_policy::redact(&p).into_owned()),
                "status": summary.status,
                "lastRun": summary.last_run,
            })
        })
        .collect();
    Ok(json!({"transcripts": live, "kept": kept, "logs": logs}))
}

async fn events(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "session.events")?;
    params.only(&["session", "since", "waitMs", "limit", "follow"])?;
    let id = params.required_str("session")?.to_owned();
    let since = params.optional_u64("since")?.unwrap_or(0);
    let wait = params.optional_u64("waitMs")?.unwrap_or(0).min(MAX_WAIT_MS);
    let limit = match params.optional_u64("limit")? {
        None => MAX_PAGE,
        Some(0) => return Err(super::params::invalid("limit", "must be at least 1")),
        Some(n) => usize::try_from(n).unwrap_or(MAX_PAGE).min(MAX_PAGE),
    };
    let follow = params.optional_bool("follow")?.unwrap_or(false);
    if let Some(transcript) = ctx.transcripts.get(&id) {
        if follow {
            let push = params.push().cloned().ok_or_else(|| {
                ErrorObject::new(
                    SERVER_ERROR,
                    "session.events with follow needs a WebSocket connection to /rpc; over HTTP, wait with waitMs",
                )
            })?;
            let page = transcript.page(since, limit);
            let next = page.next;
            tokio::spawn(push_events(
                transcript.clone(),
                push,
                next,
                ctx.shutdown.clone(),
            ));
            return Ok(answer(&id, "memory", transcript.is_live(), page));
        }
        transcript.polled();
        let mut page = transcript.page(since, limit);
        if page.events.is_empty() && wait > 0 && transcript.is_live() {
            transcript
                .wait_after(page.next, Duration::from_millis(wait))
                .await;
            page = transcript.page(since, limit);
        }
        return Ok(answer(&id, "memory", transcript.is_live(), page));
    }
    let files = ctx.transcripts.files().cloned();
    let dir = logs_dir(&ctx);
    let looked_up = id.clone();
    let from_disk = tokio::task::spawn_blocking(move || {
        if let Some(page) = files.and_then(|files| files.read(&looked_up, since, limit)) {
            return Some(("kept", page));
        }
        from_task_log(dir, &looked_up, since, limit).map(|page| ("log", page))
    })
    .await
    .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("cannot read {id}: {err}")))?;
    match from_disk {
        Some((source, page)) => Ok(answer(&id, source, false, page)),
        None => Err(ErrorObject::new(
            SESSION_NOT_FOUND,
            format!("no session, conversation or task log {id} (see session.transcripts)"),
        )
        .with_data(json!({"session": id}))),
    }
}

/// Every event of `transcript` after `since` as a `session.event`
/// notification `{session, event}`, until the connection or the daemon
/// ends.
async fn push_events(
    transcript: Arc<Transcript>,
    push: Push,
    mut since: u64,
    shutdown: CancellationToken,
) {
    let _viewer = transcript.viewer();
    loop {
        let page = transcript.page(since, MAX_PAGE);
        for event in page.events {
            since = event["seq"].as_u64().unwrap_or(since);
            let params = json!({"session": transcript.id(), "event": event});
            if !push.notify("session.event", params).await {
                return;
            }
        }
        tokio::select! {
            () = transcript.wait_after(since, Duration::from_secs(MAX_WAIT_MS / 1000)) => {}
            () = push.closed() => return,
            () = shutdown.cancelled() => return,
        }
    }
}

fn answer(id: &str, source: &str, live: bool, page: Page) -> Value {
    json!({
        "session": id,
        "source": source,
        "live": live,
        "events": page.events,
        "next": page.next,
        "missed": page.missed,
    })
}

fn logs_dir(ctx: &ServerContext) -> PathBuf {
    ctx.facts.home.join("sessions")
}

/// A task's log read back as transcript events (`{seq, at, type, …data}`),
/// redacted as the log is; `None` when there is no such log.
fn from_task_log(dir: PathBuf, id: &str, since: u64, limit: usize) -> Option<Page> {
    log::validate_session_id(id).ok()?;
    let replay = log::replay(&log::session_file(&dir, id)).ok()?;
    let events: Vec<Value> = replay
        .filter_map(Result::ok)
        .filter(|event| event.seq > since)
        .take(limit)
        .map(shown)
        .collect();
    Some(Page::after(since, events))
}

pub(super) fn shown(event: LoggedEvent) -> Value {
    let mut shown = match event.data {
        Value::Object(map) => map,
        other => serde_json::Map::from_iter([("value".to_owned(), other)]),
    };
    shown.insert("seq".to_owned(), Value::from(event.seq));
    shown.insert("at".to_owned(), Value::from(event.timestamp));
    shown.insert("type".to_owned(), Value::from(event.kind));
    Value::Object(shown)
}
