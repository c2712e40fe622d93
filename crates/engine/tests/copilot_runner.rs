//! The Copilot CLI runner against a scripted fake CLI (the testkit's
//! `fake-copilot-cli`) and, when installed, the real `@github/copilot`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bridge_engine::runner::copilot::{
    CliProvider, CopilotCliConfig, CopilotClient, McpServer, run_copilot,
};
use bridge_engine::runner::{RunRequest, RunStatus};
use bridge_engine::{RegistrySettings, Session, SessionDefaults, SessionRegistry, SessionSpec};
use bridge_llm::BackendKind;
use bridge_testkit::TempWorkspace;
use serde_json::Value;

use bridge_testkit::repo_root as workspace_root;

/// The fake CLI binary, built once per test process.
fn fake_cli() -> PathBuf {
    bridge_testkit::built_binary("fake-copilot-cli")
}

struct Fixture {
    _registry: SessionRegistry,
    workspace: TempWorkspace,
    session: Arc<Session>,
    record: PathBuf,
}

fn fixture() -> Fixture {
    let registry = SessionRegistry::new(
        SessionDefaults::restrictive().unwrap(),
        RegistrySettings {
            gate_timeout: Duration::from_millis(200),
            transform_timeout: Duration::from_millis(200),
            shutdown_deadline: Duration::from_millis(300),
        },
    );
    let workspace = TempWorkspace::new();
    std::fs::write(workspace.path().join("README.md"), "# Hello\n").unwrap();
    let session = registry
        .create(SessionSpec {
            id: Some("copilot-run".to_owned()),
            label: "copilot-run".to_owned(),
            cwd: workspace.path().to_path_buf(),
            foreground: false,
            door: bridge_engine::Door::Rpc,
        })
        .unwrap();
    let record = workspace.path().join(".fake-record.jsonl");
    Fixture {
        _registry: registry,
        workspace,
        session,
        record,
    }
}

fn config(fixture: &Fixture, script: &str) -> CopilotCliConfig {
    CopilotCliConfig {
        cli_path: Some(fake_cli()),
        env: vec![
            ("FAKE_COPILOT_SCRIPT".to_owned(), script.to_owned()),
            (
                "FAKE_COPILOT_RECORD".to_owned(),
                fixture.record.display().to_string(),
            ),
        ],
        request_timeout: Duration::from_secs(5),
        ..CopilotCliConfig::default()
    }
}

fn request(task: &str) -> RunRequest {
    RunRequest {
        task: task.to_owned(),
        model: None,
        max_turns: 10,
        timeout: Some(Duration::from_secs(20)),
    }
}

/// The messages the fake CLI received, by method.
fn received(fixture: &Fixture, method: &str) -> Vec<Value> {
    std::fs::read_to_string(&fixture.record)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|m| m["method"] == method)
        .collect()
}

#[tokio::test]
async fn handshake_ping_status_and_auth_status() {
    let fixture = fixture();
    let mut client = CopilotClient::start(&config(&fixture, "task"), fixture.workspace.path())
        .await
        .unwrap();
    assert_eq!(client.protocol_version(), Some(3));
    assert_eq!(client.ping("hi").await.unwrap(), "pong: hi");
    assert_eq!(client.status().await.unwrap().version, "fake-1.0");
    let auth = client.auth_status().await.unwrap();
    assert!(auth.authenticated);
    assert!(
        auth.user_message().contains("octocat"),
        "{}",
        auth.user_message()
    );
    client.close().await;
    assert_eq!(received(&fixture, "connect").len(), 1);
}

#[tokio::test]
async fn a_task_maps_events_hooks_and_usage_into_the_report() {
    let fixture = fixture();
    let report = run_copilot(
        &fixture.session,
        &request("summarize README"),
        &config(&fixture, "task"),
    )
    .await;
    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert_eq!(report.final_text, "The README says hello.");
    assert_eq!(report.turns, 1);
    assert_eq!(report.usage.prompt_tokens, 120);
    assert_eq!(report.usage.completion_tokens, 30);
    assert_eq!(report.usage.requests, 1);
    assert_eq!(report.tool_calls.len(), 1);
    assert!(report.tool_calls[0].ok);
    assert_eq!(report.tool_calls[0].name, "view");
    assert_eq!(report.tool_calls[0].summary, "# Hello");
    let create = &received(&fixture, "session.create")[0]["params"];
    assert_eq!(create["hooks"], true);
    assert_eq!(create["requestPermission"], true);
    assert_eq!(
        create["workingDirectory"],
        fixture.workspace.path().display().to_string()
    );
    let send = &received(&fixture, "session.send")[0]["params"];
    assert_eq!(send["prompt"], "summarize README");
    assert_eq!(send["sessionId"], create["sessionId"]);
    let answer = &received(
        &fixture,
        "session.permissions.handlePendingPermissionRequest",
    )[0];
    assert_eq!(answer["params"]["result"]["kind"], "approve-once");
}

