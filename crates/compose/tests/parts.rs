//! What each composition function makes of a configuration: the registry
//! every host builds its sessions from, the runner of a task, the planning
//! backend.

use std::path::Path;
use std::sync::Arc;

use bridge_compose::{ComposeError, PlanningBackend};
use bridge_config::{BridgeConfig, ConfigLoader};
use bridge_engine::SessionSpec;
use bridge_engine::runner::RunnerKind;
use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::json;
use tempfile::TempDir;

/// The configuration `copilot-bridge` would load with `env` and `toml`
/// (config.toml), nothing of the developer's machine.
fn config(state: &Path, env: &[(&str, &str)], toml: Option<&str>) -> BridgeConfig {
    let mut all = vec![
        (
            "COPILOT_BRIDGE_HOME".to_owned(),
            state.display().to_string(),
        ),
        ("COPILOT_BRIDGE_NO_GH".to_owned(), "1".to_owned()),
        ("OLLAMA_HOST".to_owned(), "http://127.0.0.1:9".to_owned()),
    ];
    all.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    let mut loader = ConfigLoader::with_env(all)
        .cwd(state)
        .user_home(Some(state.to_path_buf()))
        .skip_dotenv();
    if let Some(text) = toml {
        std::fs::write(state.join("config.toml"), text).unwrap();
        loader = loader.config_file(state.join("config.toml"));
    }
    loader.load().unwrap()
}

