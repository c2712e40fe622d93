//! The real Copilot CLI with `copilot-bridge copilot-extension install`
//! (experimental mode), a daemon running and a provider bound to the hub
//! session the extension joins: the provider's tool is offered to the model
//! and answers through the hub, and the provider's hook rule denies one of
//! the CLI's own tools.

use bridge_testkit::{MockLlm, MockReply, MockToolCall, ProviderClient, agent_cli};
use serde_json::{Value, json};

use super::{StopDaemon, agent_command, bridge_command, chat_requests, copilot_env, run_agent};
use crate::cli_serve::Served;

/// The tool message answering `call_id` in the history the CLI sent back.
fn tool_message(mock: &MockLlm, call_id: &str) -> String {
    chat_requests(mock)
        .iter()
        .flat_map(|request| {
            request.body["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|message| message["role"] == "tool" && message["tool_call_id"] == call_id)
        .map(|message| message["content"].to_string())
        .unwrap_or_else(|| panic!("no tool result for {call_id}"))
}

#[tokio::test]
async fn the_extension_offers_a_providers_tool_and_its_rules_hold_for_the_clis_tools() {
    let Some(program) = agent_cli("copilot", "copilot") else {
        return;
    };
    let served = Served::start();
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_echo",
                "hub_echo",
                r#"{"text":"ping"}"#,
            )],
        },
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_bash",
                "bash",
                r#"{"command":"echo hi-from-bash","description":"x"}"#,
            )],
        },
        MockReply::chunks(["done"]),
    ])
    .await;
    let (mut provider, _) = ProviderClient::register(
        &served.ws_url(),
        &served.provider_token(),
        "hub-tools",
        json!({
            "tools": [{"name": "hub_echo", "description": "Echoes through the hub",
                       "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}],
            "hooks": {"onPreToolUse": [{"match": {"tool": "bash"}, "action": "deny",
                                         "reason": "the provider forbids bash"}],
                      "transforms": {"code_change_rules": {"action": "append",
                                                             "content": "Always sign as the hub."}}},
        }),
    )
    .await
    .unwrap();

    let home = tempfile::tempdir().unwrap();
    let copilot_home = home.path().join(".copilot");
    let install = bridge_command(home.path(), served.state())
        .env("COPILOT_HOME", &copilot_home)
        .args(["copilot-extension", "install", "--scope", "user"])
        .output()
        .unwrap();
    assert!(install.status.success(), "{install:?}");

    let mut command = agent_command(&program, home.path(), served.workspace.path());
    command
        .envs(copilot_env(home.path(), Some(&mock)))
        .env("COPILOT_BRIDGE_SESSION", "default")
        .args(["-p", "Use the hub", "--allow-all-tools", "--experimental"]);
    let serving = async {
        let call = provider
            .expect_within("tool.call", super::AGENT_PATIENCE)
            .await
            .unwrap();
        provider
            .send(
                json!({"type": "tool.result", "id": call["id"], "data": "pong from the provider"}),
            )
            .await
            .unwrap();
        call
    };
    let ((stdout, _), call) = tokio::join!(run_agent(command, "copilot"), serving);
    assert_eq!(call["tool"], "hub_echo", "{call}");
    assert_eq!(call["args"]["text"], "ping", "{call}");
    assert!(stdout.contains("done"), "{stdout}");

    // The provider's tool was offered with the first request, and its
    // answer reached the model.
    let first: &Value = &chat_requests(&mock)[0].body;
    assert!(first["tools"].to_string().contains("hub_echo"), "{first}");
    // The provider's transform reached the CLI's system prompt.
    assert!(
        first["messages"][0]["content"]
            .to_string()
            .contains("Always sign as the hub."),
        "{}",
        first["messages"][0]
    );
    assert!(tool_message(&mock, "call_echo").contains("pong from the provider"));
    // The CLI's own bash was refused by the provider's rule, through the hub.
    let bash = tool_message(&mock, "call_bash");
    assert!(bash.contains("the provider forbids bash"), "{bash}");
    assert!(!bash.contains("hi-from-bash\\n"), "{bash}");
}

#[tokio::test]
async fn the_extension_starts_the_daemon_and_registers_the_clis_session() {
    let Some(program) = agent_cli("copilot", "copilot") else {
        return;
    };
    let workspace = bridge_testkit::TempWorkspace::new();
    let key = bridge_testkit::fake_keys::FakeKey::pem(7);
    workspace.write("notes.txt", format!("pineapple\n{}\n", key.text_with("")));
    let notes = workspace.path().join("notes.txt");
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_view",
                "view",
                json!({"path": notes}).to_string(),
            )],
        },
        MockReply::chunks(["done"]),
    ])
    .await;
    let bridge_home = tempfile::tempdir().unwrap();
    let _stop = StopDaemon(bridge_home.path());
    let home = tempfile::tempdir().unwrap();
    let copilot_home = home.path().join(".copilot");
    let install = bridge_command(home.path(), bridge_home.path())
        .env("COPILOT_HOME", &copilot_home)
        .args(["copilot-extension", "install"])
        .output()
        .unwrap();
    assert!(install.status.success(), "{install:?}");
    let mut command = agent_command(&program, home.path(), workspace.path());
    command.envs(copilot_env(home.path(), Some(&mock))).args([
        "-p",
        "Read the notes",
        "--allow-all-tools",
        "--experimental",
    ]);
    let (stdout, _) = run_agent(command, "copilot").await;
    assert!(stdout.contains("done"), "{stdout}");
    let viewed = tool_message(&mock, "call_view");
    assert!(viewed.contains("pineapple"), "{viewed}");
    // The private key in the file was redacted before the model saw it.
    assert_eq!(key.leaks_into(&viewed), None, "{viewed}");
    // The extension started a daemon for its state directory, and the
    // daemon decided the CLI's view in the CLI's own hub session.
    assert!(bridge_home.path().join("gateway.json").exists());
    let audit: String = std::fs::read_dir(bridge_home.path().join("audit"))
        .unwrap()
        .map(|file| std::fs::read_to_string(file.unwrap().path()).unwrap())
        .collect();
    let entry: Value = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|entry| entry["hook"] == "pre-tool-use:copilot-cli")
        .unwrap_or_else(|| panic!("no decision of the CLI's view: {audit}"));
    assert_eq!(entry["tool"], "view", "{entry}");
    assert!(
        entry["sessionId"]
            .as_str()
            .unwrap()
            .starts_with("copilot-cli-"),
        "{entry}"
    );
}

