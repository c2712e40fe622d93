//! The `vscode` chat backend: model requests served by a VS Code window
//! through `vscode.lm` (Copilot Chat, or any model the editor offers), sent
//! over the Copilot Bridge extension's provider connection (`chat.*`
//! messages: docs/providers.md, "Chat models"; docs/vscode.md). No call to a
//! Copilot service is made from here: the editor makes it, with the user's
//! own sign-in and consent.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bridge_gateway::{ChatReply, ChatUnavailable, Gateway};
use bridge_llm::{
    BackendKind, ChatBackend, ChatEvent, ChatRequest, ChatStream, FinishReason, LlmError, Message,
    Role, Usage,
};
use bridge_protocol::provider::chat::{
    ChatFailure, ChatOptions, ChatPart, ChatRequestMessage, ChatToolSpec, ChatTurn, chat_error_code,
};
use serde::Serialize;
use serde_json::Value;

use bridge_compose::{BackendEntry, PromptStyle};

/// The backend's name: clients ask for `vscode/<model>`.
pub const BACKEND_NAME: &str = "vscode";

/// How long the editor may take for the first part of an answer: VS Code
/// asks the user, once, whether the extension may use the model, and waits
/// for the answer.
pub const FIRST_PART_PATIENCE: Duration = Duration::from_secs(300);
/// How long an answer may pause between two parts.
pub const NEXT_PART_PATIENCE: Duration = Duration::from_secs(120);

/// Reaches the editors connected to `gateway`.
#[derive(Debug, Clone)]
pub struct VscodeBackend {
    gateway: Gateway,
    first_part: Duration,
    next_part: Duration,
}

impl VscodeBackend {
    pub fn new(gateway: Gateway) -> Self {
        Self {
            gateway,
            first_part: FIRST_PART_PATIENCE,
            next_part: NEXT_PART_PATIENCE,
        }
    }

    /// With other waits than [`FIRST_PART_PATIENCE`] and
    /// [`NEXT_PART_PATIENCE`].
    pub fn with_patience(mut self, first_part: Duration, next_part: Duration) -> Self {
        self.first_part = first_part;
        self.next_part = next_part;
        self
    }

    /// The facade's entry for this backend, listed while an editor offers
    /// models.
    pub fn entry(gateway: Gateway) -> BackendEntry {
        let offers = gateway.clone();
        BackendEntry {
            name: BACKEND_NAME.to_owned(),
            kind: BackendKind::Vscode,
            presence: Some(Arc::new(move || !offers.chat_offers().is_empty())),
            backend: Arc::new(Self::new(gateway)),
            base_url: "vscode.lm (through the editor's provider connection)".to_owned(),
            default_model: None,
            models: Vec::new(),
            style: PromptStyle::Chat,
        }
    }

    /// The model a request without one gets: the first one offered.
    fn first_offered(&self) -> Option<String> {
        self.gateway
            .chat_offers()
            .into_iter()
            .filter(|offer| offer.available)
            .flat_map(|offer| offer.models)
            .map(|model| model.id)
            .next()
    }
}

/// What `/healthz`, `bridge.status` and `copilot-bridge status` show.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VscodeStatus {
    /// `ok`: a model can be asked; `unavailable`: editors are connected but
    /// none can serve (the reasons say why); `off`: no editor offers models.
    pub chat: &'static str,
    pub editors: usize,
    pub models: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

pub fn status(gateway: &Gateway) -> VscodeStatus {
    let offers = gateway.chat_offers();
    let mut models: Vec<String> = offers
        .iter()
        .filter(|o| o.available)
        .flat_map(|o| o.models.iter().map(|m| m.id.clone()))
        .collect();
    models.sort();
    models.dedup();
    let reasons: Vec<String> = offers.iter().filter_map(|o| o.reason.clone()).collect();
    let chat = if offers.is_empty() {
        "off"
    } else if offers.iter().any(|o| o.available) {
        "ok"
    } else {
        "unavailable"
    };
    VscodeStatus {
        chat,
        editors: offers.len(),
        models,
        reasons,
    }
}

