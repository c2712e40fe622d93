//! The memory server through a real MCP client (rmcp), in-process over a
//! duplex pipe and over streamable HTTP: tools, ranking on a generated 10k
//! corpus, containment, `_depth`, and bad input that must not stop it.

use std::path::Path;

use bridge_mcp::memory::{LayoutKind, MemoryLayout, MemoryServer};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::{ErrorData, ServiceExt};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ()>;

pub(crate) async fn connect(server: MemoryServer) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("client connects")
}

pub(crate) async fn call(
    client: &Client,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(map) = args {
        params = params.with_arguments(map);
    }
    client.call_tool(params).await
}

pub(crate) async fn ok(client: &Client, tool: &str, args: Value) -> CallToolResult {
    call(client, tool, args).await.expect("the call succeeds")
}

pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn mcp_error(outcome: Result<CallToolResult, ServiceError>) -> ErrorData {
    match outcome {
        Err(ServiceError::McpError(err)) => err,
        other => panic!("expected an MCP error, got {other:?}"),
    }
}

pub(crate) fn write(root: &Path, name: &str, contents: &str) {
    let path = root.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

/// A small workspace in the layout current OpenClaw uses.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "MEMORY.md",
        "# Long-term memory\n\nThe user deploys with Helm.\nPrefers Rust for tooling.\n",
    );
    write(root, "USER.md", "# User\n- name: Ada\n- tabs: never\n");
    write(root, "AGENTS.md", "# Agent rules, not memory\n");
    write(
        root,
        "memory/2026-01-10.md",
        "# 2026-01-10\n\n## Deploys\nstaging deploy failed on helm upgrade\nrolled back\n",
    );
    write_fix_and_topic_notes(root);
    dir
}

/// The day note that fixed the staging deploy and the Rust topic note,
/// which the memory tests search for.
pub(crate) fn write_fix_and_topic_notes(root: &Path) {
    write(
        root,
        "memory/2026-01-11.md",
        "# 2026-01-11\n\nfixed the staging deploy: helm chart values\n",
    );
    write(
        root,
        "memory/topics/rust.md",
        "# Rust\nasync runtimes: tokio\n",
    );
}

pub(crate) fn server_for(dir: &Path) -> MemoryServer {
    MemoryServer::new(MemoryLayout::for_directory(dir, "--workspace"))
}

pub(crate) fn results(result: &CallToolResult) -> Vec<Value> {
    result.structured_content.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn lists_the_three_read_only_tools_each_taking_depth() {
    let dir = workspace();
    let client = connect(server_for(dir.path())).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "openclaw_memory_search",
            "openclaw_memory_read",
            "openclaw_user_prefs"
        ]
    );
    for tool in &tools {
        assert_eq!(
            tool.input_schema["properties"]["_depth"]["type"], "integer",
            "{}",
            tool.name
        );
        assert_eq!(
            tool.annotations.as_ref().unwrap().read_only_hint,
            Some(true)
        );
    }
    assert_eq!(tools[0].input_schema["required"], json!(["query"]));
    assert_eq!(tools[0].input_schema["properties"]["limit"]["default"], 5);
}

#[tokio::test]
async fn search_ranks_notes_and_gives_file_line_and_snippet() {
    let dir = workspace();
    let client = connect(server_for(dir.path())).await;
    let result = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "staging deploy"}),
    )
    .await;
    assert_eq!(result.is_error, Some(false));
    let hits = results(&result);
    let files: Vec<&str> = hits
        .iter()
        .map(|hit| hit["file"].as_str().unwrap())
        .collect();
    // Both daily notes hold both terms; the newer (and shorter) one first.
    assert_eq!(files, ["memory/2026-01-11.md", "memory/2026-01-10.md"]);
    assert_eq!(hits[0]["line"], 3);
    assert_eq!(
        hits[0]["snippet"],
        "fixed the staging deploy: helm chart values"
    );
    assert_eq!(hits[0].get("heading"), Some(&json!("2026-01-11")));
    assert_eq!(hits[1]["line"], 4);
    assert_eq!(hits[1]["snippet"], "staging deploy failed on helm upgrade");
    assert_eq!(hits[1]["heading"], "Deploys");
    assert!(text(&result).contains("2. memory/2026-01-10.md:4 (under \"Deploys\")"));

    let limited = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "helm", "limit": 1}),
    )
    .await;
    assert_eq!(results(&limited).len(), 1);
    assert_eq!(limited.structured_content.as_ref().unwrap()["matched"], 3);

    // USER.md is searched (as OpenClaw's own memory search does);
    // AGENTS.md, not a memory note, is not.
    let user = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "Ada agent rules"}),
    )
    .await;
    let found: Vec<Value> = results(&user)
        .iter()
        .map(|hit| hit["path"].clone())
        .collect();
    assert_eq!(found, [json!("USER.md")]);
    let none = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "agent rules"}),
    )
    .await;
    assert!(results(&none).is_empty());
    assert!(text(&none).starts_with("No note matches"));
}

