//! What `/rpc` does with bad input: malformed JSON, invalid envelopes,
//! unknown methods, wrong params, oversized bodies, binary frames, and
//! clients that hold connections open without finishing a request — each
//! answered cleanly while other clients are served.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{Setup, TestDaemon};
use crate::toolbus::{Bus, PATIENCE};

/// The request-head timeout of the daemons that meet slow clients.
const HEAD_TIMEOUT: Duration = Duration::from_millis(1000);

async fn post_raw(daemon: &TestDaemon, body: impl Into<reqwest::Body>) -> (u16, Value) {
    let response = daemon
        .http()
        .post(daemon.url("/rpc"))
        .bearer_auth(&daemon.token)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn envelope_errors_use_the_standard_codes() {
    let daemon = TestDaemon::with(Setup::default().file("a.txt", "alpha\n")).await;

    let (status, answer) = post_raw(&daemon, r#"{"jsonrpc": "2.0", "id": 1, "method": "#).await;
    assert_eq!(status, 200);
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null);

    let (_, answer) = post_raw(&daemon, "{}").await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let (_, answer) = post_raw(&daemon, "[]").await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let (_, answer) = post_raw(
        &daemon,
        r#"{"jsonrpc": "1.0", "id": 7, "method": "mcp.fs.read"}"#,
    )
    .await;
    assert_eq!(answer["error"]["code"], -32600);
    assert_eq!(answer["id"], 7, "the id is echoed when it can be read");

    let (_, answer) = post_raw(
        &daemon,
        r#"{"jsonrpc": "2.0", "id": 2, "method": "mcp.fs.delete", "params": {"path": "a.txt"}}"#,
    )
    .await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let listed = answer["error"]["message"].as_str().unwrap();
    assert!(
        listed.contains("mcp.fs.read") && listed.contains("mcp.edit.applyPatch"),
        "{listed}"
    );

    // A batch with a broken member answers the others.
    let (_, answer) = post_raw(
        &daemon,
        r#"[42, {"jsonrpc": "2.0", "id": 3, "method": "mcp.fs.read", "params": {"path": "a.txt"}}]"#,
    )
    .await;
    assert_eq!(answer[0]["error"]["code"], -32600, "{answer}");
    assert_eq!(answer[1]["result"]["content"], "alpha\n");
    daemon.stop().await;
}

#[tokio::test]
async fn wrong_params_are_invalid_params_naming_the_field() {
    let daemon = TestDaemon::with(Setup::default().file("a.txt", "alpha\n")).await;
    let mut bus = Bus::connect(&daemon).await;
    let cases = [
        ("mcp.fs.read", json!({}), "path"),
        ("mcp.fs.read", json!({"path": 42}), "path"),
        ("mcp.fs.read", json!({"path": ""}), "path"),
        (
            "mcp.fs.read",
            json!({"path": "a.txt", "startLine": -1}),
            "startLine",
        ),
        ("mcp.fs.list", json!({"limit": "ten"}), "limit"),
        (
            "mcp.search.code",
            json!({"query": "alpha", "maxResult": 5}),
            "maxResult",
        ),
        ("mcp.search.code", json!({"query": ["alpha"]}), "query"),
        (
            "mcp.edit.applyPatch",
            json!({"diff": "--- a/a.txt"}),
            "diff",
        ),
        (
            "mcp.edit.applyPatch",
            json!({"unifiedDiff": "x", "verify": "yes"}),
            "verify",
        ),
        (
            "mcp.edit.applyPatch",
            json!({"unifiedDiff": "x", "format": 1}),
            "format",
        ),
        ("mcp.shell.run", json!({"command": "ls"}), "command"),
        (
            "mcp.shell.run",
            json!({"cmd": "ls", "timeoutSecs": 1.5}),
            "timeoutSecs",
        ),
        ("mcp.task.run", json!({"name": null}), "name"),
        (
            "mcp.symbols.list",
            json!({"path": "a.rs", "session": 3}),
            "session",
        ),
    ];
    for (method, params, field) in cases {
        let error = bus.error(method, params.clone()).await;
        assert_eq!(error["code"], -32602, "{method} {params}: {error}");
        assert_eq!(error["data"]["field"], field, "{method} {params}: {error}");
    }
    // Positional params are refused by every method.
    bus.send_text(
        json!({"jsonrpc": "2.0", "id": "pos", "method": "mcp.fs.read", "params": ["a.txt"]})
            .to_string(),
    )
    .await;
    assert_eq!(bus.recv().await["error"]["code"], -32602);
    // Paths outside the workspace are the policy's business.
    let escape = bus
        .error("mcp.fs.read", json!({"path": "../../etc/passwd"}))
        .await;
    assert_eq!(escape["code"], -32002, "{escape}");
    daemon.stop().await;
}

#[tokio::test]
async fn oversized_bodies_and_binary_frames_are_refused_and_the_connection_lives_on() {
    let daemon = TestDaemon::with(Setup::default().file("a.txt", "alpha\n")).await;
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"mcp.fs.read","params":{{"path":"{}"}}}}"#,
        "x".repeat(17 * 1024 * 1024)
    );
    let (status, answer) = post_raw(&daemon, huge).await;
    assert_eq!(status, 413);
    assert_eq!(answer["error"]["code"], -32600, "{answer}");

    let mut bus = Bus::connect(&daemon).await;
    bus.send_binary(vec![0xff, 0x00, 0x7b]).await;
    let answer = bus.recv().await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    bus.send_text("{\"jsonrpc\": \"2.0\", \"id\": 1, \"meth".to_owned())
        .await;
    assert_eq!(bus.recv().await["error"]["code"], -32700);
    let read = bus.call("mcp.fs.read", json!({"path": "a.txt"})).await;
    assert_eq!(read["content"], "alpha\n");
    daemon.stop().await;
}

