//! `filter.set`, session scope and stream access control, the lifetime of
//! streams, and one provider's pushes against another's calls.

use std::time::{Duration, Instant};

use bridge_engine::SessionEvent;
use bridge_protocol::provider::GatewayMessage;
use serde_json::json;
use tokio::sync::broadcast;

use super::{
    assert_error, events, external_provider, gateway_with, inject_texts, local_message,
    local_provider, local_reply, next_reply, push, query, timeline_texts,
};
use crate::support::{TestGateway, tool};

// ---- filters ----

#[tokio::test]
async fn a_filter_overrides_the_level_first_match_wins_and_empty_rules_remove_it() {
    let gw = TestGateway::start().await;
    let session = gw.session("default");
    let mut events_rx = session.subscribe();
    let (mut git, _) = gw.provider("guardian", json!({})).await;
    git.send(json!({
        "type": "filter.set", "requestId": "f-1", "stream": "git-watch",
        "rules": [
            {"match": "behind=0", "outcome": "drop"},
            {"match": "conflicts=[1-9]", "outcome": "inject"},
            {"match": "dirty", "outcome": "surface"},
            {"match": ".*", "outcome": "keep"}
        ]
    }))
    .await
    .unwrap();
    let ack = next_reply(&mut git).await;
    assert_eq!(ack["type"], "ack", "{ack}");
    assert_eq!(ack["requestId"], "f-1");
    assert_eq!(ack["sessionId"], "default");
    for event in ["behind=0", "conflicts=2", "dirty tree", "behind=3"] {
        push(
            &mut git,
            json!({"stream": "git-watch", "event": event, "level": "surface"}),
        )
        .await;
    }
    let history = query(&mut git, json!({"streams": ["git-watch"]})).await;
    let stream = &history["streams"]["git-watch@guardian"];
    let stored: Vec<(String, String)> = stream
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_owned(),
                e["level"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        stored,
        [
            ("behind=3".to_owned(), "keep".to_owned()),
            ("dirty tree".to_owned(), "surface".to_owned()),
            ("conflicts=2".to_owned(), "inject".to_owned()),
        ],
        "behind=0 is dropped"
    );
    assert_eq!(inject_texts(&mut events_rx), ["conflicts=2"]);
    let timeline = timeline_texts(&session);
    assert!(timeline.contains(&"guardian: [git-watch] dirty tree".to_owned()));
    assert!(!timeline.iter().any(|l| l.contains("behind=3")));
    // Other streams of the provider are not filtered.
    push(&mut git, json!({"event": "behind=0", "level": "keep"})).await;
    let history = query(&mut git, json!({"streams": ["guardian"]})).await;
    assert_eq!(events(&history, "guardian@guardian"), ["behind=0"]);

    git.send(json!({"type": "filter.set", "requestId": "f-2", "stream": "git-watch@guardian", "rules": []}))
        .await
        .unwrap();
    let ack2 = next_reply(&mut git).await;
    assert_eq!(ack2["type"], "ack");
    assert!(ack2["revision"].as_u64() > ack["revision"].as_u64());
    push(
        &mut git,
        json!({"stream": "git-watch", "event": "behind=0", "level": "keep"}),
    )
    .await;
    let history = query(&mut git, json!({"streams": ["git-watch"]})).await;
    assert_eq!(events(&history, "git-watch@guardian")[0], "behind=0");
}

#[tokio::test]
async fn filter_set_refuses_bad_patterns_and_other_providers_streams() {
    let gw = TestGateway::start().await;
    let (mut git, _) = gw.provider("guardian", json!({})).await;
    git.send(json!({"type": "filter.set", "requestId": "bad", "stream": "git", "rules": [{"match": "(unclosed", "outcome": "keep"}]}))
        .await
        .unwrap();
    let error = next_reply(&mut git).await;
    assert_error(&error, "INVALID_JSON", "filter.set");
    assert_eq!(error["requestId"], "bad");
    assert!(error["message"].as_str().unwrap().contains("rules[0]"));

    git.send(json!({"type": "filter.set", "requestId": "theirs", "stream": "ci-watch@ci", "rules": [{"match": ".*", "outcome": "drop"}]}))
        .await
        .unwrap();
    let error = next_reply(&mut git).await;
    assert_error(&error, "UNAUTHORIZED", "filter.set");
    assert_eq!(error["requestId"], "theirs");

    git.send(json!({"type": "filter.set", "requestId": "elsewhere", "sessionId": "nope", "stream": "git", "rules": []}))
        .await
        .unwrap();
    let error = next_reply(&mut git).await;
    assert_error(&error, "INVALID_SESSION", "filter.set");
    assert_eq!(error["requestId"], "elsewhere");
    // Still open and working.
    push(
        &mut git,
        json!({"stream": "git", "event": "ok", "level": "keep"}),
    )
    .await;
    let history = query(&mut git, json!({"streams": ["git"]})).await;
    assert_eq!(events(&history, "git@guardian"), ["ok"]);
}

