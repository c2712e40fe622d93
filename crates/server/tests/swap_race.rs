//! The symlink swap race against the daemon's doors: `/rpc`
//! (`session.tools.call`), the tool bus (`mcp.*`) and the MCP code server
//! over streamable HTTP (`/mcp/code`). While a thread keeps exchanging a
//! workspace directory with a symlink to a directory outside, every door
//! keeps reading, listing, searching and writing through that directory:
//! no answer may carry outside content or names, and nothing outside may
//! be created or changed.

use std::time::{Duration, Instant};

use bridge_testkit::SwapRace;
use bridge_testkit::swap_race::{OUTSIDE_MARKER, SHARED_TEXT};
use serde_json::{Value, json};

use crate::support::{McpHttp, Setup, TestDaemon};

/// How long each door is raced.
const RACE_FOR: Duration = Duration::from_millis(1000);

/// One door: sends a call and returns the answer as text.
type Door<'a> = Box<dyn FnMut(u64) -> futures::future::BoxFuture<'a, String> + 'a>;

/// Calls `door` until `RACE_FOR` has passed; panics on any answer with
/// outside content. Returns the number of calls and how many were served
/// (their answer contains `served`): the race must not simply refuse
/// everything.
async fn race(name: &str, served: &str, mut door: Door<'_>) -> (u64, u64) {
    let started = Instant::now();
    let (mut calls, mut inside) = (0, 0);
    let mut last = String::new();
    while started.elapsed() < RACE_FOR {
        let answer = door(calls).await;
        assert!(
            !answer.contains(OUTSIDE_MARKER) && !answer.contains("outside-only"),
            "{name} leaked outside content on call {calls}: {answer}"
        );
        if answer.contains(served) {
            inside += 1;
        }
        calls += 1;
        last = answer;
    }
    assert!(
        inside > 0,
        "{name}: never served the inside file in {calls} calls; the last answer: {last}"
    );
    (calls, inside)
}

/// `session.tools.call` on `/rpc`: the answer as text.
async fn rpc_tool(daemon: &TestDaemon, tool: &str, arguments: Value) -> String {
    daemon
        .rpc(
            "session.tools.call",
            json!({"session": "default", "name": tool, "arguments": arguments}),
        )
        .await
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_door_reads_lists_or_writes_outside_under_the_swap_race() {
    let daemon = TestDaemon::with(Setup::default().config_toml("read_only = false\n")).await;
    let ws = daemon.workspace.path().to_path_buf();
    let mut swap = SwapRace::start(&ws);
    let d = &daemon;
    let mut results = Vec::new();

    results.push((
        "rpc read_file",
        race(
            "rpc read_file",
            SHARED_TEXT,
            Box::new(move |_| Box::pin(rpc_tool(d, "read_file", json!({"path": "sub/f.md"})))),
        )
        .await,
    ));
    results.push((
        "rpc list_files",
        race(
            "rpc list_files",
            "sub/f.md",
            Box::new(move |_| Box::pin(rpc_tool(d, "list_files", json!({"path": "sub"})))),
        )
        .await,
    ));
    results.push((
        "rpc search_code",
        race(
            "rpc search_code",
            "\"result\"",
            Box::new(move |_| {
                Box::pin(rpc_tool(d, "search_code", json!({"query": OUTSIDE_MARKER})))
            }),
        )
        .await,
    ));
    results.push((
        "rpc create_file",
        race(
            "rpc create_file",
            "\"result\"",
            Box::new(move |i| {
                Box::pin(rpc_tool(
                    d,
                    "create_file",
                    json!({"path": format!("sub/new-{i}.txt"), "content": "x"}),
                ))
            }),
        )
        .await,
    ));
    results.push((
        "rpc edit_file",
        race(
            "rpc edit_file",
            "\"result\"",
            Box::new(move |_| {
                Box::pin(rpc_tool(
                    d,
                    "edit_file",
                    json!({"path": "sub/f.md", "oldString": SHARED_TEXT,
                           "newString": format!("{SHARED_TEXT}!")}),
                ))
            }),
        )
        .await,
    ));
    results.push((
        "rpc apply_patch",
        race(
            "rpc apply_patch",
            "\"ok\":true",
            Box::new(move |i| {
                let diff = format!("--- /dev/null\n+++ b/sub/p-{i}.txt\n@@ -0,0 +1 @@\n+p\n");
                Box::pin(rpc_tool(d, "apply_patch", json!({"unifiedDiff": diff})))
            }),
        )
        .await,
    ));
    results.push((
        "tool bus mcp.fs.read",
        race(
            "tool bus mcp.fs.read",
            SHARED_TEXT,
            Box::new(move |_| {
                Box::pin(async move {
                    d.rpc("mcp.fs.read", json!({"path": "sub/f.md"}))
                        .await
                        .to_string()
                })
            }),
        )
        .await,
    ));

    let mcp = std::sync::Arc::new(tokio::sync::Mutex::new(
        McpHttp::connect(d, "/mcp/code").await,
    ));
    for (tool, served, make) in [
        (
            "copilot_read_file",
            SHARED_TEXT,
            (|_| json!({"path": "sub/f.md"})) as fn(u64) -> Value,
        ),
        (
            "copilot_list_files",
            "f.md",
            |_| json!({"directory": "sub"}),
        ),
        (
            "copilot_create_file",
            "\"isError\":false",
            |i| json!({"path": format!("sub/mcp-{i}.txt"), "content": "m"}),
        ),
    ] {
        let mcp = mcp.clone();
        let name = format!("/mcp/code {tool}");
        let outcome = race(
            &name,
            served,
            Box::new(move |i| {
                let mcp = mcp.clone();
                Box::pin(async move { mcp.lock().await.call(tool, make(i)).await })
            }),
        )
        .await;
        results.push(("/mcp/code", outcome));
    }

    let swaps = swap.stop();
    swap.assert_outside_untouched();
    assert!(swaps > 1000, "the race barely ran: {swaps} swaps");
    for (door, (calls, _)) in &results {
        assert!(*calls > 10, "{door}: only {calls} calls");
    }
    // The writes that succeeded are all inside (under either name of the
    // real directory).
    let inside_files = std::fs::read_dir(ws.join("sub")).unwrap().count();
    assert!(inside_files > 1, "no write landed inside");
}
