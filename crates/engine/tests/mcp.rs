//! MCP servers end to end: the workspace's `mcp-test-server` over stdio
//! and streamable HTTP, its tools called through `Session::call_tool`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bridge_config::McpServerConfig;
use bridge_engine::mcp_client::{McpManager, McpOptions, ServerState};
use bridge_engine::{
    CallOrigin, RegistrySettings, Session, SessionDefaults, SessionRegistry, SessionSpec, ToolOwner,
};
use bridge_policy::{PermissionPolicy, PermissionRules};
use bridge_testkit::TempWorkspace;

fn mcp_test_server() -> std::path::PathBuf {
    bridge_testkit::built_binary("mcp-test-server")
}
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn fast() -> McpOptions {
    McpOptions {
        initial_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
        max_restarts: 3,
        stable_after: Duration::from_secs(60),
        shutdown_grace: Duration::from_millis(500),
    }
}

fn stdio(args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        command: Some(mcp_test_server().display().to_string()),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        timeout_secs: 5,
        startup_timeout_secs: 10,
        ..McpServerConfig::default()
    }
}

fn servers(list: Vec<(&str, McpServerConfig)>) -> BTreeMap<String, McpServerConfig> {
    list.into_iter().map(|(n, c)| (n.to_owned(), c)).collect()
}

async fn start(list: Vec<(&str, McpServerConfig)>) -> McpManager {
    McpManager::start(&servers(list), fast(), CancellationToken::new()).await
}

fn session_with(workspace: &TempWorkspace, rules: PermissionRules) -> Arc<Session> {
    let defaults = SessionDefaults {
        permission: PermissionPolicy::compile(&rules).unwrap(),
        ..SessionDefaults::restrictive().unwrap()
    };
    let registry = SessionRegistry::new(defaults, RegistrySettings::default());
    registry
        .create(SessionSpec {
            id: Some("s".to_owned()),
            label: "s".to_owned(),
            cwd: workspace.path().to_path_buf(),
            foreground: false,
            door: bridge_engine::Door::Rpc,
        })
        .unwrap()
}

async fn call(
    session: &Session,
    tool: &str,
    args: Value,
) -> Result<Value, bridge_engine::ToolFailure> {
    session
        .call_tool(tool, args, CallOrigin::Engine)
        .await
        .result
}

