//! Session lifecycle as providers see it: `idle`, `shutdown.pending` /
//! `shutdown.ready`, life after the bound session ended, and forwarded
//! session events.

use std::time::{Duration, Instant};

use bridge_testkit::ProviderClient;
use serde_json::{Value, json};

use crate::auth::{assert_error, local_message, local_recv, pair, rejected};
use crate::support::{TestGateway, tool};

/// A project provider bound to `session` with one tool.
async fn bound_to(gw: &TestGateway, session: &str, name: &str) -> (ProviderClient, Value) {
    ProviderClient::register(
        &gw.url,
        &gw.project_token(session),
        name,
        json!({"session": session, "tools": [tool(&format!("{name}_tool"))]}),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn bound_providers_hear_idle_when_a_turn_finishes() {
    let gw = TestGateway::start().await;
    gw.create_session("quiet");
    let (mut here, _) = bound_to(&gw, "default", "here").await;
    let (mut there, _) = bound_to(&gw, "quiet", "there").await;
    let session = gw.session("default");
    // No turn, no idle.
    session.turn_finished();
    here.expect_silence(Duration::from_millis(50))
        .await
        .unwrap();
    session.user_message("fix the bug");
    session.turn_finished();
    let idle = here.expect("session.lifecycle").await.unwrap();
    assert_eq!(idle["state"], "idle");
    assert_eq!(idle["sessionId"], "default");
    assert!(idle.get("deadline").is_none());
    // An inject starts a turn too.
    session.inject("test", "stream", "wake up", None);
    session.turn_finished();
    let idle = here.expect("session.lifecycle").await.unwrap();
    assert_eq!(idle["state"], "idle");
    there
        .expect_silence(Duration::from_millis(50))
        .await
        .unwrap();
}

#[tokio::test]
async fn shutdown_ready_releases_teardown_before_the_deadline() {
    let gw = TestGateway::start().await;
    let ending = gw.create_session("ending");
    let (mut provider, _) = bound_to(&gw, "ending", "cleaner").await;
    let mut everywhere = gw.gateway.connect_local();
    local_recv(&mut everywhere).await;
    everywhere
        .send(local_message(json!({"type": "hello", "name": "everywhere", "protocolVersion": 2, "session": "all", "tools": [tool("all_tool")]})))
        .unwrap();
    assert_eq!(local_recv(&mut everywhere).await["type"], "hello.ack");
    assert!(ending.tool("all_tool").is_some());

    let registry = gw.gateway.registry().clone();
    let started = Instant::now();
    let end = tokio::spawn(async move {
        registry
            .end("ending", Some(Duration::from_secs(10)))
            .await
            .unwrap();
    });
    let pending = provider.expect("session.lifecycle").await.unwrap();
    assert_eq!(pending["state"], "shutdown.pending");
    assert_eq!(pending["sessionId"], "ending");
    assert_eq!(pending["deadline"], 10_000);
    let pending = local_recv(&mut everywhere).await;
    assert_eq!(pending["state"], "shutdown.pending");
    assert_eq!(pending["sessionId"], "ending");

    provider
        .send(json!({"type": "shutdown.ready", "sessionId": "ending"}))
        .await
        .unwrap();
    assert!(
        !end.is_finished(),
        "the all-bound provider is still cleaning up"
    );
    everywhere
        .send(local_message(
            json!({"type": "shutdown.ready", "sessionId": "ending"}),
        ))
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), end)
        .await
        .expect("registry.end returns once every provider is ready")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));

    // Tools are gone even for whoever still holds the session.
    assert!(ending.tool("cleaner_tool").is_none());
    assert!(ending.tool("all_tool").is_none());
    // The all-bound provider keeps serving the other sessions.
    assert_eq!(
        local_recv(&mut everywhere).await["type"],
        "sessions.updated"
    );
    let call = gw.call("default", "all_tool", json!({}));
    let request = local_recv(&mut everywhere).await;
    assert_eq!(request["sessionId"], "default");
    everywhere
        .send(local_message(
            json!({"type": "tool.result", "id": request["id"], "data": 1}),
        ))
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!(1));
}

