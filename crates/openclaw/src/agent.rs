//! Asking an OpenClaw agent: `agent` starts a run, `agent.wait` waits for
//! its end and carries the final reply.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::{Gateway, GatewayError, GatewayEvent};

/// A message for an agent.
#[derive(Debug, Clone)]
pub struct AgentAsk {
    pub message: String,
    /// The agent (`main` when not given: the gateway's default).
    pub agent_id: Option<String>,
    /// The session (`agent:main:main` style); the gateway's default when
    /// not given.
    pub session_key: Option<String>,
    /// How long the run may take.
    pub timeout: Duration,
}

impl AgentAsk {
    /// `message` for the default agent and session, within `timeout`.
    pub fn new(message: impl Into<String>, timeout: Duration) -> Self {
        Self {
            message: message.into(),
            agent_id: None,
            session_key: None,
            timeout,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct AgentReply {
    pub run_id: String,
    /// `agent.wait`'s status: `ok`, `error`, `timeout`, ...
    pub status: String,
    /// The final reply's text (`terminalReply.text`; else the run's last
    /// final `chat` message).
    pub text: Option<String>,
    /// `agent.wait`'s whole answer.
    pub raw: Value,
}

/// Time the gateway's answer to `agent.wait` may take past the run's own
/// timeout (it answers `timeout` itself at `timeoutMs`).
const WAIT_MARGIN: Duration = Duration::from_secs(5);

impl Gateway {
    /// Sends `ask.message` to the agent and waits for the run's end.
    pub async fn ask_agent(&self, ask: AgentAsk) -> Result<AgentReply, GatewayError> {
        // Subscribed before the run starts, so no final chat event is missed.
        let mut events = self.subscribe();
        let idempotency_key = bridge_util::ids::unique_id("copilot-bridge-agent");
        let mut params = json!({
            "message": ask.message,
            "idempotencyKey": idempotency_key,
        });
        if let Some(agent_id) = &ask.agent_id {
            params["agentId"] = json!(agent_id);
        }
        if let Some(session_key) = &ask.session_key {
            params["sessionKey"] = json!(session_key);
        }
        let accepted = self.request("agent", params).await?;
        let run_id = accepted
            .get("runId")
            .and_then(Value::as_str)
            .unwrap_or(&idempotency_key)
            .to_owned();
        if let Some(status) = accepted.get("status").and_then(Value::as_str)
            && status != "accepted"
        {
            return Err(GatewayError::BadResponse {
                method: "agent".to_owned(),
                reason: format!("status {status:?} instead of \"accepted\""),
            });
        }
        let timeout_ms = u64::try_from(ask.timeout.as_millis()).unwrap_or(u64::MAX);
        let wait = self.request_within(
            "agent.wait",
            json!({"runId": run_id, "timeoutMs": timeout_ms}),
            ask.timeout.saturating_add(WAIT_MARGIN),
        );
        tokio::pin!(wait);
        let mut last_chat: Option<String> = None;
        let raw = loop {
            tokio::select! {
                answer = &mut wait => break answer?,
                event = events.recv() => match event {
                    Ok(event) => {
                        if let Some(text) = final_chat_text(&event, &run_id) {
                            last_chat = Some(text);
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    // The sender lives as long as the gateway handle.
                    Err(broadcast::error::RecvError::Closed) => break (&mut wait).await?,
                },
            }
        };
        // Events that came before the answer but were not read yet.
        while let Ok(event) = events.try_recv() {
            if let Some(text) = final_chat_text(&event, &run_id) {
                last_chat = Some(text);
            }
        }
        let status = raw
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned();
        let text = raw
            .pointer("/terminalReply/text")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or(last_chat);
        Ok(AgentReply {
            run_id,
            status,
            text,
            raw,
        })
    }
}

/// The text of a `chat` event with `state: "final"` for `run_id`.
fn final_chat_text(event: &GatewayEvent, run_id: &str) -> Option<String> {
    let payload = &event.payload;
    if event.event != "chat"
        || payload.get("runId").and_then(Value::as_str) != Some(run_id)
        || payload.get("state").and_then(Value::as_str) != Some("final")
    {
        return None;
    }
    let content = payload.pointer("/message/content")?;
    let text: String = match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => return None,
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_final_chat_event_of_the_run_gives_its_text() {
        let event = GatewayEvent {
            event: "chat".to_owned(),
            payload: json!({"runId": "r1", "state": "final", "message": {"content": [
                {"type": "text", "text": "MOCK-FINAL: "}, {"type": "image"}, {"type": "text", "text": "hello"}
            ]}}),
            seq: Some(16),
        };
        assert_eq!(
            final_chat_text(&event, "r1").as_deref(),
            Some("MOCK-FINAL: hello")
        );
        assert_eq!(final_chat_text(&event, "r2"), None);
        let delta = GatewayEvent {
            payload: json!({"runId": "r1", "state": "delta", "message": {"content": "x"}}),
            ..event
        };
        assert_eq!(final_chat_text(&delta, "r1"), None);
    }
}
