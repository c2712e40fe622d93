//! The same call gets the same verdict through every door of the daemon:
//! `/rpc` (`session.tools.call`), the tool bus (`mcp.*`), the MCP code
//! server over HTTP (`/mcp/code`). The engine's doors (native loop, Copilot
//! CLI runner, provider tools) run the same table in
//! crates/engine/tests/one_decision.rs, the `tool` command in
//! crates/cli/tests/cli_tool.rs.

use serde_json::{Value, json};

use crate::support::{McpHttp, Setup, TestDaemon};

const CONFIG: &str = r#"read_only = true
[permissions]
blocked_patterns = ['\.ssh/']
"#;

/// A call, each door's spelling of it, and the verdict: `None` allowed,
/// `Some(fragment)` denied with a reason containing `fragment`.
struct Case {
    tool: &'static str,
    args: Value,
    /// `(method, params)` on the tool bus, when it has the action.
    bus: Option<(&'static str, Value)>,
    /// `(tool, arguments)` on the MCP code server, when it has the action.
    mcp: Option<(&'static str, Value)>,
    denied: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            tool: "read_file",
            args: json!({"path": "README.md"}),
            bus: Some(("mcp.fs.read", json!({"path": "README.md"}))),
            mcp: Some(("copilot_read_file", json!({"path": "README.md"}))),
            denied: None,
        },
        Case {
            tool: "read_file",
            args: json!({"path": "../outside.txt"}),
            bus: Some(("mcp.fs.read", json!({"path": "../outside.txt"}))),
            mcp: Some(("copilot_read_file", json!({"path": "../outside.txt"}))),
            denied: Some("outside the workspace"),
        },
        Case {
            tool: "shell",
            args: json!({"command": "rm -rf ~"}),
            bus: Some(("mcp.shell.run", json!({"cmd": "rm -rf ~"}))),
            mcp: None,
            denied: Some("dangerous command"),
        },
        Case {
            tool: "create_file",
            args: json!({"path": "new.txt", "content": "x"}),
            bus: Some((
                "mcp.edit.applyPatch",
                json!({"unifiedDiff": "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n"}),
            )),
            mcp: Some((
                "copilot_create_file",
                json!({"path": "new.txt", "content": "x"}),
            )),
            denied: Some("read-only"),
        },
        Case {
            tool: "read_file",
            args: json!({"path": ".ssh/id_rsa"}),
            bus: Some(("mcp.fs.read", json!({"path": ".ssh/id_rsa"}))),
            mcp: Some(("copilot_read_file", json!({"path": ".ssh/id_rsa"}))),
            denied: Some("blocked_patterns"),
        },
    ]
}

fn check(door: &str, case: &Case, allowed: bool, answer: &str) {
    match case.denied {
        None => assert!(allowed, "{door}: {} was refused: {answer}", case.tool),
        Some(fragment) => {
            assert!(
                !allowed,
                "{door}: {} {} was allowed: {answer}",
                case.tool, case.args
            );
            assert!(
                answer.contains(fragment),
                "{door}: {} {}: {answer} lacks {fragment:?}",
                case.tool,
                case.args
            );
        }
    }
}

/// A JSON-RPC answer: allowed when it has a result, denied when its error
/// is the policy's (`-32002`).
fn rpc_verdict(answer: &Value) -> bool {
    if answer.get("result").is_some() {
        return true;
    }
    assert_eq!(
        answer["error"]["code"], -32002,
        "not a policy refusal: {answer}"
    );
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_door_of_the_daemon_gives_each_case_the_same_verdict() {
    let daemon = TestDaemon::with(
        Setup::default()
            .config_toml(CONFIG)
            .file("README.md", "# Hello\n"),
    )
    .await;
    let mut mcp = McpHttp::connect(&daemon, "/mcp/code").await;
    for case in cases() {
        let answer = daemon
            .rpc(
                "session.tools.call",
                json!({"session": "default", "name": case.tool, "arguments": case.args}),
            )
            .await;
        check("/rpc", &case, rpc_verdict(&answer), &answer.to_string());

        if let Some((method, params)) = &case.bus {
            let answer = daemon.rpc(method, params.clone()).await;
            check("tool bus", &case, rpc_verdict(&answer), &answer.to_string());
        }

        if let Some((tool, arguments)) = &case.mcp {
            let answer: Value =
                serde_json::from_str(&mcp.call(tool, arguments.clone()).await).unwrap();
            let allowed = answer["result"]["isError"] == false;
            check("/mcp/code", &case, allowed, &answer.to_string());
        }
    }
    assert!(!daemon.workspace.path().join("new.txt").exists());
}
