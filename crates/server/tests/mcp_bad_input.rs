//! What the MCP servers at `/mcp/{code,memory,session}` do with bad input:
//! malformed JSON, JSON that is no MCP message, oversized bodies, a wrong
//! content type — each a JSON-RPC error object with a fitting HTTP status,
//! while the next client's handshake still works.

use serde_json::{Value, json};

use crate::support::TestDaemon;

const SERVERS: [&str; 3] = ["/mcp/code", "/mcp/memory", "/mcp/session"];

/// POSTs `body` to `path` as an MCP client would (token, `Accept` of the
/// streamable HTTP transport): the status, the content type and the body.
async fn post(
    daemon: &TestDaemon,
    path: &str,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> (u16, String, String) {
    let response = daemon
        .http()
        .post(daemon.url(path))
        .bearer_auth(&daemon.token)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, kind, response.text().await.unwrap())
}

/// A JSON-RPC error object without an id; its code and message.
fn error_object(kind: &str, body: &str) -> (i64, String) {
    assert!(kind.starts_with("application/json"), "{kind}: {body}");
    let value: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(value["jsonrpc"], "2.0", "{value}");
    assert_eq!(value["id"], Value::Null, "{value}");
    let message = value["error"]["message"].as_str().unwrap().to_owned();
    (value["error"]["code"].as_i64().unwrap(), message)
}

/// An `initialize` that must succeed: the server still serves.
async fn initialize(daemon: &TestDaemon, path: &str) {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bad-input-test", "version": "1"}}});
    let (status, _, body) = post(daemon, path, "application/json", request.to_string()).await;
    assert_eq!(status, 200, "{path}: {body}");
    assert!(body.contains("\"serverInfo\""), "{path}: {body}");
}

#[tokio::test]
async fn malformed_json_is_400_parse_error_on_every_server() {
    let daemon = TestDaemon::start().await;
    for path in SERVERS {
        for broken in [
            r#"{"jsonrpc": "2.0", "id": 1, "method": "#,
            "",
            "\u{feff}nope",
        ] {
            let (status, kind, body) = post(&daemon, path, "application/json", broken).await;
            assert_eq!(status, 400, "{path} {broken:?}: {body}");
            let (code, message) = error_object(&kind, &body);
            assert_eq!(code, -32700, "{path}: {message}");
            assert!(message.contains("not JSON"), "{message}");
        }
        let (status, kind, body) = post(&daemon, path, "application/json", vec![0xff, 0xfe]).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(error_object(&kind, &body).0, -32700);
        initialize(&daemon, path).await;
    }
    daemon.stop().await;
}

#[tokio::test]
async fn json_that_is_no_mcp_message_is_400_invalid_request() {
    let daemon = TestDaemon::start().await;
    for body in [
        "{}",
        "[]",
        "42",
        r#"[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]"#,
        r#"{"jsonrpc": "2.0", "id": 1}"#,
    ] {
        let (status, kind, answer) = post(&daemon, "/mcp/memory", "application/json", body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let (code, message) = error_object(&kind, &answer);
        assert_eq!(code, -32600, "{body}: {message}");
        assert!(message.starts_with("invalid request"), "{message}");
    }
    initialize(&daemon, "/mcp/memory").await;
    daemon.stop().await;
}

#[tokio::test]
async fn an_oversized_body_is_a_json_413() {
    let daemon = TestDaemon::start().await;
    let padding = "x".repeat(5 * 1024 * 1024);
    let request = format!(
        r#"{{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {{"pad": "{padding}"}}}}"#
    );
    let (status, kind, body) = post(&daemon, "/mcp/code", "application/json", request).await;
    assert_eq!(status, 413, "{body}");
    let (code, message) = error_object(&kind, &body);
    assert_eq!(code, -32600);
    assert!(message.contains("larger than 4 MiB"), "{message}");
    // Sent without a length (chunked): the same answer.
    let chunks =
        futures::stream::iter((0..6).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1024 * 1024])));
    let (status, kind, body) = post(
        &daemon,
        "/mcp/code",
        "application/json",
        reqwest::Body::wrap_stream(chunks),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(error_object(&kind, &body).0, -32600);
    initialize(&daemon, "/mcp/code").await;
    daemon.stop().await;
}

#[tokio::test]
async fn rmcps_other_refusals_keep_their_status_with_a_json_rpc_error() {
    let daemon = TestDaemon::start().await;
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let (status, kind, body) = post(&daemon, "/mcp/session", "text/plain", request.clone()).await;
    assert_eq!(status, 415, "{body}");
    let (code, message) = error_object(&kind, &body);
    assert_eq!(code, -32600);
    assert!(message.contains("application/json"), "{message}");

    // Not accepting the event stream the transport may answer with.
    let response = daemon
        .http()
        .post(daemon.url("/mcp/session"))
        .bearer_auth(&daemon.token)
        .header("Accept", "application/json")
        .header("Content-Type", "application/json")
        .body(request.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 406);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let (code, _) = error_object(&kind, &response.text().await.unwrap());
    assert_eq!(code, -32600);

    // A session id the server never issued: initialize again.
    let response = daemon
        .http()
        .post(daemon.url("/mcp/session"))
        .bearer_auth(&daemon.token)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .header("Mcp-Session-Id", "never-issued")
        .body(request)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let (code, message) = error_object(&kind, &response.text().await.unwrap());
    assert_eq!(code, -32600);
    assert!(message.contains("Session not found"), "{message}");
    daemon.stop().await;
}

#[tokio::test]
async fn a_large_valid_request_sent_in_pieces_arrives_whole() {
    let daemon = TestDaemon::start().await;
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "pieces", "version": "1"},
        "padding": "p".repeat(3 * 1024 * 1024)}})
    .to_string()
    .into_bytes();
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
        request.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
    let (status, _, body) = post(
        &daemon,
        "/mcp/memory",
        "application/json",
        reqwest::Body::wrap_stream(futures::stream::iter(pieces)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"serverInfo\""), "{body}");
    daemon.stop().await;
}
