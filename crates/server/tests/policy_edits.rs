//! An edit of a workspace's `.agent-policy.yaml` reaches the running
//! daemon's next call at every door within a second, without a restart;
//! an edit that cannot be used keeps the last good policy, and says so.

use serde_json::{Value, json};

use crate::support::{McpHttp, TestDaemon, waited_for};

async fn shell(daemon: &TestDaemon, command: &str) -> Value {
    daemon
        .rpc(
            "session.tools.call",
            json!({"session": "default", "name": "shell", "arguments": {"command": command}}),
        )
        .await
}

/// What `agent.hook` (the hook command's door) says of the Copilot CLI's bash.
async fn hook(daemon: &TestDaemon, command: &str) -> Value {
    daemon
        .rpc(
            "agent.hook",
            json!({"agent": "copilot-cli", "agentSession": "edits", "cwd": daemon.workspace.path(),
                   "event": "pre-tool-use", "tool": "bash", "arguments": {"command": command}}),
        )
        .await["result"]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_edit_applies_at_every_door_without_a_restart() {
    let daemon = TestDaemon::start().await;
    let mut code = McpHttp::connect(&daemon, "/mcp/code").await;
    let refused = shell(&daemon, "python3 -c 'print(1)'").await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    assert_eq!(
        hook(&daemon, "python3 -c 'print(1)'").await["decision"],
        "ask"
    );
    let created = code
        .call(
            "copilot_create_file",
            json!({"path": "src/new.txt", "content": "x"}),
        )
        .await;
    assert!(created.contains("read-only"), "{created}");

    // The edit the refusal suggests.
    daemon.workspace.write(
        ".agent-policy.yaml",
        "shell:\n  allow: [\"python3 -c\"]\nwrites:\n  allow: [\"src/**\"]\n",
    );
    let took = waited_for("the edit applies", || async {
        shell(&daemon, "python3 -c 'print(1)'").await["result"]["result"]["stdout"] == "1\n"
    })
    .await;
    eprintln!("the edit applied at /rpc after {took:?}");
    assert_eq!(
        hook(&daemon, "python3 -c 'print(1)'").await["decision"],
        "allow"
    );
    let created = code
        .call(
            "copilot_create_file",
            json!({"path": "src/new.txt", "content": "x"}),
        )
        .await;
    assert!(!created.contains("\"isError\":true"), "{created}");
    assert_eq!(
        std::fs::read_to_string(daemon.workspace.path().join("src/new.txt")).unwrap(),
        "x"
    );
    let status = daemon.rpc("bridge.status", json!({})).await;
    let policy = &status["result"]["policy"];
    assert!(
        policy["workspacePolicy"]
            .as_str()
            .unwrap()
            .ends_with(".agent-policy.yaml"),
        "{policy}"
    );
    assert!(policy["workspacePolicyLoadedAt"].is_string(), "{policy}");
    assert!(policy["workspacePolicyProblem"].is_null(), "{policy}");

    // A broken edit: the last good policy stays, and everyone is told.
    daemon
        .workspace
        .write(".agent-policy.yaml", "shell: [this is: not the format\n");
    waited_for("the edit applies", || async {
        let status = daemon.rpc("bridge.status", json!({})).await;
        status["result"]["policy"]["workspacePolicyProblem"].is_string()
    })
    .await;
    let still = shell(&daemon, "python3 -c 'print(1)'").await;
    assert_eq!(still["result"]["result"]["stdout"], "1\n", "{still}");
    let other = shell(&daemon, "make -v").await;
    let message = other["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("the last good policy of this workspace stays in force"),
        "{message}"
    );
    daemon.stop().await;
}
