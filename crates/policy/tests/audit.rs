//! Tests of audit: concurrent appends, redaction on disk, permissions, file
//! naming by UTC date.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use bridge_policy::{AuditEntry, AuditLog};
use bridge_util::time::now_timestamp;
use chrono::NaiveDate;
use serde_json::{Value, json};

fn entry(timestamp: &str, tool: &str, input: Value) -> AuditEntry {
    AuditEntry {
        timestamp: timestamp.to_owned(),
        session_id: "session-1".to_owned(),
        hook: "toolCall".to_owned(),
        tool: tool.to_owned(),
        input,
        output: json!({"ok": true}),
        decision: "allow".to_owned(),
        elapsed_ms: 3,
        approval: None,
    }
}

fn date(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
}

/// Every line of `path`, parsed; panics on a line that is not JSON.
pub(crate) fn read_lines(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "file does not end with a newline");
    text.lines()
        .enumerate()
        .map(|(number, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("line {number} is not JSON ({err}): {line:.200}"))
        })
        .collect()
}

#[test]
fn append_writes_one_camel_case_json_line_per_entry() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit"));
    log.append(&entry(
        "2025-03-04T10:00:00.000Z",
        "read_file",
        json!({"path": "a"}),
    ))
    .unwrap();
    log.append(&entry("2025-03-04T11:00:00.000Z", "list_dir", json!({})))
        .unwrap();
    log.flush().unwrap();
    let lines = read_lines(&log.file_for(date("2025-03-04")));
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["tool"], "read_file");
    assert_eq!(lines[0]["sessionId"], "session-1");
    assert_eq!(lines[0]["elapsedMs"], 3);
    assert_eq!(lines[1]["tool"], "list_dir");
}

#[test]
fn file_name_follows_the_utc_date_of_each_entry() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    log.append(&entry("2024-12-31T23:59:59.999Z", "before", json!({})))
        .unwrap();
    log.append(&entry("2025-01-01T00:00:00.000Z", "after", json!({})))
        .unwrap();
    // 01:30 at +02:00 is still the 31st in UTC.
    log.append(&entry("2025-01-01T01:30:00+02:00", "offset", json!({})))
        .unwrap();
    log.flush().unwrap();
    let old_year = read_lines(&dir.path().join("audit-2024-12-31.jsonl"));
    let new_year = read_lines(&dir.path().join("audit-2025-01-01.jsonl"));
    let tools = |lines: &[Value]| -> Vec<String> {
        lines
            .iter()
            .map(|line| line["tool"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(tools(&old_year), ["before", "offset"]);
    assert_eq!(tools(&new_year), ["after"]);
}

#[test]
fn entry_without_valid_timestamp_is_stamped_now() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    log.append(&entry("not a time", "x", json!({}))).unwrap();
    log.flush().unwrap();
    let files: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1);
    let path = files[0].as_ref().unwrap().path();
    let lines = read_lines(&path);
    let stamped = lines[0]["timestamp"].as_str().unwrap();
    let day = &stamped[..10];
    assert!(
        path.file_name().unwrap().to_str().unwrap() == format!("audit-{day}.jsonl"),
        "{path:?} vs {stamped}"
    );
    assert!(now_timestamp().ends_with('Z'));
}

#[test]
fn secrets_in_input_and_output_are_redacted_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    let github_token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let aws_key = "AKIAIOSFODNN7EXAMPLE";
    let mut record = entry(
        "2025-05-05T12:00:00.000Z",
        "shell",
        json!({"command": format!("curl -H 'Authorization: Bearer {github_token}' x"),
               "env": {"AWS_ACCESS_KEY_ID": aws_key}}),
    );
    record.output = json!({"stdout": format!("token={github_token}")});
    log.append(&record).unwrap();
    log.flush().unwrap();
    let text = fs::read_to_string(log.file_for(date("2025-05-05"))).unwrap();
    assert!(!text.contains(github_token), "token on disk: {text}");
    assert!(!text.contains(aws_key), "AWS key on disk: {text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    // The caller's entry is untouched: only the disk copy is redacted.
    assert!(
        record.output["stdout"]
            .as_str()
            .unwrap()
            .contains(github_token)
    );
}

