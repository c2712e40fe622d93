//! The session event log on real files: order, durability, concurrency,
//! and every kind of damage a crash or a stray file can leave.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bridge_engine::log::{
    ConversationItem, EventLog, LogError, LoggedEvent, MAX_LINE_BYTES, SessionStatus, ToolRequest,
    list, remove, replay, session_file, types,
};
use serde_json::{Value, json};
use tempfile::TempDir;

fn sessions_dir() -> (TempDir, PathBuf) {
    let temp = TempDir::new().unwrap();
    let dir = temp.path().join("sessions");
    (temp, dir)
}

/// Every line of the file, replayed; panics on any error.
fn replay_all(path: &Path) -> Vec<LoggedEvent> {
    replay(path)
        .unwrap()
        .map(|item| item.unwrap_or_else(|err| panic!("{err}")))
        .collect()
}

fn assert_contiguous(events: &[LoggedEvent]) {
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event.seq, index as u64 + 1, "{event:?}");
    }
}

/// A file written line by line, as a crash or a hand edit leaves it.
fn write_raw(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn raw_line(seq: u64, kind: &str, data: Value) -> String {
    let event = json!({"seq": seq, "id": format!("e{seq}"), "parentId": null,
        "timestamp": "2026-11-21T10:00:00.000Z", "type": kind, "data": data});
    format!("{event}\n")
}

#[tokio::test]
async fn ten_thousand_events_replay_in_order_with_contiguous_seq() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "s1", json!({"model": "m"}))
        .await
        .unwrap();
    let mut ids = HashSet::new();
    for i in 0..10_000u64 {
        let event = log.append(
            types::USER_MESSAGE,
            json!({"content": format!("prompt {i}")}),
            None,
        );
        assert_eq!(event.seq, i + 2);
        assert!(ids.insert(event.id));
    }
    log.close().await.unwrap();

    let events = replay_all(&session_file(&dir, "s1"));
    assert_eq!(events.len(), 10_001);
    assert_contiguous(&events);
    assert_eq!(events[0].kind, types::SESSION_START);
    assert_eq!(events[0].data["model"], "m");
    assert_eq!(events[0].data["sessionId"], "s1");
    for (i, event) in events[1..].iter().enumerate() {
        assert_eq!(event.data["content"], format!("prompt {i}"));
        assert!(ids.contains(&event.id));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_from_many_tasks_keep_every_event_exactly_once() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "busy", Value::Null).await.unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|task| {
            let log = log.clone();
            tokio::spawn(async move {
                for i in 0..500 {
                    log.append("test.event", json!({"task": task, "i": i}), None);
                    if i % 50 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    log.close().await.unwrap();

    let events = replay_all(&session_file(&dir, "busy"));
    assert_eq!(events.len(), 1 + 16 * 500);
    assert_contiguous(&events);
    let mut next_of_task = [0u64; 16];
    for event in &events[1..] {
        let task = event.data["task"].as_u64().unwrap() as usize;
        // Each task's own events keep their order; none is lost or doubled.
        assert_eq!(event.data["i"].as_u64().unwrap(), next_of_task[task]);
        next_of_task[task] += 1;
    }
    assert!(next_of_task.iter().all(|&n| n == 500));
}

#[tokio::test]
async fn ephemeral_events_reach_subscribers_but_never_the_disk() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "eph", Value::Null).await.unwrap();
    let mut live = log.subscribe();
    let first = log.append(types::USER_MESSAGE, json!({"content": "hi"}), None);
    log.ephemeral(
        types::ASSISTANT_MESSAGE_DELTA,
        json!({"deltaContent": "He"}),
    );
    let second = log.append(
        types::ASSISTANT_MESSAGE,
        json!({"content": "Hello"}),
        Some(&first.id),
    );
    log.close().await.unwrap();

    let seen: Vec<LoggedEvent> = (0..3).map(|_| live.try_recv().unwrap()).collect();
    assert_eq!(
        seen.iter()
            .map(|e| (e.kind.as_str(), e.seq))
            .collect::<Vec<_>>(),
        [
            (types::USER_MESSAGE, 2),
            (types::ASSISTANT_MESSAGE_DELTA, 0),
            (types::ASSISTANT_MESSAGE, 3)
        ]
    );
    assert_eq!(seen[2].id, second.id);
    assert_eq!(seen[2].parent_id.as_deref(), Some(first.id.as_str()));

    let events = replay_all(&session_file(&dir, "eph"));
    assert_eq!(events.len(), 3);
    assert!(
        events
            .iter()
            .all(|e| e.kind != types::ASSISTANT_MESSAGE_DELTA)
    );
    assert_eq!(events[2].parent_id.as_deref(), Some(first.id.as_str()));
}

#[tokio::test]
async fn flush_puts_every_queued_event_on_disk_while_the_log_stays_open() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "f", Value::Null).await.unwrap();
    for i in 0..100 {
        log.append("test.event", json!({"i": i}), None);
    }
    log.flush().await.unwrap();
    assert_eq!(replay_all(&session_file(&dir, "f")).len(), 101);
    log.append("test.event", json!({"i": 100}), None);
    log.close().await.unwrap();
    // Closed: later appends are dropped, flush and close stay harmless.
    log.append("test.event", json!({"late": true}), None);
    log.flush().await.unwrap();
    log.close().await.unwrap();
    assert_eq!(replay_all(&session_file(&dir, "f")).len(), 102);
}

