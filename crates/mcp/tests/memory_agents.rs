//! Memory as OpenClaw keeps it: which workspace is the default agent's
//! (OpenClaw's order, read through bridge-config from a real openclaw.json),
//! other agents' workspaces through `agentId`, USER.md and DREAMS.md in the
//! search with OpenClaw's result fields, hostile ids refused, and
//! containment unchanged in another agent's workspace.

use std::path::{Path, PathBuf};

use bridge_config::{ConfigLoader, OpenClawConfig};
use bridge_mcp::memory::{LayoutKind, MemoryLayout, MemoryServer, search_local};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::memory::{call, connect, mcp_error, ok, results, text, write};

/// A user home with `~/.openclaw`, and a bridge state directory.
struct Home {
    home: TempDir,
    bridge: TempDir,
}

impl Home {
    fn new() -> Self {
        let home = Self {
            home: TempDir::new().unwrap(),
            bridge: TempDir::new().unwrap(),
        };
        std::fs::create_dir_all(home.state()).unwrap();
        home
    }

    fn state(&self) -> PathBuf {
        self.home.path().join(".openclaw")
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.home.path().join(relative)
    }

    fn openclaw_json(&self, text: &str) {
        std::fs::write(self.state().join("openclaw.json"), text).unwrap();
    }

    /// OpenClaw's configuration as the bridge loads it, with `env`.
    fn openclaw(&self, env: &[(&str, String)]) -> OpenClawConfig {
        let mut env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        env.push((
            "COPILOT_BRIDGE_HOME".to_owned(),
            self.bridge.path().display().to_string(),
        ));
        let config = ConfigLoader::with_env(env)
            .cwd(self.bridge.path())
            .user_home(Some(self.home.path().to_path_buf()))
            .load()
            .unwrap();
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        config.openclaw
    }

    fn detect(&self, env: &[(&str, String)]) -> MemoryLayout {
        MemoryLayout::detect(None, &self.openclaw(env))
    }
}

#[test]
fn the_default_agent_s_workspace_is_found_in_openclaw_s_order() {
    let home = Home::new();
    let state_ws = home.state().join("workspace");
    let env_ws = home.path("env-ws");
    let defaults_ws = home.path("defaults-ws");
    for dir in [&state_ws, &env_ws, &defaults_ws] {
        write(dir, "MEMORY.md", "note\n");
    }
    let env = [("OPENCLAW_WORKSPACE_DIR", env_ws.display().to_string())];
    // <state>/workspace when nothing names one.
    let layout = home.detect(&[]);
    assert_eq!(
        (layout.root.as_path(), layout.kind),
        (state_ws.as_path(), LayoutKind::Workspace)
    );
    assert_eq!(layout.reason, "<state>/workspace");
    // OPENCLAW_WORKSPACE_DIR over <state>/workspace.
    let layout = home.detect(&env);
    assert_eq!(layout.root, env_ws);
    assert_eq!(layout.reason, "OPENCLAW_WORKSPACE_DIR");
    // agents.defaults.workspace (JSON5, `~`) over OPENCLAW_WORKSPACE_DIR.
    home.openclaw_json(
        "{\n  // mine\n  agents: { defaults: { workspace: '~/defaults-ws', }, },\n}\n",
    );
    let layout = home.detect(&env);
    assert_eq!(layout.root, defaults_ws);
    assert_eq!(layout.reason, "agents.defaults.workspace");
    assert_eq!(layout.agent_id.as_deref(), Some("main"));
    // The --workspace flag over everything.
    let flag = home.path("flag-ws");
    write(&flag, "MEMORY.md", "x\n");
    let layout = MemoryLayout::detect(Some(&flag), &home.openclaw(&env));
    assert_eq!(layout.root, flag);
    // The older memory directory when the workspace found holds no memory.
    std::fs::remove_file(defaults_ws.join("MEMORY.md")).unwrap();
    write(&home.state(), "memory/old.md", "old layout\n");
    let layout = home.detect(&env);
    assert_eq!(layout.kind, LayoutKind::MemoryDir);
    assert_eq!(layout.root, home.state().join("memory"));
}

