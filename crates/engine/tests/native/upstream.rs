//! What the upstream does wrong: streams that break off, garbled or
//! truncated tool calls, failed requests; and usage summed over turns.

use std::sync::Arc;
use std::time::Duration;

use bridge_engine::runner::native::{NativeRunner, NativeSettings};
use bridge_engine::runner::{RunStatus, Runner};
use bridge_llm::{RetryConfig, RetryingBackend};
use bridge_protocol::ToolEffect;
use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace};
use bridge_util::ErrorPolicy;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    Logged, backend, chats, fast_settings, hook_ends, kinds, new_session, of_kind, register,
    request, run, runner, tool_messages,
};

fn dropped(words: &[&str]) -> MockReply {
    MockReply::DropAfter {
        chunks: words.iter().map(|w| (*w).to_owned()).collect(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_off_mid_stream_is_asked_again() {
    let mock = MockLlm::start(vec![
        dropped(&["Half ", "an "]),
        MockReply::text("A whole answer."),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let logged = Logged::new().await;

    let report = runner(&mock, fast_settings())
        .run(
            Arc::clone(&session),
            request("answer"),
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert_eq!(report.final_text, "A whole answer.");
    assert_eq!(chats(&mock).len(), 2, "asked twice");
    assert_eq!(report.turns, 1, "a retry is not a new turn");
    let events = logged.events().await;
    let errors = of_kind(&events, "session.error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].data["errorType"], "model");
    assert_eq!(errors[0].data["action"], "retry");
    assert_eq!(errors[0].data["class"], "transient");
    // Only the whole answer is in the conversation.
    let messages = of_kind(&events, "assistant.message");
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].data["content"], "A whole answer.");
    assert_eq!(events.last().unwrap().data["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_keep_breaking_off_fail_the_run_once_the_budget_is_spent() {
    let mock = MockLlm::start(vec![
        dropped(&["one "]),
        dropped(&["two "]),
        dropped(&["three "]),
        MockReply::text("never asked"),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let settings = NativeSettings {
        error_policy: ErrorPolicy {
            max_retries: 0,
            transient_retries: 1,
        },
        ..fast_settings()
    };
    let logged = Logged::new().await;

    let report = runner(&mock, settings)
        .run(
            Arc::clone(&session),
            request("answer"),
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(report.status, RunStatus::Failed, "{report:?}");
    let error = report.error.unwrap();
    assert!(error.starts_with("the model request failed: "), "{error}");
    assert!(error.contains("stream ended early"), "{error}");
    assert_eq!(chats(&mock).len(), 2, "one try and one retry");
    let events = logged.events().await;
    let actions: Vec<&Value> = of_kind(&events, "session.error")
        .iter()
        .map(|event| &event.data["action"])
        .collect();
    assert_eq!(actions, [&json!("retry"), &json!("abort")]);
    assert_eq!(events.last().unwrap().kind, "session.idle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_before_the_answer_is_retried_by_the_backend_not_the_loop() {
    let script = || {
        vec![
            MockReply::error(503, "upstream overloaded"),
            MockReply::text("after the retry"),
        ]
    };
    // The bare backend: the loop leaves failures before the answer to it.
    let bare = MockLlm::start(script()).await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let report = run(&runner(&bare, fast_settings()), &session, request("hi")).await;
    assert_eq!(report.status, RunStatus::Failed, "{report:?}");
    assert!(report.error.unwrap().contains("HTTP 503"));
    assert_eq!(chats(&bare).len(), 1, "the loop does not retry it");

    // Wrapped as `select_backend` wraps every backend: retried.
    let mock = MockLlm::start(script()).await;
    let retrying = RetryingBackend::from_arc(
        backend(&mock),
        RetryConfig {
            base_delay: Duration::from_millis(5),
            ..RetryConfig::default()
        },
    );
    let runner = NativeRunner::new(Arc::new(retrying), fast_settings());
    let report = run(&runner, &session, request("hi")).await;
    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert_eq!(report.final_text, "after the retry");
    assert_eq!(chats(&mock).len(), 2);
}

/// An SSE chunk starting tool call `c1` of `read_thing` with `arguments`.
fn tool_call_chunk(arguments: &str) -> String {
    let chunk = json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0,
            "id": "c1", "type": "function",
            "function": {"name": "probe_read", "arguments": arguments}}]},
        "finish_reason": null}]});
    format!("data: {chunk}\n\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbled_tool_call_chunk_fails_the_run_clearly_without_a_retry() {
    let mock = MockLlm::start(vec![
        MockReply::Raw {
            status: 200,
            content_type: "text/event-stream".into(),
            body_chunks: vec![
                tool_call_chunk("{\"pa"),
                "data: {\"choices\": [{\"delta\": {\"tool_calls\": [{\"index\": 0, \"function\": {\"arguments\": tru\n\n".into(),
            ],
        },
        MockReply::text("never asked"),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
    {
        let calls = Arc::clone(&calls);
        register(&session, "probe_read", ToolEffect::Read, move |_| {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Ok(json!("read")) }
        });
    }
    let logged = Logged::new().await;

    let report = runner(&mock, fast_settings())
        .run(
            Arc::clone(&session),
            request("read"),
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(report.status, RunStatus::Failed, "{report:?}");
    let error = report.error.unwrap();
    assert!(
        error.starts_with("the model request failed: mock: invalid response from upstream"),
        "{error}"
    );
    assert_eq!(chats(&mock).len(), 1, "a garbled answer is not asked again");
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "half a call never runs"
    );
    assert!(report.tool_calls.is_empty());
    let events = logged.events().await;
    let errors = of_kind(&events, "session.error");
    assert_eq!(errors.len(), 1, "{:?}", kinds(&events));
    assert_eq!(errors[0].data["errorType"], "model");
    assert_eq!(errors[0].data["action"], "abort");
    assert!(of_kind(&events, "tool.execution_start").is_empty());
    assert_eq!(events.last().unwrap().data["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_ends_inside_a_tool_call_never_runs_half_a_call() {
    // The body ends after half the arguments: no finish reason, no [DONE].
    let mock = MockLlm::start(vec![
        MockReply::Raw {
            status: 200,
            content_type: "text/event-stream".into(),
            body_chunks: vec![tool_call_chunk("{\"path\": \"src/ma")],
        },
        MockReply::text("answered on the second try"),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
    {
        let calls = Arc::clone(&calls);
        register(&session, "probe_read", ToolEffect::Read, move |_| {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Ok(json!("read")) }
        });
    }
    let logged = Logged::new().await;

    let report = runner(&mock, fast_settings())
        .run(
            Arc::clone(&session),
            request("read"),
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "half a call never runs"
    );
    let events = logged.events().await;
    let errors = of_kind(&events, "session.error");
    assert!(!errors.is_empty(), "{:?}", kinds(&events));
    assert_eq!(errors[0].data["errorType"], "model");
    let message = errors[0].data["message"].as_str().unwrap();
    assert!(message.contains("stream ended early"), "{message}");
    // An answer that broke off after it started is asked again (hooks.md).
    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert_eq!(report.final_text, "answered on the second try");
    assert_eq!(chats(&mock).len(), 2);
}

fn broken_call(id: &str, arguments: &str) -> MockReply {
    MockReply::ToolCalls {
        text: None,
        calls: vec![MockToolCall::new(id, "probe_read", arguments)],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_answers_of_invalid_arguments_in_a_row_end_the_run() {
    let mock = MockLlm::start(vec![
        broken_call("c1", "[1, 2]"),
        broken_call("c2", "{\"path\": "),
        broken_call("c3", "\"just a string\""),
        MockReply::text("never asked"),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    register(&session, "probe_read", ToolEffect::Read, |_| async {
        Ok(json!("read"))
    });
    let logged = Logged::new().await;

    let report = runner(&mock, fast_settings())
        .run(
            Arc::clone(&session),
            request("read"),
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(report.status, RunStatus::Failed, "{report:?}");
    assert_eq!(
        report.error.as_deref(),
        Some("the model sent tool calls with invalid JSON arguments 3 times in a row")
    );
    assert_eq!(chats(&mock).len(), 3);
    assert_eq!(report.tool_calls.len(), 3);
    assert!(report.tool_calls.iter().all(|record| !record.ok));
    // The model was told why after each answer.
    let chats = chats(&mock);
    let told = |chat: usize| tool_messages(&chats[chat]).last().unwrap().1.clone();
    assert!(
        told(1).contains("the arguments must be a JSON object, got an array"),
        "{}",
        told(1)
    );
    assert!(
        told(2).contains("the arguments are not valid JSON"),
        "{}",
        told(2)
    );
    let events = logged.events().await;
    let invalid: Vec<&str> = of_kind(&events, "session.error")
        .iter()
        .filter(|event| event.data["errorType"] == "invalid_tool_call")
        .map(|event| event.data["message"].as_str().unwrap())
        .collect();
    // One per broken call, then the one that ended the run.
    assert_eq!(invalid.len(), 4, "{invalid:?}");
    assert!(invalid[2].contains("got a string"), "{}", invalid[2]);
    assert_eq!(events.last().unwrap().data["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_summed_over_every_turn() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall {
                id: "c1".into(),
                name: "probe_read".into(),
                argument_chunks: vec!["{\"n\"".into(), ": 1}".into()],
            }],
        },
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new("c2", "probe_read", "{\"n\": 2}")],
        },
        MockReply::text("all three done"),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    register(&session, "probe_read", ToolEffect::Read, |_| async {
        Ok(json!("read"))
    });
    let logged = Logged::new().await;

    let report = runner(&mock, fast_settings())
        .run(
            Arc::clone(&session),
            request("count"),
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert_eq!(report.turns, 3);
    // The mock counts whitespace-separated words of every message as
    // prompt tokens, and answer words plus argument chunks as completion.
    let prompt_words = |chat: &Value| -> u64 {
        chat["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|message| message["content"].as_str())
            .map(|text| text.split_whitespace().count() as u64)
            .sum()
    };
    let chats = chats(&mock);
    assert_eq!(chats.len(), 3);
    let prompts: Vec<u64> = chats.iter().map(prompt_words).collect();
    assert!(
        prompts[0] < prompts[1] && prompts[1] < prompts[2],
        "{prompts:?}"
    );
    assert_eq!(report.usage.requests, 3);
    assert_eq!(report.usage.completion_tokens, 2 + 1 + 3);
    assert_eq!(report.usage.prompt_tokens, prompts.iter().sum::<u64>());
    let events = logged.events().await;
    let per_turn: Vec<(u64, u64)> = of_kind(&events, "session.usage")
        .iter()
        .map(|event| {
            (
                event.data["promptTokens"].as_u64().unwrap(),
                event.data["completionTokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        per_turn,
        [(prompts[0], 2), (prompts[1], 1), (prompts[2], 3)]
    );
    assert!(hook_ends(&events, "onErrorOccurred").is_empty());
}
