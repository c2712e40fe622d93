#![allow(clippy::unwrap_used)]

use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue};
use bridge_engine::Door;
use bridge_llm::{ChatRequest, Message, Role};
use serde_json::json;

use super::*;

fn transcripts() -> Transcripts {
    Transcripts::new(None)
}

#[test]
fn events_are_numbered_redacted_and_cut() {
    let all = transcripts();
    let transcript = all.open("s-1", Door::Rpc, "work", None);
    let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    transcript.push("user.message", json!({"content": format!("use {secret}")}));
    transcript.push(
        "user.message",
        json!({"content": "x".repeat(KEPT_TEXT_CHARS * 2)}),
    );
    let page = transcript.page(0, 10);
    assert_eq!(page.events.len(), 2);
    assert_eq!(page.events[0]["seq"], 1);
    assert_eq!(page.events[1]["seq"], 2);
    assert_eq!(page.next, 2);
    assert!(
        !page.events[0].to_string().contains(secret),
        "{}",
        page.events[0]
    );
    assert!(page.events[1]["content"].as_str().unwrap().len() < KEPT_TEXT_CHARS + 100);
    // Only what came after.
    assert_eq!(transcript.page(1, 10).events.len(), 1);
    assert!(transcript.page(2, 10).events.is_empty());
}

#[test]
fn a_transcript_keeps_its_newest_events_and_says_what_a_late_reader_missed() {
    let all = transcripts();
    let transcript = all.open("s-1", Door::Rpc, "work", None);
    for n in 0..KEPT_EVENTS + 10 {
        transcript.push("log", json!({"text": n.to_string()}));
    }
    let page = transcript.page(0, MAX_PAGE);
    assert!(page.missed);
    assert_eq!(page.events[0]["seq"], 11);
    assert_eq!(page.events.len(), MAX_PAGE);
    // A reader of an earlier daemon (a sequence number from the future)
    // reads from the start.
    let page = transcript.page(1_000_000, 5);
    assert_eq!(page.events[0]["seq"], 11);
}

#[test]
fn streamed_text_is_kept_only_while_watched_and_replaced_by_the_answer() {
    let all = transcripts();
    let transcript = all.open("s-1", Door::Rpc, "work", None);
    assert!(
        transcript
            .push("assistant.message_delta", json!({"delta": "nobody sees"}))
            .is_none()
    );
    let viewer = transcript.viewer();
    transcript.push("assistant.message_delta", json!({"delta": "Hel"}));
    transcript.push("assistant.message_delta", json!({"delta": "lo"}));
    assert_eq!(transcript.page(0, 10).events.len(), 2);
    transcript.push("assistant.message", json!({"content": "Hello"}));
    let kinds: Vec<String> = transcript
        .page(0, 10)
        .events
        .iter()
        .map(|event| event["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["assistant.message"]);
    drop(viewer);
    assert!(!transcript.is_watched());
    // A reader that polls keeps watching between its calls.
    transcript.polled();
    assert!(
        transcript
            .push("assistant.message_delta", json!({"delta": "kept"}))
            .is_some()
    );
}

#[test]
fn the_set_keeps_a_bounded_number_dropping_finished_ones_first() {
    let all = transcripts();
    let live = all.open("live", Door::Rpc, "live", None);
    for n in 0..KEPT_TRANSCRIPTS + 5 {
        let id = format!("t-{n}");
        all.open(&id, Door::Facade, "old", None);
        all.finish(&id);
    }
    let list = all.list();
    assert_eq!(list.len(), KEPT_TRANSCRIPTS);
    assert!(all.get("live").is_some(), "a live transcript stays");
    assert!(live.is_live());
}

#[tokio::test]
async fn a_waiting_reader_wakes_on_the_next_event() {
    let all = Arc::new(transcripts());
    let transcript = all.open("s-1", Door::Rpc, "work", None);
    let waiting = {
        let transcript = transcript.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            transcript.wait_after(0, Duration::from_secs(10)).await;
            started.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    transcript.push("log", json!({"text": "now"}));
    let waited = waiting.await.unwrap();
    assert!(waited < Duration::from_secs(5), "{waited:?}");
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: Some("m".to_owned()),
        messages,
        ..ChatRequest::default()
    }
}

#[test]
fn an_agents_own_session_id_names_its_conversation() {
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-claude-code-session-id",
        HeaderValue::from_static("34f1ec0b-1b96-4049-99dc-e3508add9d47"),
    );
    let asked = request(vec![Message::text(Role::User, "hi")]);
    assert_eq!(
        facade::conversation(&headers, &asked),
        (
            "claude-code-34f1ec0b-1b96-4049-99dc-e3508add9d47".to_owned(),
            Door::ClaudeCode
        )
    );
    let mut codex = HeaderMap::new();
    codex.insert("originator", HeaderValue::from_static("codex_exec"));
    codex.insert("session-id", HeaderValue::from_static("01a20a12-56a1"));
    assert_eq!(
        facade::conversation(&codex, &asked).0,
        "codex-01a20a12-56a1"
    );
    // A hostile id is not used as a name.
    let mut hostile = HeaderMap::new();
    hostile.insert(
        "x-claude-code-session-id",
        HeaderValue::from_static("../../x"),
    );
    let (id, door) = facade::conversation(&hostile, &asked);
    assert!(id.starts_with("facade-"), "{id}");
    assert_eq!(door, Door::Facade);
    // Other clients: one conversation per client and first prompt.
    let other = request(vec![Message::text(Role::User, "another task")]);
    assert_ne!(
        facade::conversation(&HeaderMap::new(), &asked).0,
        facade::conversation(&HeaderMap::new(), &other).0
    );
}

#[test]
fn a_request_adds_what_came_after_the_models_last_turn() {
    let all = transcripts();
    let mut answer = Message::text(Role::Assistant, "running it");
    answer.tool_calls.push(bridge_llm::ToolCall {
        id: "call_1".to_owned(),
        name: "Bash".to_owned(),
        arguments: "{}".to_owned(),
    });
    let asked = request(vec![
        Message::text(Role::System, "you are"),
        Message::text(Role::User, "first"),
        answer,
        Message::tool_result("call_1", "it printed 42"),
        Message::text(Role::User, "and then?"),
    ]);
    let transcript =
        facade::record_request(&all, &HeaderMap::new(), &asked, "/v1/messages", "openai");
    let kinds: Vec<(String, String)> = transcript
        .page(0, 10)
        .events
        .iter()
        .map(|event| {
            (
                event["type"].as_str().unwrap().to_owned(),
                event["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("model.request".to_owned(), String::new()),
            ("tool.result".to_owned(), "it printed 42".to_owned()),
            ("user.message".to_owned(), "and then?".to_owned()),
        ]
    );
}

#[test]
fn already_redacted_data_is_only_cut_when_too_long_and_then_redacted() {
    let all = transcripts();
    let transcript = all.open("s-1", Door::Rpc, "work", None);
    let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let long = format!("{secret} {}", "x".repeat(KEPT_TEXT_CHARS));
    transcript.push_redacted(
        "tool.execution_complete",
        json!({"tool": "read_file", "result": {"output": long}}),
    );
    let kept = transcript.page(0, 1).events.remove(0);
    let output = kept["result"]["output"].as_str().unwrap();
    assert!(output.len() < KEPT_TEXT_CHARS + 100, "cut");
    assert!(!output.contains(secret));
    transcript.push_redacted(
        "tool.execution_complete",
        json!({"tool": "read_file", "result": {"output": "ok"}}),
    );
    let short = transcript.page(1, 1).events.remove(0);
    assert_eq!(short["result"]["output"], "ok");
}
