//! A JSON-RPC 2.0 peer over the framed stdio of the Copilot CLI: our
//! requests with their responses, and the CLI's own requests (hooks,
//! permission prompts) and notifications (session events), which both
//! sides send at any time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::framing::{FrameError, read_message, write_message};

/// What the CLI sent us on its own initiative.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// Needs an answer through [`RpcConnection::respond`].
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
}

/// Why a call produced no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RpcError {
    /// The connection is gone: the CLI exited, closed its output, or sent
    /// something that is not the protocol.
    #[error("{0}")]
    Closed(String),
    #[error("{method} failed: {message} (code {code})")]
    Remote {
        method: String,
        code: i64,
        message: String,
    },
    #[error("{method} got no answer within {} ms", .after.as_millis())]
    Timeout { method: String, after: Duration },
}

type Pending = HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>;

struct Shared {
    pending: Mutex<Pending>,
    /// Set once, when the reader stops: every later call fails with it.
    closed: Mutex<Option<String>>,
}

impl Shared {
    fn close(&self, reason: String) {
        {
            let mut closed = crate::session::lock(&self.closed);
            if closed.is_none() {
                *closed = Some(reason.clone());
            }
        }
        let pending = std::mem::take(&mut *crate::session::lock(&self.pending));
        for (_, waiter) in pending {
            let _ = waiter.send(Err(RpcError::Closed(reason.clone())));
        }
    }

    fn closed_reason(&self) -> Option<String> {
        crate::session::lock(&self.closed).clone()
    }
}

/// Our side of the connection.
pub struct RpcConnection {
    writer: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
}

impl RpcConnection {
    /// Starts reading `reader` on a task. Incoming requests and
    /// notifications arrive on the returned channel, which ends when the
    /// connection does.
    pub fn start(
        reader: Box<dyn AsyncRead + Send + Unpin>,
        writer: Box<dyn AsyncWrite + Send + Unpin>,
    ) -> (Self, mpsc::UnboundedReceiver<Incoming>) {
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            closed: Mutex::new(None),
        });
        let (incoming_tx, incoming_rx) = mpsc::unbounded_channel();
        tokio::spawn(read_loop(
            BufReader::new(reader),
            shared.clone(),
            incoming_tx,
        ));
        let connection = Self {
            writer: tokio::sync::Mutex::new(writer),
            shared,
            next_id: AtomicU64::new(1),
        };
        (connection, incoming_rx)
    }

    /// Calls `method` and waits for its result, at most `timeout`.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        if let Some(reason) = self.shared.closed_reason() {
            return Err(RpcError::Closed(reason));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        crate::session::lock(&self.shared.pending).insert(id, tx);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(err) = self.send(&message).await {
            crate::session::lock(&self.shared.pending).remove(&id);
            return Err(err);
        }
        let outcome = tokio::time::timeout(timeout, rx).await;
        crate::session::lock(&self.shared.pending).remove(&id);
        match outcome {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(RpcError::Remote { code, message, .. }))) => Err(RpcError::Remote {
                method: method.to_owned(),
                code,
                message,
            }),
            Ok(Ok(Err(err))) => Err(err),
            Ok(Err(_)) => Err(RpcError::Closed(
                self.shared
                    .closed_reason()
                    .unwrap_or_else(|| "the connection closed".to_owned()),
            )),
            Err(_) => Err(RpcError::Timeout {
                method: method.to_owned(),
                after: timeout,
            }),
        }
    }

    /// Answers a request the CLI sent.
    pub async fn respond(&self, id: Value, result: Value) -> Result<(), RpcError> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await
    }

    /// Refuses a request the CLI sent (a method we do not implement).
    pub async fn respond_error(&self, id: Value, code: i64, message: &str) -> Result<(), RpcError> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
            .await
    }

    async fn send(&self, message: &Value) -> Result<(), RpcError> {
        let mut writer = self.writer.lock().await;
        write_message(&mut *writer, message).await.map_err(|err| {
            RpcError::Closed(
                self.shared
                    .closed_reason()
                    .unwrap_or_else(|| format!("writing to the Copilot CLI failed: {err}")),
            )
        })
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: BufReader<R>,
    shared: Arc<Shared>,
    incoming: mpsc::UnboundedSender<Incoming>,
) {
    let reason = loop {
        let message = match read_message(&mut reader).await {
            Ok(message) => message,
            Err(FrameError::Eof) => break "the Copilot CLI closed its output".to_owned(),
            Err(err) => break format!("the Copilot CLI sent an unreadable message: {err}"),
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = message.get("id").cloned().filter(|id| !id.is_null());
        match (method, id) {
            (Some(method), Some(id)) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let _ = incoming.send(Incoming::Request { id, method, params });
            }
            (Some(method), None) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let _ = incoming.send(Incoming::Notification { method, params });
            }
            (None, Some(id)) => deliver_response(&shared, &id, &message),
            (None, None) => {
                break format!(
                    "the Copilot CLI sent a message that is neither a request nor a response: {}",
                    bridge_policy::redact::shorten(&message.to_string(), 200)
                );
            }
        }
    };
    shared.close(reason);
}

fn deliver_response(shared: &Shared, id: &Value, message: &Value) {
    let Some(id) = id.as_u64() else {
        tracing::warn!(%id, "Copilot CLI answered a request id we never used");
        return;
    };
    let Some(waiter) = crate::session::lock(&shared.pending).remove(&id) else {
        // A late answer to a call that timed out.
        return;
    };
    let result = match message.get("error") {
        Some(error) => Err(RpcError::Remote {
            method: String::new(),
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message")
                .to_owned(),
        }),
        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
    };
    let _ = waiter.send(result);
}
