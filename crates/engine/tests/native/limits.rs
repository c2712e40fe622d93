//! How a run stops: out of turns, past its deadline, cancelled mid-stream
//! or mid-tool; and a tool past the tool timeout, which does not stop it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use bridge_engine::ToolFailure;
use bridge_engine::runner::native::NativeSettings;
use bridge_engine::runner::{RunRequest, RunStatus, Runner};
use bridge_protocol::ToolEffect;
use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace};
use bridge_util::ErrorPolicy;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{
    Logged, chats, fast_settings, hook_ends, kinds, new_session, of_kind, register, request, run,
    runner, tool_messages,
};

/// Sets its flag when dropped: proves a tool's future was dropped, that
/// is, the call was cancelled rather than left running.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The last event is `session.idle` with `status`, after a `session.error`
/// of `error_type`.
fn assert_ended_with(events: &[bridge_engine::log::LoggedEvent], status: &str, error_type: &str) {
    let last = events.last().unwrap();
    assert_eq!(last.kind, "session.idle", "{:?}", kinds(events));
    assert_eq!(last.data["status"], status);
    let errors = of_kind(events, "session.error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].data["errorType"], error_type);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_out_of_turns_stops_with_max_turns_and_says_so() {
    let working = |n: u32| MockReply::ToolCalls {
        text: Some(format!("still working {n}")),
        calls: vec![MockToolCall::new(format!("c{n}"), "probe_noop", "{}")],
    };
    let mock = MockLlm::start(vec![working(1), working(2), working(3)]).await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    register(&session, "probe_noop", ToolEffect::Read, |_| async {
        Ok(json!("nothing"))
    });
    let logged = Logged::new().await;

    let report = runner(&mock, fast_settings())
        .run(
            Arc::clone(&session),
            RunRequest {
                max_turns: 2,
                ..request("loop forever")
            },
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(report.status, RunStatus::MaxTurns, "{report:?}");
    assert_eq!(report.turns, 2);
    assert_eq!(
        report.error.as_deref(),
        Some("the task was not finished within 2 turns")
    );
    assert_eq!(report.final_text, "still working 2");
    assert_eq!(report.tool_calls.len(), 2);
    assert_eq!(report.usage.requests, 2);
    assert_eq!(chats(&mock).len(), 2, "no third request");
    assert_eq!(mock.remaining(), 1);
    let events = logged.events().await;
    assert_ended_with(&events, "max_turns", "max_turns");
    assert_eq!(of_kind(&events, "assistant.turn_start").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_deadline_times_out_promptly_with_a_readable_log() {
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks: vec!["too".into(), "late".into()],
        delay_ms: 10_000,
    }])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let logged = Logged::new().await;
    let started = Instant::now();

    let report = runner(&mock, fast_settings())
        .run(
            Arc::clone(&session),
            RunRequest {
                timeout: Some(Duration::from_millis(300)),
                ..request("answer slowly")
            },
            logged.context(CancellationToken::new()),
        )
        .await;

    let took = started.elapsed();
    assert_eq!(report.status, RunStatus::TimedOut, "{report:?}");
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_millis(1500), "not prompt: {took:?}");
    let error = report.error.unwrap();
    assert!(error.contains("did not finish within 300ms"), "{error}");
    assert_eq!(report.turns, 1);
    let events = logged.events().await;
    assert_ended_with(&events, "timed_out", "timed_out");
    // The log can be resumed: the prompt is there, nothing is torn.
    logged.log.close().await.unwrap();
    let (_log, replayed) =
        bridge_engine::log::EventLog::resume(logged.path().parent().unwrap(), "native-test")
            .await
            .unwrap();
    assert_eq!(
        replayed.conversation.len(),
        1,
        "{:?}",
        replayed.conversation
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_stream_stops_the_run_promptly() {
    let chunks: Vec<String> = (0..20).map(|i| format!("word{i} ")).collect();
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks,
        delay_ms: 200,
    }])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let logged = Logged::new().await;
    let mut live = logged.log.subscribe();
    let cancel = CancellationToken::new();
    let runner = Arc::new(runner(&mock, fast_settings()));
    let handle = {
        let (runner, session, context) = (
            Arc::clone(&runner),
            Arc::clone(&session),
            logged.context(cancel.clone()),
        );
        tokio::spawn(async move { runner.run(session, request("talk"), context).await })
    };
    // The first streamed word: the answer is under way.
    tokio::time::timeout(Duration::from_secs(2), async {
        while live.recv().await.unwrap().kind != "assistant.message_delta" {}
    })
    .await
    .expect("the stream never started");
    let cancelled_at = Instant::now();
    cancel.cancel();

    let report = tokio::time::timeout(Duration::from_secs(2), handle)
        .await
        .expect("the run hung after cancellation")
        .unwrap();

    assert!(cancelled_at.elapsed() < Duration::from_millis(500));
    assert_eq!(report.status, RunStatus::Cancelled, "{report:?}");
    assert_eq!(report.error.as_deref(), Some("the run was cancelled"));
    assert_eq!(chats(&mock).len(), 1);
    let events = logged.events().await;
    assert_ended_with(&events, "cancelled", "cancelled");
    assert!(of_kind(&events, "assistant.message").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_tool_drops_the_call_and_stops_the_run() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: None,
        calls: vec![MockToolCall::new("c1", "probe_hang", "{}")],
    }])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let started = Arc::new(Notify::new());
    let dropped = Arc::new(AtomicBool::new(false));
    {
        let (started, dropped) = (Arc::clone(&started), Arc::clone(&dropped));
        register(&session, "probe_hang", ToolEffect::Execute, move |_| {
            let flag = DropFlag(Arc::clone(&dropped));
            started.notify_one();
            async move {
                let _flag = flag;
                std::future::pending::<Result<Value, ToolFailure>>().await
            }
        });
    }
    let cancel = CancellationToken::new();
    let runner = Arc::new(runner(&mock, fast_settings()));
    let handle = {
        let (runner, session, cancel) = (Arc::clone(&runner), Arc::clone(&session), cancel.clone());
        tokio::spawn(async move {
            runner
                .run(
                    session,
                    request("hang"),
                    bridge_engine::runner::RunContext::new(cancel),
                )
                .await
        })
    };
    tokio::time::timeout(Duration::from_secs(2), started.notified())
        .await
        .expect("the tool never started");
    assert!(!dropped.load(Ordering::SeqCst));
    let cancelled_at = Instant::now();
    cancel.cancel();

    let report = tokio::time::timeout(Duration::from_secs(2), handle)
        .await
        .expect("the run hung after cancellation")
        .unwrap();

    assert!(cancelled_at.elapsed() < Duration::from_millis(500));
    assert_eq!(report.status, RunStatus::Cancelled, "{report:?}");
    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool call was left running"
    );
    assert_eq!(chats(&mock).len(), 1, "no request after the cancel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_past_the_tool_timeout_is_a_timeout_for_the_model_and_the_run_goes_on() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![
                MockToolCall::new("c1", "probe_stuck_exec", "{}"),
                MockToolCall::new("c2", "probe_stuck_read", "{}"),
            ],
        },
        MockReply::text("both timed out, moving on"),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    let exec_attempts = Arc::new(AtomicU32::new(0));
    let read_attempts = Arc::new(AtomicU32::new(0));
    for (name, effect, attempts) in [
        ("probe_stuck_exec", ToolEffect::Execute, &exec_attempts),
        ("probe_stuck_read", ToolEffect::Read, &read_attempts),
    ] {
        let attempts = Arc::clone(attempts);
        register(&session, name, effect, move |_| {
            attempts.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<Result<Value, ToolFailure>>()
        });
    }
    let settings = NativeSettings {
        tool_timeout: Duration::from_millis(150),
        error_policy: ErrorPolicy {
            max_retries: 0,
            transient_retries: 1,
        },
        ..fast_settings()
    };
    let logged = Logged::new().await;
    let started = Instant::now();

    let report = runner(&mock, settings)
        .run(
            Arc::clone(&session),
            request("try the stuck tools"),
            logged.context(CancellationToken::new()),
        )
        .await;

    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert_eq!(report.final_text, "both timed out, moving on");
    // exec once, read twice (one retry), one after the other: ~450 ms.
    assert!(started.elapsed() < Duration::from_millis(1500));
    assert_eq!(
        exec_attempts.load(Ordering::SeqCst),
        1,
        "an execute tool is never retried"
    );
    assert_eq!(
        read_attempts.load(Ordering::SeqCst),
        2,
        "a read tool is retried once"
    );
    let results = tool_messages(&chats(&mock)[1]);
    for (id, content) in &results {
        let told: Value = serde_json::from_str(content).unwrap();
        assert_eq!(told["ok"], false, "{id}: {told}");
        assert_eq!(told["error"]["code"], "timeout", "{id}: {told}");
        let message = told["error"]["message"].as_str().unwrap();
        assert!(message.contains("did not finish within 150ms"), "{message}");
    }
    assert!(report.tool_calls.iter().all(|record| !record.ok));
    let events = logged.events().await;
    let decisions: Vec<(&Value, &Value)> = hook_ends(&events, "onErrorOccurred")
        .into_iter()
        .map(|data| (&data["toolCallId"], &data["action"]))
        .collect();
    assert_eq!(
        decisions,
        [
            (&json!("c1"), &json!("skip")),
            (&json!("c2"), &json!("retry")),
            (&json!("c2"), &json!("skip")),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_a_log_reports_the_same() {
    // Embedders without history get the same report; nothing to write to.
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new("c1", "probe_noop", "{}")],
        },
        MockReply::text("fine"),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let (_registry, session) = new_session(&workspace);
    register(&session, "probe_noop", ToolEffect::Read, |_| async {
        Ok(json!("nothing"))
    });
    let report = run(&runner(&mock, fast_settings()), &session, request("go")).await;
    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert_eq!(report.final_text, "fine");
    assert_eq!(report.turns, 2);
    assert_eq!(report.tool_calls.len(), 1);
    assert_eq!(report.session_id, "native-test");
}
