//! Hub sessions into their transcripts: a registry listener that follows
//! each session's events from its start to its end.

use std::sync::Arc;

use bridge_engine::{Session, SessionEvent, SessionListener};
use serde_json::{Value, json};

use super::{Transcript, Transcripts};

/// Follows every session of the registry it is added to.
pub struct TranscriptFeed(pub Arc<Transcripts>);

impl SessionListener for TranscriptFeed {
    fn session_started(&self, session: &Arc<Session>) {
        let info = session.info();
        let transcript = self
            .0
            .open(&info.id, info.door, &info.label, Some(info.cwd.clone()));
        // On the emitting thread: no copy of the event per subscriber and
        // no task to wake on a tool call's path.
        session.set_event_sink(Arc::new(move |event: &SessionEvent| {
            keep(&transcript, event)
        }));
    }

    fn session_ended(&self, session: &Arc<Session>) {
        self.0.finish(session.id());
    }
}

fn keep(transcript: &Transcript, event: &SessionEvent) {
    // The engine redacted these (a decision's reason aside, redacted in
    // `shown`).
    let redacted = matches!(
        event,
        SessionEvent::ToolExecutionComplete { .. } | SessionEvent::AssistantMessage { .. }
    );
    if matches!(event, SessionEvent::AssistantDelta { .. }) && !transcript.is_watched() {
        return;
    }
    let (kind, data) = shown(event);
    if redacted {
        transcript.push_redacted(kind, data);
    } else {
        transcript.push(kind, data);
    }
}

/// A session event as its transcript keeps it: `(type, data)`.
fn shown(event: &SessionEvent) -> (&'static str, Value) {
    match event {
        SessionEvent::UserMessage { content } => ("user.message", json!({"content": content})),
        SessionEvent::AssistantMessage {
            content,
            tool_requests,
        } => (
            "assistant.message",
            json!({"content": content, "toolRequests": tool_requests}),
        ),
        SessionEvent::AssistantDelta { delta } => {
            ("assistant.message_delta", json!({"delta": delta}))
        }
        SessionEvent::ToolExecutionComplete {
            tool,
            provider,
            args,
            result,
            duration_ms,
            decision,
        } => {
            let mut decision = decision.clone();
            if let Some(reason) = decision.as_mut().and_then(|d| d.reason.as_mut()) {
                *reason = bridge_policy::redact(reason).into_owned();
            }
            (
                "tool.execution_complete",
                json!({
                    "tool": tool,
                    "provider": provider,
                    "arguments": args,
                    "result": result,
                    "durationMs": duration_ms,
                    "decision": decision,
                }),
            )
        }
        SessionEvent::ToolDecided {
            tool,
            agent,
            args,
            decision,
        } => (
            "tool.decided",
            json!({"tool": tool, "agent": agent, "arguments": args, "decision": decision}),
        ),
        SessionEvent::AssistantIntent { intent } => ("assistant.intent", json!({"intent": intent})),
        SessionEvent::Log { source, text } => ("log", json!({"source": source, "text": text})),
        SessionEvent::Inject {
            source,
            stream,
            text,
            ..
        } => (
            "inject",
            json!({"source": source, "stream": stream, "text": text}),
        ),
        SessionEvent::Idle => ("session.idle", json!({})),
    }
}
