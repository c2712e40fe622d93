//! What one provider can make the gateway hold: error replies stay small
//! whatever they refuse, and the messages waiting for a provider that does
//! not read are bounded in bytes, not only in number.

use std::time::{Duration, Instant};

use bridge_gateway::GatewaySettings;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::MaybeTlsStream;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{TestGateway, fast_registry_settings, fast_settings, tool};
use crate::transport::{RawSocket, assert_still_serves, eventually, register_raw};

const MIB: usize = 1024 * 1024;

/// A 1 MB `type` used to come back twice (in the message and as
/// `replyTo`): a 2 MB answer to every 1 MB frame.
#[tokio::test]
async fn a_one_megabyte_bogus_type_gets_a_small_error() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = gw
        .provider("bogus", json!({"tools": [tool("bogus_t")]}))
        .await;
    let huge = "t".repeat(MIB);
    let cases = [
        (json!({"type": huge}), "UNKNOWN_TYPE"),
        (
            json!({"type": "push", "event": "x", "level": huge}),
            "INVALID_JSON",
        ),
        (
            json!({"type": "stream.query", "queryId": "q", "sessionId": huge}),
            "INVALID_SESSION",
        ),
    ];
    for (message, code) in cases {
        provider.send(message).await.unwrap();
        let error = provider.expect("error").await.unwrap();
        assert_eq!(error["code"], code);
        let size = error.to_string().len();
        assert!(size < 1024, "a {size}-byte error for a 1 MB frame: {error}");
        assert!(error["message"].as_str().unwrap().contains("tttt"));
    }
    assert_still_serves(&gw, &mut provider, "bogus_t").await;
}

/// A provider that asks for large answers (its own stream, ~4 MB per
/// `stream.query`) and never reads them: 40 answers would hold 160 MB for
/// it, far below the 4,096-message bound. The byte bound drops it after a
/// few MB, with `RATE_LIMITED` and close 1013 for when it reads again; the
/// other provider carries on.
#[tokio::test]
async fn a_provider_that_never_reads_large_answers_is_dropped_at_the_byte_bound() {
    let bound = 2 * MIB;
    let settings = GatewaySettings {
        outbound_queue_bytes: bound,
        // Whole ~4 MB answers, past the default bound of an answer.
        stream_answer_max_bytes: 8 * MIB,
        ..fast_settings()
    };
    let gw = TestGateway::start_with(settings, fast_registry_settings()).await;
    let (mut worker, _) = gw
        .provider("worker", json!({"tools": [tool("work")]}))
        .await;
    let mut hog = small_window_provider(&gw, "hog").await;
    let event = "e".repeat(1_300_000);
    for _ in 0..3 {
        let push = json!({"type": "push", "event": event, "level": "keep"});
        hog.send(Message::text(push.to_string())).await.unwrap();
    }
    let query = json!({"type": "stream.query", "queryId": "q", "streams": ["hog"]}).to_string();
    let answer_size = 3 * event.len();
    for _ in 0..40 {
        if hog.send(Message::text(query.clone())).await.is_err() {
            break;
        }
    }
    let started = Instant::now();
    let (code, messages, bytes) = read_until_close(&mut hog).await;
    assert_eq!(code, Some(1013), "after {messages:?}");
    let last = messages.last().unwrap();
    assert_eq!(last["code"], "RATE_LIMITED", "{last}");
    // What reached the socket: the bound, one answer admitted into an empty
    // queue, one in the writer's hands, and the kernel's buffers.
    assert!(
        bytes < bound + 2 * answer_size + 4 * MIB,
        "{bytes} bytes delivered before the close ({} answers)",
        messages.len()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    eventually("the hog's slot is free", || {
        gw.gateway.status().connections == 1
    })
    .await;
    assert_still_serves(&gw, &mut worker, "work").await;
}

/// A registered provider whose socket takes in little at a time, so the
/// kernel does not absorb megabytes of answers before the gateway's queue.
async fn small_window_provider(gw: &TestGateway, name: &str) -> RawSocket {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let addr = gw.url.trim_start_matches("ws://").trim_end_matches('/');
    let stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    let (ws, _) = tokio_tungstenite::client_async(gw.url.as_str(), MaybeTlsStream::Plain(stream))
        .await
        .unwrap();
    register_raw(gw, ws, name, json!([tool(&format!("{name}_t"))])).await
}

/// Reads until the close frame: its code, the messages before it and their
/// bytes.
async fn read_until_close(ws: &mut RawSocket) -> (Option<u16>, Vec<Value>, usize) {
    let mut messages = Vec::new();
    let mut bytes = 0;
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("the close within 5 s");
        match frame {
            Some(Ok(Message::Text(text))) => {
                bytes += text.len();
                let value: Value = serde_json::from_str(text.as_str()).unwrap();
                // Keep the answers' shapes, not their megabytes.
                messages.push(json!({"type": value["type"], "code": value["code"]}));
            }
            Some(Ok(Message::Close(frame))) => {
                return (frame.map(|f| u16::from(f.code)), messages, bytes);
            }
            Some(Ok(_)) => continue,
            None | Some(Err(_)) => return (None, messages, bytes),
        }
    }
}