#[tokio::test]
async fn search_sees_edits_new_and_deleted_notes() {
    let dir = workspace();
    let client = connect(server_for(dir.path())).await;
    let first = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "zeppelin"}),
    )
    .await;
    assert!(results(&first).is_empty());
    write(
        dir.path(),
        "memory/topics/rust.md",
        "# Rust\nzeppelin crate evaluated, too big for us\n",
    );
    write(dir.path(), "memory/2026-02-01.md", "zeppelin again\n");
    let second = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "zeppelin"}),
    )
    .await;
    let files: Vec<Value> = results(&second)
        .iter()
        .map(|hit| hit["file"].clone())
        .collect();
    assert_eq!(files.len(), 2);
    std::fs::remove_file(dir.path().join("memory/2026-02-01.md")).unwrap();
    let third = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "zeppelin"}),
    )
    .await;
    assert_eq!(results(&third)[0]["file"], "memory/topics/rust.md");
    assert_eq!(results(&third).len(), 1);
    // A note that is a symlink to a file outside memory/ but inside the
    // workspace: editing the target is seen too.
    write(dir.path(), "archive/old.md", "nothing yet\n");
    std::os::unix::fs::symlink(
        dir.path().join("archive/old.md"),
        dir.path().join("memory/current.md"),
    )
    .unwrap();
    assert!(
        results(
            &ok(
                &client,
                "openclaw_memory_search",
                json!({"query": "gondola"})
            )
            .await
        )
        .is_empty()
    );
    std::fs::write(dir.path().join("archive/old.md"), "gondola ride planned\n").unwrap();
    let linked = results(
        &ok(
            &client,
            "openclaw_memory_search",
            json!({"query": "gondola"}),
        )
        .await,
    );
    let files: Vec<&str> = linked
        .iter()
        .map(|hit| hit["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["memory/current.md"]);
}

#[tokio::test]
async fn read_defaults_to_memory_md_and_takes_what_search_reports() {
    let dir = workspace();
    let client = connect(server_for(dir.path())).await;
    let memory = ok(&client, "openclaw_memory_read", json!({})).await;
    assert_eq!(memory.is_error, Some(false));
    assert!(text(&memory).starts_with("# Long-term memory"));
    let daily = ok(
        &client,
        "openclaw_memory_read",
        json!({"file": "memory/2026-01-11.md"}),
    )
    .await;
    assert!(text(&daily).contains("helm chart values"));
    // A bare daily-note name is looked up under memory/.
    let bare = ok(
        &client,
        "openclaw_memory_read",
        json!({"file": "2026-01-11.md"}),
    )
    .await;
    assert_eq!(text(&bare), text(&daily));
    let missing = ok(
        &client,
        "openclaw_memory_read",
        json!({"file": "memory/2020-01-01.md"}),
    )
    .await;
    assert_eq!(missing.is_error, Some(true));
    assert!(text(&missing).contains("no memory file \"memory/2020-01-01.md\""));
}

#[tokio::test]
async fn traversal_and_escapes_are_refused() {
    let dir = workspace();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.md", "the launch codes\n");
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        dir.path().join("memory/link.md"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("memory/linkdir")).unwrap();
    write(dir.path(), "memory/notes.txt", "not markdown");
    let inside = dir.path().join("memory/2026-01-10.md");
    std::os::unix::fs::symlink(&inside, dir.path().join("memory/alias.md")).unwrap();
    let client = connect(server_for(dir.path())).await;
    let secret = outside.path().join("secret.md").display().to_string();
    let attempts = [
        ("../secret.md", "has a `..` component"),
        ("memory/../../secret.md", "has a `..` component"),
        (secret.as_str(), "is absolute"),
        ("memory/a\0b.md", "null byte"),
        ("memory/notes.txt", "only .md files"),
        ("AGENTS.md", "is not a memory note"),
        ("memory/link.md", "symlink outside the memory root"),
        (
            "memory/linkdir/secret.md",
            "symlink outside the memory root",
        ),
        ("", "is empty"),
    ];
    for (file, why) in attempts {
        let result = ok(&client, "openclaw_memory_read", json!({"file": file})).await;
        assert_eq!(result.is_error, Some(true), "{file:?}");
        let message = text(&result);
        assert!(message.starts_with("refused: "), "{file:?}: {message}");
        assert!(message.contains(why), "{file:?}: {message}");
        assert!(!message.contains("launch codes"));
    }
    // A symlink that stays inside is fine, and the search never indexes
    // what lies outside.
    let alias = ok(
        &client,
        "openclaw_memory_read",
        json!({"file": "memory/alias.md"}),
    )
    .await;
    assert_eq!(alias.is_error, Some(false));
    let search = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "launch codes"}),
    )
    .await;
    assert!(results(&search).is_empty());
}