#[tokio::test]
async fn without_shutdown_ready_teardown_waits_for_the_deadline() {
    let gw = TestGateway::start().await;
    let ending = gw.create_session("slow");
    let (mut provider, _) = bound_to(&gw, "slow", "sleepy").await;
    let started = Instant::now();
    let registry = gw.gateway.registry().clone();
    let end = tokio::spawn(async move {
        registry
            .end("slow", Some(Duration::from_millis(300)))
            .await
            .unwrap();
    });
    let pending = provider.expect("session.lifecycle").await.unwrap();
    assert_eq!(pending["deadline"], 300);
    assert!(
        ending.tool("sleepy_tool").is_some(),
        "not before the deadline"
    );
    end.await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(ending.tool("sleepy_tool").is_none());
}

#[tokio::test]
async fn a_provider_whose_session_ended_stays_connected_and_unbound() {
    let gw = TestGateway::start().await;
    gw.create_session("gone");
    let (mut provider, _) = bound_to(&gw, "gone", "orphan").await;
    let call = gw.call("gone", "orphan_tool", json!({}));
    provider.expect("tool.call").await.unwrap();
    gw.gateway
        .registry()
        .end("gone", Some(Duration::from_millis(100)))
        .await
        .unwrap();
    // The call in flight in the ended session is cancelled.
    assert_eq!(call.await.unwrap().result.unwrap_err().code, "CANCELLED");
    let (updated, skipped) = provider.expect_skipping("sessions.updated").await.unwrap();
    assert_eq!(updated["active"].as_array().unwrap().len(), 1);
    let kinds: Vec<&Value> = skipped.iter().map(|m| &m["type"]).collect();
    assert!(
        kinds.contains(&&json!("session.lifecycle")) && kinds.contains(&&json!("tool.cancel")),
        "{skipped:?}"
    );
    // Unbound: only hello and goodbye.
    for message in [
        json!({"type": "tool.result", "id": "c-1", "data": 1}),
        json!({"type": "push", "event": "e", "level": "keep"}),
        json!({"type": "shutdown.ready", "sessionId": "gone"}),
        json!({"type": "tools.update", "requestId": "r", "tools": []}),
    ] {
        let kind = message["type"].as_str().unwrap().to_owned();
        let error = rejected(&mut provider, message).await;
        assert_error(&error, "INVALID_SESSION", &kind);
    }
    let error = rejected(&mut provider, json!({"type": "future.thing"})).await;
    assert_eq!(error["code"], "UNKNOWN_TYPE");
    // A project token stays scoped to the session that issued it.
    let error = rejected(
        &mut provider,
        json!({"type": "hello", "name": "orphan", "protocolVersion": 2, "session": "default"}),
    )
    .await;
    assert_error(&error, "INVALID_SESSION", "hello");
    provider.send(json!({"type": "goodbye"})).await.unwrap();
    let (close, _) = provider.expect_close().await.unwrap();
    assert_eq!(close, Some(1000));
}

