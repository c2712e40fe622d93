//! Clients that send too slowly or too much, with a valid token: a body
//! trickled a byte at a time is cut off with 408 after the body deadline,
//! and a provider frame over the hard limit is answered (PAYLOAD_TOO_LARGE,
//! close 1009) rather than reset. Everyone else is served meanwhile.

use std::time::{Duration, Instant};

use bridge_server::ConnectionLimits;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{Setup, TestDaemon};

const BODY_TIMEOUT: Duration = Duration::from_millis(800);
/// How long a test waits before it calls a connection held for good.
const PATIENCE: Duration = Duration::from_secs(6);
const MIB: usize = 1024 * 1024;

#[tokio::test]
async fn a_body_trickled_a_byte_at_a_time_gets_408_on_every_json_endpoint() {
    let daemon = TestDaemon::with(Setup::default().file("a.txt", "alpha\n").limits(
        ConnectionLimits {
            body_timeout: BODY_TIMEOUT,
            ..Default::default()
        },
    ))
    .await;
    let paths = ["/rpc", "/v1/chat/completions", "/mcp/code"];
    let trickles: Vec<_> = paths
        .iter()
        .map(|path| tokio::spawn(trickle(daemon.port, daemon.token.clone(), path)))
        .collect();
    // Meanwhile others are served at once.
    tokio::time::sleep(BODY_TIMEOUT / 4).await;
    let started = Instant::now();
    let read = daemon.rpc("mcp.fs.read", json!({"path": "a.txt"})).await;
    assert_eq!(read["result"]["content"], "alpha\n", "{read}");
    assert!(started.elapsed() < BODY_TIMEOUT, "{:?}", started.elapsed());
    for (path, trickle) in paths.iter().zip(trickles) {
        let (answer, elapsed) = trickle.await.unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 408"),
            "{path} after {elapsed:?}: {answer:?}"
        );
        assert!(
            elapsed < BODY_TIMEOUT + Duration::from_millis(1500),
            "{path}: cut off after {elapsed:?}"
        );
        let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap())
            .unwrap_or_else(|err| panic!("{path}: {err}: {answer}"));
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("did not arrive within"), "{path}: {body}");
        // The facade answers in OpenAI's shape, the JSON-RPC doors in theirs.
        if *path == "/v1/chat/completions" {
            assert_eq!(body["error"]["code"], "request_timeout", "{body}");
        } else {
            assert_eq!(body["jsonrpc"], "2.0", "{body}");
        }
    }
    daemon.stop().await;
}

/// `POST path` with a valid token and a body of 1,000 bytes sent one byte
/// every 200 ms; returns what the daemon answered and when it closed.
async fn trickle(port: u16, token: String, path: &str) -> (String, Duration) {
    let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 1000\r\n\r\n"
    );
    writer.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let dribble = tokio::spawn(async move {
        for byte in b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": "
            .iter()
            .cycle()
        {
            if writer.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at((started + PATIENCE).into(), reader.read(&mut buf)).await {
            Err(_) | Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(n)) => answer.extend_from_slice(&buf[..n]),
        }
    }
    dribble.abort();
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

/// One task, as a simple client is written: it sends the whole 10 MiB
/// frame, then reads. The daemon must take in the rest of the frame it
/// refuses, or the client's send ends in a reset and it never reads why.
#[tokio::test]
async fn a_provider_frame_over_the_hard_limit_gets_its_answer_not_a_reset() {
    let daemon = TestDaemon::start().await;
    let session = daemon.ctx.default_session().unwrap();
    let token = daemon
        .ctx
        .gateway
        .issue_project_token(session.id())
        .unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(daemon.ws_url("/"))
        .await
        .unwrap();
    ws.send(Message::text(
        json!({"type": "auth", "token": token}).to_string(),
    ))
    .await
    .unwrap();
    let Some(Ok(Message::Text(sessions))) = ws.next().await else {
        panic!("no sessions message")
    };
    assert!(sessions.as_str().contains("\"sessions\""), "{sessions}");
    let frame = format!(
        r#"{{"type":"push","event":"{}","level":"keep"}}"#,
        "x".repeat(10 * MIB)
    );
    tokio::time::timeout(PATIENCE, ws.send(Message::text(frame)))
        .await
        .expect("the 10 MiB send completes")
        .expect("the daemon takes the frame in without a reset");
    let mut before = Vec::new();
    let code = loop {
        let frame = tokio::time::timeout(PATIENCE, ws.next())
            .await
            .expect("an answer");
        match frame {
            Some(Ok(Message::Text(text))) => {
                before.push(serde_json::from_str::<Value>(text.as_str()).unwrap());
            }
            Some(Ok(Message::Close(frame))) => break frame.map(|f| u16::from(f.code)),
            Some(Ok(_)) => continue,
            other => panic!("no close frame: {other:?} after {before:?}"),
        }
    };
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["code"], "PAYLOAD_TOO_LARGE");
    assert_eq!(code, Some(1009));
    // The gateway still takes providers.
    let mut next = bridge_testkit::ProviderClient::connect(&daemon.ws_url("/"))
        .await
        .unwrap();
    let sessions = next.authenticate(&token).await.unwrap();
    assert_eq!(sessions["type"], "sessions");
    daemon.stop().await;
}
