//! What the daemon gives OpenClaw and takes from it, without a gateway:
//! `/mcp/code?workspace=DIR` (the entry `openclaw register` writes) works
//! in that directory, and every session has the `openclaw_*` tools, which
//! say clearly that no gateway is connected and search memory locally.

use serde_json::{Value, json};

use crate::support::{McpHttp, Setup, TestDaemon};

/// `/mcp/code?workspace=DIR`, `DIR` query-encoded as `register` writes it.
fn code_path(dir: &std::path::Path) -> String {
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("workspace", &dir.display().to_string())
        .finish();
    format!("/mcp/code?{query}")
}

fn parse(answer: &str) -> Value {
    serde_json::from_str(answer).unwrap_or_else(|err| panic!("{err}: {answer}"))
}

#[tokio::test]
async fn the_code_server_works_in_the_workspace_its_url_names() {
    let daemon = TestDaemon::with(Setup::default().file("daemon-only.txt", "daemon\n")).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let agent_dir = elsewhere.path().join("agent workspace");
    std::fs::create_dir_all(agent_dir.join("notes")).unwrap();
    std::fs::write(agent_dir.join("notes/todo.md"), "- ship it\n").unwrap();

    let mut mcp = McpHttp::connect(&daemon, &code_path(&agent_dir)).await;
    let listed = parse(&mcp.call("copilot_list_files", json!({})).await);
    let text = listed["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("notes/todo.md"), "{listed}");
    assert!(!text.contains("daemon-only.txt"), "{listed}");
    let read = parse(
        &mcp.call("copilot_read_file", json!({"path": "notes/todo.md"}))
            .await,
    );
    assert!(
        read["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("ship it"),
        "{read}"
    );
    // Outside the named workspace is outside: the daemon's own files too.
    let escaped = parse(
        &mcp.call(
            "copilot_read_file",
            json!({"path": daemon.workspace.path().join("daemon-only.txt")}),
        )
        .await,
    );
    assert_eq!(escaped["result"]["isError"], true, "{escaped}");

    // A second client of the same workspace shares its session.
    let mut again = McpHttp::connect(&daemon, &code_path(&agent_dir)).await;
    again.call("copilot_list_files", json!({})).await;
    let sessions = daemon.rpc("session.list", json!({})).await;
    let ours: Vec<&Value> = sessions["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["label"] == "MCP · agent workspace")
        .collect();
    assert_eq!(ours.len(), 1, "{sessions}");
    assert!(ours[0]["id"].as_str().unwrap().starts_with("workspace-"));

    // Not an absolute directory: refused by name, the server still serves.
    let mut relative = McpHttp::connect(&daemon, "/mcp/code?workspace=relative/dir").await;
    let refused = parse(&relative.call("copilot_list_files", json!({})).await);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("must be an absolute directory"),
        "{refused}"
    );
    let missing = elsewhere.path().join("nope");
    let mut gone = McpHttp::connect(&daemon, &code_path(&missing)).await;
    let failed = parse(&gone.call("copilot_list_files", json!({})).await);
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert!(
        failed["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("cannot open the workspace"),
        "{failed}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn without_a_gateway_the_openclaw_tools_say_so_and_memory_is_searched_here() {
    let openclaw_workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        openclaw_workspace.path().join("MEMORY.md"),
        "# MEMORY\n\n- The staging deploy uses helm.\n",
    )
    .unwrap();
    std::fs::write(
        openclaw_workspace.path().join("USER.md"),
        "# USER\n\nPrefers short answers about the deploy.\nGitHub: ghp_abcdefghijklmnopqrstuvwxyz0123456789\n",
    )
    .unwrap();
    let daemon = TestDaemon::with(Setup::default().env(
        "OPENCLAW_WORKSPACE_DIR",
        openclaw_workspace.path().display().to_string(),
    ))
    .await;
    let health = daemon.health().await;
    assert_eq!(health["openclaw"], json!({"state": "off"}));

    let tools = daemon
        .rpc("session.tools.list", json!({"session": "default"}))
        .await;
    let owners: Vec<(&str, &str)> = tools["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| Some((t["name"].as_str()?, t["owner"].as_str()?)))
        .filter(|(name, _)| name.starts_with("openclaw_"))
        .collect();
    assert_eq!(
        owners,
        [
            ("openclaw_agent_ask", "service:openclaw"),
            ("openclaw_memory_read", "service:openclaw"),
            ("openclaw_memory_search", "service:openclaw"),
            ("openclaw_sessions", "service:openclaw"),
            ("openclaw_user_prefs", "service:openclaw"),
        ]
    );

    let call = |name: &'static str, arguments: Value| {
        daemon.rpc(
            "session.tools.call",
            json!({"session": "default", "name": name, "arguments": arguments}),
        )
    };
    let asked = call("openclaw_agent_ask", json!({"message": "hello"})).await;
    assert_eq!(asked["error"]["data"]["code"], "UNAVAILABLE", "{asked}");
    assert!(
        asked["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no OpenClaw gateway connection here"),
        "{asked}"
    );
    // Bad arguments are refused as such, before anything is tried.
    for (name, arguments, fragment) in [
        ("openclaw_agent_ask", json!({}), "message is required"),
        (
            "openclaw_agent_ask",
            json!({"message": "x", "timeoutSeconds": 0}),
            "timeoutSeconds",
        ),
        ("openclaw_sessions", json!({"limit": 1000}), "limit"),
        (
            "openclaw_sessions",
            json!({"everything": true}),
            "unknown argument",
        ),
        ("openclaw_memory_search", json!({"query": ""}), "query"),
        (
            "openclaw_memory_search",
            json!({"query": "x", "agentId": "../etc"}),
            "agentId",
        ),
    ] {
        let refused = call(name, arguments.clone()).await;
        assert_eq!(
            refused["error"]["data"]["code"], "invalid_arguments",
            "{name} {arguments}: {refused}"
        );
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains(fragment),
            "{name} {arguments}: {refused}"
        );
    }

    let found = call("openclaw_memory_search", json!({"query": "deploy"})).await;
    let answer = &found["result"]["result"];
    assert_eq!(answer["source"], "local index", "{found}");
    assert!(
        answer["reason"]
            .as_str()
            .unwrap()
            .contains("no OpenClaw gateway connection here"),
        "{found}"
    );
    let paths: Vec<&str> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|hit| hit["path"].as_str())
        .collect();
    assert!(paths.contains(&"MEMORY.md"), "{found}");
    assert!(paths.contains(&"USER.md"), "{found}");
    let hit = &answer["results"][0];
    assert!(hit["startLine"].as_u64().unwrap() >= 1, "{hit}");
    assert!(
        hit["endLine"].as_u64() >= hit["startLine"].as_u64(),
        "{hit}"
    );

    // A note whole, and the user's preferences: redacted, and in the audit log.
    let read = call("openclaw_memory_read", json!({})).await;
    let text = read["result"]["result"].as_str().unwrap();
    assert!(text.contains("The staging deploy uses helm."), "{read}");
    let prefs = call("openclaw_user_prefs", json!({})).await;
    let text = prefs["result"]["result"].as_str().unwrap();
    assert!(text.contains("Prefers short answers"), "{prefs}");
    assert!(
        !text.contains("ghp_"),
        "a token in USER.md is redacted: {prefs}"
    );
    let escaped = call("openclaw_memory_read", json!({"file": "../secrets.md"})).await;
    assert!(escaped["error"]["message"].is_string(), "{escaped}");
    let too_deep = call("openclaw_memory_read", json!({"_depth": 3})).await;
    assert_eq!(too_deep["error"]["data"]["code"], "too_deep", "{too_deep}");
    let audit = daemon.audit_text();
    for tool in ["openclaw_memory_read", "openclaw_user_prefs"] {
        assert!(audit.contains(tool), "{tool} is audited: {audit}");
    }
    assert!(!audit.contains("ghp_"), "{audit}");

    // The memory server lists the gateway's tools only with a gateway.
    let mut memory = McpHttp::connect(&daemon, "/mcp/memory").await;
    let names = memory.tool_names().await;
    assert_eq!(
        names,
        [
            "openclaw_memory_search",
            "openclaw_memory_read",
            "openclaw_user_prefs"
        ]
    );
    daemon.stop().await;
}

#[tokio::test]
async fn the_memory_servers_gateway_tools_pass_the_sessions_policy() {
    // A gateway is configured but nothing listens there.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}", dead.local_addr().unwrap());
    drop(dead);
    let daemon = TestDaemon::with(
        Setup::default()
            .env("OPENCLAW_GATEWAY_URL", url.clone())
            .config_toml("[permissions]\nblocked_tools = ['openclaw_sessions']\n"),
    )
    .await;
    let health = daemon.health().await;
    assert_eq!(health["openclaw"]["url"], url, "{health}");
    assert_ne!(health["openclaw"]["state"], "connected", "{health}");

    let mut memory = McpHttp::connect(&daemon, "/mcp/memory").await;
    let names = memory.tool_names().await;
    assert!(
        names.contains(&"openclaw_agent_ask".to_owned()),
        "{names:?}"
    );
    // The session's rules apply on this door too: a blocked tool is not
    // offered, and named anyway it is refused as blocked.
    assert!(
        !names.contains(&"openclaw_sessions".to_owned()),
        "{names:?}"
    );
    let denied = parse(&memory.call("openclaw_sessions", json!({})).await);
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    let text = denied["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("blocked"), "{denied}");
    // Not connected: said so, as a result the agent reads.
    let asked = parse(
        &memory
            .call("openclaw_agent_ask", json!({"message": "hi"}))
            .await,
    );
    assert_eq!(asked["result"]["isError"], true, "{asked}");
    assert!(
        asked["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(&url),
        "{asked}"
    );
    let refused = parse(&memory.call("openclaw_agent_ask", json!({})).await);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // Both calls reached the session: they are in its audit log.
    let audit = daemon.audit_text();
    assert!(audit.contains("openclaw_sessions"), "{audit}");
    daemon.stop().await;
}