// ---- session scope and access control ----

#[tokio::test]
async fn pushes_and_queries_outside_the_bound_sessions_are_invalid_session() {
    let gw = TestGateway::start().await;
    gw.create_session("other");
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    push(
        &mut ci,
        json!({"sessionId": "other", "event": "x", "level": "keep"}),
    )
    .await;
    let error = next_reply(&mut ci).await;
    assert_error(&error, "INVALID_SESSION", "push");
    assert_eq!(error["sessionId"], "other");
    ci.send(json!({"type": "stream.query", "queryId": "q-9", "sessionId": "other", "streams": []}))
        .await
        .unwrap();
    let error = next_reply(&mut ci).await;
    assert_error(&error, "INVALID_SESSION", "stream.query");
    assert_eq!(error["requestId"], "q-9");
    // Naming its own session is fine.
    push(
        &mut ci,
        json!({"sessionId": "default", "event": "here", "level": "keep"}),
    )
    .await;
    let history = query(&mut ci, json!({"sessionId": "default"})).await;
    assert_eq!(events(&history, "ci@ci"), ["here"]);
}

#[tokio::test]
async fn all_bound_providers_name_a_session_or_broadcast() {
    let gw = TestGateway::start().await;
    gw.create_session("second");
    let mut tap = local_provider(&gw, "tap", json!({"session": "all"})).await;
    tap.send(local_message(
        json!({"type": "push", "event": "where?", "level": "keep"}),
    ))
    .unwrap();
    assert_error(&local_reply(&mut tap).await, "INVALID_SESSION", "push");
    tap.send(local_message(
        json!({"type": "stream.query", "queryId": "q", "streams": []}),
    ))
    .unwrap();
    assert_error(
        &local_reply(&mut tap).await,
        "INVALID_SESSION",
        "stream.query",
    );

    tap.send(local_message(
        json!({"type": "push", "sessionId": "second", "event": "only second", "level": "keep"}),
    ))
    .unwrap();
    tap.send(local_message(
        json!({"type": "push", "broadcast": true, "event": "everyone", "level": "surface"}),
    ))
    .unwrap();
    for (session, expected) in [
        ("default", vec!["everyone"]),
        ("second", vec!["everyone", "only second"]),
    ] {
        tap.send(local_message(json!({"type": "stream.query", "queryId": session, "sessionId": session, "streams": ["tap"]})))
            .unwrap();
        let history = local_reply(&mut tap).await;
        assert_eq!(history["queryId"], session);
        assert_eq!(events(&history, "tap@tap"), expected, "{session}");
        assert!(timeline_texts(&gw.session(session)).contains(&"tap: [tap] everyone".to_owned()));
    }
}

#[tokio::test]
async fn cross_provider_stream_reads_need_internal_trust() {
    let gw = TestGateway::start().await;
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    let (mut guardian, _) = gw.provider("guardian", json!({})).await;
    push(
        &mut ci,
        json!({"stream": "ci-watch", "event": "running", "level": "keep"}),
    )
    .await;
    query(&mut ci, json!({})).await;

    guardian
        .send(json!({"type": "stream.query", "queryId": "peek", "streams": ["ci-watch@ci"]}))
        .await
        .unwrap();
    let error = next_reply(&mut guardian).await;
    assert_error(&error, "UNAUTHORIZED", "stream.query");
    assert_eq!(error["requestId"], "peek");
    // An external provider may read its own streams, not others'.
    let mut browser = external_provider(&gw, "browser", json!({})).await;
    push(
        &mut browser,
        json!({"event": "tab opened", "level": "keep"}),
    )
    .await;
    let history = query(&mut browser, json!({"streams": ["browser@browser"]})).await;
    assert_eq!(events(&history, "browser@browser"), ["tab opened"]);
    browser
        .send(json!({"type": "stream.query", "queryId": "peek", "streams": ["ci-watch@ci"]}))
        .await
        .unwrap();
    assert_error(
        &next_reply(&mut browser).await,
        "UNAUTHORIZED",
        "stream.query",
    );

    let mut tap = local_provider(&gw, "tap", json!({"session": "default"})).await;
    tap.send(local_message(json!({"type": "stream.query", "queryId": "q", "streams": ["ci-watch@ci", "browser@browser", "missing@nobody"], "last": 5})))
        .unwrap();
    let history = local_reply(&mut tap).await;
    assert_eq!(history["type"], "stream.history");
    assert_eq!(events(&history, "ci-watch@ci"), ["running"]);
    assert_eq!(events(&history, "browser@browser"), ["tab opened"]);
    assert_eq!(history["streams"]["missing@nobody"], json!([]));
}

