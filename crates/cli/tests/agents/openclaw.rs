//! OpenClaw (`openclaw`, pinned with its Node 24 in
//! scripts/install-test-deps.sh) with the facade as a custom provider, the
//! `models.providers` entry `copilot-bridge setup` prints, running its
//! embedded agent (`openclaw agent --local`).

use std::path::{Path, PathBuf};

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace, agent_cli, repo_root};
use serde_json::{Value, json};

use super::{
    agent_command, chat_requests, run_agent, serve_with, serve_with_env, setup, tool_round_trip,
};
use crate::cli_serve::Served;

/// OpenClaw's private home for one test: its state directory and
/// openclaw.json holding what `setup` prints (the facade as its model
/// provider), its agent's workspace, and no update check.
struct OpenClawHome {
    program: PathBuf,
    home: tempfile::TempDir,
    workspace: PathBuf,
}

impl OpenClawHome {
    async fn new(served: &Served, workspace: &Path) -> Option<Self> {
        let program = agent_cli("openclaw", "openclaw")?;
        let home = tempfile::tempdir().unwrap();
        let printed = setup(served, "openclaw").await;
        let block = printed
            .split_once("\n{")
            .map(|(_, rest)| format!("{{{rest}"))
            .expect("setup prints the openclaw.json block");
        let mut config: Value = serde_json::from_str(block.trim()).unwrap();
        config["agents"]["defaults"]["workspace"] = json!(workspace);
        config["update"] = json!({"checkOnStart": false});
        let made = Self {
            program,
            home,
            workspace: workspace.to_path_buf(),
        };
        std::fs::create_dir_all(made.state()).unwrap();
        std::fs::write(made.config(), config.to_string()).unwrap();
        Some(made)
    }

    fn state(&self) -> PathBuf {
        self.home.path().join(".openclaw")
    }

    fn config(&self) -> PathBuf {
        self.state().join("openclaw.json")
    }

    /// `openclaw ARGS` in the workspace, offline, Node 24 first on PATH.
    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let node = repo_root().join(".peers/node24/node_modules/node/bin");
        let mut command = agent_command(&self.program, self.home.path(), &self.workspace);
        let path = format!(
            "{}:{}",
            node.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        command
            .env("PATH", path)
            .env("OPENCLAW_STATE_DIR", self.state())
            .env("OPENCLAW_CONFIG_PATH", self.config())
            .args(args);
        command
    }

    /// `openclaw ARGS --json`: its JSON answer.
    async fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let what = format!("openclaw {}", args.join(" "));
        let (stdout, _) = run_agent(self.command(&all), &what).await;
        serde_json::from_str(stdout.trim())
            .unwrap_or_else(|err| panic!("{what} printed no JSON ({err}): {stdout}"))
    }

    /// `copilot-bridge openclaw VERB` as the user runs it beside this
    /// OpenClaw, for the daemon `served`.
    async fn bridge(&self, served: &Served, verb: &str) -> String {
        let output = served
            .cli()
            .env("HOME", self.home.path())
            .env("OPENCLAW_STATE_DIR", self.state())
            .env("OPENCLAW_CONFIG_PATH", self.config())
            .args(["openclaw", verb])
            .output()
            .await
            .unwrap();
        assert!(output.status.success(), "openclaw {verb}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }
}

/// `openclaw agent --local --message PROMPT --json` against `served`: its
/// JSON answer.
async fn openclaw(served: &Served, prompt: &str) -> Option<Value> {
    let openclaw = OpenClawHome::new(served, served.workspace.path()).await?;
    Some(agent_turn(&openclaw, prompt).await)
}

async fn agent_turn(openclaw: &OpenClawHome, prompt: &str) -> Value {
    openclaw
        .json(&["agent", "--local", "--agent", "main", "--message", prompt])
        .await
}

fn reply_text(answer: &Value) -> String {
    answer["payloads"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|payload| payload["text"].as_str())
        .collect()
}

#[tokio::test]
async fn a_text_turn_through_chat_completions() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hello ", "from the mock."])]).await;
    let served = serve_with(&mock, TempWorkspace::new());
    let Some(answer) = openclaw(&served, "Say hello").await else {
        return;
    };
    assert_eq!(reply_text(&answer), "Hello from the mock.", "{answer}");
    assert_eq!(answer["meta"]["agentMeta"]["provider"], "copilot-bridge");
    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["model"], "mock-model");
}

