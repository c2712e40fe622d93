//! A session's own OpenClaw tools served to an agent CLI for one run
//! (`bridge_mcp::session::ServiceToolsForAgent`): over real streamable
//! HTTP on a loopback port, only with the run's bearer token, only that
//! service's tools, every call through the session, and gone when the
//! run's value is dropped.

use std::sync::Arc;

use bridge_engine::runner::served_tools::SessionToolServer;
use bridge_engine::{SessionDefaults, SessionRegistry, SessionSpec};
use bridge_mcp::memory::{MemoryLayout, MemoryServer};
use bridge_mcp::openclaw::{GatewayTools, SessionTools, ToolSet};
use bridge_mcp::session::ServiceToolsForAgent;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `host:port` of an `http://` URL.
fn address_of(url: &str) -> String {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned()
}

/// The status line of a bare `initialize` POST to `url` with `headers`.
async fn status_of(url: &str, headers: &str) -> String {
    let address = address_of(url);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_s_agent_reaches_the_session_s_openclaw_tools_only_with_its_token() {
    let memory = tempfile::tempdir().unwrap();
    std::fs::write(
        memory.path().join("MEMORY.md"),
        "# MEMORY\n\n- The staging cluster deploys with helm.\n",
    )
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let registry =
        SessionRegistry::new(SessionDefaults::restrictive().unwrap(), Default::default());
    let spec = |id: &str| SessionSpec {
        id: Some(id.to_owned()),
        label: id.to_owned(),
        cwd: workspace.path().to_path_buf(),
        foreground: false,
        door: bridge_engine::Door::Cli,
    };
    // A session made before the listener has no OpenClaw tools: no server.
    let bare = registry.create(spec("bare")).unwrap();
    let server = ServiceToolsForAgent::new(bridge_mcp::openclaw::OWNER, "openclaw");
    assert!(server.serve(&bare).await.unwrap().is_none());

    let tools = GatewayTools::new(
        None,
        MemoryServer::new(MemoryLayout::workspace(memory.path(), "test")),
    );
    registry.add_listener(Arc::new(SessionTools::new(
        tools,
        ToolSet {
            gateway: false,
            memory: true,
        },
    )));
    let session = registry.create(spec("run")).unwrap();
    let served = server.serve(&session).await.unwrap().unwrap();
    assert_eq!(served.name, "openclaw");
    assert!(
        served.url.starts_with("http://127.0.0.1:"),
        "{}",
        served.url
    );
    let bearer = served.headers["authorization"].clone();

    // No token, or another: refused before MCP.
    assert!(status_of(&served.url, "").await.contains(" 401 "));
    assert!(
        status_of(&served.url, "Authorization: Bearer run-guessed\r\n")
            .await
            .contains(" 401 ")
    );

    // With the run's token: the memory tools, and a call through the session.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = StreamableHttpClientTransportConfig::with_uri(served.url.clone());
    config.auth_header = Some(bearer.trim_start_matches("Bearer ").to_owned());
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "openclaw_memory_read",
            "openclaw_memory_search",
            "openclaw_user_prefs"
        ]
    );
    let mut events = session.subscribe();
    let read = client
        .call_tool(CallToolRequestParams::new("openclaw_memory_read"))
        .await
        .unwrap();
    let text = serde_json::to_string(&read.content).unwrap();
    assert!(text.contains("deploys with helm"), "{text}");
    // It went through the session's one path: its completion event.
    let mut completed = None;
    while let Ok(event) = events.try_recv() {
        if let bridge_engine::SessionEvent::ToolExecutionComplete { tool, decision, .. } = event {
            completed = Some((tool, decision));
        }
    }
    let (tool, decision) = completed.expect("a tool.execution_complete event");
    assert_eq!(tool, "openclaw_memory_read");
    assert!(decision.unwrap().is_allow());
    client.cancel().await.unwrap();

    // The run is over: nothing listens there any more.
    let address = address_of(&served.url);
    drop(served);
    let mut refused = false;
    for _ in 0..50 {
        if tokio::net::TcpStream::connect(&address).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(refused, "the server stops with the run");
}