/// Reads until the daemon closes the socket (or answers and closes);
/// returns what it sent and how long that took.
async fn wait_for_close(stream: &mut TcpStream) -> (String, Duration) {
    let started = Instant::now();
    let mut received = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(PATIENCE, stream.read(&mut buf)).await {
            Err(_) => panic!("the daemon kept a stalled connection open for {PATIENCE:?}"),
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
        }
    }
    (
        String::from_utf8_lossy(&received).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test]
async fn slow_clients_are_cut_off_while_others_are_served() {
    let daemon = TestDaemon::with(Setup::default().file("a.txt", "alpha\n").limits(
        bridge_server::ConnectionLimits {
            header_timeout: HEAD_TIMEOUT,
            ..Default::default()
        },
    ))
    .await;
    let port = daemon.port;

    // A slowloris: the request head one byte at a time, never finished.
    let dribbler = tokio::spawn(async move {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let head = format!("POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ");
        let started = Instant::now();
        for byte in head.bytes().chain(std::iter::repeat(b'a')) {
            if stream.write_all(&[byte]).await.is_err() {
                break;
            }
            if started.elapsed() > PATIENCE {
                panic!("the daemon kept reading a request head for {PATIENCE:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (answer, _) = wait_for_close(&mut stream).await;
        (answer, started.elapsed())
    });
    // A WebSocket handshake that stops halfway, and a connection that
    // never sends a byte.
    let mut half_upgrade = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    half_upgrade
        .write_all(b"GET /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n")
        .await
        .unwrap();
    let mut silent = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    // An open WebSocket that never sends: legitimate (an idle client), and
    // it must not get in anyone's way.
    let mut idle = Bus::connect(&daemon).await;

    // Meanwhile another client is served at once.
    let mut client = Bus::connect(&daemon).await;
    let started = Instant::now();
    let read = client.call("mcp.fs.read", json!({"path": "a.txt"})).await;
    assert_eq!(read["content"], "alpha\n");
    assert!(
        started.elapsed() < HEAD_TIMEOUT,
        "a call took {:?} while slow clients were connected",
        started.elapsed()
    );

    for stream in [&mut half_upgrade, &mut silent] {
        let (answer, waited) = wait_for_close(stream).await;
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "{answer}"
        );
        assert!(waited < HEAD_TIMEOUT * 5, "cut off after {waited:?}");
    }
    let (answer, elapsed) = dribbler.await.unwrap();
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
    assert!(
        elapsed < HEAD_TIMEOUT * 5,
        "the slowloris lasted {elapsed:?}"
    );

    // The idle WebSocket is still open and served when it finally speaks.
    let listed = idle.call("mcp.fs.list", json!({})).await;
    assert_eq!(listed["files"], json!(["a.txt"]));
    daemon.stop().await;
}