#[tokio::test]
async fn secrets_are_redacted_on_disk() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "sec", Value::Null).await.unwrap();
    let token = format!("ghp_{}", "A1".repeat(18));
    log.append(
        types::USER_MESSAGE,
        json!({"content": format!("use {token}")}),
        None,
    );
    log.close().await.unwrap();
    let text = std::fs::read_to_string(session_file(&dir, "sec")).unwrap();
    assert!(!text.contains(&token), "{text}");
    assert!(text.contains("REDACTED"), "{text}");
}

#[tokio::test]
async fn a_torn_last_line_is_skipped_and_resume_continues_the_seq() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "torn", Value::Null).await.unwrap();
    for i in 0..5 {
        log.append(
            types::USER_MESSAGE,
            json!({"content": format!("p{i}")}),
            None,
        );
    }
    log.close().await.unwrap();
    let path = session_file(&dir, "torn");
    // A crash in the middle of writing the last line.
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 20)
        .unwrap();

    let mut replayed = replay(&path).unwrap();
    let events: Vec<_> = replayed.by_ref().map(Result::unwrap).collect();
    assert_eq!(events.len(), 5);
    assert_eq!(replayed.torn_tail(), Some(6));

    let (log, history) = EventLog::resume(&dir, "torn").await.unwrap();
    assert!(history.torn_tail);
    assert_eq!(history.last_seq, 5);
    assert!(history.skipped.is_empty());
    assert_eq!(history.conversation.len(), 4);
    let next = log.append(types::USER_MESSAGE, json!({"content": "again"}), None);
    assert_eq!(next.seq, 7, "session.resume is 6");
    log.close().await.unwrap();

    let events = replay_all(&path);
    assert_contiguous(&events);
    assert_eq!(events[5].kind, types::SESSION_RESUME);
    assert_eq!(events[5].data["tornTail"], true);
    assert_eq!(events[6].data["content"], "again");
}

#[tokio::test]
async fn a_complete_last_line_without_its_newline_is_kept() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "nl", Value::Null).await.unwrap();
    log.append(types::USER_MESSAGE, json!({"content": "kept"}), None);
    log.close().await.unwrap();
    let path = session_file(&dir, "nl");
    let len = std::fs::metadata(&path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len - 1).unwrap();

    let events = replay_all(&path);
    assert_eq!(events.len(), 2);
    let (log, history) = EventLog::resume(&dir, "nl").await.unwrap();
    assert!(!history.torn_tail);
    assert_eq!(
        history.conversation,
        [ConversationItem::User {
            content: "kept".into()
        }]
    );
    log.close().await.unwrap();
    let events = replay_all(&path);
    assert_eq!(events.len(), 3);
    assert_contiguous(&events);
}

