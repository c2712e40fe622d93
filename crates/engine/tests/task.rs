//! The one way a task runs with its log (`bridge_engine::task`): a real
//! native loop over the mock upstream, its log on disk, its steps
//! forwarded, resumed where it ran.

use std::sync::Arc;

use bridge_engine::SessionRegistry;
use bridge_engine::log::replay;
use bridge_engine::log::steps::Step;
use bridge_engine::runner::native::NativeRunner;
use bridge_engine::runner::{RunRequest, RunStatus, RunnerKind};
use bridge_engine::task::{Remembered, TaskLog, TaskMeta, TaskRun};
use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

use crate::native::{fast_settings, new_session};

fn meta(workspace: &TempWorkspace) -> TaskMeta {
    TaskMeta {
        cwd: workspace.path().to_path_buf(),
        model: Some("gpt-4o-mini".to_owned()),
        runner: RunnerKind::Native,
        backend: Some("openai".to_owned()),
        label: "run".to_owned(),
        orchestration: None,
    }
}

/// A task in a new session of `workspace`; keep the registry while it runs.
fn task(
    runner: &Arc<NativeRunner>,
    workspace: &TempWorkspace,
    prompt: &str,
) -> (SessionRegistry, TaskRun) {
    let (registry, session) = new_session(workspace);
    let run = TaskRun {
        runner: runner.clone(),
        session,
        request: RunRequest {
            task: prompt.to_owned(),
            model: None,
            max_turns: 5,
            timeout: None,
        },
        cancel: CancellationToken::new(),
        steps: None,
    };
    (registry, run)
}

#[tokio::test]
async fn a_task_runs_with_its_log_and_its_steps_and_ends_them_both() {
    let mock = MockLlm::start(vec![
        MockReply::tool_call("c1", "list_dir", &json!({"path": "."})),
        MockReply::text("The workspace holds hello.txt."),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let logs = TempDir::new().unwrap();
    let runner = Arc::new(NativeRunner::new(
        crate::native::backend(&mock),
        fast_settings(),
    ));
    let log = TaskLog::create(logs.path(), "task-1", &meta(&workspace))
        .await
        .unwrap();
    assert_eq!(
        log.remembered(),
        Remembered::default(),
        "a new task remembers nothing"
    );
    let mut live = log.events().subscribe();
    let (sink, mut steps) = tokio::sync::mpsc::unbounded_channel::<Step>();
    let (_registry, mut run) = task(&runner, &workspace, "what is in the workspace?");
    run.steps = Some(sink);
    let report = log.run(run).await;
    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert_eq!(report.final_text, "The workspace holds hello.txt.");

    // Every step was forwarded before `run` returned, numbered, and the
    // forwarding has ended (its sender is gone).
    let mut lines = Vec::new();
    while let Ok(step) = steps.try_recv() {
        lines.push(step.line);
    }
    assert!(steps.recv().await.is_none(), "the steps channel is closed");
    assert!(lines[0].starts_with("1. turn 1"), "{lines:?}");
    // The call's end is a step of its own (this bare session has no
    // workspace tools, so the call fails; the loop goes on).
    assert!(
        lines.iter().any(|line| line.contains("✗ list_dir (")),
        "{lines:?}"
    );
    // A live view hears the end.
    loop {
        match live.recv().await {
            Ok(_) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            Err(other) => panic!("{other:?}"),
        }
    }
    // The log on disk: the meta first, the run, its end.
    let events: Vec<_> = replay(&logs.path().join("task-1.jsonl"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(events[0].kind, "session.start");
    assert_eq!(
        events[0].data,
        json!({"cwd": workspace.path(), "model": "gpt-4o-mini", "runner": "native",
               "backend": "openai", "label": "run", "sessionId": "task-1", "formatVersion": 1})
    );
    assert!(
        events.iter().any(|e| e.kind == "tool.execution_complete"),
        "{events:?}"
    );
    assert_eq!(events.last().unwrap().kind, "session.idle");
}

#[tokio::test]
async fn a_resumed_task_remembers_where_and_how_it_ran_and_continues_the_conversation() {
    let mock = MockLlm::start(vec![
        MockReply::text("The answer is 42."),
        MockReply::text("Still 42."),
    ])
    .await;
    let workspace = TempWorkspace::new();
    let logs = TempDir::new().unwrap();
    let runner = Arc::new(NativeRunner::new(
        crate::native::backend(&mock),
        fast_settings(),
    ));
    let (_first_registry, run) = task(&runner, &workspace, "what is the answer?");
    let first = TaskLog::create(logs.path(), "task-2", &meta(&workspace))
        .await
        .unwrap()
        .run(run)
        .await;
    assert_eq!(first.status, RunStatus::Completed);

    let resumed = TaskLog::resume(logs.path(), "task-2").await.unwrap();
    assert_eq!(
        resumed.remembered(),
        Remembered {
            cwd: Some(workspace.path().to_path_buf()),
            model: Some("gpt-4o-mini".to_owned()),
            runner: Some(RunnerKind::Native),
        }
    );
    let (_second_registry, run) = task(&runner, &workspace, "is that still true?");
    let second = resumed.run(run).await;
    assert_eq!(second.status, RunStatus::Completed, "{second:?}");
    assert_eq!(second.final_text, "Still 42.");
    // The second request carried the first exchange.
    let requests = mock.requests();
    let messages = requests.last().unwrap().body["messages"].to_string();
    assert!(
        messages.contains("what is the answer?")
            && messages.contains("The answer is 42.")
            && messages.contains("is that still true?"),
        "{messages}"
    );
    let kinds: Vec<Value> = replay(&logs.path().join("task-2.jsonl"))
        .unwrap()
        .map(|e| Value::String(e.unwrap().kind))
        .collect();
    assert!(kinds.contains(&json!("session.resume")), "{kinds:?}");
}

#[tokio::test]
async fn a_cancelled_task_stops_and_its_log_is_still_closed() {
    let mock = MockLlm::start(vec![MockReply::text("never asked")]).await;
    let workspace = TempWorkspace::new();
    let logs = TempDir::new().unwrap();
    let runner = Arc::new(NativeRunner::new(
        crate::native::backend(&mock),
        fast_settings(),
    ));
    let log = TaskLog::create(logs.path(), "task-3", &meta(&workspace))
        .await
        .unwrap();
    let mut live = log.events().subscribe();
    let (_registry, run) = task(&runner, &workspace, "do something");
    run.cancel.cancel();
    let report = log.run(run).await;
    assert_eq!(report.status, RunStatus::Cancelled, "{report:?}");
    while live.recv().await.is_ok() {}
    assert!(
        TaskLog::resume(logs.path(), "task-3").await.is_ok(),
        "the log was closed: it can be resumed"
    );
}
