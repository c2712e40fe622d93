//! The facade's conversations into transcripts: which agent session a
//! model request belongs to (by what the agent sends: Claude Code's
//! `X-Claude-Code-Session-Id`, Codex's `session-id`; else the client and
//! its first prompt), what it added to the conversation, and the answer as
//! it streams.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::HeaderMap;
use bridge_engine::Door;
use bridge_llm::{
    ChatEvent, ChatRequest, ChatResponse, ChatStream, LlmError, ResponseBuilder, Role,
};
use futures::Stream;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Transcript, Transcripts};

/// Which conversation `request` belongs to, as `(id, door)`: the agent's
/// own session id when it sends one (the id its hooks' hub session has),
/// else one per client and first prompt.
pub fn conversation(headers: &HeaderMap, request: &ChatRequest) -> (String, Door) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let client = header("user-agent").unwrap_or_default();
    if let Some(id) = header("x-claude-code-session-id").filter(|id| plain(id)) {
        return (format!("claude-code-{id}"), Door::ClaudeCode);
    }
    let codex =
        header("originator").is_some_and(|o| o.starts_with("codex")) || client.starts_with("codex");
    if codex && let Some(id) = header("session-id").filter(|id| plain(id)) {
        return (format!("codex-{id}"), Door::Codex);
    }
    let door = if client.to_ascii_lowercase().contains("openclaw") {
        Door::OpenClaw
    } else {
        Door::Facade
    };
    let first_prompt = request
        .messages
        .iter()
        .find(|message| message.role == Role::User)
        .and_then(|message| message.content.as_deref())
        .unwrap_or_default();
    let mut digest = Sha256::new();
    digest.update(client.as_bytes());
    digest.update([0]);
    digest.update(first_prompt.as_bytes());
    let digest = digest.finalize();
    (
        format!("facade-{}", bridge_util::ids::hex(&digest[..6])),
        door,
    )
}

/// An id an agent sent that may name a session (and a file).
fn plain(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// The transcript of `request`'s conversation, told what the request
/// added to it: the prompts and tool results after the model's last turn.
pub fn record_request(
    transcripts: &Transcripts,
    headers: &HeaderMap,
    request: &ChatRequest,
    path: &str,
    backend: &str,
) -> Arc<Transcript> {
    let (id, door) = conversation(headers, request);
    let transcript = match transcripts.get(&id) {
        Some(found) => found,
        None => {
            let title = request
                .messages
                .iter()
                .rev()
                .find(|message| message.role == Role::User)
                .and_then(|message| message.content.as_deref())
                .unwrap_or("a conversation");
            transcripts.open(&id, door, title, None)
        }
    };
    transcript.note_usage(request.model.as_deref(), 0, 0);
    let last_answer = request
        .messages
        .iter()
        .rposition(|message| message.role == Role::Assistant)
        .map_or(0, |at| at + 1);
    transcript.push(
        "model.request",
        json!({
            "path": path,
            "model": request.model,
            "backend": backend,
            "messages": request.messages.len(),
            "tools": request.tools.len(),
        }),
    );
    for message in &request.messages[last_answer..] {
        let content = message.content.as_deref().unwrap_or_default();
        match message.role {
            Role::User => {
                transcript.push(
                    "user.message",
                    json!({"content": content, "source": "model request"}),
                );
            }
            Role::Tool => {
                transcript.push(
                    "tool.result",
                    json!({"toolCallId": message.tool_call_id, "content": content}),
                );
            }
            Role::System | Role::Assistant => {}
        }
    }
    transcript
}

/// A whole answer into its conversation's transcript.
pub fn record_answer(transcript: &Transcript, answer: &ChatResponse) {
    transcript.push("assistant.message", answer_json(answer));
}

fn answer_json(answer: &ChatResponse) -> Value {
    let calls: Vec<Value> = answer
        .tool_calls
        .iter()
        .map(|call| json!({"toolCallId": call.id, "name": call.name, "arguments": call.arguments}))
        .collect();
    json!({"content": answer.text, "toolRequests": calls, "finish": answer.finish})
}

/// A failed model request in its conversation's transcript.
pub fn record_failure(transcript: &Transcript, error: &LlmError) {
    transcript.push("model.error", json!({"message": error.to_string()}));
}

/// What else hears the whole answer of a stream when it ends (the
/// request's telemetry, with content capture on).
pub type OnAnswer = Box<dyn FnOnce(&ChatResponse) + Send>;

/// `upstream`'s events, passed on unchanged, shown in `transcript` as they
/// come: the text as it streams (to live viewers), the whole answer at its
/// end (also to `on_answer`), or what came of it when the stream broke or
/// the client left.
pub fn tap(
    upstream: ChatStream,
    transcript: Arc<Transcript>,
    on_answer: Option<OnAnswer>,
) -> ChatStream {
    Box::pin(Tapped {
        upstream,
        transcript,
        answer: Some(ResponseBuilder::default()),
        on_answer,
    })
}

struct Tapped {
    upstream: ChatStream,
    transcript: Arc<Transcript>,
    /// `None` once the answer is recorded.
    answer: Option<ResponseBuilder>,
    on_answer: Option<OnAnswer>,
}

impl Tapped {
    fn end(&mut self, error: Option<&LlmError>) {
        let Some(answer) = self.answer.take() else {
            return;
        };
        let answer = answer.finish();
        if let Some(on_answer) = self.on_answer.take() {
            on_answer(&answer);
        }
        if !answer.text.is_empty() || !answer.tool_calls.is_empty() || error.is_none() {
            record_answer(&self.transcript, &answer);
        }
        if let Some(error) = error {
            record_failure(&self.transcript, error);
        }
    }
}

impl Stream for Tapped {
    type Item = Result<ChatEvent, LlmError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let polled = this.upstream.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(event))) => {
                if let ChatEvent::TextDelta { text } = event
                    && this.transcript.is_watched()
                {
                    this.transcript
                        .push("assistant.message_delta", json!({"delta": text}));
                }
                if let ChatEvent::Usage { usage } = event {
                    this.transcript
                        .note_usage(None, usage.prompt_tokens, usage.completion_tokens);
                }
                let finished = matches!(event, ChatEvent::Finish { .. });
                if let Some(answer) = &mut this.answer {
                    answer.push(event.clone());
                }
                if finished {
                    this.end(None);
                }
            }
            Poll::Ready(Some(Err(error))) => this.end(Some(error)),
            Poll::Ready(None) => this.end(None),
            Poll::Pending => {}
        }
        polled
    }
}

impl Drop for Tapped {
    fn drop(&mut self) {
        if self.answer.is_some() {
            self.transcript.push(
                "model.interrupted",
                json!({"why": "the client left before the answer ended"}),
            );
            self.end(None);
        }
    }
}