#[async_trait]
impl ChatBackend for VscodeBackend {
    fn name(&self) -> &str {
        BACKEND_NAME
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let model = match request.model.clone().or_else(|| self.first_offered()) {
            Some(model) => model,
            None => return Err(unavailable(&ChatUnavailable::NoProvider)),
        };
        let mut exchange = self
            .gateway
            .chat(wire_request(model, request))
            .map_err(|err| unavailable(&err))?;
        // The facade answers its client's head once the backend answered;
        // a refusal (no consent, unknown model) must still be an HTTP error.
        let first = tokio::time::timeout(self.first_part, exchange.next())
            .await
            .map_err(|_| timed_out(self.first_part))?;
        let mut answer = Answer::default();
        let next_part = self.next_part;
        match first {
            None => return Err(disconnected()),
            Some(ChatReply::End(Err(failure))) => return Err(failed(&failure)),
            Some(reply) => answer.take(reply),
        }
        Ok(Box::pin(futures::stream::unfold(
            (exchange, answer),
            move |(mut exchange, mut answer)| async move {
                loop {
                    if let Some(event) = answer.ready.pop_front() {
                        return Some((event, (exchange, answer)));
                    }
                    if answer.done {
                        return None;
                    }
                    // Dropping the exchange on a timeout cancels the request.
                    match tokio::time::timeout(next_part, exchange.next()).await {
                        Ok(Some(reply)) => answer.take(reply),
                        Ok(None) => answer.fail(disconnected()),
                        Err(_) => answer.fail(timed_out(next_part)),
                    }
                }
            },
        )))
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        let status = status(&self.gateway);
        match status.chat {
            "ok" => Ok(status.models),
            "off" => Err(unavailable(&ChatUnavailable::NoProvider)),
            _ => Err(unavailable(&ChatUnavailable::NotAvailable {
                reasons: status.reasons.join("; "),
            })),
        }
    }
}

/// The events of an answer as its parts arrive.
#[derive(Default)]
struct Answer {
    ready: VecDeque<Result<ChatEvent, LlmError>>,
    tool_calls: usize,
    done: bool,
}

impl Answer {
    fn take(&mut self, reply: ChatReply) {
        match reply {
            ChatReply::Delta(text) if text.is_empty() => {}
            ChatReply::Delta(text) => self.ready.push_back(Ok(ChatEvent::TextDelta { text })),
            ChatReply::ToolCall {
                call_id,
                name,
                input,
            } => {
                let index = self.tool_calls;
                self.tool_calls += 1;
                let arguments = match input {
                    Value::Null => "{}".to_owned(),
                    input => input.to_string(),
                };
                self.ready.extend([
                    Ok(ChatEvent::ToolCallStart {
                        index,
                        id: call_id,
                        name,
                    }),
                    Ok(ChatEvent::ToolCallArgumentsDelta { index, arguments }),
                    Ok(ChatEvent::ToolCallEnd { index }),
                ]);
            }
            ChatReply::End(Ok(usage)) => {
                if let Some(usage) = usage {
                    self.ready.push_back(Ok(ChatEvent::Usage {
                        usage: Usage {
                            prompt_tokens: usage.input_tokens,
                            completion_tokens: usage.output_tokens,
                        },
                    }));
                }
                let reason = if self.tool_calls > 0 {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                };
                self.ready.push_back(Ok(ChatEvent::Finish { reason }));
                self.done = true;
            }
            ChatReply::End(Err(failure)) => self.fail(failed(&failure)),
        }
    }

    fn fail(&mut self, error: LlmError) {
        self.ready.push_back(Err(error));
        self.done = true;
    }
}

/// The request as the editor takes it: system text stays a message of its
/// own (the extension folds it into the first user message, since
/// `vscode.lm` has no system role); tool results travel in a user message,
/// consecutive ones together, as `vscode.lm` expects.
fn wire_request(model: String, request: &ChatRequest) -> ChatRequestMessage {
    let mut turns: Vec<ChatTurn> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        let (role, parts) = turn_of(message);
        match turns.last_mut() {
            Some(last) if message.role == Role::Tool && last.role == "user" => {
                last.content.extend(parts)
            }
            _ => turns.push(ChatTurn {
                role: role.to_owned(),
                content: parts,
            }),
        }
    }
    ChatRequestMessage {
        id: String::new(),
        model,
        messages: turns,
        tools: request
            .tools
            .iter()
            .map(|tool| ChatToolSpec {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: tool.parameters.clone(),
            })
            .collect(),
        options: ChatOptions {
            max_tokens: request.max_tokens,
            // f64 → f32 loses nothing a sampler distinguishes.
            temperature: request.temperature.map(|t| t as f32),
            stop: request.stop.clone(),
        },
    }
}

fn turn_of(message: &Message) -> (&'static str, Vec<ChatPart>) {
    let text = message.content.clone().unwrap_or_default();
    match message.role {
        Role::System => ("system", vec![ChatPart::Text { text }]),
        Role::User => ("user", vec![ChatPart::Text { text }]),
        Role::Assistant => {
            let mut parts = Vec::with_capacity(1 + message.tool_calls.len());
            if !text.is_empty() {
                parts.push(ChatPart::Text { text });
            }
            parts.extend(message.tool_calls.iter().map(|call| {
                ChatPart::ToolCall {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    // A model's arguments that are not JSON are passed on as
                    // the text they are.
                    input: serde_json::from_str(&call.arguments)
                        .unwrap_or_else(|_| Value::String(call.arguments.clone())),
                }
            }));
            ("assistant", parts)
        }
        Role::Tool => (
            "user",
            vec![ChatPart::ToolResult {
                call_id: message.tool_call_id.clone().unwrap_or_default(),
                content: text,
            }],
        ),
    }
}

