//! `copilot-bridge mcp memory` end to end: the official MCP Python SDK
//! (tests/peers/python/mcp_probe.py) lists and calls every tool over stdio
//! and over the daemon's `/mcp/memory`; traversal is refused; bad input
//! gets MCP errors while the server keeps serving; OpenClaw's own
//! openclaw.json picks the workspaces and `agentId` selects one.

use std::path::Path;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::cli_serve::Served;
use crate::support::{Bridge, mcp_probe as probe, python};

fn write(root: &Path, name: &str, contents: &str) {
    let path = root.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

/// An OpenClaw workspace (the layout current OpenClaw uses), plus a file
/// outside it and a symlink pointing there.
fn openclaw_workspace() -> (TempDir, TempDir) {
    let ws = TempDir::new().unwrap();
    let outside = TempDir::new().unwrap();
    write(
        ws.path(),
        "MEMORY.md",
        "# Memory\nThe user ships on Fridays.\n",
    );
    write(ws.path(), "USER.md", "# User\nname: Grace\n");
    write(
        ws.path(),
        "memory/2026-03-01.md",
        "# 2026-03-01\nreleased the parser rewrite\n",
    );
    write(
        ws.path(),
        "memory/2026-03-02.md",
        "# 2026-03-02\nparser bug: unicode escapes\nfixed the parser bug\n",
    );
    write(outside.path(), "secret.md", "outside the memory\n");
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        ws.path().join("memory/escape.md"),
    )
    .unwrap();
    (ws, outside)
}

fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

fn every_tool_and_bad_input(python: &Path, mode: &[&str], env: &[(&str, String)], home: &Path) {
    let results = probe(
        python,
        mode,
        env,
        home,
        json!([
            {"list": true},
            {"call": "openclaw_memory_search", "args": {"query": "parser bug"}},
            {"call": "openclaw_memory_search", "args": {"query": "parser", "limit": 1}},
            {"call": "openclaw_memory_read", "args": {}},
            {"call": "openclaw_memory_read", "args": {"file": "memory/2026-03-01.md"}},
            {"call": "openclaw_user_prefs", "args": {}},
            {"call": "openclaw_memory_read", "args": {"file": "../../etc/passwd.md"}},
            {"call": "openclaw_memory_read", "args": {"file": "memory/escape.md"}},
            {"call": "openclaw_memory_read", "args": {"file": "/etc/passwd"}},
            {"call": "openclaw_memory_search", "args": {"query": "parser", "_depth": 3}},
            {"call": "openclaw_no_such_tool", "args": {}},
            {"call": "openclaw_memory_search", "args": {"query": ["parser"]}},
            {"call": "openclaw_memory_search", "args": {"query": "x".repeat(2000)}},
            {"call": "openclaw_user_prefs", "args": {"_depth": "one"}},
            {"call": "openclaw_memory_search", "args": {"query": "Fridays"}}
        ]),
    );
    let tools = results[0]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "openclaw_memory_search",
            "openclaw_memory_read",
            "openclaw_user_prefs"
        ]
    );
    for tool in tools {
        assert_eq!(
            tool["inputSchema"]["properties"]["_depth"]["type"],
            "integer"
        );
    }
    let search = &results[1];
    assert_eq!(search["isError"], false, "{search}");
    let hits = search["structuredContent"]["results"].as_array().unwrap();
    assert_eq!(hits[0]["file"], "memory/2026-03-02.md");
    assert_eq!(hits[0]["line"], 2);
    assert_eq!(hits[0]["snippet"], "parser bug: unicode escapes");
    assert_eq!(hits[1]["file"], "memory/2026-03-01.md");
    assert_eq!(
        results[2]["structuredContent"]["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        first_text(&results[3]),
        "# Memory\nThe user ships on Fridays.\n"
    );
    assert_eq!(
        first_text(&results[4]),
        "# 2026-03-01\nreleased the parser rewrite\n"
    );
    assert_eq!(first_text(&results[5]), "# User\nname: Grace\n");
    for refused in &results[6..=8] {
        assert_eq!(refused["isError"], true, "{refused}");
        assert!(first_text(refused).starts_with("refused: "), "{refused}");
    }
    assert!(first_text(&results[7]).contains("symlink outside the memory root"));
    assert_eq!(results[9]["isError"], true);
    assert!(first_text(&results[9]).contains("limit of 3"));
    for bad in &results[10..=13] {
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
    }
    assert!(
        results[10]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown tool")
    );
    assert!(
        results[12]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too long")
    );
    // Still serving after all that.
    assert_eq!(
        results[14]["structuredContent"]["results"][0]["file"],
        "MEMORY.md"
    );
}

#[test]
fn the_python_sdk_calls_every_tool_over_stdio() {
    let Some(python) = python() else { return };
    let (ws, _outside) = openclaw_workspace();
    let bridge = Bridge::new();
    let exe = assert_cmd::cargo::cargo_bin("copilot-bridge")
        .display()
        .to_string();
    let flag = ws.path().display().to_string();
    // With the flag.
    let mode = [
        "stdio",
        "--",
        exe.as_str(),
        "mcp",
        "memory",
        "--workspace",
        flag.as_str(),
    ];
    every_tool_and_bad_input(&python, &mode, &[], bridge.state.path());
    // With OPENCLAW_WORKSPACE_DIR, OpenClaw's own name, instead (the
    // daemon's test below uses OPENCLAW_WORKSPACE, the older name).
    let mode = ["stdio", "--", exe.as_str(), "mcp", "memory"];
    every_tool_and_bad_input(
        &python,
        &mode,
        &[("OPENCLAW_WORKSPACE_DIR", flag.clone())],
        bridge.state.path(),
    );
}