fn text(value: &Value) -> &str {
    value["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn stdio_tools_are_listed_called_and_policed_through_the_session() {
    let workspace = TempWorkspace::new();
    let manager = start(vec![("test", stdio(&[]))]).await;
    let rules = PermissionRules {
        blocked_tools: vec!["test__fail".to_owned()],
        ..PermissionRules::default()
    };
    let session = session_with(&workspace, rules);
    manager.register_into(&session).unwrap();

    let status = &manager.status()[0];
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    for tool in ["test__echo", "test__add", "test__slow", "test__dotted_name"] {
        assert!(
            status.tools.iter().any(|t| t == tool),
            "{tool} in {:?}",
            status.tools
        );
        let entry = session.tool(tool).unwrap();
        assert_eq!(entry.owner, ToolOwner::Mcp("test".to_owned()));
    }
    let echo = session.tool("test__echo").unwrap();
    assert_eq!(echo.spec.description, "Echo the text back");
    assert_eq!(
        echo.spec.input_schema["properties"]["text"]["type"],
        "string"
    );

    let echoed = call(&session, "test__echo", json!({"text": "hello"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "hello");
    let sum = call(&session, "test__add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(text(&sum), "42");
    let dotted = call(&session, "test__dotted_name", json!({}))
        .await
        .unwrap();
    assert_eq!(
        text(&dotted),
        "dotted",
        "the original name reaches the server"
    );

    let denied = call(&session, "test__fail", json!({})).await.unwrap_err();
    assert_eq!(denied.code, "policy_denied", "{denied}");

    let image = call(&session, "test__image", json!({})).await.unwrap();
    assert_eq!(image["content"][1]["type"], "image");
    assert_eq!(image["content"][1]["mimeType"], "image/png");

    let big = call(&session, "test__big", json!({"n": 2_000_000}))
        .await
        .unwrap();
    assert_eq!(text(&big).len(), 2_000_000);

    let bad = call(&session, "test__add", json!({"a": "x"}))
        .await
        .unwrap_err();
    assert_eq!(bad.code, "mcp_tool_error", "{bad}");
    assert!(bad.message.contains("invalid type"), "{bad}");
    assert_eq!(bad.details.unwrap()["server"], "test");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_tool_error_result_is_a_failure_with_its_text() {
    let workspace = TempWorkspace::new();
    let manager = start(vec![("test", stdio(&[]))]).await;
    let session = session_with(&workspace, PermissionRules::default());
    manager.register_into(&session).unwrap();
    let failure = call(&session, "test__fail", json!({"message": "disk full"}))
        .await
        .unwrap_err();
    assert_eq!(failure.code, "mcp_tool_error");
    assert_eq!(failure.message, "disk full");
    manager.shutdown().await;
}

#[tokio::test]
async fn include_and_exclude_filters_decide_the_offered_tools() {
    let workspace = TempWorkspace::new();
    let manager = start(vec![(
        "test",
        McpServerConfig {
            tools: vec!["e*".to_owned(), "add".to_owned(), "nosuch".to_owned()],
            exclude_tools: vec!["env".to_owned()],
            ..stdio(&[])
        },
    )])
    .await;
    let session = session_with(&workspace, PermissionRules::default());
    manager.register_into(&session).unwrap();
    let status = &manager.status()[0];
    assert_eq!(status.tools, ["test__add", "test__echo"]);
    assert!(
        status
            .warnings
            .iter()
            .any(|w| w.contains("\"nosuch\" matches no tool")),
        "{:?}",
        status.warnings
    );
    let names: Vec<String> = session
        .tools()
        .iter()
        .map(|t| t.spec.name.clone())
        .collect();
    assert!(
        !names.iter().any(|n| n == "test__env" || n == "test__slow"),
        "{names:?}"
    );
    let unknown = call(&session, "test__slow", json!({"ms": 1}))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, "unknown_tool");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_fails_cleanly_then_the_server_restarts() {
    let workspace = TempWorkspace::new();
    let manager = start(vec![("test", stdio(&[]))]).await;
    let session = session_with(&workspace, PermissionRules::default());
    manager.register_into(&session).unwrap();

    let started = Instant::now();
    let crashed = call(&session, "test__crash", json!({"code": 7}))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(4), "failed at once");
    assert_eq!(crashed.code, "mcp_unavailable", "{crashed}");
    assert!(crashed.message.contains("MCP server 'test'"), "{crashed}");
    assert!(
        crashed.message.contains("exited with status 7"),
        "{crashed}"
    );

    assert!(
        manager
            .wait_for_state("test", ServerState::Ready, Duration::from_secs(10))
            .await
    );
    let status = &manager.status()[0];
    assert_eq!(status.restarts, 1, "{status:?}");
    let echoed = call(&session, "test__echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "back");
    manager.shutdown().await;
}

#[tokio::test]
async fn garbage_on_stdout_is_a_clear_error_not_a_hang() {
    let workspace = TempWorkspace::new();
    let manager = start(vec![("test", stdio(&[]))]).await;
    let session = session_with(&workspace, PermissionRules::default());
    manager.register_into(&session).unwrap();

    let started = Instant::now();
    let failure = call(&session, "test__garbage", json!({}))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "no hang: {:?}",
        started.elapsed()
    );
    assert_eq!(failure.code, "mcp_unavailable", "{failure}");
    assert!(failure.message.contains("non-JSON to stdout"), "{failure}");
    assert!(
        failure.message.contains("just garbage"),
        "names what it wrote: {failure}"
    );

    assert!(
        manager
            .wait_for_state("test", ServerState::Ready, Duration::from_secs(10))
            .await
    );
    let echoed = call(&session, "test__echo", json!({"text": "ok"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "ok");
    manager.shutdown().await;
}

#[tokio::test]
async fn calls_fail_cleanly_while_a_server_restarts_and_it_gives_up_in_the_end() {
    let workspace = TempWorkspace::new();
    // Prints a banner on stdout before serving: every start breaks the
    // transport, so the server never becomes ready.
    let manager = start(vec![
        ("noisy", stdio(&["--banner", "Server starting..."])),
        ("test", stdio(&[])),
    ])
    .await;
    let noisy = manager.wait_for_state("noisy", ServerState::Failed, Duration::from_secs(10));
    assert!(noisy.await, "{:?}", manager.status());
    let status = manager
        .status()
        .into_iter()
        .find(|s| s.name == "noisy")
        .unwrap();
    let error = status.last_error.unwrap();
    assert!(error.contains("gave up after 4 attempts"), "{error}");
    assert!(error.contains("Server starting..."), "{error}");
    assert_eq!(status.restarts, 3);
    let session = session_with(&workspace, PermissionRules::default());
    manager.register_into(&session).unwrap();
    let echoed = call(&session, "test__echo", json!({"text": "fine"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "fine", "other servers are unaffected");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_missing_binary_fails_with_the_reason_and_others_work() {
    let workspace = TempWorkspace::new();
    let missing = McpServerConfig {
        command: Some("/nonexistent/mcp-server-binary".to_owned()),
        ..stdio(&[])
    };
    let exits = stdio(&["--exit-on-start", "9", "--stderr", "config missing"]);
    let manager = start(vec![
        ("gone", missing),
        ("exits", exits),
        ("test", stdio(&[])),
    ])
    .await;
    let status: BTreeMap<String, _> = manager
        .status()
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect();
    assert_eq!(status["gone"].state, ServerState::Failed);
    let reason = status["gone"].last_error.clone().unwrap();
    assert!(
        reason.contains("cannot start \"/nonexistent/mcp-server-binary\""),
        "{reason}"
    );
    assert_eq!(status["test"].state, ServerState::Ready);
    assert!(
        manager
            .wait_for_state("exits", ServerState::Failed, Duration::from_secs(10))
            .await
    );
    let exits = manager
        .status()
        .into_iter()
        .find(|s| s.name == "exits")
        .unwrap();
    let reason = exits.last_error.unwrap();
    assert!(reason.contains("exited with status 9"), "{reason}");
    assert!(
        reason.contains("config missing"),
        "stderr is quoted: {reason}"
    );

    let session = session_with(&workspace, PermissionRules::default());
    manager.register_into(&session).unwrap();
    assert!(
        session
            .tools()
            .iter()
            .all(|t| !t.spec.name.starts_with("gone__"))
    );
    let echoed = call(&session, "test__echo", json!({"text": "x"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "x");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_slow_call_times_out_and_the_server_stays_usable() {
    let workspace = TempWorkspace::new();
    let manager = start(vec![(
        "test",
        McpServerConfig {
            timeout_secs: 1,
            ..stdio(&[])
        },
    )])
    .await;
    let session = session_with(&workspace, PermissionRules::default());
    manager.register_into(&session).unwrap();
    let started = Instant::now();
    let failure = call(&session, "test__slow", json!({"ms": 10_000}))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(failure.code, "mcp_timeout", "{failure}");
    assert!(failure.message.contains("within 1 s"), "{failure}");
    let echoed = call(&session, "test__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "still here");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_answers_the_handshake_does_not_block_startup() {
    let manager = McpManager::start(
        &servers(vec![(
            "hang",
            McpServerConfig {
                startup_timeout_secs: 1,
                ..stdio(&["--hang-on-start"])
            },
        )]),
        McpOptions {
            max_restarts: 0,
            ..fast()
        },
        CancellationToken::new(),
    )
    .await;
    let status = &manager.status()[0];
    assert_ne!(status.state, ServerState::Ready);
    assert!(
        manager
            .wait_for_state("hang", ServerState::Failed, Duration::from_secs(5))
            .await
    );
    let error = manager.status()[0].last_error.clone().unwrap();
    assert!(error.contains("within 1 s"), "{error}");
    manager.shutdown().await;
}

#[tokio::test]
async fn env_is_minimal_plus_configured_with_references_expanded() {
    let workspace = TempWorkspace::new();
    let config = McpServerConfig {
        env: BTreeMap::from([("GREETING".to_owned(), "hi ${WHO}".to_owned())]),
        ..stdio(&[])
    };
    let env = Arc::new(|name: &str| match name {
        "WHO" => Some("there".to_owned()),
        "SECRET_OF_THE_BRIDGE" => Some("s3cret".to_owned()),
        "PATH" => std::env::var("PATH").ok(),
        _ => None,
    });
    let manager = McpManager::start_with_env(
        &servers(vec![("test", config)]),
        fast(),
        CancellationToken::new(),
        env,
    )
    .await;
    let session = session_with(&workspace, PermissionRules::default());
    manager.register_into(&session).unwrap();
    let greeting = call(&session, "test__env", json!({"name": "GREETING"}))
        .await
        .unwrap();
    assert_eq!(text(&greeting), "hi there");
    let secret = call(
        &session,
        "test__env",
        json!({"name": "SECRET_OF_THE_BRIDGE"}),
    )
    .await
    .unwrap();
    assert_eq!(
        text(&secret),
        "(unset)",
        "the bridge's own variables are not inherited"
    );
    manager.shutdown().await;

    let unset = McpServerConfig {
        env: BTreeMap::from([("TOKEN".to_owned(), "${NOT_SET_ANYWHERE}".to_owned())]),
        ..stdio(&[])
    };
    let manager = start(vec![("test", unset)]).await;
    let status = &manager.status()[0];
    assert_eq!(status.state, ServerState::Failed);
    let error = status.last_error.clone().unwrap();
    assert!(
        error.contains("env TOKEN: ${NOT_SET_ANYWHERE} is not set"),
        "{error}"
    );
}

#[tokio::test]
async fn shutdown_ends_the_server_processes() {
    let manager = start(vec![("test", stdio(&[]))]).await;
    let workspace = TempWorkspace::new();
    let session = session_with(&workspace, PermissionRules::default());
    manager.register_into(&session).unwrap();
    manager.shutdown().await;
    assert_eq!(manager.status()[0].state, ServerState::Stopped);
    let failure = call(&session, "test__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert_eq!(failure.code, "mcp_unavailable");
    assert!(failure.message.contains("shut down"), "{failure}");
}

#[tokio::test]
async fn streamable_http_servers_serve_tools_too() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(mcp_test_server())
        .arg("--http")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = line.strip_prefix("LISTENING ").unwrap().to_owned();
    let config = McpServerConfig {
        transport: Some(bridge_config::McpTransport::Http),
        url: Some(url),
        headers: BTreeMap::from([("X-Test".to_owned(), "1".to_owned())]),
        timeout_secs: 5,
        startup_timeout_secs: 10,
        ..McpServerConfig::default()
    };
    let manager = start(vec![("web", config)]).await;
    let status = &manager.status()[0];
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    let workspace = TempWorkspace::new();
    let session = session_with(&workspace, PermissionRules::default());
    manager.register_into(&session).unwrap();
    let sum = call(&session, "web__add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(text(&sum), "3");
    manager.shutdown().await;
    child.kill().await.unwrap();
}
