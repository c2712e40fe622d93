//! JSON-RPC 2.0 at `/rpc`: the envelope (single requests, batches,
//! notifications, the standard error codes) and the method table. The
//! transports ([`transport`]) hand text in and get text out; methods
//! ([`methods`]) see only validated [`Params`].

mod activity;
pub mod agent_hook;
pub mod approvals;
pub(crate) mod body;
mod chat;
pub mod hook_waits;
pub mod methods;
mod orchestrate;
pub(crate) mod params;
mod person;
pub mod push;
pub mod status;
pub mod toolbus;
mod transcripts;
pub mod transport;

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bridge_protocol::jsonrpc::{
    ErrorObject, INTERNAL_ERROR, INVALID_REQUEST, Id, METHOD_NOT_FOUND, PARSE_ERROR, Response,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Map, Value};

pub use params::{Caller, Client, Params};

use crate::app::ServerContext;

/// A gateway operation failed (e.g. a workspace could not be opened).
pub const SERVER_ERROR: i64 = -32000;
/// The tool ran, or tried to, and failed; `data.code` says why.
pub const TOOL_FAILED: i64 = -32001;
/// The permission policy, a provider rule or a gate denied the call.
pub const POLICY_DENIED: i64 = -32002;
/// No session has that id.
pub const SESSION_NOT_FOUND: i64 = -32004;
/// The session is already ending.
pub const SESSION_ENDING: i64 = -32005;
/// No orchestration has that id.
pub const PLAN_NOT_FOUND: i64 = -32006;

pub type RpcResult = Result<Value, ErrorObject>;

/// A method: gets the daemon and the request's params, returns the result.
pub type Handler =
    Arc<dyn Fn(ServerContext, Params) -> BoxFuture<'static, RpcResult> + Send + Sync>;

/// Method name → handler. The extension point for later namespaces
/// (`mcp.*`): insert their handlers next to the built-in ones.
#[derive(Clone, Default)]
pub struct MethodTable {
    methods: BTreeMap<String, Handler>,
}

impl std::fmt::Debug for MethodTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.methods.keys()).finish()
    }
}

impl MethodTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) `name`.
    pub fn insert<F, Fut>(&mut self, name: &str, handler: F)
    where
        F: Fn(ServerContext, Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = RpcResult> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |ctx, params| handler(ctx, params).boxed());
        self.methods.insert(name.to_owned(), handler);
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.methods.keys().map(String::as_str)
    }

    fn get(&self, name: &str) -> Option<&Handler> {
        self.methods.get(name)
    }
}

/// The dispatcher: a daemon and its methods.
#[derive(Clone)]
pub struct RpcState {
    ctx: ServerContext,
    methods: Arc<MethodTable>,
}

impl RpcState {
    pub fn new(ctx: ServerContext, methods: MethodTable) -> Self {
        Self {
            ctx,
            methods: Arc::new(methods),
        }
    }

    pub(crate) fn ctx(&self) -> &ServerContext {
        &self.ctx
    }

    /// Answers one payload (a request, a notification or a batch) with the
    /// answer's JSON text. `None` when nothing is to be sent back
    /// (notifications only).
    pub async fn handle_text(&self, text: &str, client: &Client) -> Option<String> {
        let answer = match serde_json::from_str::<Value>(text) {
            Ok(value) => self.handle_value(value, client).await?,
            Err(err) => Answer::One(failure_response(
                None,
                PARSE_ERROR,
                format!("parse error: {err}"),
            )),
        };
        // Responses hold only JSON values and strings: serializing them
        // cannot fail.
        Some(serde_json::to_string(&answer).unwrap_or_default())
    }

