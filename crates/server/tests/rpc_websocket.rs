//! `/rpc` over one WebSocket, as a program that drives the hub from outside
//! uses it: many calls in flight, answers in the order the tools finish, a
//! hang-up cancelling what is still running.

use std::collections::BTreeMap;
use std::time::Duration;

use bridge_testkit::ProviderClient;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::support::TestDaemon;

type RpcSocket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A provider bound to the default session with one tool, `echo`.
async fn echo_provider(daemon: &TestDaemon) -> ProviderClient {
    let minted = daemon.rpc("gateway.providerToken", json!({})).await;
    let token = minted["result"]["token"].as_str().unwrap().to_owned();
    let tools = json!({"tools": [{"name": "echo", "description": "Answers with its arguments.",
                                  "parameters": {"type": "object"}}]});
    let (client, _ack) = ProviderClient::register(&daemon.ws_url("/"), &token, "bench", tools)
        .await
        .unwrap();
    client
}

/// The next `tool.call` the provider gets (other messages, such as session
/// updates, are not part of these tests).
async fn next_call(provider: &mut ProviderClient) -> Value {
    provider.expect_skipping("tool.call").await.unwrap().0
}

async fn rpc_socket(daemon: &TestDaemon) -> RpcSocket {
    let mut request = daemon.ws_url("/rpc").into_client_request().unwrap();
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", daemon.token).parse().unwrap(),
    );
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

fn echo_call(id: u64) -> Message {
    Message::text(
        json!({"jsonrpc": "2.0", "id": id, "method": "session.tools.call",
               "params": {"session": "default", "name": "echo", "arguments": {"n": id}}})
        .to_string(),
    )
}

async fn next_json(socket: &mut RpcSocket) -> Value {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("an answer within 10 s")
            .expect("the socket is open")
            .unwrap();
        if let Message::Text(text) = frame {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

#[tokio::test]
async fn a_hundred_calls_sent_at_once_are_all_answered_in_the_order_the_tool_finishes() {
    let daemon = TestDaemon::start().await;
    let mut provider = echo_provider(&daemon).await;
    let mut socket = rpc_socket(&daemon).await;
    // One burst, more than a connection may have in flight (32): the rest
    // wait for room, none is lost.
    for id in 1..=100 {
        socket.feed(echo_call(id)).await.unwrap();
    }
    socket.flush().await.unwrap();

    let mut answers = BTreeMap::new();
    while answers.len() < 100 {
        // The provider takes what has reached it and answers it backwards.
        let mut held = vec![next_call(&mut provider).await];
        while let Ok(call) =
            tokio::time::timeout(Duration::from_millis(50), next_call(&mut provider)).await
        {
            held.push(call);
        }
        assert!(
            held.len() <= 32,
            "{} calls in flight on one connection",
            held.len()
        );
        for call in held.iter().rev() {
            provider
                .send(json!({"type": "tool.result", "id": call["id"], "data": call["args"]}))
                .await
                .unwrap();
        }
        for _ in 0..held.len() {
            let answer = next_json(&mut socket).await;
            let id = answer["id"].as_u64().unwrap_or_else(|| panic!("{answer}"));
            assert_eq!(answer["result"]["result"], json!({"n": id}), "{answer}");
            assert!(answers.insert(id, answer).is_none(), "answered twice: {id}");
        }
    }
    assert_eq!(
        answers.keys().copied().collect::<Vec<_>>(),
        (1..=100).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_slow_call_does_not_hold_up_the_next_one() {
    let daemon = TestDaemon::start().await;
    let mut provider = echo_provider(&daemon).await;
    let mut socket = rpc_socket(&daemon).await;
    socket.send(echo_call(1)).await.unwrap();
    let slow = next_call(&mut provider).await;
    socket.send(echo_call(2)).await.unwrap();
    let quick = next_call(&mut provider).await;
    assert_eq!(quick["args"], json!({"n": 2}));
    provider
        .send(json!({"type": "tool.result", "id": quick["id"], "data": "quick"}))
        .await
        .unwrap();
    let first = next_json(&mut socket).await;
    assert_eq!(
        (first["id"].as_u64(), &first["result"]["result"]),
        (Some(2), &json!("quick"))
    );
    provider
        .send(json!({"type": "tool.result", "id": slow["id"], "data": "slow"}))
        .await
        .unwrap();
    let second = next_json(&mut socket).await;
    assert_eq!(
        (second["id"].as_u64(), &second["result"]["result"]),
        (Some(1), &json!("slow"))
    );
}

#[tokio::test]
async fn a_client_that_hangs_up_cancels_its_calls_at_the_provider() {
    let daemon = TestDaemon::start().await;
    let mut provider = echo_provider(&daemon).await;
    let mut socket = rpc_socket(&daemon).await;
    socket.send(echo_call(1)).await.unwrap();
    let call = next_call(&mut provider).await;
    socket.close(None).await.unwrap();
    drop(socket);
    let cancel = provider
        .expect_within("tool.cancel", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(cancel["id"], call["id"]);
    // The daemon serves the next client as before.
    let mut socket = rpc_socket(&daemon).await;
    socket.send(echo_call(2)).await.unwrap();
    let call = next_call(&mut provider).await;
    provider
        .send(json!({"type": "tool.result", "id": call["id"], "data": "after"}))
        .await
        .unwrap();
    assert_eq!(next_json(&mut socket).await["result"]["result"], "after");
}