/// Three agents: `main` (default, in agents.defaults.workspace), `work`
/// (its own workspace) and `ops` (none configured: under the defaults').
fn agents() -> (Home, MemoryServer) {
    let home = Home::new();
    home.openclaw_json(
        r#"{
  agents: {
    defaults: { workspace: "~/main-ws" },
    list: [
      { id: "main", default: true },
      { id: "work", workspace: "~/work-ws" },
      { id: "ops" },
    ],
  },
}"#,
    );
    write(
        &home.path("main-ws"),
        "MEMORY.md",
        "# Main\nthe main agent keeps lighthouse notes\n",
    );
    write(&home.path("main-ws"), "USER.md", "# User\nname: Ada\n");
    write(
        &home.path("work-ws"),
        "MEMORY.md",
        "# Work\n\n## Deploys\nThe staging deploy uses blue-green switching\n",
    );
    write(
        &home.path("work-ws"),
        "USER.md",
        "# User\n- timezone: Europe/Berlin\n",
    );
    write(
        &home.path("work-ws"),
        "DREAMS.md",
        "# Dreams\n\nconsolidated: lighthouse keepers dream of tides\n",
    );
    write(
        &home.path("work-ws"),
        "memory/2026-11-22-standup.md",
        "standup\n\nblue-green deploy done\n",
    );
    let layout = home.detect(&[]);
    (home, MemoryServer::new(layout))
}

#[tokio::test]
async fn agent_id_selects_that_agent_s_workspace() {
    let (_home, server) = agents();
    let client = connect(server).await;
    let search = |args: Value| {
        let client = &client;
        async move { ok(client, "openclaw_memory_search", args).await }
    };
    let main = search(json!({"query": "lighthouse"})).await;
    let paths: Vec<Value> = results(&main)
        .iter()
        .map(|hit| hit["path"].clone())
        .collect();
    assert_eq!(paths, [json!("MEMORY.md")]);
    assert_eq!(main.structured_content.as_ref().unwrap()["agentId"], "main");
    // The same query in work's workspace finds its DREAMS.md instead.
    let work = search(json!({"query": "lighthouse", "agentId": "work"})).await;
    let hits = results(&work);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["path"], "DREAMS.md");
    assert_eq!(
        (hits[0]["startLine"].clone(), hits[0]["endLine"].clone()),
        (json!(3), json!(3))
    );
    assert_eq!(
        hits[0]["snippet"],
        "consolidated: lighthouse keepers dream of tides"
    );
    assert_eq!(work.structured_content.as_ref().unwrap()["agentId"], "work");
    // `main` named explicitly is the default agent.
    let named = search(json!({"query": "lighthouse", "agentId": "MAIN"})).await;
    assert_eq!(results(&named), results(&main));
    // Read and preferences follow agentId too.
    let read = ok(&client, "openclaw_memory_read", json!({"agentId": "work"})).await;
    assert!(text(&read).contains("blue-green"), "{}", text(&read));
    let dreams = ok(
        &client,
        "openclaw_memory_read",
        json!({"agentId": "work", "file": "DREAMS.md"}),
    )
    .await;
    assert!(text(&dreams).starts_with("# Dreams"));
    let prefs = ok(&client, "openclaw_user_prefs", json!({"agentId": "work"})).await;
    assert_eq!(text(&prefs), "# User\n- timezone: Europe/Berlin\n");
    // `ops` is listed but has no workspace yet: nothing there, said plainly.
    let ops = search(json!({"query": "anything", "agentId": "ops"})).await;
    assert_eq!(ops.is_error, Some(false));
    assert!(
        text(&ops).starts_with("No memory notes found in"),
        "{}",
        text(&ops)
    );
    assert!(text(&ops).contains("main-ws/ops"), "{}", text(&ops));
}

#[tokio::test]
async fn user_md_and_dreams_md_hits_carry_openclaw_s_fields() {
    let (_home, server) = agents();
    let client = connect(server).await;
    let found = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "timezone Berlin", "agentId": "work"}),
    )
    .await;
    let hit = &results(&found)[0];
    assert_eq!(hit["path"], "USER.md");
    assert_eq!(hit["startLine"], 2);
    assert_eq!(hit["endLine"], 2);
    assert_eq!(hit["snippet"], "- timezone: Europe/Berlin");
    assert_eq!(hit["source"], "memory");
    let score = hit["score"].as_f64().unwrap();
    assert!(score > 0.0 && score < 1.0, "{score}");
    // The names this tool used before stay, with the same values.
    assert_eq!(hit["file"], "USER.md");
    assert_eq!(hit["line"], 2);
    assert!(
        text(&found).contains("1. USER.md:2 (under \"User\")"),
        "{}",
        text(&found)
    );
    // A dated note with a slug, under a heading.
    let deploy = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "blue green deploy", "agentId": "work"}),
    )
    .await;
    let paths: Vec<Value> = results(&deploy)
        .iter()
        .map(|hit| hit["path"].clone())
        .collect();
    assert_eq!(
        paths,
        [json!("memory/2026-11-22-standup.md"), json!("MEMORY.md")]
    );
    assert_eq!(results(&deploy)[1]["startLine"], 4);
    assert_eq!(results(&deploy)[1]["heading"], "Deploys");
}