#[test]
fn openclaw_json_chooses_the_workspaces_and_agent_id_selects_one() {
    let Some(python) = python() else { return };
    let bridge = Bridge::new();
    let home = bridge.state.path();
    write(
        home,
        ".openclaw/openclaw.json",
        "// OpenClaw's own file, JSON5\n{\n  agents: {\n    defaults: { workspace: '~/claw/main', },\n    list: [{ id: 'main', default: true }, { id: 'work', workspace: '~/claw/work' },],\n  },\n}\n",
    );
    write(
        home,
        "claw/main/MEMORY.md",
        "# Main\nthe main agent notes\n",
    );
    write(
        home,
        "claw/work/USER.md",
        "# User\n- prefers: short answers\n",
    );
    write(
        home,
        "claw/work/DREAMS.md",
        "# Dreams\n\nthe work agent dreams of short sprints\n",
    );
    // Not what OpenClaw's order picks: agents.defaults.workspace wins.
    write(
        home,
        ".openclaw/workspace/MEMORY.md",
        "# Stale\nnot this one\n",
    );
    let exe = assert_cmd::cargo::cargo_bin("copilot-bridge")
        .display()
        .to_string();
    let results = probe(
        &python,
        &["stdio", "--", exe.as_str(), "mcp", "memory"],
        &[],
        home,
        json!([
            {"call": "openclaw_memory_read", "args": {}},
            {"call": "openclaw_memory_search", "args": {"query": "short", "agentId": "work"}},
            {"call": "openclaw_user_prefs", "args": {"agentId": "work"}},
            {"call": "openclaw_memory_search", "args": {"query": "x", "agentId": "../etc"}},
            {"call": "openclaw_memory_search", "args": {"query": "x", "agentId": "nobody"}}
        ]),
    );
    assert_eq!(first_text(&results[0]), "# Main\nthe main agent notes\n");
    let hits = results[1]["structuredContent"]["results"]
        .as_array()
        .unwrap();
    let found: Vec<(&str, u64, u64)> = hits
        .iter()
        .map(|hit| {
            (
                hit["path"].as_str().unwrap(),
                hit["startLine"].as_u64().unwrap(),
                hit["endLine"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(found.len(), 2, "{hits:?}");
    assert!(found.contains(&("USER.md", 2, 2)), "{found:?}");
    assert!(found.contains(&("DREAMS.md", 3, 3)), "{found:?}");
    assert_eq!(
        first_text(&results[2]),
        "# User\n- prefers: short answers\n"
    );
    assert_eq!(results[3]["error"]["code"], -32602, "{}", results[3]);
    assert_eq!(results[4]["isError"], true, "{}", results[4]);
    assert!(first_text(&results[4]).starts_with("no OpenClaw agent \"nobody\""));
}

#[test]
fn the_layout_of_the_design_is_detected_under_home() {
    let Some(python) = python() else { return };
    let bridge = Bridge::new();
    let home = bridge.state.path();
    write(home, ".openclaw/memory/MEMORY.md", "# Memory\nold layout\n");
    write(home, ".openclaw/memory/garden.md", "tomatoes need sun\n");
    write(home, ".openclaw/USER.md", "likes: short answers\n");
    let exe = assert_cmd::cargo::cargo_bin("copilot-bridge")
        .display()
        .to_string();
    let results = probe(
        &python,
        &["stdio", "--", exe.as_str(), "mcp", "memory"],
        &[],
        home,
        json!([
            {"call": "openclaw_memory_search", "args": {"query": "tomatoes"}},
            {"call": "openclaw_memory_read", "args": {}},
            {"call": "openclaw_user_prefs", "args": {}}
        ]),
    );
    assert_eq!(
        results[0]["structuredContent"]["results"][0]["file"],
        "garden.md"
    );
    assert_eq!(first_text(&results[1]), "# Memory\nold layout\n");
    assert_eq!(first_text(&results[2]), "likes: short answers\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_calls_every_tool_over_streamable_http() {
    let Some(python) = python() else { return };
    let (ws, _outside) = openclaw_workspace();
    let ws_path = ws.path().display().to_string();
    let served = Served::start_in(
        Bridge::new(),
        bridge_testkit::TempWorkspace::new(),
        &[("OPENCLAW_WORKSPACE", ws_path.as_str())],
    );
    let refused = reqwest::Client::new()
        .post(served.url("/mcp/memory"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let url = served.url("/mcp/memory");
    tokio::task::spawn_blocking(move || {
        let home = TempDir::new().unwrap();
        let mode = ["http", url.as_str(), "--token", served.token.as_str()];
        every_tool_and_bad_input(&python, &mode, &[], home.path());
    })
    .await
    .unwrap();
}