fn byok(mock: &MockLlm) -> Vec<(&'static str, String)> {
    vec![
        ("COPILOT_BYOK_PROVIDER", "openai".to_owned()),
        ("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url())),
        ("COPILOT_BYOK_API_KEY", "sk-upstream".to_owned()),
        ("COPILOT_BYOK_MODEL", "mock-model".to_owned()),
    ]
}

#[tokio::test]
async fn a_composed_registry_gives_its_sessions_the_configured_policy_and_audit_log() {
    let state = TempDir::new().unwrap();
    let workspace = TempWorkspace::new();
    let audit = state.path().join("audit");
    let audit_dir = audit.display().to_string();
    let config = config(
        state.path(),
        &[("COPILOT_AUDIT_LOG_DIR", audit_dir.as_str())],
        Some("[permissions]\nblocked_tools = [\"shell\"]\n"),
    );
    let registry = bridge_compose::registry(&config, Arc::new(bridge_policy::DenyAll)).unwrap();
    let session = registry
        .create(SessionSpec {
            id: None,
            label: "test".to_owned(),
            cwd: workspace.path().to_path_buf(),
            foreground: true,
            door: bridge_engine::Door::Rpc,
        })
        .unwrap();
    assert!(session.guard().read_only(), "read-only by default");
    let refused = session
        .call_tool(
            "shell",
            json!({"command": "true"}),
            bridge_engine::CallOrigin::Cli,
        )
        .await
        .result
        .unwrap_err();
    assert_eq!(refused.code, "policy_denied", "{refused:?}");
    bridge_policy::audit::flush_all().unwrap();
    let written: Vec<_> = std::fs::read_dir(&audit).unwrap().flatten().collect();
    assert!(!written.is_empty(), "the call was audited in {audit_dir}");
}

#[tokio::test]
async fn an_invalid_permission_rule_is_a_configuration_error() {
    let state = TempDir::new().unwrap();
    // The loader refuses such a file; a configuration built another way
    // (a front end's own edits) is refused here too.
    let mut config = config(state.path(), &[], None);
    config.permissions.blocked_patterns = vec!["(unclosed".to_owned()];
    match bridge_compose::registry(&config, Arc::new(bridge_policy::DenyAll)) {
        Err(ComposeError::Config(reason)) => assert!(reason.contains("(unclosed"), "{reason}"),
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("an invalid pattern must not compose"),
    }
}

#[tokio::test]
async fn the_native_runner_runs_on_the_backend_validate_selects() {
    let mock = MockLlm::start(vec![MockReply::text("ok")]).await;
    let state = TempDir::new().unwrap();
    let env = byok(&mock);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let config = config(state.path(), &env, None);
    let built = bridge_compose::runner(&config, RunnerKind::Native)
        .await
        .unwrap();
    assert_eq!(built.backend, "openai");
    assert_eq!(built.runner.kind(), RunnerKind::Native);
    let planning = PlanningBackend::select(&config, None).await.unwrap();
    assert_eq!(
        (planning.name.as_str(), planning.model.as_deref()),
        ("openai", Some("mock-model"))
    );
    let asked = PlanningBackend::select(&config, Some("other".to_owned()))
        .await
        .unwrap();
    assert_eq!(asked.model.as_deref(), Some("other"));
}

#[tokio::test]
async fn without_a_backend_the_native_runner_says_which_settings_to_set() {
    let state = TempDir::new().unwrap();
    let config = config(state.path(), &[], None);
    match bridge_compose::runner(&config, RunnerKind::Native).await {
        Err(ComposeError::NoBackend(message)) => {
            assert!(message.contains("validate"), "{message}")
        }
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("no backend is configured"),
    }
    // An explicitly chosen provider that lacks its key says what to fix.
    let config = config_with(state.path(), &[("COPILOT_BYOK_PROVIDER", "anthropic")]);
    match bridge_compose::runner(&config, RunnerKind::Native).await {
        Err(ComposeError::NoBackend(message)) => assert!(
            message.contains("copilot-bridge validate") && message.contains("Fix the setting"),
            "{message}"
        ),
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("anthropic has no key"),
    }
    match bridge_compose::runner(&config, RunnerKind::Nested).await {
        Err(ComposeError::Unsupported(message)) => {
            assert!(message.contains("sub-tasks only"), "{message}")
        }
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("a nested runner is not run directly"),
    }
}

fn config_with(state: &Path, env: &[(&str, &str)]) -> BridgeConfig {
    config(state, env, None)
}

#[test]
fn openclaw_memory_is_offered_by_mode_workspace_and_the_daemon_s_gateway() {
    use bridge_compose::OpenClawMemory;
    let state = TempDir::new().unwrap();
    let workspace = TempDir::new().unwrap();
    let dir = workspace.path().display().to_string();
    let with_dir = [("OPENCLAW_WORKSPACE_DIR", dir.as_str())];

    // auto: nothing on this machine → nothing offered, and no listener.
    let nothing = OpenClawMemory::detect(&config(state.path(), &with_dir, None));
    assert!(!nothing.offered());
    assert!(nothing.session_tools(None).is_none());
    assert!(
        nothing.describe().contains("no OpenClaw workspace"),
        "{}",
        nothing.describe()
    );
    // ...but the daemon connecting to OpenClaw's gateway offers it.
    assert!(nothing.clone().with_gateway(true).offered());
    assert!(
        nothing
            .with_gateway(true)
            .describe()
            .contains("holds no notes yet")
    );

    std::fs::write(workspace.path().join("MEMORY.md"), "# MEMORY\n").unwrap();
    let found = OpenClawMemory::detect(&config(state.path(), &with_dir, None));
    assert!(found.offered());
    assert!(found.describe().contains(&dir), "{}", found.describe());
    assert!(found.describe().contains("memory = \"off\""));

    let off = [
        ("OPENCLAW_WORKSPACE_DIR", dir.as_str()),
        ("COPILOT_BRIDGE_OPENCLAW_MEMORY", "off"),
    ];
    let off = OpenClawMemory::detect(&config(state.path(), &off, None)).with_gateway(true);
    assert!(!off.offered());
    assert!(off.describe().contains("openclaw.memory is off"));
    // The daemon's gateway tools are given even with memory off.
    assert!(off.session_tools(Some(None)).is_some());

    let empty = TempDir::new().unwrap();
    let on = OpenClawMemory::detect(&config(
        state.path(),
        &[(
            "OPENCLAW_WORKSPACE_DIR",
            &empty.path().display().to_string(),
        )],
        Some("[openclaw]\nmemory = \"on\"\n"),
    ));
    assert!(on.offered());
}

#[tokio::test]
async fn a_task_registry_s_sessions_get_the_memory_tools_a_hook_s_do_not() {
    let state = TempDir::new().unwrap();
    let memory = TempDir::new().unwrap();
    std::fs::write(memory.path().join("USER.md"), "# USER\n").unwrap();
    let dir = memory.path().display().to_string();
    let config = config(
        state.path(),
        &[("OPENCLAW_WORKSPACE_DIR", dir.as_str())],
        None,
    );
    let ws = TempWorkspace::new();
    let spec = |id: &str| SessionSpec {
        id: Some(id.to_owned()),
        label: id.to_owned(),
        cwd: ws.path().to_path_buf(),
        foreground: true,
        door: bridge_engine::Door::Cli,
    };
    let deny: Arc<dyn bridge_policy::Approver> = Arc::new(bridge_policy::DenyAll);
    let task = bridge_compose::task_registry(&config, deny.clone())
        .unwrap()
        .create(spec("task"))
        .unwrap();
    for tool in [
        "openclaw_memory_read",
        "openclaw_memory_search",
        "openclaw_user_prefs",
    ] {
        assert!(task.tool(tool).is_some(), "{tool}");
    }
    let hook = bridge_compose::registry(&config, deny)
        .unwrap()
        .create(spec("hook"))
        .unwrap();
    assert!(hook.tool("openclaw_memory_search").is_none());
}
