//! More of `log`: split off to keep files readable.

use super::*;

#[tokio::test]
async fn resume_rebuilds_the_conversation_and_answers_interrupted_tool_calls() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "conv", json!({"model": "gpt"}))
        .await
        .unwrap();
    let prompt = log.append(types::USER_MESSAGE, types::user_message("fix it"), None);
    let requests = vec![
        ToolRequest {
            tool_call_id: "c1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a"}),
        },
        ToolRequest {
            tool_call_id: "c2".into(),
            name: "shell".into(),
            arguments: json!({"command": "ls"}),
        },
    ];
    let reply = log.append(
        types::ASSISTANT_MESSAGE,
        types::assistant_message("looking", &requests),
        Some(&prompt.id),
    );
    log.append(
        types::TOOL_EXECUTION_START,
        types::tool_start("c2", "shell", &json!({})),
        Some(&reply.id),
    );
    log.append(
        types::TOOL_EXECUTION_START,
        types::tool_start("c1", "read_file", &json!({})),
        Some(&reply.id),
    );
    // c1 finishes; the process dies while c2 runs.
    log.append(
        types::TOOL_EXECUTION_COMPLETE,
        types::tool_complete("c1", "read_file", true, "text of a"),
        Some(&reply.id),
    );
    log.append(
        types::TOOL_EXECUTION_COMPLETE,
        types::tool_complete("zz", "orphan", true, "dropped"),
        None,
    );
    log.append(
        types::SESSION_USAGE,
        types::usage(Some("gpt"), 100, 20),
        None,
    );
    log.append(types::SESSION_USAGE, types::usage(Some("gpt"), 50, 5), None);
    log.close().await.unwrap();

    let (log, history) = EventLog::resume(&dir, "conv").await.unwrap();
    log.close().await.unwrap();
    assert_eq!(history.meta["model"], "gpt");
    assert_eq!(
        (
            history.usage.prompt_tokens,
            history.usage.completion_tokens,
            history.usage.requests
        ),
        (150, 25, 2)
    );
    assert_eq!(
        history.conversation,
        [
            ConversationItem::User {
                content: "fix it".into()
            },
            ConversationItem::Assistant {
                content: "looking".into(),
                tool_requests: requests
            },
            ConversationItem::ToolResult {
                tool_call_id: "c1".into(),
                name: "read_file".into(),
                ok: true,
                content: "text of a".into()
            },
            ConversationItem::ToolResult {
                tool_call_id: "c2".into(),
                name: "shell".into(),
                ok: false,
                content: bridge_engine::log::INTERRUPTED_TOOL_RESULT.into(),
            },
        ]
    );
}

#[tokio::test]
async fn list_reads_summaries_and_remove_deletes_only_known_sessions() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "done", Value::Null).await.unwrap();
    let long_prompt = format!("{}\nsecond line", "word ".repeat(40));
    log.append(types::USER_MESSAGE, types::user_message(&long_prompt), None);
    log.append(
        types::ASSISTANT_MESSAGE,
        types::assistant_message("done", &[]),
        None,
    );
    log.append(types::SESSION_IDLE, json!({}), None);
    log.close().await.unwrap();
    let log = EventLog::create(&dir, "broken", Value::Null).await.unwrap();
    log.append(types::USER_MESSAGE, types::user_message("go"), None);
    log.append(
        types::SESSION_ERROR,
        types::session_error("model", "401"),
        None,
    );
    log.close().await.unwrap();
    let log = EventLog::create(&dir, "crashed", Value::Null)
        .await
        .unwrap();
    log.append(types::USER_MESSAGE, types::user_message("go"), None);
    log.append(types::TOOL_EXECUTION_START, json!({}), None);
    log.close().await.unwrap();
    // Not sessions: a bad name, another extension.
    std::fs::write(dir.join(".hidden.jsonl"), "x").unwrap();
    std::fs::write(dir.join("notes.txt"), "x").unwrap();

    let sessions = list(&dir).unwrap();
    let by_id = |id: &str| sessions.iter().find(|s| s.id == id).unwrap().clone();
    assert_eq!(sessions.len(), 3);
    let done = by_id("done");
    assert_eq!(done.events, 4);
    assert_eq!(done.status, SessionStatus::Idle);
    let prompt = done.first_prompt.unwrap();
    assert!(
        prompt.ends_with('…') && prompt.chars().count() == 81,
        "{prompt}"
    );
    assert!(done.created.is_some() && done.updated.is_some());
    assert_eq!(by_id("broken").status, SessionStatus::Failed);
    assert_eq!(by_id("crashed").status, SessionStatus::Interrupted);

    remove(&dir, "done").unwrap();
    assert!(!session_file(&dir, "done").exists());
    assert!(matches!(remove(&dir, "done"), Err(LogError::NotFound(_))));
    assert_eq!(list(&dir).unwrap().len(), 2);
    assert!(list(&dir.join("missing")).unwrap().is_empty());
}

#[tokio::test]
async fn list_reads_the_tail_past_a_huge_last_line() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "tail", Value::Null).await.unwrap();
    log.append(types::USER_MESSAGE, types::user_message("read it"), None);
    log.append(
        types::TOOL_EXECUTION_COMPLETE,
        json!({"result": {"content": "z".repeat(2 << 20)}}),
        None,
    );
    log.close().await.unwrap();
    // And a torn write after it.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(session_file(&dir, "tail"))
        .unwrap();
    file.write_all(b"{\"seq\":4,").unwrap();
    let summary = list(&dir).unwrap().remove(0);
    assert_eq!(summary.events, 3);
    assert_eq!(summary.status, SessionStatus::Interrupted);
    assert_eq!(summary.first_prompt.as_deref(), Some("read it"));
}

#[tokio::test]
async fn a_log_that_stops_at_its_start_or_resume_is_interrupted() {
    let (_temp, dir) = sessions_dir();
    // Killed between `session.start` and the run's first event.
    let log = EventLog::create(&dir, "started", Value::Null)
        .await
        .unwrap();
    log.close().await.unwrap();
    // A finished run, resumed, killed before the new run began.
    let log = EventLog::create(&dir, "resumed", Value::Null)
        .await
        .unwrap();
    log.append(types::USER_MESSAGE, types::user_message("go"), None);
    log.append(types::SESSION_IDLE, json!({"status": "completed"}), None);
    log.close().await.unwrap();
    let (log, _) = EventLog::resume(&dir, "resumed").await.unwrap();
    log.close().await.unwrap();

    let sessions = list(&dir).unwrap();
    let status = |id: &str| sessions.iter().find(|s| s.id == id).unwrap().status;
    assert_eq!(status("started"), SessionStatus::Interrupted);
    assert_eq!(status("resumed"), SessionStatus::Interrupted);
}
