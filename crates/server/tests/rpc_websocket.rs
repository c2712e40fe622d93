//! `/rpc` over one WebSocket, as a program that drives the hub from outside
//! uses it: many calls in flight, answers in the order the tools finish, a
//! hang-up cancelling what is still running.

use std::collections::BTreeMap;
use std::time::Duration;

use bridge_testkit::ProviderClient;
use serde_json::{Value, json};

use crate::support::TestDaemon;
use crate::toolbus::Bus;

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

/// A daemon, its `echo` provider, and a client on its `/rpc` WebSocket.
async fn daemon_with_echo_and_client() -> (TestDaemon, ProviderClient, Bus) {
    let daemon = TestDaemon::start().await;
    let provider = echo_provider(&daemon).await;
    let bus = Bus::connect(&daemon).await;
    (daemon, provider, bus)
}

/// The next `tool.call` the provider gets (other messages, such as session
/// updates, are not part of these tests).
async fn next_call(provider: &mut ProviderClient) -> Value {
    provider.expect_skipping("tool.call").await.unwrap().0
}

fn echo_call(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "session.tools.call",
           "params": {"session": "default", "name": "echo", "arguments": {"n": id}}})
    .to_string()
}

async fn answer(provider: &mut ProviderClient, call: &Value, data: Value) {
    provider
        .send(json!({"type": "tool.result", "id": call["id"], "data": data}))
        .await
        .unwrap();
}

/// The next answer on the bus: its id and its tool result.
async fn next_result(bus: &mut Bus) -> (u64, Value) {
    let answer = bus.recv().await;
    let id = answer["id"].as_u64().unwrap_or_else(|| panic!("{answer}"));
    (id, answer["result"]["result"].clone())
}

#[tokio::test]
async fn a_hundred_calls_sent_at_once_are_all_answered_in_the_order_the_tool_finishes() {
    let (_daemon, mut provider, mut bus) = daemon_with_echo_and_client().await;
    // One burst, more than a connection may have in flight (32): the rest
    // wait for room, none is lost.
    bus.send_all((1..=100).map(echo_call)).await;

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
            answer(&mut provider, call, call["args"].clone()).await;
        }
        for _ in 0..held.len() {
            let (id, result) = next_result(&mut bus).await;
            assert_eq!(result, json!({"n": id}));
            assert!(answers.insert(id, result).is_none(), "answered twice: {id}");
        }
    }
    assert_eq!(
        answers.keys().copied().collect::<Vec<_>>(),
        (1..=100).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_slow_call_does_not_hold_up_the_next_one() {
    let (_daemon, mut provider, mut bus) = daemon_with_echo_and_client().await;
    bus.send_text(echo_call(1)).await;
    let slow = next_call(&mut provider).await;
    bus.send_text(echo_call(2)).await;
    let quick = next_call(&mut provider).await;
    assert_eq!(quick["args"], json!({"n": 2}));
    answer(&mut provider, &quick, json!("quick")).await;
    assert_eq!(next_result(&mut bus).await, (2, json!("quick")));
    answer(&mut provider, &slow, json!("slow")).await;
    assert_eq!(next_result(&mut bus).await, (1, json!("slow")));
}

#[tokio::test]
async fn a_client_that_hangs_up_cancels_its_calls_at_the_provider() {
    let (daemon, mut provider, mut bus) = daemon_with_echo_and_client().await;
    bus.send_text(echo_call(1)).await;
    let call = next_call(&mut provider).await;
    bus.close().await;
    let cancel = provider
        .expect_within("tool.cancel", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(cancel["id"], call["id"]);
    // The daemon serves the next client as before.
    let mut bus = Bus::connect(&daemon).await;
    bus.send_text(echo_call(2)).await;
    let call = next_call(&mut provider).await;
    answer(&mut provider, &call, json!("after")).await;
    assert_eq!(next_result(&mut bus).await, (2, json!("after")));
}