#[tokio::test]
async fn the_extension_waits_on_an_ask_and_runs_the_tool_once_allowed() {
    let Some(program) = agent_cli("copilot", "copilot") else {
        return;
    };
    let served = Served::start_in(
        crate::support::Bridge::new(),
        bridge_testkit::TempWorkspace::new(),
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "90")],
    );
    let command_line = "python3 -c 'print(6*7)'";
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_bash",
                "bash",
                json!({"command": command_line, "description": "x"}).to_string(),
            )],
        },
        MockReply::chunks(["done"]),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let install = bridge_command(home.path(), served.state())
        .env("COPILOT_HOME", home.path().join(".copilot"))
        .args(["copilot-extension", "install", "--scope", "user"])
        .output()
        .unwrap();
    assert!(install.status.success(), "{install:?}");
    let mut command = agent_command(&program, home.path(), served.workspace.path());
    command.envs(copilot_env(home.path(), Some(&mock))).args([
        "-p",
        "Compute it",
        "--allow-all-tools",
        "--experimental",
    ]);
    let run = tokio::spawn(run_agent(command, "copilot"));
    let approvals = |args: &[&str]| {
        bridge_command(home.path(), served.state())
            .arg("approvals")
            .args(args)
            .output()
            .unwrap()
    };
    let mut id = None;
    for _ in 0..1200 {
        let listed: Value =
            serde_json::from_slice(&approvals(&["list", "--json"]).stdout).unwrap_or(json!([]));
        if let Some(ask) = listed.as_array().and_then(|asks| asks.first()) {
            assert_eq!(ask["arguments"]["command"], command_line, "{ask}");
            assert!(
                ask["session"].as_str().unwrap().starts_with("copilot-cli-"),
                "{ask}"
            );
            id = ask["id"].as_str().map(str::to_owned);
            break;
        }
        assert!(!run.is_finished(), "the Copilot CLI ended without an ask");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let id = id.expect("the CLI's bash call reached the queue");
    // Past the 5 s a daemon has to answer a hook: the call still waits.
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    assert!(!run.is_finished(), "the CLI waits for the answer");
    let allowed = approvals(&["allow", &id]);
    assert!(allowed.status.success(), "{allowed:?}");
    let (stdout, _) = run.await.unwrap();
    assert!(stdout.contains("done"), "{stdout}");
    let ran = tool_message(&mock, "call_bash");
    assert!(ran.contains("42"), "the allowed command ran: {ran}");
}