#[test]
fn search_local_has_the_shape_of_openclaw_s_results() {
    let (home, _server) = agents();
    let layout = home.detect(&[]).for_agent("work").unwrap();
    let hits = search_local(&layout, "staging deploy", 5);
    assert_eq!(hits[0].path, "MEMORY.md");
    let value = serde_json::to_value(&hits[0]).unwrap();
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["endLine", "path", "score", "snippet", "source", "startLine"]
    );
    assert_eq!(
        value["snippet"],
        "The staging deploy uses blue-green switching"
    );
    assert_eq!(
        (value["startLine"].clone(), value["endLine"].clone()),
        (json!(4), json!(4))
    );
    // The server's cached search of that agent gives the same hits.
    let server = MemoryServer::new(home.detect(&[]));
    let cached = server
        .search_agent(Some("work"), "staging deploy", 5)
        .unwrap();
    assert_eq!(cached.hits, hits);
}

#[tokio::test]
async fn hostile_and_unknown_agent_ids_are_refused_clearly() {
    let (home, server) = agents();
    let client = connect(server).await;
    for id in [
        json!("../x"),
        json!("a/b"),
        json!("..."),
        json!("x".repeat(300)),
        json!(""),
    ] {
        for tool in [
            "openclaw_memory_search",
            "openclaw_memory_read",
            "openclaw_user_prefs",
        ] {
            let mut args = json!({"agentId": id.clone()});
            if tool == "openclaw_memory_search" {
                args["query"] = json!("q");
            }
            let err = mcp_error(call(&client, tool, args).await);
            assert_eq!(err.code.0, -32602, "{tool} {id}: {}", err.message);
            assert!(
                err.message.contains("agentId"),
                "{tool} {id}: {}",
                err.message
            );
        }
    }
    // A well-formed id nobody configured and with no workspace on disk.
    let unknown = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "q", "agentId": "ghost"}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    let message = text(&unknown);
    assert!(
        message.starts_with("no OpenClaw agent \"ghost\""),
        "{message}"
    );
    assert!(message.contains("agents.list"), "{message}");
    assert!(message.contains("main-ws/ghost"), "{message}");
    assert!(!home.path("main-ws/ghost").exists(), "nothing is created");
    // Still serving.
    assert_eq!(
        ok(
            &client,
            "openclaw_memory_search",
            json!({"query": "lighthouse"})
        )
        .await
        .is_error,
        Some(false)
    );
}

#[tokio::test]
async fn a_server_of_one_directory_refuses_agent_ids() {
    let dir = TempDir::new().unwrap();
    write(dir.path(), "MEMORY.md", "x\n");
    let client = connect(MemoryServer::new(MemoryLayout::for_directory(
        dir.path(),
        "--workspace",
    )))
    .await;
    let refused = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "x", "agentId": "work"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("serves one directory"),
        "{}",
        text(&refused)
    );
}

#[tokio::test]
async fn containment_holds_in_another_agent_s_workspace() {
    let (home, server) = agents();
    let outside = TempDir::new().unwrap();
    write(outside.path(), "secret.md", "the launch codes\n");
    let work = home.path("work-ws");
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        work.join("memory/link.md"),
    )
    .unwrap();
    write(&work, "AGENTS.md", "agent rules, not memory\n");
    let client = connect(server).await;
    for (file, why) in [
        ("memory/link.md", "symlink outside the memory root"),
        ("../main-ws/MEMORY.md", "has a `..` component"),
        ("AGENTS.md", "is not a memory note"),
        (work.join("MEMORY.md").to_str().unwrap(), "is absolute"),
    ] {
        let result = ok(
            &client,
            "openclaw_memory_read",
            json!({"agentId": "work", "file": file}),
        )
        .await;
        assert_eq!(result.is_error, Some(true), "{file}");
        assert!(text(&result).contains(why), "{file}: {}", text(&result));
        assert!(!text(&result).contains("launch codes"));
    }
    let search = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "launch codes", "agentId": "work"}),
    )
    .await;
    assert!(results(&search).is_empty());
}

#[test]
fn layouts_of_agents_without_a_configuration_file() {
    // No openclaw.json: every agent id is under <state>, as OpenClaw puts it.
    let home = Home::new();
    write(
        &home.state(),
        "workspace-helper/memory/2026-01-02.md",
        "helper note\n",
    );
    let layout = home.detect(&[]);
    let helper = layout.for_agent("helper").unwrap();
    assert_eq!(helper.root, home.state().join("workspace-helper"));
    assert_eq!(helper.reason, "agent helper: <state>/workspace-<id>");
    assert!(layout.for_agent("nobody").is_err());
    assert_eq!(layout.for_agent("main").unwrap(), layout);
    assert!(Path::new(&helper.root).is_dir());
}
