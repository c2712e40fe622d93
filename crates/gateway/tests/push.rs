//! `push`, EventStreams, filters and `stream.query` (spec: "push", "Push
//! loop prevention", "Stream access control", "Session scope enforcement").

use std::sync::Arc;
use std::time::Duration;

use bridge_engine::{Session, SessionEvent};
use bridge_gateway::{GatewaySettings, LocalProvider};
use bridge_protocol::provider::{GatewayMessage, ProviderMessage};
use bridge_testkit::ProviderClient;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::support::{TestGateway, fast_registry_settings, fast_settings};

/// Filters, session scope, access control, stream lifetime, isolation.
mod streams;

// ---- helpers shared with tests/updates.rs ----

/// Session bookkeeping a provider may hear at any time.
fn is_bookkeeping(message: &Value) -> bool {
    message["type"] == "session.lifecycle" || message["type"] == "sessions.updated"
}

/// The next message that answers something (lifecycle and session-list
/// updates skipped).
pub async fn next_reply(client: &mut ProviderClient) -> Value {
    loop {
        let message = client.recv().await.unwrap();
        if !is_bookkeeping(&message) {
            return message;
        }
    }
}

/// Asserts `message` is an `error` with `code` answering `reply_to`.
pub fn assert_error(message: &Value, code: &str, reply_to: &str) {
    assert_eq!(message["type"], "error", "expected an error, got {message}");
    assert_eq!(message["code"], code, "{message}");
    assert_eq!(message["replyTo"], reply_to, "{message}");
}

/// `stream.query` and its `stream.history`: the push before it was fully
/// handled (per-connection FIFO), so this is also a barrier.
pub async fn query(client: &mut ProviderClient, mut body: Value) -> Value {
    body["type"] = json!("stream.query");
    if body.get("queryId").is_none() {
        body["queryId"] = json!("q");
    }
    client.send(body).await.unwrap();
    let history = next_reply(client).await;
    assert_eq!(history["type"], "stream.history", "{history}");
    history
}

/// The `event` texts of one stream in a `stream.history`, newest first.
pub fn events(history: &Value, key: &str) -> Vec<String> {
    history["streams"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no stream {key} in {history}"))
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect()
}

pub fn settings_with(adjust: impl FnOnce(&mut GatewaySettings)) -> GatewaySettings {
    let mut settings = fast_settings();
    adjust(&mut settings);
    settings
}

pub async fn gateway_with(adjust: impl FnOnce(&mut GatewaySettings)) -> TestGateway {
    TestGateway::start_with(settings_with(adjust), fast_registry_settings()).await
}

pub fn local_message(value: Value) -> ProviderMessage {
    serde_json::from_value(value).unwrap()
}

/// The next message to an in-process provider that answers something.
pub async fn local_reply(provider: &mut LocalProvider) -> Value {
    loop {
        let message: GatewayMessage = tokio::time::timeout(Duration::from_secs(5), provider.recv())
            .await
            .expect("no message within 5 s")
            .expect("connection closed");
        let value = serde_json::to_value(message).unwrap();
        if !is_bookkeeping(&value) {
            return value;
        }
    }
}

/// An in-process (internal) provider registered with `fields`.
pub async fn local_provider(gw: &TestGateway, name: &str, fields: Value) -> LocalProvider {
    let mut local = gw.gateway.connect_local();
    let sessions = local_reply(&mut local).await;
    assert_eq!(sessions["type"], "sessions");
    let mut hello = json!({"type": "hello", "name": name, "protocolVersion": 2});
    if let (Some(target), Value::Object(extra)) = (hello.as_object_mut(), fields) {
        target.extend(extra);
    }
    local.send(local_message(hello)).unwrap();
    let ack = local_reply(&mut local).await;
    assert_eq!(ack["type"], "hello.ack", "{ack}");
    local
}

/// An external provider, paired as a user would pair it, bound to
/// `default`.
pub async fn external_provider(gw: &TestGateway, name: &str, fields: Value) -> ProviderClient {
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .send(json!({"type": "auth", "mode": "pair", "name": name}))
        .await
        .unwrap();
    client.expect("auth.pairing").await.unwrap();
    let code = gw
        .gateway
        .pending_pairings()
        .into_iter()
        .find(|p| p.requested_by.contains(name))
        .unwrap()
        .code;
    client
        .send(json!({"type": "auth.confirm", "code": code}))
        .await
        .unwrap();
    client.expect("sessions").await.unwrap();
    let mut fields = fields;
    fields["session"] = json!("default");
    client.hello(name, fields).await.unwrap();
    client
}

/// Injects (source, stream, text) seen on a session's events so far.
pub fn injects(events: &mut broadcast::Receiver<SessionEvent>) -> Vec<(String, String, String)> {
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let SessionEvent::Inject {
            source,
            stream,
            text,
            ..
        } = event
        {
            seen.push((source, stream, text));
        }
    }
    seen
}