#[tokio::test]
async fn a_corrupt_middle_line_is_reported_by_line_and_skipped() {
    let (_temp, dir) = sessions_dir();
    let path = session_file(&dir, "mid");
    let mut bytes = raw_line(1, types::SESSION_START, json!({}));
    bytes += "{\"seq\": 2, \"trunc\n";
    bytes += &raw_line(3, types::USER_MESSAGE, json!({"content": "after"}));
    write_raw(&path, bytes.as_bytes());

    let items: Vec<_> = replay(&path).unwrap().collect();
    assert_eq!(items.len(), 3);
    assert!(items[0].is_ok() && items[2].is_ok());
    match &items[1] {
        Err(LogError::Corrupt { path: p, line, .. }) => {
            assert_eq!((p, *line), (&path, 2));
        }
        other => panic!("{other:?}"),
    }
    let message = items[1].as_ref().unwrap_err().to_string();
    assert!(
        message.contains("line 2") && message.contains("mid.jsonl"),
        "{message}"
    );

    let (log, history) = EventLog::resume(&dir, "mid").await.unwrap();
    assert_eq!(history.skipped.len(), 1);
    assert_eq!(history.skipped[0].line, 2);
    assert_eq!(history.last_seq, 3);
    log.close().await.unwrap();
    let last = replay(&path).unwrap().last().unwrap().unwrap();
    assert_eq!(last.kind, types::SESSION_RESUME);
    assert_eq!(last.seq, 4);
    assert_eq!(last.data["skippedLines"], json!([2]));
}

#[tokio::test]
async fn non_utf8_and_non_event_lines_are_errors_not_panics() {
    let (_temp, dir) = sessions_dir();
    let path = session_file(&dir, "bytes");
    let mut bytes = raw_line(1, types::SESSION_START, json!({})).into_bytes();
    bytes.extend_from_slice(b"\xff\xfe\x00garbage\n");
    bytes.extend_from_slice(b"[1, 2, 3]\n");
    bytes.extend_from_slice(b"\n   \n");
    bytes.extend_from_slice(raw_line(2, types::USER_MESSAGE, json!({"content": "ok"})).as_bytes());
    write_raw(&path, &bytes);
    let items: Vec<_> = replay(&path).unwrap().collect();
    let lines: Vec<Option<u64>> = items
        .iter()
        .map(|item| match item {
            Err(LogError::Corrupt { line, .. }) => Some(*line),
            Ok(_) => None,
            Err(other) => panic!("{other}"),
        })
        .collect();
    assert_eq!(lines, [None, Some(2), Some(3), None]);
}

#[tokio::test]
async fn a_huge_line_is_an_error_naming_it_and_the_rest_stays_readable() {
    let (_temp, dir) = sessions_dir();
    let path = session_file(&dir, "huge");
    let mut bytes = raw_line(1, types::SESSION_START, json!({})).into_bytes();
    bytes.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
    bytes.push(b'\n');
    bytes.extend_from_slice(raw_line(2, types::USER_MESSAGE, json!({"content": "ok"})).as_bytes());
    // And a huge torn tail: no newline at the end.
    bytes.extend(std::iter::repeat_n(b'{', MAX_LINE_BYTES + 10));
    write_raw(&path, &bytes);

    let mut items = replay(&path).unwrap();
    assert!(items.next().unwrap().is_ok());
    let err = items.next().unwrap().unwrap_err();
    assert!(matches!(err, LogError::Corrupt { line: 2, .. }), "{err}");
    assert!(err.to_string().contains("longer than 8 MiB"), "{err}");
    assert_eq!(items.next().unwrap().unwrap().seq, 2);
    assert!(items.next().is_none());
    assert_eq!(items.torn_tail(), Some(4));

    // Resume cuts the torn tail; the file is whole again.
    let (log, history) = EventLog::resume(&dir, "huge").await.unwrap();
    assert!(history.torn_tail);
    log.close().await.unwrap();
    let items: Vec<_> = replay(&path).unwrap().collect();
    assert_eq!(items.len(), 4);
    assert!(items[3].as_ref().unwrap().kind == types::SESSION_RESUME);
}

#[tokio::test]
async fn an_event_too_big_for_a_line_is_written_cut_down() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "big", Value::Null).await.unwrap();
    let big = "y".repeat(MAX_LINE_BYTES + 1);
    log.append(
        types::TOOL_EXECUTION_COMPLETE,
        json!({"result": {"content": big}}),
        None,
    );
    log.append(types::USER_MESSAGE, json!({"content": "next"}), None);
    log.close().await.unwrap();
    let events = replay_all(&session_file(&dir, "big"));
    assert_eq!(events.len(), 3);
    assert_eq!(events[1].data["truncated"], true);
    assert!(events[1].data["originalBytes"].as_u64().unwrap() > MAX_LINE_BYTES as u64);
    assert_eq!(events[2].data["content"], "next");
}

