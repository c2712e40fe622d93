//! `copilot-bridge orchestrate` with writers: sub-tasks of one wave in real
//! git worktrees merged back or reported as conflicts, and Ctrl-C leaving
//! no process or worktree behind.

use std::time::Duration;

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace};
use serde_json::json;

use crate::cli_orchestrate::{dead_url, marker, orchestrate, output, pairs, plan_file, statuses};
use crate::support::{Bridge, stdout_json};

/// A git repository with a seven-line file, writable for the agent.
fn repository(bridge: &Bridge) -> TempWorkspace {
    std::fs::write(
        bridge.state.path().join("config.toml"),
        "read_only = false\n",
    )
    .unwrap();
    let ws = TempWorkspace::new();
    ws.write("lib.txt", "one\ntwo\nthree\nfour\nfive\nsix\nseven\n");
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "start",
        ],
    ] {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(ws.path())
            .status()
            .unwrap();
        assert!(status.success());
    }
    ws
}

fn edit(mock: &MockLlm, id: &str, old: &str, new: &str) {
    let arguments = json!({"path": "lib.txt", "oldString": old, "newString": new}).to_string();
    mock.route(
        marker(id),
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(format!("c-{id}"), "edit_file", arguments)],
        },
    );
    mock.route(marker(id), MockReply::text(format!("{id} edited lib.txt")));
}

fn writers_plan(ws: &TempWorkspace) -> std::path::PathBuf {
    plan_file(
        ws,
        "plan.json",
        &json!({"tasks": [
        {"id": "t1", "description": "edit one part"}, {"id": "t2", "description": "edit another part"},
        {"id": "t3", "description": "check the result"}],
        "dependencies": {"t3": ["t1", "t2"]}}),
    )
}

fn worktrees(ws: &TempWorkspace) -> usize {
    let out = std::process::Command::new("git")
        .args(["worktree", "list"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_writers_work_in_worktrees_and_merge_back_in_plan_order() {
    let bridge = Bridge::new();
    let ws = repository(&bridge);
    let mock = MockLlm::start(vec![]).await;
    edit(&mock, "t1", "one\n", "ONE\n");
    edit(&mock, "t2", "seven\n", "SEVEN\n");
    mock.route(marker("t3"), MockReply::text("both edits are in"));
    let plan = writers_plan(&ws);
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["--plan", plan.to_str().unwrap(), "--json"],
    ))
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let result = stdout_json(&out);
    assert_eq!(
        statuses(&result),
        pairs(&[
            ("t1", "completed"),
            ("t2", "completed"),
            ("t3", "completed")
        ])
    );
    assert_eq!(result["tasks"][0]["changedFiles"], json!(["lib.txt"]));
    assert!(
        stderr.contains("Running t1 (wave 1, native, worktree)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Running t3 (wave 2, native, workspace)"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("lib.txt")).unwrap(),
        "ONE\ntwo\nthree\nfour\nfive\nsix\nSEVEN\n"
    );
    assert_eq!(worktrees(&ws), 1, "a worktree was left behind");
    assert!(
        !bridge
            .state
            .path()
            .join("orchestrate")
            .join(result["id"].as_str().unwrap())
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicting_writers_report_the_conflict_with_its_hunk() {
    let bridge = Bridge::new();
    let ws = repository(&bridge);
    let mock = MockLlm::start(vec![]).await;
    edit(&mock, "t1", "three\n", "THREE\n");
    edit(&mock, "t2", "three\n", "3\n");
    let plan = writers_plan(&ws);
    let out = output(orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["--plan", plan.to_str().unwrap()],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("| t2 | conflict | 1 |"), "{stdout}");
    assert!(stdout.contains("Conflict in `lib.txt`"), "{stdout}");
    assert!(
        stdout
            .contains("<<<<<<< workspace\nTHREE\n||||||| snapshot\nthree\n=======\n3\n>>>>>>> t2"),
        "{stdout}"
    );
    assert!(stdout.contains("| t3 | skipped |"), "{stdout}");
    assert!(stderr.contains("Conflict t2"), "{stderr}");
    // t1 merged; t2's change is not in the workspace, half or whole.
    assert_eq!(
        std::fs::read_to_string(ws.path().join("lib.txt")).unwrap(),
        "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\n"
    );
    assert_eq!(worktrees(&ws), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_the_plan_and_leaves_no_process_behind() {
    let bridge = Bridge::new();
    let ws = repository(&bridge);
    let mock = MockLlm::start(vec![]).await;
    // A duration no other process is likely to sleep for names ours.
    let tag = format!("sleep {}", 7000 + std::process::id() % 1000);
    ws.write(".agent-policy.yaml", "shell:\n  allow: [\"sleep\"]\n");
    for id in ["t1", "t2"] {
        let command = json!({"command": tag.clone()}).to_string();
        mock.route(
            marker(id),
            MockReply::ToolCalls {
                text: None,
                calls: vec![MockToolCall::new(format!("c-{id}"), "shell", command)],
            },
        );
    }
    let plan = writers_plan(&ws);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("copilot-bridge"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", bridge.state.path())
        .env("COPILOT_BRIDGE_HOME", bridge.state.path())
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", dead_url())
        .env("COPILOT_BYOK_PROVIDER", "openai")
        .env("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url()))
        .env("COPILOT_BYOK_API_KEY", "x")
        .args([
            "orchestrate",
            "--plan",
            plan.to_str().unwrap(),
            "--json",
            "--cwd",
        ])
        .arg(ws.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let running = || processes_with(&tag);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while running() < 2 {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the sub-tasks' commands never started: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let interrupt = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = stdout_json(&out);
    assert_eq!(result["status"], "cancelled");
    assert_eq!(
        statuses(&result),
        pairs(&[("t1", "cancelled"), ("t2", "cancelled"), ("t3", "skipped")])
    );
    assert_eq!(running(), 0, "a sub-task's command outlived the plan");
    assert_eq!(worktrees(&ws), 1, "a worktree was left behind");
}

/// Processes whose command line contains `tag`.
fn processes_with(tag: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(tag))
        .count()
}