pub fn inject_texts(events: &mut broadcast::Receiver<SessionEvent>) -> Vec<String> {
    injects(events)
        .into_iter()
        .map(|(_, _, text)| text)
        .collect()
}

pub fn timeline_texts(session: &Arc<Session>) -> Vec<String> {
    session
        .timeline(200)
        .into_iter()
        .map(|entry| format!("{}: {}", entry.source, entry.text))
        .collect()
}

pub async fn push(client: &mut ProviderClient, mut body: Value) {
    body["type"] = json!("push");
    client.send(body).await.unwrap();
}

// ---- levels and streams ----

#[tokio::test]
async fn keep_stores_in_the_default_stream_newest_first_and_shows_nothing() {
    let gw = TestGateway::start().await;
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    for (i, level) in ["keep", "keep", "keep"].iter().enumerate() {
        push(
            &mut ci,
            json!({"event": format!("run {i}"), "level": level, "metadata": {"runId": i}}),
        )
        .await;
    }
    let history = query(&mut ci, json!({"queryId": "q-1"})).await;
    assert_eq!(history["queryId"], "q-1");
    assert_eq!(events(&history, "ci@ci"), ["run 2", "run 1", "run 0"]);
    let newest = &history["streams"]["ci@ci"][0];
    assert_eq!(newest["level"], "keep");
    assert_eq!(newest["metadata"], json!({"runId": 2}));
    assert!(newest["ts"].as_str().unwrap().ends_with('Z'));
    assert!(
        timeline_texts(&gw.session("default"))
            .iter()
            .all(|line| !line.contains("run ")),
        "keep must not reach the timeline"
    );
}

#[tokio::test]
async fn surface_shows_the_event_in_the_timeline() {
    let gw = TestGateway::start().await;
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    push(
        &mut ci,
        json!({"stream": "ci-watch", "event": "CI failed on test/auth.spec.ts", "level": "surface"}),
    )
    .await;
    let history = query(&mut ci, json!({"streams": ["ci-watch"]})).await;
    assert_eq!(
        events(&history, "ci-watch@ci"),
        ["CI failed on test/auth.spec.ts"]
    );
    assert_eq!(history["streams"]["ci-watch@ci"][0]["level"], "surface");
    assert!(
        timeline_texts(&gw.session("default"))
            .contains(&"ci: [ci-watch] CI failed on test/auth.spec.ts".to_owned())
    );
}

#[tokio::test]
async fn inject_starts_a_turn_with_the_prompt_or_the_event() {
    let gw = TestGateway::start().await;
    let session = gw.session("default");
    let mut events_rx = session.subscribe();
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    push(
        &mut ci,
        json!({"stream": "ci-watch", "event": "CI failed", "prompt": "Fix the failing test", "level": "inject"}),
    )
    .await;
    query(&mut ci, json!({})).await;
    assert_eq!(
        injects(&mut events_rx),
        [(
            "ci".to_owned(),
            "ci-watch".to_owned(),
            "Fix the failing test".to_owned()
        )]
    );
    assert_eq!(session.state(), bridge_engine::SessionState::Busy);
    // The stream keeps the event text.
    let history = query(&mut ci, json!({"streams": ["ci-watch"]})).await;
    assert_eq!(events(&history, "ci-watch@ci"), ["CI failed"]);
    assert_eq!(history["streams"]["ci-watch@ci"][0]["level"], "inject");

    session.turn_finished();
    push(
        &mut ci,
        json!({"event": "just the event", "level": "inject"}),
    )
    .await;
    query(&mut ci, json!({})).await;
    assert_eq!(inject_texts(&mut events_rx), ["just the event"]);
}

#[tokio::test]
async fn a_push_without_event_or_prompt_or_with_a_bad_stream_is_invalid_json() {
    let gw = TestGateway::start().await;
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    push(&mut ci, json!({"level": "keep"})).await;
    assert_error(&next_reply(&mut ci).await, "INVALID_JSON", "push");
    push(
        &mut ci,
        json!({"stream": "a@b", "event": "x", "level": "keep"}),
    )
    .await;
    assert_error(&next_reply(&mut ci).await, "INVALID_JSON", "push");
    push(&mut ci, json!({"event": "x", "level": "loud"})).await;
    assert_error(&next_reply(&mut ci).await, "INVALID_JSON", "push");
    // The connection stays usable.
    push(&mut ci, json!({"prompt": "only a prompt", "level": "keep"})).await;
    let history = query(&mut ci, json!({})).await;
    assert_eq!(events(&history, "ci@ci"), ["only a prompt"]);
}