#[tokio::test]
async fn user_prefs_in_both_layouts() {
    let dir = workspace();
    let client = connect(server_for(dir.path())).await;
    let prefs = ok(&client, "openclaw_user_prefs", json!({})).await;
    assert_eq!(text(&prefs), "# User\n- name: Ada\n- tabs: never\n");

    // The design's layout: ~/.openclaw/memory/*.md and ~/.openclaw/USER.md.
    let home = tempfile::tempdir().unwrap();
    write(
        home.path(),
        ".openclaw/memory/MEMORY.md",
        "# Memory\nold layout note about gardening\n",
    );
    write(
        home.path(),
        ".openclaw/memory/plants.md",
        "tomatoes need sun\n",
    );
    let openclaw = bridge_config::OpenClawConfig::in_state_dir(home.path().join(".openclaw"));
    let layout = MemoryLayout::detect(None, &openclaw);
    assert_eq!(layout.kind, LayoutKind::MemoryDir);
    let client = connect(MemoryServer::new(layout)).await;
    let missing = ok(&client, "openclaw_user_prefs", json!({})).await;
    assert_eq!(missing.is_error, Some(false));
    assert!(text(&missing).starts_with("No user preferences recorded"));
    write(home.path(), ".openclaw/USER.md", "likes: terse answers\n");
    assert_eq!(
        text(&ok(&client, "openclaw_user_prefs", json!({})).await),
        "likes: terse answers\n"
    );
    assert!(text(&ok(&client, "openclaw_memory_read", json!({})).await).contains("gardening"));
    let hits = results(
        &ok(
            &client,
            "openclaw_memory_search",
            json!({"query": "tomatoes"}),
        )
        .await,
    );
    assert_eq!(hits[0]["file"], "plants.md");
    let up = ok(
        &client,
        "openclaw_memory_read",
        json!({"file": "../USER.md"}),
    )
    .await;
    assert_eq!(up.is_error, Some(true));
}

#[tokio::test]
async fn depth_three_is_an_error_result_for_every_tool() {
    let dir = workspace();
    let client = connect(server_for(dir.path())).await;
    for (tool, args) in [
        (
            "openclaw_memory_search",
            json!({"query": "helm", "_depth": 3}),
        ),
        ("openclaw_memory_read", json!({"_depth": 3})),
        ("openclaw_user_prefs", json!({"_depth": 7})),
    ] {
        let result = ok(&client, tool, args).await;
        assert_eq!(result.is_error, Some(true), "{tool}");
        assert!(text(&result).contains("reaches the limit of 3"), "{tool}");
    }
    let at_two = ok(
        &client,
        "openclaw_memory_search",
        json!({"query": "helm", "_depth": 2}),
    )
    .await;
    assert_eq!(at_two.is_error, Some(false));
}

#[tokio::test]
async fn bad_input_is_an_mcp_error_and_the_server_keeps_serving() {
    let dir = workspace();
    let client = connect(server_for(dir.path())).await;
    let cases = [
        ("no_such_tool", json!({}), "unknown tool"),
        (
            "openclaw_memory_search",
            json!({"query": 42}),
            "`query` must be a string",
        ),
        ("openclaw_memory_search", json!({}), "`query` is required"),
        (
            "openclaw_memory_search",
            json!({"query": "x", "limit": "many"}),
            "`limit` must be an integer",
        ),
        (
            "openclaw_memory_search",
            json!({"query": "x", "limit": 1000}),
            "from 1 to 50",
        ),
        (
            "openclaw_memory_search",
            json!({"query": "word ".repeat(400)}),
            "too long",
        ),
        (
            "openclaw_memory_read",
            json!({"file": ["MEMORY.md"]}),
            "`file` must be a string",
        ),
        (
            "openclaw_memory_read",
            json!({"file": "x".repeat(5000)}),
            "too long",
        ),
        (
            "openclaw_user_prefs",
            json!({"_depth": "2"}),
            "`_depth` must be a non-negative integer",
        ),
        (
            "openclaw_user_prefs",
            json!({"_depth": -1}),
            "`_depth` must be a non-negative integer",
        ),
        (
            "openclaw_user_prefs",
            json!({"verbose": true}),
            "unknown argument `verbose`",
        ),
    ];
    for (tool, args, why) in cases {
        let err = mcp_error(call(&client, tool, args).await);
        assert_eq!(err.code.0, -32602, "{tool}: {}", err.message);
        assert!(err.message.contains(why), "{tool}: {}", err.message);
    }
    let still = ok(&client, "openclaw_memory_search", json!({"query": "helm"})).await;
    assert_eq!(still.is_error, Some(false));
}

#[tokio::test]
async fn serves_over_streamable_http() {
    let dir = workspace();
    let layout = MemoryLayout::for_directory(dir.path(), "--workspace");
    let router =
        axum::Router::new().nest_service("/mcp/memory", bridge_mcp::memory::http_service(layout));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!(
        "http://{addr}/mcp/memory"
    ));
    let client = ().serve(transport).await.unwrap();
    assert_eq!(client.list_all_tools().await.unwrap().len(), 3);
    let hits = results(&ok(&client, "openclaw_memory_search", json!({"query": "tokio"})).await);
    assert_eq!(hits[0]["file"], "memory/topics/rust.md");
    assert_eq!(hits[0]["line"], 2);
    let err = mcp_error(call(&client, "openclaw_memory_read", json!({"file": 1})).await);
    assert_eq!(err.code.0, -32602);
    let prefs = ok(&client, "openclaw_user_prefs", json!({})).await;
    assert!(text(&prefs).contains("Ada"));
}
