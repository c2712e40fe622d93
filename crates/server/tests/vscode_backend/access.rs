//! Provider tools under the workspace policy through their declared access
//! (docs/providers.md, "Declared access"), with the stand-in editor's tools.

use std::time::Duration;

use serde_json::{Value, json};

use super::editor;
use crate::support::{Setup, TestDaemon};

fn call(daemon: &TestDaemon, name: &str, arguments: Value) -> impl Future<Output = Value> {
    daemon.rpc(
        "session.tools.call",
        json!({"session": "default", "name": name, "arguments": arguments}),
    )
}

#[tokio::test]
async fn declared_access_puts_provider_tools_under_the_workspace_policy() {
    let daemon = TestDaemon::with(
        Setup::default().file(".agent-policy.yaml", "writes:\n  allow: [\"src/**\"]\n"),
    )
    .await;
    let tools = json!([
        {"name": "vscode_read", "description": "read", "access": {"reads": ["path"]},
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
        {"name": "vscode_apply_diff", "description": "patch", "access": {"diffs": ["unifiedDiff"]},
         "parameters": {"type": "object", "properties": {"unifiedDiff": {"type": "string"}}}},
    ]);
    let mut client = editor(&daemon, json!({"tools": tools})).await;
    // Outside the workspace, or a write the policy does not allow: refused
    // before the editor hears of it.
    let outside = call(&daemon, "vscode_read", json!({"path": "../secret.txt"})).await;
    assert!(outside["error"].is_object(), "{outside}");
    let diff = "--- a/README.md\n+++ b/README.md\n@@ -1,1 +1,1 @@\n-a\n+b\n";
    let denied = call(&daemon, "vscode_apply_diff", json!({"unifiedDiff": diff})).await;
    let message = denied["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("README.md"), "{denied}");
    let garbage = call(&daemon, "vscode_read", json!({"path": 42})).await;
    assert!(garbage["error"].is_object(), "{garbage}");
    client
        .expect_silence(Duration::from_millis(200))
        .await
        .unwrap();

    // Allowed ones reach the editor.
    let allowed_diff = "--- a/src/a.js\n+++ b/src/a.js\n@@ -1,1 +1,1 @@\n-a\n+b\n";
    let pending = daemon.post_in_background(
        "/rpc",
        json!({"jsonrpc": "2.0", "id": 1, "method": "session.tools.call",
               "params": {"session": "default", "name": "vscode_apply_diff",
                          "arguments": {"unifiedDiff": allowed_diff}}}),
    );
    let tool_call = client.expect("tool.call").await.unwrap();
    assert_eq!(tool_call["tool"], "vscode_apply_diff");
    client
        .send(json!({"type": "tool.result", "id": tool_call["id"], "data": {"ok": true}}))
        .await
        .unwrap();
    let answer: Value = pending.await.unwrap().json().await.unwrap();
    assert_eq!(answer["result"]["result"]["ok"], true, "{answer}");
    daemon.stop().await;
}