#[tokio::test]
async fn streams_keep_the_retention_and_queries_are_capped() {
    let gw = gateway_with(|s| {
        s.pushes_per_second = 10_000;
        s.stream_retention = 150;
    })
    .await;
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    for i in 0..160 {
        push(&mut ci, json!({"event": format!("e{i}"), "level": "keep"})).await;
    }
    let history = query(&mut ci, json!({"last": 1000})).await;
    let got = events(&history, "ci@ci");
    assert_eq!(got.len(), 100, "last is capped at stream_query_max");
    assert_eq!(got[0], "e159");
    let history = query(&mut ci, json!({"last": 3})).await;
    assert_eq!(events(&history, "ci@ci"), ["e159", "e158", "e157"]);

    // Retention: with the query cap raised, the oldest 10 are gone.
    let gw = gateway_with(|s| {
        s.pushes_per_second = 10_000;
        s.stream_retention = 5;
    })
    .await;
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    for i in 0..8 {
        push(&mut ci, json!({"event": format!("e{i}"), "level": "keep"})).await;
    }
    let history = query(&mut ci, json!({})).await;
    assert_eq!(events(&history, "ci@ci"), ["e7", "e6", "e5", "e4", "e3"]);
}

#[tokio::test]
async fn a_history_answer_stays_within_its_bound_newest_first_and_says_it_was_cut() {
    let gw = gateway_with(|s| s.pushes_per_second = 10_000).await;
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    for i in 0..4 {
        let event = format!("{i}{}", "x".repeat(400 * 1024));
        push(
            &mut ci,
            json!({"stream": "big", "event": event, "level": "keep"}),
        )
        .await;
    }
    push(
        &mut ci,
        json!({"stream": "small", "event": "s", "level": "keep"}),
    )
    .await;
    let history = query(&mut ci, json!({})).await;
    // The default bound, 1 MiB of events: two of the large ones fit.
    assert!(history.to_string().len() <= (1 << 20) + 512);
    assert_eq!(history["truncated"], true);
    let big: Vec<char> = events(&history, "big@ci")
        .iter()
        .map(|e| e.chars().next().unwrap())
        .collect();
    assert_eq!(big, ['3', '2']);
    assert_eq!(events(&history, "small@ci"), ["s"]);
    // What fits is answered whole, without the flag.
    let history = query(&mut ci, json!({"last": 1})).await;
    assert!(
        history.get("truncated").is_none(),
        "{}",
        &history.to_string()[..200]
    );
    assert_eq!(events(&history, "small@ci"), ["s"]);
}

#[tokio::test]
async fn a_flood_of_stored_events_costs_the_flooder_its_history_not_the_others() {
    let gw = gateway_with(|s| {
        s.pushes_per_second = 10_000;
        s.stream_store_max_bytes = 64 * 1024;
    })
    .await;
    let (mut quiet, _) = gw.provider("quiet", json!({})).await;
    push(&mut quiet, json!({"event": "still here", "level": "keep"})).await;
    let (mut flood, _) = gw.provider("flood", json!({})).await;
    for i in 0..40 {
        let event = format!("{i} {}", "f".repeat(8 * 1024));
        push(&mut flood, json!({"event": event, "level": "keep"})).await;
    }
    let history = query(&mut flood, json!({})).await;
    let kept = events(&history, "flood@flood");
    assert!(kept.len() < 8, "{} events kept", kept.len());
    assert!(kept[0].starts_with("39 "), "the newest stays");
    let history = query(&mut quiet, json!({})).await;
    assert_eq!(events(&history, "quiet@quiet"), ["still here"]);
}

#[tokio::test]
async fn a_provider_may_have_at_most_max_streams_streams() {
    let gw = gateway_with(|s| s.pushes_per_second = 10_000).await;
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    for i in 0..20 {
        push(
            &mut ci,
            json!({"stream": format!("s{i}"), "event": "x", "level": "keep"}),
        )
        .await;
    }
    push(
        &mut ci,
        json!({"stream": "s20", "event": "x", "level": "keep"}),
    )
    .await;
    let error = next_reply(&mut ci).await;
    assert_error(&error, "PAYLOAD_TOO_LARGE", "push");
    assert_eq!(error["sessionId"], "default");
    // Existing streams still take events; another provider has its own
    // budget.
    push(
        &mut ci,
        json!({"stream": "s3", "event": "y", "level": "keep"}),
    )
    .await;
    let history = query(&mut ci, json!({})).await;
    assert_eq!(history["streams"].as_object().unwrap().len(), 20);
    assert_eq!(events(&history, "s3@ci"), ["y", "x"]);
    let (mut other, _) = gw.provider("other", json!({})).await;
    push(
        &mut other,
        json!({"stream": "s20", "event": "z", "level": "keep"}),
    )
    .await;
    let history = query(&mut other, json!({})).await;
    assert_eq!(events(&history, "s20@other"), ["z"]);
}