#[tokio::test]
async fn streams_die_with_their_session() {
    let gw = TestGateway::start().await;
    gw.create_session("short");
    let mut tap = local_provider(&gw, "tap", json!({"session": "all"})).await;
    tap.send(local_message(
        json!({"type": "push", "sessionId": "short", "event": "old news", "level": "keep"}),
    ))
    .unwrap();
    tap.send(local_message(
        json!({"type": "stream.query", "queryId": "q", "sessionId": "short", "streams": []}),
    ))
    .unwrap();
    assert_eq!(
        events(&local_reply(&mut tap).await, "tap@tap"),
        ["old news"]
    );

    let registry = gw.gateway.registry().clone();
    let ending = tokio::spawn(async move { registry.end("short", None).await });
    // Let the session go: the provider answers shutdown.pending.
    loop {
        let message: GatewayMessage = tokio::time::timeout(Duration::from_secs(5), tap.recv())
            .await
            .unwrap()
            .unwrap();
        if let GatewayMessage::SessionLifecycle(lifecycle) = message
            && lifecycle.session_id == "short"
        {
            tap.send(local_message(
                json!({"type": "shutdown.ready", "sessionId": "short"}),
            ))
            .unwrap();
            break;
        }
    }
    ending.await.unwrap().unwrap();
    // A new session of the same id starts empty.
    gw.create_session("short");
    tap.send(local_message(
        json!({"type": "session.ready", "sessionId": "short"}),
    ))
    .unwrap();
    tap.send(local_message(
        json!({"type": "stream.query", "queryId": "q", "sessionId": "short", "streams": ["tap"]}),
    ))
    .unwrap();
    let history = local_reply(&mut tap).await;
    assert_eq!(history["type"], "stream.history", "{history}");
    assert_eq!(history["streams"]["tap@tap"], json!([]));
}

// ---- isolation ----

// Several worker threads, as the daemon runs: on one thread the flooding
// client itself would hold up the test's own call.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_push_flood_does_not_delay_another_providers_tool_call() {
    let gw = gateway_with(|s| s.pushes_per_second = 1_000_000).await;
    let session = gw.session("default");
    let mut events_rx = session.subscribe();
    let (mut flooder, _) = gw.provider("flooder", json!({})).await;
    let (mut worker, _) = gw
        .provider("worker", json!({"tools": [tool("work")]}))
        .await;

    const FLOOD: usize = 2_000;
    let flood = tokio::spawn(async move {
        let started = Instant::now();
        let event = "x".repeat(1024);
        for i in 0..FLOOD {
            push(
                &mut flooder,
                json!({"stream": format!("s{}", i % 20), "event": event, "level": "surface"}),
            )
            .await;
        }
        query(&mut flooder, json!({"queryId": "done"})).await;
        (started, Instant::now())
    });
    // Wait until the flood is being handled, then call the other provider.
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events_rx.recv()).await {
            Ok(Ok(SessionEvent::Log { source, .. })) if source == "flooder" => break,
            Ok(Ok(_)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => continue,
            other => panic!("flood never reached the session: {other:?}"),
        }
    }
    let call_started = Instant::now();
    let call = gw.call("default", "work", json!({"x": "now"}));
    let request = worker.expect("tool.call").await.unwrap();
    worker
        .send(json!({"type": "tool.result", "id": request["id"], "data": "done"}))
        .await
        .unwrap();
    let outcome = call.await.unwrap();
    let call_took = call_started.elapsed();
    assert_eq!(outcome.result.unwrap(), json!("done"));
    let (_, flood_done) = flood.await.unwrap();
    assert!(
        call_started < flood_done,
        "the call must run while the flood is handled"
    );
    assert!(
        call_took < Duration::from_millis(500),
        "a tool call took {call_took:?} during another provider's push flood"
    );
}
