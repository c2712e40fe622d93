//! The code server's whole tasks, in-process with the scripted task
//! runner of code.rs: the one-at-a-time line, the verbose step log and
//! its notifications, orchestrations and their progress, a task that
//! cannot start.

use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::{NumberOrString, ProgressToken, RequestMetaObject};
use serde_json::json;

use crate::code::{harness, params, text};

#[tokio::test]
async fn tasks_run_one_at_a_time_and_a_waiting_one_hears_its_place() {
    let mut h = harness().await;
    h.tasks.hold.store(true, Ordering::SeqCst);
    let peer = h.client.peer().clone();
    let first = tokio::spawn({
        let peer = peer.clone();
        async move {
            peer.call_tool(params(
                "copilot_code_task",
                json!({"prompt": "one", "workingDir": "sub", "timeout": 30}),
            ))
            .await
        }
    });
    // The first is running once the runner has seen it.
    while h.tasks.seen.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut second_params = params("copilot_code_task", json!({"prompt": "two"}));
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(77)));
    second_params.meta = Some(meta);
    let second = tokio::spawn(async move { peer.call_tool(second_params).await });

    let queued = h.progress.recv().await.unwrap();
    assert_eq!(
        queued.message.as_deref(),
        Some("queued: 1 task ahead of this one")
    );
    assert_eq!(h.tasks.seen.lock().unwrap().len(), 1, "the second waits");

    h.tasks.hold.store(false, Ordering::SeqCst);
    h.tasks.release.notify_one();
    let first = first.await.unwrap().unwrap();
    assert_eq!(text(&first), "done: one");
    let running = h.progress.recv().await.unwrap();
    assert_eq!(running.message.as_deref(), Some("running"));
    assert_eq!(running.progress_token, queued.progress_token);
    assert!(running.progress > queued.progress);
    let second = second.await.unwrap().unwrap();
    assert_eq!(text(&second), "done: two");
    assert_eq!(h.tasks.most_at_once.load(Ordering::SeqCst), 1);

    let seen = h.tasks.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0].working_dir.as_deref(),
        Some(std::path::Path::new("sub"))
    );
    assert_eq!(seen[0].timeout, Some(Duration::from_secs(30)));
    assert_eq!(seen[0].onward_depth, 1);
    assert_eq!(seen[1].prompt, "two");
}

#[tokio::test]
async fn the_verbose_tool_numbers_its_steps_and_sends_one_notification_per_tool_call() {
    let mut h = harness().await;
    let mut call = params(
        "copilot_code_verbose",
        json!({"task": "look", "model": "m2"}),
    );
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(5)));
    call.meta = Some(meta);
    let result = h.client.peer().call_tool(call).await.unwrap();
    let shown = text(&result);
    assert!(
        shown.starts_with(
            "## Steps\n\n1. tool read_file {}\n2. ✓ read_file (1 ms)\n\n## Result\n\ndone: look"
        ),
        "{shown}"
    );
    assert!(shown.contains("## Statistics"), "{shown}");
    let note = h.progress.recv().await.unwrap();
    assert_eq!(note.message.as_deref(), Some("2. ✓ read_file (1 ms)"));
    assert!(
        h.progress.try_recv().is_err(),
        "one notification per tool call"
    );
    assert_eq!(h.tasks.seen.lock().unwrap()[0].model.as_deref(), Some("m2"));
    // The plain tool gives the same report without the steps.
    let plain = h
        .client
        .peer()
        .call_tool(params("copilot_code", json!({"task": "look"})))
        .await
        .unwrap();
    assert!(text(&plain).starts_with("done: look"), "{}", text(&plain));
}

#[tokio::test]
async fn orchestrate_checks_its_arguments_and_streams_progress() {
    let mut h = harness().await;
    for bad in [
        json!({"task": " "}),
        json!({"task": "x", "maxConcurrency": 0}),
        json!({"task": "x", "maxConcurrency": 65}),
        json!({"task": "x", "timeout": 0}),
        json!({"task": "x", "colour": "red"}),
    ] {
        let err = h
            .client
            .peer()
            .call_tool(params("copilot_orchestrate", bad.clone()))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("copilot_orchestrate"),
            "{bad}: {err}"
        );
    }
    let mut call = params(
        "copilot_orchestrate",
        json!({"task": "split it", "maxConcurrency": 2}),
    );
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(9)));
    call.meta = Some(meta);
    let result = h.client.peer().call_tool(call).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("no planner here (maxConcurrency 2)"),
        "{}",
        text(&result)
    );
    let note = h.progress.recv().await.unwrap();
    assert_eq!(note.message.as_deref(), Some("Running t1 of split it"));
}

#[tokio::test]
async fn a_task_that_cannot_start_is_an_error_result() {
    let h = harness().await;
    let failed = h
        .call("copilot_code_task", json!({"prompt": "fail"}))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(
        text(&failed),
        "the task could not start: no chat backend is configured"
    );
    // The line is free again.
    assert!(
        h.ok("copilot_code_task", json!({"prompt": "after"}))
            .await
            .is_error
            != Some(true)
    );
}