// ---- budgets ----

#[tokio::test]
async fn more_than_ten_pushes_a_second_are_rate_limited_per_provider() {
    let gw = TestGateway::start().await;
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    let (mut other, _) = gw.provider("other", json!({})).await;
    for i in 0..11 {
        push(&mut ci, json!({"event": format!("e{i}"), "level": "keep"})).await;
    }
    let error = next_reply(&mut ci).await;
    assert_error(&error, "RATE_LIMITED", "push");
    assert_eq!(error["sessionId"], "default");
    let history = query(&mut ci, json!({})).await;
    assert_eq!(events(&history, "ci@ci").len(), 10);
    assert_eq!(events(&history, "ci@ci")[0], "e9");
    // Another provider's budget is its own.
    push(&mut other, json!({"event": "fine", "level": "keep"})).await;
    let history = query(&mut other, json!({})).await;
    assert_eq!(events(&history, "other@other"), ["fine"]);
}

#[tokio::test]
async fn one_inject_in_flight_until_idle_then_held_ones_in_order() {
    let gw = gateway_with(|s| s.inject_queue_limit = 2).await;
    let session = gw.session("default");
    let mut events_rx = session.subscribe();
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    for text in ["first", "second", "third"] {
        push(&mut ci, json!({"event": text, "level": "inject"})).await;
    }
    push(&mut ci, json!({"event": "fourth", "level": "inject"})).await;
    let error = next_reply(&mut ci).await;
    assert_error(&error, "RATE_LIMITED", "push");
    assert_eq!(error["sessionId"], "default");
    assert_eq!(inject_texts(&mut events_rx), ["first"]);
    // Held injects are stored at once.
    let history = query(&mut ci, json!({})).await;
    assert_eq!(events(&history, "ci@ci"), ["third", "second", "first"]);

    session.turn_finished();
    assert_eq!(inject_texts(&mut events_rx), ["second"]);
    session.turn_finished();
    assert_eq!(inject_texts(&mut events_rx), ["third"]);
    session.turn_finished();
    assert!(inject_texts(&mut events_rx).is_empty());
}

#[tokio::test]
async fn injects_pause_after_three_cycles_until_a_user_message() {
    let gw = TestGateway::start().await;
    let session = gw.session("default");
    let mut events_rx = session.subscribe();
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    let (mut other, _) = gw.provider("other", json!({})).await;
    // inject, then three inject → idle → inject cycles.
    for i in 0..4 {
        push(
            &mut ci,
            json!({"event": format!("loop {i}"), "level": "inject"}),
        )
        .await;
        query(&mut ci, json!({})).await;
        assert_eq!(inject_texts(&mut events_rx), [format!("loop {i}")]);
        session.turn_finished();
    }
    push(&mut ci, json!({"event": "loop 4", "level": "inject"})).await;
    let history = query(&mut ci, json!({})).await;
    assert!(inject_texts(&mut events_rx).is_empty(), "paused");
    assert_eq!(history["streams"]["ci@ci"][0]["event"], "loop 4");
    assert_eq!(history["streams"]["ci@ci"][0]["level"], "keep");
    let warnings: Vec<String> = timeline_texts(&session)
        .into_iter()
        .filter(|line| {
            line.starts_with("gateway:") && line.contains("Paused inject pushes from provider 'ci'")
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    // Other providers are not paused.
    push(&mut other, json!({"event": "unrelated", "level": "inject"})).await;
    query(&mut other, json!({})).await;
    assert_eq!(inject_texts(&mut events_rx), ["unrelated"]);
    session.turn_finished();

    session.user_message("thanks, keep going");
    session.turn_finished();
    push(
        &mut ci,
        json!({"event": "after the user", "level": "inject"}),
    )
    .await;
    query(&mut ci, json!({})).await;
    assert_eq!(inject_texts(&mut events_rx), ["after the user"]);
}

#[tokio::test]
async fn held_injects_are_dropped_when_their_provider_leaves() {
    let gw = TestGateway::start().await;
    let session = gw.session("default");
    let mut events_rx = session.subscribe();
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    push(&mut ci, json!({"event": "first", "level": "inject"})).await;
    push(&mut ci, json!({"event": "held", "level": "inject"})).await;
    query(&mut ci, json!({})).await;
    assert_eq!(inject_texts(&mut events_rx), ["first"]);
    // Rebinding leaves the session first (the rebind barrier): by the
    // hello.ack, what the old binding held is gone.
    ci.hello("ci", json!({})).await.unwrap();
    session.turn_finished();
    assert!(inject_texts(&mut events_rx).is_empty());
}