#[tokio::test]
async fn openclaw_reads_a_file_with_its_own_tool_and_finishes_the_turn() {
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "the secret word is pineapple\n");
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_read_1",
                "read",
                r#"{"path":"notes.txt"}"#,
            )],
        },
        MockReply::chunks(["The file says pineapple."]),
    ])
    .await;
    let served = serve_with(&mock, workspace);
    let Some(answer) = openclaw(&served, "What does notes.txt say?").await else {
        return;
    };
    assert_eq!(reply_text(&answer), "The file says pineapple.", "{answer}");
    let requests = chat_requests(&mock);
    assert_eq!(requests.len(), 2, "the tool call and the answer");
    let (call, output) = tool_round_trip(&requests[1], "OpenClaw");
    assert_eq!(call["function"]["name"], "read");
    // OpenClaw renames call ids to its own shape; the pair still matches.
    assert_eq!(output["tool_call_id"], call["id"]);
    assert!(
        output["content"].to_string().contains("pineapple"),
        "{output}"
    );
}

#[tokio::test]
async fn after_register_openclaw_delegates_to_copilot_code_in_its_own_workspace() {
    const TASK: &str = "SUBTASK: create hello.txt saying hello from copilot-bridge";
    // OpenClaw's turn asks for copilot_code, then ends with the result
    // (its requests end with a context message of its own, so they take
    // the script in order)...
    let mock = MockLlm::start(vec![
        MockReply::tool_call("call_cb_1", "copilot_code", &json!({"task": TASK})),
        MockReply::chunks(["Done: copilot-bridge made hello.txt."]),
    ])
    .await;
    // ... and the daemon's own agent loop, given the task, writes the file.
    mock.route(
        TASK,
        MockReply::tool_call(
            "call_w_1",
            "create_file",
            &json!({"path": "hello.txt", "content": "hello from copilot-bridge\n"}),
        ),
    );
    mock.route(TASK, MockReply::chunks(["I created hello.txt."]));
    let served = serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_READ_ONLY", "false")],
    );
    // OpenClaw's agent works elsewhere than the daemon.
    let agent_workspace = tempfile::tempdir().unwrap();
    let Some(openclaw) = OpenClawHome::new(&served, agent_workspace.path()).await else {
        return;
    };
    let printed = openclaw.bridge(&served, "register").await;
    assert!(printed.contains("Registered copilot-bridge"), "{printed}");
    let valid = openclaw.json(&["config", "validate"]).await;
    assert_eq!(valid["valid"], true, "{valid}");

    let inspected = openclaw
        .json(&["plugins", "inspect", "copilot-bridge", "--runtime"])
        .await;
    assert_eq!(inspected["plugin"]["status"], "loaded", "{inspected}");
    assert_eq!(
        inspected["plugin"]["toolNames"],
        json!([
            "copilot_code",
            "copilot_code_verbose",
            "copilot_orchestrate"
        ])
    );

    let probed = openclaw.json(&["mcp", "probe", "copilot-bridge"]).await;
    let server = &probed["servers"]["copilot-bridge"];
    assert_eq!(server["tools"], 7, "{probed}");
    assert_eq!(server["requestTimeoutMs"], 1_800_000, "{probed}");
    // OpenClaw says so when a server's tools carry no safety annotations.
    assert!(server.get("approvalHint").is_none(), "{probed}");
    let tools: Vec<&str> = probed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tool in ["copilot_code", "copilot_read_file", "copilot_orchestrate"] {
        assert!(
            tools.contains(&format!("copilot-bridge__{tool}").as_str()),
            "{probed}"
        );
    }

    let answer = agent_turn(&openclaw, "Please make hello.txt").await;
    assert_eq!(
        reply_text(&answer),
        "Done: copilot-bridge made hello.txt.",
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(agent_workspace.path().join("hello.txt")).unwrap(),
        "hello from copilot-bridge\n",
        "the file is in OpenClaw's agent's workspace"
    );
    assert!(!served.workspace.path().join("hello.txt").exists());
    let requests = chat_requests(&mock);
    let last = requests.last().unwrap();
    let (call, output) = tool_round_trip(last, "OpenClaw");
    assert_eq!(call["function"]["name"], "copilot_code");
    let report = output["content"].to_string();
    assert!(report.contains("I created hello.txt."), "{report}");
    assert!(
        report.contains("create_file"),
        "the report lists the tool calls: {report}"
    );
    assert_eq!(mock.routed_remaining(), 0);

    let printed = openclaw.bridge(&served, "unregister").await;
    assert!(printed.contains("Removed copilot-bridge"), "{printed}");
    let valid = openclaw.json(&["config", "validate"]).await;
    assert_eq!(valid["valid"], true, "{valid}");
    let left = std::fs::read_to_string(openclaw.config()).unwrap();
    assert!(!left.contains("copilot-bridge__"), "{left}");
    assert!(!left.contains("openclaw-plugin"), "{left}");
    assert!(!left.contains("mcp"), "{left}");
    assert!(!openclaw.state().join(".env").exists());
}
