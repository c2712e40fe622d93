//! An edit of config.toml reaches the running daemon without a restart:
//! `[permissions]` at the next call of every session, old and new, within
//! a second; `[models]` at the next request; an edit that cannot be used
//! (bad TOML, a bad value, a file too large, not a regular file) keeps the
//! last good configuration and says so in `status` and in refusals; a
//! setting that cannot change live is reported as waiting for a restart.

use std::time::{Duration, Instant};

use bridge_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::support::{EDIT_PATIENCE, McpHttp, Setup, TestDaemon, waited_for};

/// What a call refused by the permission rules must follow within.
const LIVE_WITHIN: Duration = Duration::from_secs(1);

async fn read_in(daemon: &TestDaemon, session: &str) -> Value {
    daemon
        .rpc(
            "session.tools.call",
            json!({"session": session, "name": "read_file", "arguments": {"path": "notes.txt"}}),
        )
        .await
}

/// What `agent.hook` (an agent session registered by its hooks) says of
/// the Copilot CLI's bash running `ls`.
async fn hook_ls(daemon: &TestDaemon) -> Value {
    daemon
        .rpc(
            "agent.hook",
            json!({"agent": "copilot-cli", "agentSession": "edits", "cwd": daemon.workspace.path(),
                   "event": "pre-tool-use", "tool": "bash", "arguments": {"command": "ls"}}),
        )
        .await["result"]
        .clone()
}

fn refused(answer: &Value) -> bool {
    answer["error"]["code"] == -32002
}

async fn config_status(daemon: &TestDaemon) -> Value {
    daemon.rpc("bridge.status", json!({})).await["result"]["config"].clone()
}