/// No editor can take the request: the facade answers 503
/// `copilot_unavailable`.
fn unavailable(err: &ChatUnavailable) -> LlmError {
    LlmError::NotConfigured(format!("{BACKEND_NAME}: {err}"))
}

fn timed_out(after: Duration) -> LlmError {
    LlmError::Timeout {
        backend: BACKEND_NAME.to_owned(),
        after,
    }
}

fn disconnected() -> LlmError {
    LlmError::Transport {
        backend: BACKEND_NAME.to_owned(),
        url: "the editor's provider connection".to_owned(),
        message: "the editor serving the request disconnected".to_owned(),
    }
}

/// The editor's failure in the facade's classes: no model or no consent is
/// "unavailable" (503), a vendor's block is a refusal (403), the rest an
/// upstream error (502).
fn failed(failure: &ChatFailure) -> LlmError {
    let message = format!("{} ({})", failure.message, failure.code);
    match failure.code.as_str() {
        chat_error_code::NO_MODEL | chat_error_code::NOT_FOUND => {
            LlmError::NotConfigured(format!("{BACKEND_NAME}: {message}"))
        }
        chat_error_code::NO_PERMISSION => LlmError::Auth {
            backend: BACKEND_NAME.to_owned(),
            message,
        },
        bridge_gateway::CHAT_DISCONNECTED | chat_error_code::CANCELLED => LlmError::Transport {
            backend: BACKEND_NAME.to_owned(),
            url: "the editor's provider connection".to_owned(),
            message,
        },
        chat_error_code::BLOCKED => LlmError::Http {
            backend: BACKEND_NAME.to_owned(),
            status: 403,
            message,
            retry_after: None,
        },
        _ => LlmError::Http {
            backend: BACKEND_NAME.to_owned(),
            status: 502,
            message,
            retry_after: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use bridge_llm::{ToolCall, ToolDefinition};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_conversation_with_tools_maps_onto_editor_turns() {
        let request = ChatRequest {
            messages: vec![
                Message::text(Role::System, "be brief"),
                Message::text(Role::User, "read it"),
                Message {
                    role: Role::Assistant,
                    content: None,
                    tool_calls: vec![
                        ToolCall {
                            id: "c1".into(),
                            name: "read".into(),
                            arguments: r#"{"path":"a"}"#.into(),
                        },
                        ToolCall {
                            id: "c2".into(),
                            name: "read".into(),
                            arguments: "not json".into(),
                        },
                    ],
                    tool_call_id: None,
                },
                Message::tool_result("c1", "A"),
                Message::tool_result("c2", "B"),
            ],
            tools: vec![ToolDefinition {
                name: "read".into(),
                description: "reads".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: Some(50),
            ..ChatRequest::default()
        };
        let wire = serde_json::to_value(wire_request("m".into(), &request)).unwrap();
        assert_eq!(
            wire["messages"],
            json!([
                {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
                {"role": "user", "content": [{"type": "text", "text": "read it"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_call", "callId": "c1", "name": "read", "input": {"path": "a"}},
                    {"type": "tool_call", "callId": "c2", "name": "read", "input": "not json"}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "callId": "c1", "content": "A"},
                    {"type": "tool_result", "callId": "c2", "content": "B"}]}
            ])
        );
        assert_eq!(wire["tools"][0]["inputSchema"], json!({"type": "object"}));
        assert_eq!(wire["options"], json!({"maxTokens": 50}));
    }

    #[test]
    fn tool_calls_and_usage_become_stream_events() {
        let mut answer = Answer::default();
        answer.take(ChatReply::Delta("hi".into()));
        answer.take(ChatReply::ToolCall {
            call_id: "x".into(),
            name: "read".into(),
            input: json!({"path": "a"}),
        });
        answer.take(ChatReply::End(Ok(Some(
            bridge_protocol::provider::chat::ChatUsage {
                input_tokens: 3,
                output_tokens: 4,
            },
        ))));
        let events: Vec<ChatEvent> = answer.ready.into_iter().map(Result::unwrap).collect();
        assert_eq!(events[0], ChatEvent::TextDelta { text: "hi".into() });
        assert_eq!(
            events[2],
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments: r#"{"path":"a"}"#.into()
            }
        );
        assert_eq!(
            events.last(),
            Some(&ChatEvent::Finish {
                reason: FinishReason::ToolCalls
            })
        );
        assert!(answer.done);
    }

    #[test]
    fn editor_failures_land_in_the_facades_classes() {
        let fail = |code: &str| {
            failed(&ChatFailure {
                code: code.into(),
                message: "m".into(),
            })
        };
        assert!(matches!(fail("no_model"), LlmError::NotConfigured(_)));
        assert!(matches!(fail("no_permission"), LlmError::Auth { .. }));
        assert!(matches!(
            fail("blocked"),
            LlmError::Http { status: 403, .. }
        ));
        assert!(matches!(fail("weird"), LlmError::Http { status: 502, .. }));
        assert!(matches!(fail("disconnected"), LlmError::Transport { .. }));
    }
}
