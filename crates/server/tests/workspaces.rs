//! Workspaces are chosen, not named: every door where a client names a
//! directory (`session.create`, `agent.hook`, `orchestrate.start`,
//! `/mcp/code?workspace=`, a task's `workingDir`) refuses `/`, the system's
//! trees and the state directory with the reason, and keeps serving.

use serde_json::{Value, json};

use crate::support::{McpHttp, Setup, TestDaemon};

fn code_path(query: &[(&str, &str)]) -> String {
    let mut serializer = form_urlencoded::Serializer::new(String::new());
    for (key, value) in query {
        serializer.append_pair(key, value);
    }
    format!("/mcp/code?{}", serializer.finish())
}

fn error_message(answer: &Value) -> String {
    answer["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn rpc_doors_refuse_the_root_the_system_and_the_state_directory() {
    let daemon = TestDaemon::start().await;
    let state = daemon.state.path().display().to_string();
    for cwd in ["/", "/etc", "/usr/share", state.as_str()] {
        let created = daemon
            .rpc("session.create", json!({"cwd": cwd, "label": "attack"}))
            .await;
        assert_eq!(created["error"]["code"], -32602, "{cwd}: {created}");
        assert!(
            error_message(&created).contains("cannot be a workspace"),
            "{cwd}: {created}"
        );
        let hooked = daemon
            .rpc(
                "agent.hook",
                json!({"agent": "claude-code", "agentSession": format!("s{}", cwd.len()),
                       "cwd": cwd, "event": "pre-tool-use", "tool": "Read",
                       "arguments": {"file_path": "passwd"}}),
            )
            .await;
        assert_eq!(hooked["error"]["code"], -32602, "{cwd}: {hooked}");
        assert!(
            error_message(&hooked).contains("cannot be a workspace"),
            "{cwd}: {hooked}"
        );
        let planned = daemon
            .rpc(
                "orchestrate.start",
                json!({"cwd": cwd, "task": "look", "plan": {"tasks": [{"id": "a", "description": "look"}]}}),
            )
            .await;
        assert_eq!(planned["error"]["code"], -32602, "{cwd}: {planned}");
        assert!(
            error_message(&planned).contains("cannot be a workspace"),
            "{cwd}: {planned}"
        );
    }
    // A directory of the user's is fine, and nothing above was created.
    let mine = tempfile::tempdir().unwrap();
    let created = daemon
        .rpc("session.create", json!({"cwd": mine.path()}))
        .await;
    assert!(created["result"]["id"].is_string(), "{created}");
    let sessions = daemon.rpc("session.list", json!({})).await;
    assert_eq!(
        sessions["result"].as_array().unwrap().len(),
        2,
        "{sessions}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn mcp_code_refuses_a_named_system_directory_and_a_repeated_workspace() {
    let daemon = TestDaemon::with(Setup::default().file("a.txt", "alpha\n")).await;
    let mut etc = McpHttp::connect(&daemon, &code_path(&[("workspace", "/etc")])).await;
    let refused: Value = serde_json::from_str(
        &etc.call("copilot_read_file", json!({"path": "passwd"}))
            .await,
    )
    .unwrap();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("cannot be a workspace") && text.contains("/etc"),
        "{text}"
    );
    assert!(!text.contains("root:"), "nothing of /etc/passwd: {text}");

    let mine = tempfile::tempdir().unwrap();
    let mine = mine.path().display().to_string();
    let mut twice = McpHttp::connect(
        &daemon,
        &code_path(&[("workspace", &mine), ("workspace", "/")]),
    )
    .await;
    let refused: Value =
        serde_json::from_str(&twice.call("copilot_list_files", json!({})).await).unwrap();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        error_message(&refused).contains("given more than once"),
        "{refused}"
    );
    // A task's workingDir is named too.
    let mut own = McpHttp::connect(&daemon, "/mcp/code").await;
    let task: Value = serde_json::from_str(
        &own.call(
            "copilot_code_task",
            json!({"prompt": "list it", "workingDir": "/usr"}),
        )
        .await,
    )
    .unwrap();
    assert_eq!(task["result"]["isError"], true, "{task}");
    // The daemon serves everyone else.
    let listed: Value =
        serde_json::from_str(&own.call("copilot_list_files", json!({})).await).unwrap();
    assert!(listed.to_string().contains("a.txt"), "{listed}");
    daemon.stop().await;
}