#[cfg(unix)]
#[test]
fn directory_and_file_are_private_to_the_owner() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let audit_dir = dir.path().join("nested/audit");
    let log = AuditLog::new(&audit_dir);
    log.append(&entry("2025-02-02T00:00:00Z", "x", json!({})))
        .unwrap();
    log.flush().unwrap();
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&audit_dir), 0o700);
    assert_eq!(mode(&log.file_for(date("2025-02-02"))), 0o600);
}

#[cfg(unix)]
#[test]
fn existing_world_readable_file_is_narrowed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    let path = log.file_for(date("2025-02-03"));
    fs::write(&path, "").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    log.append(&entry("2025-02-03T00:00:00Z", "x", json!({})))
        .unwrap();
    log.flush().unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn unwritable_directory_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file-not-dir");
    fs::write(&blocker, "x").unwrap();
    let log = AuditLog::new(blocker.join("audit"));
    let err = log
        .append(&entry("2025-02-03T00:00:00Z", "x", json!({})))
        .unwrap_err();
    assert!(err.to_string().contains("file-not-dir"), "{err}");
}

/// Lines bigger than a pipe buffer, so an interleaving would show.
fn bulky_input(writer: usize, index: usize) -> Value {
    json!({"writer": writer, "index": index, "blob": "x".repeat(6000)})
}

