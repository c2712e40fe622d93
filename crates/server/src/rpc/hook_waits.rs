//! Hooks that wait for a person without holding one request open: an
//! agent's `pre-tool-use` hook sent with `defer: true` gets
//! `{decision: "pending", approval: {id, timeoutSecs}}` as soon as its call
//! is asked about, and then waits with `approvals.wait {id}` for the
//! answer `agent.hook` would have given (docs/approvals.md). The hook
//! command keeps its short patience for the first request and waits for
//! the second as long as a person may take.
//!
//! The call is decided and audited in a task of its own; a waiter that
//! hangs up withdraws the ask. Kept answers go after
//! [`KEEP_AFTER_TIMEOUT`] beyond the approval timeout; at most
//! [`MAX_DEFERRED`] are kept at once (the queue's own bound is lower).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bridge_protocol::jsonrpc::ErrorObject;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::approvals::ASK_NOT_FOUND;
use super::{Params, RpcResult};
use crate::app::ServerContext;

/// How long an answer is kept for a hook that comes late to wait for it.
const KEEP_AFTER_TIMEOUT: Duration = Duration::from_secs(120);
/// Most deferred calls kept at once.
pub const MAX_DEFERRED: usize = 1024;

struct Deferred {
    answer: watch::Receiver<Option<Value>>,
    cancel: CancellationToken,
    asked_at: Instant,
}

/// The deferred hook calls by ask id.
#[derive(Default)]
pub struct DeferredHooks {
    calls: Mutex<HashMap<String, Deferred>>,
}

impl std::fmt::Debug for DeferredHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredHooks").finish_non_exhaustive()
    }
}

impl DeferredHooks {
    /// Keeps the call of ask `id`, whose answer `answer` will carry;
    /// `false` when too many are kept (the caller then waits on the line).
    pub(crate) fn keep(
        &self,
        id: String,
        answer: watch::Receiver<Option<Value>>,
        cancel: CancellationToken,
        kept_for: Duration,
    ) -> bool {
        let mut calls = bridge_util::sync::lock(&self.calls);
        calls.retain(|_, call| call.asked_at.elapsed() < kept_for + KEEP_AFTER_TIMEOUT);
        if calls.len() >= MAX_DEFERRED {
            return false;
        }
        calls.insert(
            id,
            Deferred {
                answer,
                cancel,
                asked_at: Instant::now(),
            },
        );
        true
    }

    fn get(&self, id: &str) -> Option<(watch::Receiver<Option<Value>>, CancellationToken)> {
        bridge_util::sync::lock(&self.calls)
            .get(id)
            .map(|call| (call.answer.clone(), call.cancel.clone()))
    }
}

/// Withdraws the ask when the waiting request goes before the answer.
struct WithdrawOnHangUp(Option<CancellationToken>);

impl Drop for WithdrawOnHangUp {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel.cancel();
        }
    }
}

/// `approvals.wait {id}`: the answer of a deferred hook call, once there is
/// one. Any token may wait (the agent's hook does); waiting answers
/// nothing.
pub(super) async fn approvals_wait(ctx: ServerContext, params: Params) -> RpcResult {
    params.only(&["id"])?;
    let id = params.required_str("id")?;
    let Some((mut answer, cancel)) = ctx.deferred_hooks.get(id) else {
        return Err(ErrorObject::new(
            ASK_NOT_FOUND,
            format!("no deferred hook call has ask id {id:?}"),
        )
        .with_data(json!({"id": id})));
    };
    let mut hang_up = WithdrawOnHangUp(Some(cancel));
    let answered = tokio::select! {
        answered = answer.wait_for(Option::is_some) => answered.map(|value| value.clone()),
        () = ctx.shutdown.cancelled() => {
            return Err(ErrorObject::new(
                super::SERVER_ERROR,
                "the daemon is stopping: the call is denied",
            ));
        }
    };
    hang_up.0 = None;
    match answered {
        Ok(Some(answer)) => Ok(answer),
        _ => Err(ErrorObject::new(
            super::SERVER_ERROR,
            format!("the deferred hook call of {id} ended without an answer"),
        )),
    }
}
