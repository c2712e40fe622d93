//! `/v1/messages` from real clients: the official `anthropic` Python
//! package, and a client that hangs up mid-stream.

use bridge_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{STREAM_LIMIT, chat_requests, hello, no_retries, post_messages};
use crate::support::{Setup, TestDaemon, python, repo_root, run_peer};

#[tokio::test]
async fn the_official_anthropic_python_package_streams_and_gets_whole_messages() {
    let root = repo_root();
    let Some(python) = python() else {
        return;
    };
    let mock = MockLlm::start(vec![
        MockReply::chunks(["Hello", " from", " the mock"]),
        MockReply::text("A whole answer."),
    ])
    .await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;

    let stdout = run_peer(
        tokio::process::Command::new(&python)
            .arg(root.join("tests/peers/python/anthropic_messages.py"))
            .args(["--base-url", &daemon.url("")])
            .args(["--api-key", &daemon.token])
            .args(["--model", "claude-via-bridge"]),
    )
    .await;
    let got: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(got["stream_text"], "Hello from the mock");
    let types = got["stream_event_types"].as_array().unwrap();
    assert_eq!(types.first().unwrap(), "message_start");
    assert_eq!(types.last().unwrap(), "message_stop");
    let final_message = &got["stream_final"];
    assert_eq!(final_message["model"], "claude-via-bridge");
    assert_eq!(final_message["stop_reason"], "end_turn");
    assert_eq!(final_message["content"].as_array().unwrap().len(), 1);
    assert_eq!(final_message["content"][0]["type"], "text");
    assert_eq!(final_message["content"][0]["text"], "Hello from the mock");
    let message = &got["message"];
    assert_eq!(message["type"], "message");
    assert_eq!(message["content"][0]["text"], "A whole answer.");
    assert_eq!(message["stop_reason"], "end_turn");
    // The SDK's own model type parsed the list: Anthropic's shape.
    let models = got["models"].as_array().unwrap();
    assert!(!models.is_empty(), "{got}");
    assert_eq!(models[0]["type"], "model");
    assert!(models[0]["display_name"].is_string());

    // The system prompt reached the upstream.
    let sent = &chat_requests(&mock)[0];
    assert_eq!(
        sent.body["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    daemon.stop().await;
}

/// An OpenAI-wire upstream that streams one chunk and then holds the
/// answer open, reporting when the bridge closes the connection.
async fn hanging_upstream() -> (String, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (closed, closed_rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let closed = closed.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buffer = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buffer[..n]),
                    }
                }
                if head.starts_with(b"GET") {
                    let body = r#"{"object":"list","data":[]}"#;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                    return;
                }
                let chunk =
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{chunk}\r\n",
                    chunk.len()
                );
                if socket.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
                // The rest of the request body, then nothing until the
                // bridge hangs up.
                loop {
                    match socket.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                let _ = closed.send(());
            });
        }
    });
    (url, closed_rx)
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_the_upstream_request() {
    let (upstream, mut closed) = hanging_upstream().await;
    let daemon = TestDaemon::with(no_retries(Setup::default().openai_backend(&upstream))).await;

    let response = post_messages(&daemon, &hello(true)).await;
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("text_delta") {
        let chunk = tokio::time::timeout(STREAM_LIMIT, futures::StreamExt::next(&mut body))
            .await
            .expect("the first delta arrives")
            .expect("the stream is open")
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(body);

    tokio::time::timeout(STREAM_LIMIT, closed.recv())
        .await
        .expect("the bridge closes the upstream connection once the client is gone")
        .unwrap();
    daemon.stop().await;
}
