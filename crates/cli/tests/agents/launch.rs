//! `copilot-bridge launch claude|copilot`: the real agents run with our
//! hooks and MCP servers staged for the run only (their own configuration
//! untouched), straight to the mock, or through the daemon's facade with
//! `--via-hub`.

use std::path::Path;

use bridge_testkit::{MockLlm, MockReply, TempWorkspace, agent_cli};
use serde_json::{Value, json};

use super::hooks::tool_answer;
use super::{
    StopDaemon, bridge_command, chat_requests, copilot_env, mock_asking, run_agent, serve_with,
};

/// A command our shell analysis refuses, which leaves a file behind if run.
const DANGEROUS: &str = "touch pwned.txt; sudo true";

/// `copilot-bridge launch KIND --agent PROGRAM ARGS…` in `cwd`, with a clean
/// environment: PATH, HOME (`home`), the state directory, and `env`.
fn launch(
    cwd: &Path,
    home: &Path,
    bridge_home: &Path,
    program: &Path,
    launch_args: &[&str],
    env: &[(&str, String)],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::from(bridge_command(home, bridge_home));
    command
        .current_dir(cwd)
        .kill_on_drop(true)
        .arg("launch")
        .args(&launch_args[..1])
        .arg("--agent")
        .arg(program)
        .args(&launch_args[1..]);
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

fn claude_env(home: &Path, base_url: Option<String>) -> Vec<(&'static str, String)> {
    let mut env = vec![
        (
            "CLAUDE_CONFIG_DIR",
            home.join(".claude").display().to_string(),
        ),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("DISABLE_TELEMETRY", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
    ];
    if let Some(base_url) = base_url {
        env.push(("ANTHROPIC_BASE_URL", base_url));
        env.push(("ANTHROPIC_AUTH_TOKEN", "sk-mock".to_owned()));
    }
    env
}

#[tokio::test]
async fn claude_code_launched_gets_our_hooks_and_mcp_servers_for_the_run() {
    let Some(program) = agent_cli("claude", "claude") else {
        return;
    };
    let mock = mock_asking("Bash", DANGEROUS).await;
    let workspace = TempWorkspace::new();
    let home = tempfile::tempdir().unwrap();
    let bridge_home = tempfile::tempdir().unwrap();
    let _stop = StopDaemon(bridge_home.path());
    let command = launch(
        workspace.path(),
        home.path(),
        bridge_home.path(),
        &program,
        &[
            "claude",
            "--",
            "-p",
            "Run the command",
            "--output-format",
            "json",
            "--allowedTools",
            "Bash",
        ],
        &claude_env(home.path(), Some(mock.base_url())),
    );
    run_agent(command, "launch claude").await;
    assert!(
        !workspace.path().join("pwned.txt").exists(),
        "the denied command ran"
    );
    assert!(tool_answer(&mock, "Claude Code").contains("superuser"));
    // The staged MCP servers' tools are offered to the model (Claude Code
    // lists MCP tools as deferred ones, by name).
    let first = chat_requests(&mock)[0].body.to_string();
    assert!(
        first.contains("mcp__copilot-bridge__copilot_read_file"),
        "the staged MCP servers are not in Claude's request: {}",
        &first[..first.len().min(3000)]
    );
    // Nothing of it stayed in the user's configuration.
    assert!(!home.path().join(".claude/settings.json").exists());
}

#[tokio::test]
async fn claude_code_launched_via_the_hub_answers_through_the_facade() {
    let Some(program) = agent_cli("claude", "claude") else {
        return;
    };
    let mock = MockLlm::start(vec![MockReply::chunks(["Hello ", "from the mock."])]).await;
    let served = serve_with(&mock, TempWorkspace::new());
    let home = tempfile::tempdir().unwrap();
    let command = launch(
        served.workspace.path(),
        home.path(),
        served.state(),
        &program,
        // A bare prompt first, as a user types it after `--`.
        &[
            "claude",
            "--via-hub",
            "--",
            "Say hello",
            "-p",
            "--output-format",
            "json",
        ],
        &claude_env(home.path(), None),
    );
    let (stdout, _) = run_agent(command, "launch claude --via-hub").await;
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(result["result"], "Hello from the mock.", "{result}");
    // The daemon's backend (OpenAI wire) got the request.
    assert!(
        chat_requests(&mock)
            .iter()
            .all(|request| request.path.ends_with("/chat/completions"))
    );
}

#[tokio::test]
async fn the_copilot_cli_launched_gets_our_hooks_through_a_staged_plugin() {
    let Some(program) = agent_cli("copilot", "copilot") else {
        return;
    };
    let mock = mock_asking("bash", DANGEROUS).await;
    let workspace = TempWorkspace::new();
    let home = tempfile::tempdir().unwrap();
    let bridge_home = tempfile::tempdir().unwrap();
    let _stop = StopDaemon(bridge_home.path());
    // No permission flag: the nested rules add --allow-all-tools
    // --allow-all-paths, and our hook still denies.
    let command = launch(
        workspace.path(),
        home.path(),
        bridge_home.path(),
        &program,
        &["copilot", "--", "-p", "Run the command"],
        &copilot_env(home.path(), Some(&mock)),
    );
    run_agent(command, "launch copilot").await;
    assert!(
        !workspace.path().join("pwned.txt").exists(),
        "the denied command ran"
    );
    assert!(tool_answer(&mock, "Copilot CLI").contains("superuser"));
    assert!(!home.path().join(".copilot/hooks").exists());
}

#[tokio::test]
async fn the_copilot_cli_launched_via_the_hub_answers_through_the_facade_with_the_providers_tools()
{
    let Some(program) = agent_cli("copilot", "copilot") else {
        return;
    };
    let mock = MockLlm::start(vec![MockReply::chunks(["Hello ", "from the mock."])]).await;
    let served = serve_with(&mock, TempWorkspace::new());
    // A provider of the daemon's default session: the staged extension
    // offers its tool (COPILOT_BRIDGE_SESSION names that session).
    let (_provider, _) = bridge_testkit::ProviderClient::register(
        &served.ws_url(),
        &served.provider_token(),
        "hub-tools",
        json!({"tools": [{"name": "hub_echo", "description": "Echoes through the hub",
                          "parameters": {"type": "object", "properties": {}}}]}),
    )
    .await
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut env = copilot_env(home.path(), None);
    env.push(("COPILOT_BRIDGE_SESSION", "default".to_owned()));
    let command = launch(
        served.workspace.path(),
        home.path(),
        served.state(),
        &program,
        &["copilot", "--via-hub", "--", "-p", "Say hello"],
        &env,
    );
    let (stdout, _) = run_agent(command, "launch copilot --via-hub").await;
    assert!(stdout.contains("Hello from the mock."), "{stdout}");
    let first = &chat_requests(&mock)[0].body;
    // No COPILOT_MODEL: the daemon's default backend's own model.
    assert_eq!(first["model"], "mock-model");
    assert!(first["tools"].to_string().contains("hub_echo"), "{first}");
}

/// `copilot-bridge approvals ARGS` against the daemon of `bridge_home`.
fn approvals(bridge_home: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    bridge_command(home, bridge_home)
        .arg("approvals")
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test]
async fn claude_p_launched_sends_its_permission_prompt_to_the_hubs_queue() {
    let Some(program) = agent_cli("claude", "claude") else {
        return;
    };
    // Our policy asks about `touch`; Claude Code, told "ask" by our hook
    // and running without a terminal, asks its permission-prompt tool.
    let mock = mock_asking("Bash", "touch approved.txt").await;
    let served = super::serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "90")],
    );
    let workspace = TempWorkspace::new();
    let home = tempfile::tempdir().unwrap();
    let command = launch(
        workspace.path(),
        home.path(),
        served.state(),
        &program,
        &[
            "claude",
            "--",
            "-p",
            "Make the file",
            "--output-format",
            "json",
        ],
        &claude_env(home.path(), Some(mock.base_url())),
    );
    let run = tokio::spawn(run_agent(command, "launch claude -p"));
    let mut id = None;
    for _ in 0..1200 {
        let listed = approvals(served.state(), home.path(), &["list", "--json"]);
        let asks: Value = serde_json::from_slice(&listed.stdout).unwrap_or(json!([]));
        if let Some(ask) = asks.as_array().and_then(|asks| asks.first()) {
            assert_eq!(ask["arguments"]["command"], "touch approved.txt", "{ask}");
            assert_eq!(ask["tool"], "Bash", "{ask}");
            assert!(
                ask["reason"].as_str().unwrap().contains("needs approval"),
                "{ask}"
            );
            id = ask["id"].as_str().map(str::to_owned);
            break;
        }
        assert!(!run.is_finished(), "Claude Code ended without asking");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let id = id.expect("Claude Code's permission prompt reached the queue");
    assert!(
        !workspace.path().join("approved.txt").exists(),
        "it waits for the answer"
    );
    let allowed = approvals(served.state(), home.path(), &["allow", &id]);
    assert!(
        allowed.status.success(),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    let (stdout, _) = run.await.unwrap();
    assert!(
        workspace.path().join("approved.txt").exists(),
        "the approved command ran: {stdout}"
    );
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(result["result"], "done", "{result}");
}

#[tokio::test]
async fn a_daemon_launch_started_for_the_run_exits_once_idle() {
    let Some(program) = agent_cli("claude", "claude") else {
        return;
    };
    let mock = MockLlm::start(vec![MockReply::chunks(["Hello ", "from the mock."])]).await;
    let workspace = TempWorkspace::new();
    let home = tempfile::tempdir().unwrap();
    let bridge_home = tempfile::tempdir().unwrap();
    let _stop = StopDaemon(bridge_home.path());
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let mut env = claude_env(home.path(), None);
    env.extend([
        ("COPILOT_BRIDGE_PORT", "0".to_owned()),
        ("COPILOT_BRIDGE_IDLE_EXIT_SECS", "1".to_owned()),
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OLLAMA_HOST", dead_url),
        ("COPILOT_BYOK_PROVIDER", "openai".to_owned()),
        ("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url())),
        ("COPILOT_BYOK_API_KEY", "sk-upstream".to_owned()),
        ("COPILOT_BYOK_MODEL", "mock-model".to_owned()),
    ]);
    let command = launch(
        workspace.path(),
        home.path(),
        bridge_home.path(),
        &program,
        &[
            "claude",
            "--via-hub",
            "--",
            "Say hello",
            "-p",
            "--output-format",
            "json",
        ],
        &env,
    );
    let (stdout, _) = run_agent(command, "launch claude --via-hub").await;
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(result["result"], "Hello from the mock.", "{result}");
    // The daemon it started goes once idle, its state file with it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while bridge_home.path().join("gateway.json").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon launch started is still running"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