/// Replaces config.toml the way editors save: a new file renamed over it.
fn save(daemon: &TestDaemon, text: &str) {
    let path = daemon.config_path();
    let next = path.with_extension("toml.new");
    std::fs::write(&next, text).unwrap();
    std::fs::rename(&next, &path).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permissions_edit_applies_to_every_session_and_a_bad_one_keeps_the_last_good() {
    let daemon = TestDaemon::with(
        Setup::default()
            .config_toml("[permissions]\nblocked_tools = []\n")
            .file("notes.txt", "hello"),
    )
    .await;
    let created = daemon
        .rpc("session.create", json!({"cwd": daemon.workspace.path()}))
        .await;
    let other = created["result"]["id"].as_str().unwrap().to_owned();
    assert!(!refused(&read_in(&daemon, "default").await));
    assert!(!refused(&read_in(&daemon, &other).await));
    assert_eq!(hook_ls(&daemon).await["decision"], "allow");
    let mut code = McpHttp::connect(&daemon, "/mcp/code").await;
    let read = code
        .call("copilot_read_file", json!({"path": "notes.txt"}))
        .await;
    assert!(read.contains("hello"), "{read}");
    let status = config_status(&daemon).await;
    assert_eq!(status["file"], json!(daemon.config_path()), "{status}");
    assert_eq!(status["followed"], true, "{status}");
    let loaded_first = status["loadedAt"].clone();

    std::fs::write(
        daemon.config_path(),
        "[permissions]\nblocked_tools = [\"read_file\", \"bash\"]\n",
    )
    .unwrap();
    let written = Instant::now();
    while !refused(&read_in(&daemon, "default").await) {
        assert!(written.elapsed() < EDIT_PATIENCE, "the edit never applied");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let took = written.elapsed();
    eprintln!("the [permissions] edit applied at /rpc after {took:?}");
    assert!(took < LIVE_WITHIN, "applied only after {took:?}");
    let answer = read_in(&daemon, &other).await;
    assert!(refused(&answer), "an existing session follows: {answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("permissions.blocked_tools"), "{message}");
    let hook = hook_ls(&daemon).await;
    assert_eq!(
        hook["decision"], "deny",
        "the agent's session follows: {hook}"
    );
    let newer = daemon
        .rpc("session.create", json!({"cwd": daemon.workspace.path()}))
        .await;
    let newer = newer["result"]["id"].as_str().unwrap();
    assert!(refused(&read_in(&daemon, newer).await), "a new session too");
    let status = config_status(&daemon).await;
    assert!(status["problem"].is_null(), "{status}");
    assert_ne!(status["loadedAt"], loaded_first, "{status}");

    // Bad TOML: the last good rules stay, and everyone is told.
    save(&daemon, "[permissions]\nblocked_tools = [\"read_file\"\n");
    waited_for("the problem is shown", || async {
        config_status(&daemon).await["problem"].is_string()
    })
    .await;
    let status = config_status(&daemon).await;
    let problem = status["problem"].as_str().unwrap();
    assert!(
        problem.contains("config.toml") && problem.contains("last good configuration"),
        "{problem}"
    );
    let answer = read_in(&daemon, "default").await;
    assert!(
        refused(&answer),
        "the last good rules still refuse: {answer}"
    );
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("(note: "), "{message}");
    assert!(message.contains("last good configuration"), "{message}");

    // A good edit ends the problem; then bad values, a file too large and
    // a directory in its place are each refused like at start.
    save(&daemon, "[permissions]\nblocked_tools = [\"shell\"]\n");
    waited_for("the good edit applies", || async {
        !refused(&read_in(&daemon, "default").await)
    })
    .await;
    assert!(config_status(&daemon).await["problem"].is_null());
    let huge = format!(
        "[permissions]\nblocked_tools = []\n{}",
        "# padding\n".repeat(120_000)
    );
    let bad_pattern = "[permissions]\nblocked_tools = []\nblocked_patterns = [\"(\"]\n";
    for (what, expected) in [
        ("a bad value", "blocked_patterns"),
        ("a file too large", "larger than"),
        ("a link to a directory", "not a regular file"),
    ] {
        match what {
            "a bad value" => save(&daemon, bad_pattern),
            "a file too large" => save(&daemon, &huge),
            _ => {
                let dir = daemon.state.path().join("a-directory");
                std::fs::create_dir_all(&dir).unwrap();
                let link = daemon.config_path().with_extension("link");
                std::os::unix::fs::symlink(&dir, &link).unwrap();
                std::fs::rename(&link, daemon.config_path()).unwrap();
            }
        }
        waited_for(what, || async {
            config_status(&daemon).await["problem"]
                .as_str()
                .is_some_and(|p| p.contains(expected))
        })
        .await;
        let answer = read_in(&daemon, "default").await;
        assert!(!refused(&answer), "{what}: the last good rules: {answer}");
        let blocked = daemon
            .rpc(
                "session.tools.call",
                json!({"session": "default", "name": "shell", "arguments": {"command": "true"}}),
            )
            .await;
        let message = blocked["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{what}: {blocked}");
    }
}

#[tokio::test]
async fn a_models_map_edit_changes_where_a_model_goes() {
    let replies = || (0..4).map(|_| MockReply::text("ok")).collect::<Vec<_>>();
    let main = MockLlm::start(replies()).await;
    let config = |target: &str| {
        format!(
            "[backends.main]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\n\n[models.map]\n\"fast\" = \"main/{target}\"\n",
            main.base_url()
        )
    };
    let daemon = TestDaemon::with(Setup::default().config_toml(config("first"))).await;
    let chat = || async {
        let status = daemon
            .http()
            .post(daemon.url("/v1/chat/completions"))
            .bearer_auth(&daemon.token)
            .json(&json!({"model": "fast", "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200);
        let posted = main.requests();
        posted.last().unwrap().body["model"].clone()
    };
    assert_eq!(chat().await, "first");
    save(&daemon, &config("second"));
    waited_for("the new route", || async {
        daemon.rpc("bridge.status", json!({})).await["result"]["modelRoutes"][0]["target"]
            == "main/second"
    })
    .await;
    assert_eq!(chat().await, "second");
    assert!(
        config_status(&daemon).await["restartNeeded"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_port_edit_waits_for_a_restart_and_says_so() {
    // The port from config.toml (the test's environment sets none).
    let daemon = TestDaemon::with(
        Setup::default()
            .env("COPILOT_BRIDGE_PORT", "")
            .config_toml("port = 0\n"),
    )
    .await;
    save(
        &daemon,
        "port = 9\n[permissions]\nblocked_tools = [\"nothing_here\"]\n",
    );
    waited_for("the restart is reported", || async {
        config_status(&daemon).await["restartNeeded"] == json!(["port"])
    })
    .await;
    let status = config_status(&daemon).await;
    assert!(status["problem"].is_null(), "{status}");
    // Still serving where it started.
    assert_eq!(daemon.health().await["ok"], true);
}