#[tokio::test]
async fn our_policy_denies_a_tool_the_cli_asked_to_run() {
    let fixture = fixture();
    let mut config = config(&fixture, "task");
    config.env.push((
        "FAKE_COPILOT_TOOL_ARGS".to_owned(),
        r#"{"path":"/etc/passwd"}"#.to_owned(),
    ));
    let report = run_copilot(&fixture.session, &request("read the passwords"), &config).await;
    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert_eq!(report.final_text, "I was not allowed to read that file.");
    assert!(!report.tool_calls[0].ok);
    assert!(
        report.tool_calls[0].summary.starts_with("Denied: "),
        "{:?}",
        report.tool_calls[0]
    );
    let answer = &received(
        &fixture,
        "session.permissions.handlePendingPermissionRequest",
    )[0];
    assert_eq!(answer["params"]["result"]["kind"], "reject");
    assert!(
        answer["params"]["result"]["feedback"]
            .as_str()
            .unwrap()
            .contains("/etc/passwd")
            || !answer["params"]["result"]["feedback"]
                .as_str()
                .unwrap()
                .is_empty()
    );
    let timeline = fixture.session.timeline(10);
    assert!(
        timeline
            .iter()
            .any(|line| line.text.contains("denied view")),
        "{timeline:?}"
    );
}

#[tokio::test]
async fn byok_and_mcp_servers_are_in_the_session_config() {
    let fixture = fixture();
    let mut config = config(&fixture, "signed_out");
    config.provider = Some(
        CliProvider::from_settings(
            BackendKind::Ollama,
            None,
            Some("sk-test-key".into()),
            Some("llama3.2"),
        )
        .unwrap(),
    );
    config.mcp_servers.insert(
        "files".to_owned(),
        McpServer::Stdio {
            command: "mcp-files".to_owned(),
            args: vec!["--root".to_owned(), ".".to_owned()],
            env: Default::default(),
            cwd: None,
            tools: vec!["*".to_owned()],
        },
    );
    // Signed out, but BYOK needs no GitHub sign-in: the run goes ahead.
    let report = run_copilot(&fixture.session, &request("hello"), &config).await;
    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    let create = &received(&fixture, "session.create")[0]["params"];
    assert_eq!(create["provider"]["type"], "openai");
    assert_eq!(create["provider"]["baseUrl"], "http://localhost:11434/v1");
    assert_eq!(create["provider"]["apiKey"], "sk-test-key");
    assert_eq!(create["model"], "llama3.2");
    assert_eq!(create["mcpServers"]["files"]["type"], "stdio");
    assert_eq!(create["mcpServers"]["files"]["command"], "mcp-files");
    assert_eq!(create["mcpServers"]["files"]["tools"][0], "*");
}

#[tokio::test]
async fn signed_out_without_byok_fails_with_a_sign_in_message() {
    let fixture = fixture();
    let report = run_copilot(
        &fixture.session,
        &request("hello"),
        &config(&fixture, "signed_out"),
    )
    .await;
    assert_eq!(report.status, RunStatus::Failed);
    let error = report.error.unwrap();
    assert!(
        error.contains("signed out") && error.contains("/login"),
        "{error}"
    );
    assert!(received(&fixture, "session.create").is_empty());
}

#[tokio::test]
async fn the_cli_dying_mid_run_is_a_clear_error() {
    let fixture = fixture();
    let report = run_copilot(
        &fixture.session,
        &request("hello"),
        &config(&fixture, "die"),
    )
    .await;
    assert_eq!(report.status, RunStatus::Failed);
    let error = report.error.unwrap();
    assert!(
        error.contains("stopped before the task finished"),
        "{error}"
    );
    assert!(error.contains("exit status: 3"), "{error}");
    assert!(error.contains("ran out of memory"), "{error}");
}