    async fn handle_value(&self, value: Value, client: &Client) -> Option<Answer> {
        match value {
            Value::Array(batch) if batch.is_empty() => Some(Answer::One(failure_response(
                None,
                INVALID_REQUEST,
                "invalid request: an empty batch",
            ))),
            Value::Array(batch) => {
                let answers = futures::future::join_all(
                    batch.into_iter().map(|item| self.handle_one(item, client)),
                )
                .await;
                let answers: Vec<Response> = answers.into_iter().flatten().collect();
                (!answers.is_empty()).then_some(Answer::Batch(answers))
            }
            single => self.handle_one(single, client).await.map(Answer::One),
        }
    }

    async fn handle_one(&self, value: Value, client: &Client) -> Option<Response> {
        let request = match Envelope::read(value) {
            Ok(request) => request,
            Err((id, message)) => return Some(failure_response(id, INVALID_REQUEST, message)),
        };
        let Some(handler) = self.methods.get(&request.method) else {
            let message = format!(
                "method not found: {:?} (methods: {})",
                bridge_protocol::excerpt(&request.method),
                self.methods.names().collect::<Vec<_>>().join(", ")
            );
            return request
                .respond
                .then(|| failure_response(request.id, METHOD_NOT_FOUND, message));
        };
        let call = handler(self.ctx.clone(), request.params.sent_by(client));
        // A bug in one method must not take the connection (and the other
        // requests on it) down.
        let outcome = match AssertUnwindSafe(call).catch_unwind().await {
            Ok(outcome) => outcome,
            Err(_) => {
                tracing::error!(method = %request.method, "an RPC method panicked");
                Err(ErrorObject::new(
                    INTERNAL_ERROR,
                    format!("internal error in {}", request.method),
                ))
            }
        };
        if !request.respond {
            return None;
        }
        Some(match outcome {
            Ok(result) => Response::success(request.id, result),
            Err(error) => Response::failure(request.id, error),
        })
    }
}

/// What one payload is answered with: one response, or a batch's.
#[derive(Serialize)]
#[serde(untagged)]
enum Answer {
    One(Response),
    Batch(Vec<Response>),
}

fn failure_response(id: Option<Id>, code: i64, message: impl Into<String>) -> Response {
    Response::failure(id, ErrorObject::new(code, message))
}

pub(crate) fn failure(id: Option<Id>, code: i64, message: impl Into<String>) -> Value {
    serde_json::to_value(failure_response(id, code, message)).unwrap_or(Value::Null)
}

/// A request as read off the wire, checked against JSON-RPC 2.0.
struct Envelope {
    /// `None` also for `"id": null`, which still gets an answer.
    id: Option<Id>,
    /// False for notifications (no `id` member at all).
    respond: bool,
    method: String,
    params: Params,
}

impl Envelope {
    /// The request, or the id to answer with and why it is invalid.
    fn read(value: Value) -> Result<Self, (Option<Id>, String)> {
        let Value::Object(mut object) = value else {
            return Err((None, "invalid request: expected a JSON object".to_owned()));
        };
        let (id, respond) = match object.remove("id") {
            None => (None, false),
            Some(Value::Null) => (None, true),
            Some(Value::String(id)) => (Some(Id::String(id)), true),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(n) => (Some(Id::Number(n)), true),
                None => {
                    return Err((
                        None,
                        "invalid request: `id` must be a string or an integer".to_owned(),
                    ));
                }
            },
            Some(_) => {
                return Err((
                    None,
                    "invalid request: `id` must be a string or an integer".to_owned(),
                ));
            }
        };
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err((id, "invalid request: `jsonrpc` must be \"2.0\"".to_owned()));
        }
        let method = match object.remove("method") {
            Some(Value::String(method)) => method,
            _ => return Err((id, "invalid request: `method` must be a string".to_owned())),
        };
        let params = match object.remove("params") {
            None | Some(Value::Null) => Params::new(Map::new()),
            Some(Value::Object(map)) => Params::new(map),
            Some(Value::Array(_)) => Params::positional(),
            Some(_) => {
                return Err((
                    id,
                    "invalid request: `params` must be an object or an array".to_owned(),
                ));
            }
        };
        Ok(Self {
            id,
            respond,
            method,
            params,
        })
    }
}
