//! The symlink swap race against the memory server: while a directory of
//! the memory root keeps trading places with a symlink to a directory
//! outside it, reads and searches never return outside notes.

use std::time::{Duration, Instant};

use bridge_mcp::memory::{MemoryLayout, MemoryServer};
use bridge_testkit::SwapRace;
use bridge_testkit::swap_race::{OUTSIDE_MARKER, SHARED_TEXT};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_reads_and_searches_stay_inside_under_the_swap_race() {
    let root = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("MEMORY.md"), "# Memory\nnothing here\n").unwrap();
    let mut swap = SwapRace::start(&root_path);
    let server = MemoryServer::new(MemoryLayout::memory_dir(&root_path, "test"));
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    let call = |tool: &'static str, args: Value| {
        let mut params = CallToolRequestParams::new(tool);
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let client = &client;
        async move { serde_json::to_string(&client.call_tool(params).await.unwrap()).unwrap() }
    };

    let started = Instant::now();
    let (mut calls, mut served) = (0, 0);
    while started.elapsed() < Duration::from_millis(1500) {
        let read = call("openclaw_memory_read", json!({"file": "sub/f.md"})).await;
        // The query is a word of the outside note, not the whole marker, so
        // the answer echoing the query is no false alarm.
        let search = call("openclaw_memory_search", json!({"query": "secret"})).await;
        for answer in [&read, &search] {
            assert!(
                !answer.contains(OUTSIDE_MARKER) && !answer.contains("outside-only"),
                "call {calls} leaked outside content: {answer}"
            );
        }
        if read.contains(SHARED_TEXT) {
            served += 1;
        }
        calls += 1;
    }
    assert!(swap.stop() > 1000, "the race barely ran");
    swap.assert_outside_untouched();
    assert!(calls > 10, "only {calls} rounds");
    assert!(
        served > 0,
        "the inside note was never served in {calls} rounds"
    );
}