#[tokio::test]
async fn a_fifo_or_directory_at_the_session_path_is_refused_without_hanging() {
    let (_temp, dir) = sessions_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = session_file(&dir, "fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::create_dir(session_file(&dir, "folder")).unwrap();

    let checks = async {
        for id in ["fifo", "folder"] {
            let path = session_file(&dir, id);
            assert!(
                matches!(replay(&path), Err(LogError::NotAFile { .. })),
                "{id}"
            );
            let resumed = EventLog::resume(&dir, id).await;
            assert!(matches!(resumed, Err(LogError::NotAFile { .. })), "{id}");
            let created = EventLog::create(&dir, id, Value::Null).await;
            assert!(matches!(created, Err(LogError::Exists(_))), "{id}");
            assert!(
                matches!(remove(&dir, id), Err(LogError::NotAFile { .. })),
                "{id}"
            );
        }
        assert!(list(&dir).unwrap().is_empty());
    };
    tokio::time::timeout(Duration::from_secs(10), checks)
        .await
        .expect("a FIFO made the log hang");
    assert!(fifo.exists());
}

#[tokio::test]
async fn a_symlink_at_the_session_path_is_not_followed() {
    let (temp, dir) = sessions_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let outside = temp.path().join("outside.jsonl");
    write_raw(
        &outside,
        raw_line(1, types::SESSION_START, json!({})).as_bytes(),
    );
    std::os::unix::fs::symlink(&outside, session_file(&dir, "link")).unwrap();
    assert!(matches!(
        replay(&session_file(&dir, "link")),
        Err(LogError::NotAFile { .. })
    ));
    assert!(matches!(
        EventLog::resume(&dir, "link").await,
        Err(LogError::NotAFile { .. })
    ));
    assert_eq!(
        std::fs::read(&outside).unwrap().len(),
        raw_line(1, types::SESSION_START, json!({})).len()
    );
}

#[tokio::test]
async fn new_logs_are_private() {
    let temp = TempDir::new().unwrap();
    let dir = temp.path().join("state").join("sessions");
    let log = EventLog::create(&dir, "modes", Value::Null).await.unwrap();
    log.close().await.unwrap();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&session_file(&dir, "modes")), 0o600);
}

#[tokio::test]
async fn a_symlink_planted_at_the_sessions_directory_is_refused_not_followed() {
    let temp = TempDir::new().unwrap();
    let elsewhere = temp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let state = temp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let dir = state.join("sessions");
    std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
    let err = EventLog::create(&dir, "planted", Value::Null)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing written there"
    );
}

#[tokio::test]
async fn session_ids_that_are_not_plain_file_names_are_refused_everywhere() {
    let (temp, dir) = sessions_dir();
    for bad in ["../escape", "a/b", "..", ".hidden", "", "-flag"] {
        assert!(matches!(
            EventLog::create(&dir, bad, Value::Null).await,
            Err(LogError::InvalidId { .. })
        ));
        assert!(matches!(
            EventLog::resume(&dir, bad).await,
            Err(LogError::InvalidId { .. })
        ));
        assert!(matches!(remove(&dir, bad), Err(LogError::InvalidId { .. })));
    }
    assert!(!temp.path().join("escape.jsonl").exists());
}

#[tokio::test]
async fn one_writer_per_session_and_no_second_create() {
    let (_temp, dir) = sessions_dir();
    let log = EventLog::create(&dir, "one", Value::Null).await.unwrap();
    assert!(matches!(
        EventLog::resume(&dir, "one").await,
        Err(LogError::Busy(_))
    ));
    assert!(matches!(remove(&dir, "one"), Err(LogError::Busy(_))));
    assert_eq!(list(&dir).unwrap()[0].status, SessionStatus::Active);
    log.close().await.unwrap();
    assert!(matches!(
        EventLog::create(&dir, "one", Value::Null).await,
        Err(LogError::Exists(_))
    ));
    let (log, _) = EventLog::resume(&dir, "one").await.unwrap();
    log.close().await.unwrap();
    assert!(matches!(
        EventLog::resume(&dir, "missing").await,
        Err(LogError::NotFound(_))
    ));
}

#[tokio::test]
async fn a_file_without_any_event_cannot_be_resumed() {
    let (_temp, dir) = sessions_dir();
    write_raw(&session_file(&dir, "junk"), b"not json\nstill not\n");
    let err = EventLog::resume(&dir, "junk").await.unwrap_err();
    assert!(matches!(err, LogError::Corrupt { .. }), "{err}");
    assert_eq!(
        std::fs::read(session_file(&dir, "junk")).unwrap(),
        b"not json\nstill not\n"
    );
}

mod resume_and_list;
