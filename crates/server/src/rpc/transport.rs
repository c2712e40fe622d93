//! `/rpc` over HTTP `POST` and over WebSocket. Both check the bearer token
//! first and then feed text to the dispatcher; a WebSocket connection
//! serves requests concurrently, so a tool call waiting on its tool does not
//! hold up the next request, and survives any garbage a client sends.
//! Concurrent, not parallel: a connection's requests share its task, so
//! their CPU work (policy, redaction) runs one step at a time.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bridge_protocol::jsonrpc::PARSE_ERROR;
use bridge_util::batch::{Outgoing, send_batched};
use futures::StreamExt;
use futures::stream::{FuturesUnordered, SplitSink};
use tokio::sync::mpsc;

use super::body::{json_response, json_text_response, read_bounded};
use super::push::Push;
use super::{Caller, Client, RpcState, failure};
use crate::guard::{presented_token, unauthorized};

/// Largest request body or WebSocket message.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;
/// Requests one WebSocket connection may have in flight; more wait.
const MAX_IN_FLIGHT_PER_CONNECTION: usize = 32;
/// Answers queued for a slow reader before requests wait.
const OUTBOUND_QUEUE: usize = 64;

/// Who presented a valid token, if anyone did.
fn authorized(
    state: &RpcState,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Option<Caller> {
    let presented = presented_token(headers, query.get("token").map(String::as_str))?;
    let ctx = state.ctx();
    if bridge_util::ids::constant_time_eq(presented, &ctx.approver_token) {
        Some(Caller::Approver)
    } else if bridge_util::ids::constant_time_eq(presented, &ctx.token) {
        Some(Caller::Agent)
    } else {
        None
    }
}

pub async fn http_post(State(state): State<RpcState>, headers: HeaderMap, body: Body) -> Response {
    let Some(caller) = authorized(&state, &headers, &HashMap::new()) else {
        return unauthorized();
    };
    let bytes = match read_bounded(&headers, body, MAX_REQUEST_BYTES).await {
        Ok(bytes) => bytes,
        Err(too_large) => return too_large,
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return json_response(
            StatusCode::OK,
            &failure(None, PARSE_ERROR, "parse error: the body is not UTF-8"),
        );
    };
    // A `traceparent` header: the calls this request makes join that trace.
    let parent = bridge_telemetry::propagation::parent_of(&headers);
    let client = Client::new(caller);
    match bridge_telemetry::propagation::traced(parent, state.handle_text(text, &client)).await {
        Some(answer) => json_text_response(StatusCode::OK, answer),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

pub async fn websocket(
    State(state): State<RpcState>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    let Some(caller) = authorized(&state, &headers, &query) else {
        return unauthorized();
    };
    ws.max_message_size(MAX_REQUEST_BYTES)
        .max_frame_size(MAX_REQUEST_BYTES)
        .read_buffer_size(bridge_gateway::transport::READ_BUFFER_BYTES)
        .on_upgrade(move |socket| serve(state, socket, caller))
}

/// Serves one WebSocket connection on its own task: requests in flight are
/// futures polled here (not tasks of their own, which woke another worker
/// thread to steal each one), and their answers go to a writer task that
/// sends everything ready with one flush.
async fn serve(state: RpcState, socket: WebSocket, caller: Caller) {
    let (sink, mut stream) = socket.split();
    let (tx, rx) = mpsc::channel::<Message>(OUTBOUND_QUEUE);
    let writer = tokio::spawn(write_batched(sink, rx));
    let client = Client {
        caller,
        push: Some(Push::new(tx.clone())),
    };
    let mut in_flight = FuturesUnordered::new();
    let shutdown = state.ctx().shutdown.clone();
    loop {
        tokio::select! {
            Some(answer) = in_flight.next(), if !in_flight.is_empty() => {
                if let Some(answer) = answer
                    && tx.send(Message::Text(answer)).await.is_err()
                {
                    break;
                }
            }
            frame = stream.next(), if in_flight.len() < MAX_IN_FLIGHT_PER_CONNECTION => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Binary(_))) => {
                        let answer = failure(None, PARSE_ERROR, "parse error: send JSON-RPC as text frames, not binary");
                        if tx.send(Message::Text(answer.to_string().into())).await.is_err() {
                            break;
                        }
                        continue;
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_))) | None => break,
                    Some(Err(err)) => {
                        tracing::debug!(error = %err, "rpc websocket read failed");
                        break;
                    }
                };
                let state = state.clone();
                let client = client.clone();
                in_flight.push(async move {
                    state.handle_text(text.as_str(), &client).await.map(Into::into)
                });
            }
            () = shutdown.cancelled() => {
                let _ = tx.send(Message::Close(Some(CloseFrame {
                    code: axum::extract::ws::close_code::AWAY,
                    reason: "daemon shutting down".into(),
                }))).await;
                break;
            }
        }
    }
    // The client left (or the daemon is stopping): nobody will read the
    // answers, and dropping a tool call's future cancels it.
    drop(in_flight);
    if let Some(push) = &client.push {
        push.hang_up();
    }
    drop(client);
    drop(tx);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
}

/// Sends answers in order until a close frame or the end of the queue,
/// through the one batched writer (`bridge_util::batch`): answers that are
/// ready together cost one write.
async fn write_batched(mut sink: SplitSink<WebSocket, Message>, mut rx: mpsc::Receiver<Message>) {
    send_batched(&mut sink, &mut rx, |message| match message {
        Message::Close(_) => Outgoing::Last(message),
        other => Outgoing::Feed(other),
    })
    .await;
}