#[tokio::test]
async fn an_external_provider_rebinds_after_its_paired_session_ended() {
    let gw = TestGateway::start().await;
    gw.create_session("paired");
    let mut paired = pair(&gw, "tab", Some("paired")).await;
    let token = paired.sessions["token"].as_str().unwrap().to_owned();
    let client = &mut paired.client;
    client
        .hello(
            "tab",
            json!({"session": "paired", "tools": [tool("tab_tool")]}),
        )
        .await
        .unwrap();
    let registry = gw.gateway.registry().clone();
    let end = tokio::spawn(async move { registry.end("paired", None).await.unwrap() });
    let pending = client.expect("session.lifecycle").await.unwrap();
    assert_eq!(pending["state"], "shutdown.pending");
    client
        .send(json!({"type": "shutdown.ready", "sessionId": "paired"}))
        .await
        .unwrap();
    end.await.unwrap();
    client.expect("sessions.updated").await.unwrap();
    let error = rejected(
        client,
        json!({"type": "push", "event": "e", "level": "keep"}),
    )
    .await;
    assert_error(&error, "INVALID_SESSION", "push");

    let ack = client
        .hello(
            "tab",
            json!({"session": "default", "tools": [tool("tab_tool")]}),
        )
        .await
        .unwrap();
    assert_eq!(ack["sessions"], json!(["default"]));
    assert!(gw.session("default").tool("tab_tool").is_some());
    let timeline = gw.session("default").timeline(20);
    assert!(
        timeline.iter().any(|e| e.text.contains("now bound here")),
        "the user sees the move: {timeline:?}"
    );
    // The issued token moved with it.
    paired.client.close().await;
    let mut again = ProviderClient::connect(&gw.url).await.unwrap();
    let sessions = again.authenticate(&token).await.unwrap();
    let default = &sessions["active"][0];
    assert_eq!(default["id"], "default");
    assert!(default["cwd"].is_string());
}

#[tokio::test]
async fn shutdown_ready_for_a_session_not_shutting_down_is_invalid_session() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = bound_to(&gw, "default", "eager").await;
    for session in ["default", "unknown"] {
        let error = rejected(
            &mut provider,
            json!({"type": "shutdown.ready", "sessionId": session}),
        )
        .await;
        assert_error(&error, "INVALID_SESSION", "shutdown.ready");
        assert_eq!(error["sessionId"], session);
    }
    let call = gw.call("default", "eager_tool", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    provider
        .send(json!({"type": "tool.result", "id": request["id"], "data": 0}))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!(0));
}

#[tokio::test]
async fn subscribed_session_events_are_forwarded_by_trust_level() {
    let gw = TestGateway::start().await;
    let (mut watcher, _) = gw
        .provider(
            "watcher",
            json!({
                "tools": [tool("watched")],
                "subscribe": ["user.message", "assistant.message", "tool.execution_complete", "assistant.intent"]
            }),
        )
        .await;
    let mut paired = pair(&gw, "ext-watch", None).await;
    paired
        .client
        .hello(
            "ext-watch",
            json!({"subscribe": ["tool.execution_complete"]}),
        )
        .await
        .unwrap();
    let session = gw.session("default");

    session.user_message("fix the auth bug");
    let event = watcher.expect("session.event").await.unwrap();
    assert_eq!(event["sessionId"], "default");
    assert_eq!(event["event"], "user.message");
    assert_eq!(event["data"], json!({"content": "fix the auth bug"}));

    session.assistant_message("on it", vec![json!({"name": "watched", "args": {}})]);
    let event = watcher.expect("session.event").await.unwrap();
    assert_eq!(event["event"], "assistant.message");
    assert_eq!(event["data"]["content"], "on it");
    assert_eq!(event["data"]["toolRequests"][0]["name"], "watched");

    let call = gw.call("default", "watched", json!({"x": "y"}));
    let request = watcher.expect("tool.call").await.unwrap();
    watcher
        .send(json!({"type": "tool.result", "id": request["id"], "data": "done"}))
        .await
        .unwrap();
    call.await.unwrap().result.unwrap();
    for client in [&mut watcher, &mut paired.client] {
        let event = client.expect("session.event").await.unwrap();
        assert_eq!(event["event"], "tool.execution_complete");
        assert_eq!(event["sessionId"], "default");
        assert_eq!(event["data"]["tool"], "watched");
        assert_eq!(event["data"]["provider"], "watcher");
        assert_eq!(event["data"]["result"]["type"], "success");
        assert!(event["data"]["durationMs"].is_u64());
    }

    session.assistant_intent("Fixing auth");
    let event = watcher.expect("session.event").await.unwrap();
    assert_eq!(event["event"], "assistant.intent");
    assert_eq!(event["data"], json!({"intent": "Fixing auth"}));
    // The external provider heard only the tool event.
    paired
        .client
        .expect_silence(Duration::from_millis(50))
        .await
        .unwrap();
}
