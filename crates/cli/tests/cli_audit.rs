//! The daemon's audit log across a stop: the log is written behind the
//! calls (crates/policy/src/audit.rs), so a SIGTERM in the middle of tool
//! calls must still leave every call that was answered on disk.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli_serve::{PATIENCE, Served};

/// One `session.tools.call` of `read_file`; whether it was answered with
/// the file. `None` once the daemon no longer answers.
async fn read_notes(client: &reqwest::Client, url: &str, token: &str) -> Option<bool> {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "session.tools.call",
        "params": {"session": "default", "name": "read_file", "arguments": {"path": "notes.txt"}}});
    let response = client
        .post(url)
        .bearer_auth(token)
        .json(&request)
        .send()
        .await
        .ok()?;
    let body: Value = response.json().await.ok()?;
    Some(body["result"]["result"]["content"] == "hello\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigterm_during_tool_calls_leaves_every_answered_call_in_the_audit_log() {
    const CALLERS: usize = 8;
    const BEFORE_STOP: usize = 400;
    let mut served = Served::start();
    served.workspace.write("notes.txt", "hello\n");
    let url = served.url("/rpc");
    let answered = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..CALLERS)
        .map(|_| {
            let (url, token) = (url.clone(), served.token.clone());
            let answered = Arc::clone(&answered);
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                // Until the daemon stops answering.
                while let Some(read) = read_notes(&client, &url, &token).await {
                    assert!(read, "a call before the stop failed");
                    answered.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let deadline = Instant::now() + PATIENCE;
    while answered.load(Ordering::SeqCst) < BEFORE_STOP {
        assert!(
            Instant::now() < deadline,
            "calls too slow: {}",
            served.log()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let pid = rustix::process::Pid::from_raw(served.child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    for caller in callers {
        tokio::time::timeout(PATIENCE, caller)
            .await
            .expect("a caller still gets answers after the stop")
            .unwrap();
    }
    let status = loop {
        if let Some(status) = served.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline + PATIENCE,
            "serve ignored SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(status.success(), "{status}: {}", served.log());

    let answered = answered.load(Ordering::SeqCst);
    let mut audited = 0;
    for file in std::fs::read_dir(served.state().join("audit")).unwrap() {
        let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
        assert!(text.ends_with('\n'), "a line cut short");
        for line in text.lines() {
            let entry: Value = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("not JSON ({err}): {line:.200}"));
            if entry["tool"] == "read_file" && entry["decision"] == "allow" {
                audited += 1;
            }
        }
    }
    // A call can be audited and lose its answer to the stop, not the reverse.
    assert!(
        audited >= answered,
        "{answered} calls answered, {audited} audited"
    );
}

#[test]
fn audit_reads_filters_and_follows_the_log() {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;

    let bridge = crate::support::Bridge::new();
    let ws = bridge_testkit::TempWorkspace::new();
    ws.write("notes.txt", "hello\n");
    bridge
        .tool(&ws, "read_file", &json!({"path": "notes.txt"}))
        .assert()
        .success();
    bridge
        .tool(&ws, "shell", &json!({"command": "rm -rf /"}))
        .assert()
        .failure();
    let audit = |args: &[&str]| {
        let output = bridge.cmd().arg("audit").args(args).output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let all = audit(&[]);
    assert_eq!(all.lines().count(), 2, "{all}");
    assert!(
        all.contains("allow  cli  toolCall:cli  read_file  notes.txt"),
        "{all}"
    );
    let denied = audit(&["--decision", "deny"]);
    assert!(
        denied.contains("rm -rf /  — dangerous command: rm -r targets the filesystem root"),
        "{denied}"
    );
    assert_eq!(denied.lines().count(), 1, "{denied}");
    let as_json = audit(&["--tool", "read_file", "--json"]);
    let entry: Value = serde_json::from_str(as_json.trim()).unwrap();
    assert_eq!(entry["output"]["content"], "hello\n", "{entry}");
    assert_eq!(audit(&["--tail", "1"]).lines().count(), 1);
    // The last N, read from the end, still printed oldest first.
    let last_two = audit(&["--tail", "2"]);
    let tools: Vec<_> = last_two
        .lines()
        .map(|line| line.split_whitespace().nth(4).unwrap())
        .collect();
    assert_eq!(tools, ["read_file", "shell"], "{last_two}");
    assert!(audit(&["--tail", "5", "--session", "nobody"]).starts_with("no audit entries match"));
    assert!(audit(&["--session", "nobody"]).starts_with("no audit entries match"));
    let refused = bridge
        .cmd()
        .args(["audit", "--decision", "maybe"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));

    // Following: a new entry shows within a second; a line still being
    // written waits for its end.
    let mut follow = crate::cli_serve::command(bridge.state.path())
        .args(["audit", "--follow", "--json", "--tail", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Lines as they come, from a thread: a follower that never prints
    // fails the test instead of hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = follow.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    let next_line = || {
        rx.recv_timeout(Duration::from_secs(10))
            .expect("audit --follow printed the entry")
    };
    std::thread::sleep(Duration::from_millis(300));
    bridge
        .tool(&ws, "list_files", &json!({"glob": "*.txt"}))
        .assert()
        .success();
    // The call's process has ended: its entry is on disk.
    let written = Instant::now();
    let line = next_line();
    let shown = written.elapsed();
    let entry: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(entry["tool"], "list_files", "{entry}");
    // It looks every 200 ms; the rest is room for a loaded machine.
    eprintln!("audit --follow showed the entry {shown:?} after the call");
    assert!(shown < Duration::from_secs(2), "shown after {shown:?}");
    let file = std::fs::read_dir(bridge.state.path().join("audit"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    use std::io::Write as _;
    log.write_all(br#"{"timestamp":"t","sessionId":"s","hook":"h","tool":"torn","#)
        .unwrap();
    log.flush().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    log.write_all(br#""input":{},"output":{},"decision":"allow","elapsedMs":1}"#.as_slice())
        .unwrap();
    log.write_all(b"\n").unwrap();
    let line = next_line();
    let entry: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(entry["tool"], "torn", "{entry}");
    follow.kill().unwrap();
    let _ = follow.wait();
}