#[tokio::test]
async fn garbage_output_is_a_clear_error_not_a_hang() {
    let fixture = fixture();
    let started = Instant::now();
    let report = run_copilot(
        &fixture.session,
        &request("hello"),
        &config(&fixture, "garbage"),
    )
    .await;
    assert_eq!(report.status, RunStatus::Failed);
    let error = report.error.unwrap();
    assert!(
        error.contains("not the Copilot SDK protocol") && error.contains("Welcome"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_cli_that_never_finishes_times_out() {
    let fixture = fixture();
    let mut request = request("hello");
    request.timeout = Some(Duration::from_millis(1500));
    let report = run_copilot(&fixture.session, &request, &config(&fixture, "hang")).await;
    assert_eq!(report.status, RunStatus::TimedOut, "{report:?}");
    assert!(report.duration_ms < 5000);
}

#[tokio::test]
async fn an_unsupported_protocol_version_is_refused() {
    let fixture = fixture();
    let err = CopilotClient::start(&config(&fixture, "old_protocol"), fixture.workspace.path())
        .await
        .err()
        .unwrap();
    assert!(err.0.contains("protocol 99"), "{err}");
}

#[tokio::test]
async fn a_missing_cli_says_how_to_install_it() {
    let fixture = fixture();
    let mut config = config(&fixture, "task");
    config.cli_path = Some(fixture.workspace.path().join("no-such-copilot"));
    let report = run_copilot(&fixture.session, &request("hello"), &config).await;
    assert_eq!(report.status, RunStatus::Failed);
    assert!(
        report
            .error
            .unwrap()
            .contains("npm install -g @github/copilot")
    );
}

/// The real CLI from npm (`scripts/install-test-deps.sh` installs it into
/// `.peers/copilot`): start, connect, ping, and the signed-out state with
/// its message, in a sandbox home without any token.
#[tokio::test]
async fn the_real_copilot_cli_starts_and_reports_signed_out() {
    let cli = workspace_root().join(".peers/copilot/node_modules/.bin/copilot");
    if !cli.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have the real Copilot CLI at {}: run scripts/install-test-deps.sh",
            cli.display()
        );
        eprintln!(
            "SKIPPED: the real Copilot CLI is not installed at {} (scripts/install-test-deps.sh)",
            cli.display()
        );
        return;
    }
    let fixture = fixture();
    let home = fixture.workspace.path().join(".home");
    std::fs::create_dir_all(&home).unwrap();
    let config = CopilotCliConfig {
        cli_path: Some(cli),
        env: vec![
            ("HOME".to_owned(), home.display().to_string()),
            (
                "XDG_CONFIG_HOME".to_owned(),
                home.join(".config").display().to_string(),
            ),
            (
                "XDG_STATE_HOME".to_owned(),
                home.join(".state").display().to_string(),
            ),
        ],
        env_remove: [
            "GH_TOKEN",
            "GITHUB_TOKEN",
            "COPILOT_GITHUB_TOKEN",
            "GH_HOST",
        ]
        .map(str::to_owned)
        .to_vec(),
        request_timeout: Duration::from_secs(30),
        ..CopilotCliConfig::default()
    };
    let mut client = CopilotClient::start(&config, fixture.workspace.path())
        .await
        .unwrap();
    assert_eq!(client.ping("bridge").await.unwrap(), "pong: bridge");
    let status = client.status().await.unwrap();
    assert!(!status.version.is_empty());
    let auth = client.auth_status().await.unwrap();
    assert!(!auth.authenticated, "{auth:?}");
    let message = auth.user_message();
    assert!(
        message.contains("signed out") && message.contains("/login"),
        "{message}"
    );
    client.close().await;
    // A task fails before any session with the same message, and no hang.
    let report = run_copilot(&fixture.session, &request("hello"), &config).await;
    assert_eq!(report.status, RunStatus::Failed);
    assert!(report.error.unwrap().contains("signed out"));
}

/// Runs this test binary again with secrets in its environment (setting
/// variables in-process is unsafe with threads) and lets the child check
/// which variables the Copilot CLI it starts can see.
#[test]
fn the_cli_gets_the_launcher_environment_and_no_secret_of_ours() {
    let token = format!("ghp_{}", "c".repeat(36));
    bridge_testkit::rerun_ignored_test_with_env(
        "copilot_runner::cli_environment_seen_from_inside",
        &[
            (
                "COPILOT_BRIDGE_TOKEN",
                "cb_0123456789abcdef0123456789abcdef",
            ),
            ("OPENAI_API_KEY", "sk-not-a-real-key"),
            ("GITHUB_TOKEN", &token),
            ("TAP_PROVIDER_TOKEN", "tap-secret"),
            ("XDG_CONFIG_HOME", "/tmp/xdg-config"),
            ("BRIDGE_TEST_VISIBLE", "1"),
        ],
    );
}

#[tokio::test]
#[ignore = "run by the_cli_gets_the_launcher_environment_and_no_secret_of_ours"]
async fn cli_environment_seen_from_inside() {
    assert!(
        std::env::var_os("BRIDGE_TEST_VISIBLE").is_some(),
        "run through the_cli_gets_the_launcher_environment_and_no_secret_of_ours"
    );
    let fixture = fixture();
    let config = CopilotCliConfig {
        github_token: Some("gho_explicitly_given".into()),
        ..config(&fixture, "task")
    };
    let report = run_copilot(&fixture.session, &request("read README.md"), &config).await;
    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    let environment = received(&fixture, "_environment");
    let names: Vec<&str> = environment[0]["params"]["names"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for expected in [
        "PATH",
        "XDG_CONFIG_HOME",
        "COPILOT_SDK_AUTH_TOKEN",
        "FAKE_COPILOT_SCRIPT",
    ] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    for secret in [
        "COPILOT_BRIDGE_TOKEN",
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "TAP_PROVIDER_TOKEN",
        "BRIDGE_TEST_VISIBLE",
        "CARGO_MANIFEST_DIR",
    ] {
        assert!(
            !names.contains(&secret),
            "{secret} reached the CLI: {names:?}"
        );
    }
}

#[tokio::test]
async fn a_permission_request_the_rules_ask_about_waits_in_the_approval_queue() {
    use bridge_engine::approvals::{Answer, ApprovalQueue, QueueApprover, QueueLimits};
    let queue = Arc::new(ApprovalQueue::new(QueueLimits::default()));
    let rules = bridge_policy::PermissionRules {
        ask_tools: vec!["view".to_owned()],
        ..bridge_policy::PermissionRules::default()
    };
    let defaults = SessionDefaults {
        permission: bridge_policy::PermissionPolicy::compile(&rules).unwrap(),
        approver: Arc::new(QueueApprover::new(queue.clone(), Duration::from_secs(20))),
        ..SessionDefaults::restrictive().unwrap()
    };
    let registry = SessionRegistry::new(defaults, RegistrySettings::default());
    let mut fixture = fixture();
    fixture.session = registry
        .create(SessionSpec {
            id: Some("copilot-asks".to_owned()),
            label: "copilot-asks".to_owned(),
            cwd: fixture.workspace.path().to_path_buf(),
            foreground: false,
            door: bridge_engine::Door::Rpc,
        })
        .unwrap();
    let session = fixture.session.clone();
    let config = config(&fixture, "task");
    let run =
        tokio::spawn(
            async move { run_copilot(&session, &request("summarize README"), &config).await },
        );
    // The CLI's permission request for `view` is put to a person.
    let deadline = Instant::now() + Duration::from_secs(20);
    let ask = loop {
        if let Some(ask) = queue.list(Some("copilot-asks")).into_iter().next() {
            break ask;
        }
        assert!(
            Instant::now() < deadline,
            "the CLI's request was never asked"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(ask.ask.tool, "view", "{ask:?}");
    assert!(!run.is_finished(), "the CLI waits for the answer");
    queue
        .answer(
            &ask.id,
            Answer {
                allow: true,
                scope: bridge_policy::Scope::Once,
                reason: None,
                surface: bridge_policy::Surface::Rpc,
            },
            None,
        )
        .unwrap();
    let report = run.await.unwrap();
    assert_eq!(report.status, RunStatus::Completed, "{report:?}");
    assert!(report.tool_calls[0].ok, "{report:?}");
    // The CLI asked twice (hook, then permission prompt); a person once.
    let (events, _) = queue.watch(0, Duration::ZERO).await;
    let asked = events.iter().filter(|e| e.kind == "requested").count();
    assert_eq!(asked, 1, "{events:?}");
    let answer = &received(
        &fixture,
        "session.permissions.handlePendingPermissionRequest",
    )[0];
    assert_eq!(answer["params"]["result"]["kind"], "approve-once");
}