#[test]
fn concurrent_threads_never_interleave_lines() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(AuditLog::new(dir.path()));
    let handles: Vec<_> = (0..THREADS)
        .map(|writer| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for index in 0..PER_THREAD {
                    log.append(&entry(
                        "2025-06-01T08:00:00.000Z",
                        "t",
                        bulky_input(writer, index),
                    ))
                    .unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    log.flush().unwrap();
    let lines = read_lines(&log.file_for(date("2025-06-01")));
    assert_eq!(lines.len(), THREADS * PER_THREAD);
    let mut seen = vec![0usize; THREADS];
    for line in &lines {
        seen[line["input"]["writer"].as_u64().unwrap() as usize] += 1;
    }
    assert_eq!(seen, vec![PER_THREAD; THREADS]);
}

const CHILD_DIR_ENV: &str = "BRIDGE_POLICY_AUDIT_CHILD_DIR";
const CHILD_ID_ENV: &str = "BRIDGE_POLICY_AUDIT_CHILD_ID";
const PER_PROCESS: usize = 150;

/// Not a test on its own: the body each child process of
/// `concurrent_processes_never_interleave_lines` runs.
#[test]
#[ignore = "run as a child process by concurrent_processes_never_interleave_lines"]
fn audit_child_process_writer() {
    let dir = std::env::var(CHILD_DIR_ENV).expect("child needs its directory");
    let writer: usize = std::env::var(CHILD_ID_ENV).unwrap().parse().unwrap();
    let log = AuditLog::new(dir);
    for index in 0..PER_PROCESS {
        log.append(&entry(
            "2025-06-02T08:00:00.000Z",
            "p",
            bulky_input(writer, index),
        ))
        .unwrap();
    }
}

#[test]
fn concurrent_processes_never_interleave_lines() {
    const PROCESSES: usize = 4;
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|writer| {
            Command::new(&exe)
                .args([
                    "audit::audit_child_process_writer",
                    "--exact",
                    "--ignored",
                    "--quiet",
                ])
                .env(CHILD_DIR_ENV, dir.path())
                .env(CHILD_ID_ENV, writer.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "child writer failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let log = AuditLog::new(dir.path());
    let lines = read_lines(&log.file_for(date("2025-06-02")));
    assert_eq!(lines.len(), PROCESSES * PER_PROCESS);
    let mut seen = vec![0usize; PROCESSES];
    for line in &lines {
        seen[line["input"]["writer"].as_u64().unwrap() as usize] += 1;
    }
    assert_eq!(seen, vec![PER_PROCESS; PROCESSES]);
}

#[test]
fn summaries_cut_long_strings_and_arrays_but_keep_shape() {
    use bridge_policy::audit::{
        AUDIT_MAX_ARRAY_ITEMS, AUDIT_MAX_STRING_BYTES, summarize_for_audit,
    };
    let long = "é".repeat(AUDIT_MAX_STRING_BYTES); // 2 bytes a char: cut mid-char
    let value = serde_json::json!({
        "content": long,
        "files": (0..250).collect::<Vec<_>>(),
        "ok": true,
        "short": "kept",
    });
    let summary = summarize_for_audit(&value);
    let content = summary["content"].as_str().unwrap();
    assert!(
        content.len() < AUDIT_MAX_STRING_BYTES + 40,
        "{}",
        content.len()
    );
    assert!(content.ends_with(&format!(
        "…[{} more bytes]",
        AUDIT_MAX_STRING_BYTES * 2 - AUDIT_MAX_STRING_BYTES
    )));
    let files = summary["files"].as_array().unwrap();
    assert_eq!(files.len(), AUDIT_MAX_ARRAY_ITEMS + 1);
    assert_eq!(files[AUDIT_MAX_ARRAY_ITEMS], "…[150 more items]");
    assert_eq!(summary["ok"], true);
    assert_eq!(summary["short"], "kept");
}

#[test]
fn a_file_removed_or_rotated_under_an_open_log_is_recreated_not_written_blind() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit"));
    let now = now_timestamp();
    log.append(&entry(&now, "first", json!({}))).unwrap();
    log.flush().unwrap();
    let file = fs::read_dir(dir.path().join("audit"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // Rotated away: the next entry must land in a new file at the path, not
    // in the moved one through the old handle.
    fs::rename(&file, dir.path().join("rotated.jsonl")).unwrap();
    log.append(&entry(&now, "second", json!({}))).unwrap();
    log.flush().unwrap();
    let current = fs::read_to_string(&file).unwrap();
    assert!(
        current.contains("\"second\"") && !current.contains("\"first\""),
        "{current}"
    );
    // Deleted, directory and all.
    fs::remove_dir_all(dir.path().join("audit")).unwrap();
    log.ensure_writable().unwrap();
    log.append(&entry(&now, "third", json!({}))).unwrap();
    log.flush().unwrap();
    assert!(fs::read_to_string(&file).unwrap().contains("\"third\""));
}

/// A GitHub token assembled at run time.
pub(crate) fn token(seed: char) -> String {
    format!(
        "ghp_{}",
        seed.to_string().repeat(12) + "aB3dE5gH7jK9mN1pQ2sT4vW6"
    )
}

#[test]
fn every_field_that_carries_caller_text_is_redacted_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path());
    let in_tool = token('a');
    let in_session = token('b');
    let in_hook = token('c');
    let in_decision = token('d');
    let in_reason = token('e');
    let mut record = entry("2025-05-06T12:00:00.000Z", &in_tool, json!({}));
    record.session_id = in_session.clone();
    record.hook = format!("toolCall:{in_hook}");
    record.decision = format!("deny {in_decision}");
    record.output = json!({"reason": format!("denied: token={in_reason}")});
    log.append(&record).unwrap();
    log.flush().unwrap();
    let text = fs::read_to_string(log.file_for(date("2025-05-06"))).unwrap();
    for secret in [&in_tool, &in_session, &in_hook, &in_decision, &in_reason] {
        assert!(!text.contains(secret.as_str()), "{secret} on disk: {text}");
    }
    let line = &read_lines(&log.file_for(date("2025-05-06")))[0];
    assert_eq!(line["tool"], "[REDACTED]");
    assert_eq!(line["hook"], "toolCall:[REDACTED]");
    // Names without secrets stay as they are.
    log.append(&entry("2025-05-06T12:00:01.000Z", "read_file", json!({})))
        .unwrap();
    log.flush().unwrap();
    let lines = read_lines(&log.file_for(date("2025-05-06")));
    assert_eq!(lines[1]["tool"], "read_file");
    assert_eq!(lines[1]["sessionId"], "session-1");
}

#[test]
fn a_summary_never_keeps_part_of_a_token_it_cuts_through() {
    use bridge_policy::audit::{AUDIT_MAX_STRING_BYTES, summarize_for_audit};
    let secret = token('f');
    for offset in [4, 10, 30] {
        let text = format!(
            "{} {secret} trailing text",
            "x".repeat(AUDIT_MAX_STRING_BYTES - offset - 1)
        );
        let summary = summarize_for_audit(&json!({ "stdout": text }));
        let kept = summary["stdout"].as_str().unwrap();
        assert!(!kept.contains("ghp_"), "part of the token kept: {kept:.80}");
        assert!(
            kept.contains("[REDACTED]…["),
            "{}",
            &kept[kept.len() - 60..]
        );
    }
}
