//! State updates (spec: "Update acknowledgments", "Ordering guarantees",
//! "Session scope enforcement"): `tools.update`, `hooks.update`,
//! `context.update` and `filter.set` answer with `ack` (or `error`) by
//! `requestId`, with a revision per (provider, session), and once `ack(N)`
//! is in hand every call sees revision N's state.

use std::collections::HashMap;

use bridge_testkit::ProviderClient;
use serde_json::{Value, json};

use crate::push::{
    assert_error, external_provider, local_message, local_provider, local_reply, next_reply,
};
use crate::support::{TestGateway, tool};

async fn update(client: &mut ProviderClient, body: Value) -> Value {
    client.send(body).await.unwrap();
    next_reply(client).await
}

fn assert_ack(message: &Value, request_id: &str, session_id: &str) -> u64 {
    assert_eq!(message["type"], "ack", "expected an ack, got {message}");
    assert_eq!(message["requestId"], request_id, "{message}");
    assert_eq!(message["sessionId"], session_id, "{message}");
    message["revision"].as_u64().unwrap()
}

/// Answers the next `tool.call` with `data`.
async fn serve_one(client: &mut ProviderClient, tool: &str, data: Value) {
    let request = client.expect("tool.call").await.unwrap();
    assert_eq!(request["tool"], tool);
    client
        .send(json!({"type": "tool.result", "id": request["id"], "data": data}))
        .await
        .unwrap();
}

#[tokio::test]
async fn tools_update_adds_replaces_and_removes_and_the_next_call_sees_it() {
    let gw = TestGateway::start().await;
    let (mut ci, _) = gw
        .provider("ci", json!({"tools": [tool("status"), tool("rerun")]}))
        .await;
    let session = gw.session("default");

    let ack = update(
        &mut ci,
        json!({"type": "tools.update", "requestId": "req-1", "sessionId": "default",
               "tools": [{"name": "status", "description": "CI status v2", "parameters": {}},
                         {"name": "logs", "description": "CI logs", "parameters": {}}],
               "remove": ["rerun"]}),
    )
    .await;
    let first = assert_ack(&ack, "req-1", "default");
    assert_eq!(
        session.tool("status").unwrap().spec.description,
        "CI status v2"
    );
    assert!(session.tool("logs").is_some());
    assert!(session.tool("rerun").is_none());

    // Revision barrier: right after the ack, calls use the new state.
    let removed = gw.call("default", "rerun", json!({})).await.unwrap();
    assert!(removed.result.is_err(), "a removed tool is gone");
    let call = gw.call("default", "logs", json!({}));
    serve_one(&mut ci, "logs", json!("log lines")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("log lines"));

    // sessionId may be omitted by a single-session provider.
    let ack = update(
        &mut ci,
        json!({"type": "tools.update", "requestId": "req-2", "remove": ["logs"]}),
    )
    .await;
    let second = assert_ack(&ack, "req-2", "default");
    assert!(second > first);
    assert!(session.tool("logs").is_none());
    assert!(session.tool("status").is_some());
    let status = gw.gateway.status();
    assert_eq!(status.providers[0].tools, ["status"]);
}

#[tokio::test]
async fn a_conflicting_tools_update_changes_nothing_and_answers_tool_conflict() {
    let gw = TestGateway::start().await;
    let (_owner, _) = gw
        .provider("owner", json!({"tools": [tool("screenshot")]}))
        .await;
    let (mut ci, _) = gw.provider("ci", json!({"tools": [tool("status")]})).await;
    let error = update(
        &mut ci,
        json!({"type": "tools.update", "requestId": "req-9",
               "tools": [tool("fresh"), tool("screenshot")], "remove": ["status"]}),
    )
    .await;
    assert_error(&error, "TOOL_CONFLICT", "tools.update");
    assert_eq!(error["requestId"], "req-9");
    assert_eq!(error["sessionId"], "default");
    let session = gw.session("default");
    assert!(session.tool("status").is_some(), "all or nothing");
    assert!(session.tool("fresh").is_none());
    // The next update starts from the unchanged state.
    let ack = update(
        &mut ci,
        json!({"type": "tools.update", "requestId": "req-10", "tools": [tool("fresh")]}),
    )
    .await;
    assert_ack(&ack, "req-10", "default");
    assert!(session.tool("status").is_some());
    assert!(session.tool("fresh").is_some());
}

#[tokio::test]
async fn malformed_and_out_of_scope_updates_answer_with_their_request_id() {
    let gw = TestGateway::start().await;
    gw.create_session("other");
    let (mut ci, _) = gw.provider("ci", json!({"tools": [tool("status")]})).await;
    let error = update(
        &mut ci,
        json!({"type": "tools.update", "requestId": "r-1", "sessionId": "other", "tools": []}),
    )
    .await;
    assert_error(&error, "INVALID_SESSION", "tools.update");
    assert_eq!(error["requestId"], "r-1");
    assert_eq!(error["sessionId"], "other");
    for (kind, extra) in [
        ("hooks.update", json!({})),
        ("context.update", json!({"context": "x"})),
        ("filter.set", json!({"stream": "s", "rules": []})),
    ] {
        let mut body = json!({"type": kind, "requestId": "r-2", "sessionId": "missing"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let error = update(&mut ci, body).await;
        assert_error(&error, "INVALID_SESSION", kind);
        assert_eq!(error["requestId"], "r-2");
    }
    let error = update(
        &mut ci,
        json!({"type": "tools.update", "requestId": "r-3", "tools": [tool("a"), tool("a")]}),
    )
    .await;
    assert_error(&error, "INVALID_JSON", "tools.update");
    assert_eq!(error["requestId"], "r-3");
    let error = update(
        &mut ci,
        json!({"type": "tools.update", "requestId": "r-4", "tools": [tool("a")], "remove": ["a"]}),
    )
    .await;
    assert_error(&error, "INVALID_JSON", "tools.update");
    // Nothing counted a revision; the next ack is the first.
    let ack = update(
        &mut ci,
        json!({"type": "tools.update", "requestId": "r-5", "tools": [tool("a")]}),
    )
    .await;
    assert_eq!(assert_ack(&ack, "r-5", "default"), 1);
}

#[tokio::test]
async fn pipelined_updates_get_exactly_one_answer_each_and_the_last_ack_wins() {
    let gw = TestGateway::start().await;
    let (mut ci, _) = gw.provider("ci", json!({"tools": [tool("status")]})).await;
    const N: usize = 40;
    for i in 0..N {
        ci.send(json!({"type": "tools.update", "requestId": format!("r{i}"),
                       "tools": [{"name": "status", "description": format!("v{i}"), "parameters": {}}]}))
            .await
            .unwrap();
        ci.send(json!({"type": "context.update", "requestId": format!("c{i}"), "context": format!("ctx {i}")}))
            .await
            .unwrap();
    }
    let mut answers: HashMap<String, Value> = HashMap::new();
    let mut last_revision = 0;
    let mut last_acked: HashMap<char, usize> = HashMap::new();
    while answers.len() < 2 * N {
        let message = next_reply(&mut ci).await;
        let request_id = message["requestId"]
            .as_str()
            .unwrap_or_else(|| panic!("an answer without requestId: {message}"))
            .to_owned();
        match message["type"].as_str() {
            Some("ack") => {
                let revision = message["revision"].as_u64().unwrap();
                assert!(
                    revision > last_revision,
                    "revisions must increase: {revision} after {last_revision}"
                );
                last_revision = revision;
                let kind = request_id.chars().next().unwrap();
                let index: usize = request_id[1..].parse().unwrap();
                if let Some(previous) = last_acked.insert(kind, index) {
                    assert!(index > previous, "acks follow request order");
                }
            }
            Some("error") => assert_eq!(message["code"], "RATE_LIMITED", "{message}"),
            _ => panic!("unexpected {message}"),
        }
        assert!(
            answers.insert(request_id.clone(), message).is_none(),
            "{request_id} answered twice"
        );
    }
    ci.expect_silence(std::time::Duration::from_millis(100))
        .await
        .unwrap();
    let session = gw.session("default");
    let tools_last = last_acked[&'r'];
    assert_eq!(
        session.tool("status").unwrap().spec.description,
        format!("v{tools_last}")
    );
    let context_last = last_acked[&'c'];
    assert!(
        session
            .context()
            .contains(&("ci".to_owned(), format!("ctx {context_last}")))
    );
    // The first of each type always lands.
    assert_eq!(answers["r0"]["type"], "ack");
    assert_eq!(answers["c0"]["type"], "ack");
}

#[tokio::test]
async fn context_update_sets_and_clears_and_is_refused_to_external_providers() {
    let gw = TestGateway::start().await;
    let (mut ci, _) = gw.provider("ci", json!({})).await;
    let session = gw.session("default");
    let ack = update(
        &mut ci,
        json!({"type": "context.update", "requestId": "c-1", "context": "CI is passing."}),
    )
    .await;
    assert_ack(&ack, "c-1", "default");
    assert!(
        session
            .context()
            .contains(&("ci".to_owned(), "CI is passing.".to_owned()))
    );
    let ack = update(
        &mut ci,
        json!({"type": "context.update", "requestId": "c-2", "context": null}),
    )
    .await;
    assert_ack(&ack, "c-2", "default");
    assert!(session.context().iter().all(|(owner, _)| owner != "ci"));

    let mut browser = external_provider(&gw, "browser", json!({})).await;
    let error = update(
        &mut browser,
        json!({"type": "context.update", "requestId": "c-3", "context": "hi"}),
    )
    .await;
    assert_error(&error, "UNAUTHORIZED", "context.update");
    assert_eq!(error["requestId"], "c-3");
    assert!(
        session
            .context()
            .iter()
            .all(|(owner, _)| owner != "browser")
    );
    // External providers may still update their tools.
    let ack = update(
        &mut browser,
        json!({"type": "tools.update", "requestId": "t-1", "tools": [tool("page_title")]}),
    )
    .await;
    assert_ack(&ack, "t-1", "default");
}

#[tokio::test]
async fn hooks_update_replaces_rules_and_the_next_call_obeys_them() {
    let gw = TestGateway::start().await;
    let (mut ci, _) = gw.provider("ci", json!({"tools": [tool("deploy")]})).await;
    let ack = update(
        &mut ci,
        json!({"type": "hooks.update", "requestId": "h-1",
               "onPreToolUse": [{"match": {"tool": "deploy"}, "action": "deny", "reason": "CI is red"}]}),
    )
    .await;
    assert_ack(&ack, "h-1", "default");
    let denied = gw.call("default", "deploy", json!({})).await.unwrap();
    let failure = denied.result.unwrap_err();
    assert!(failure.message.contains("CI is red"), "{failure:?}");

    // Transforms only: the rules stay.
    let ack = update(
        &mut ci,
        json!({"type": "hooks.update", "requestId": "h-2",
               "transforms": {"custom_instructions": {"action": "append", "content": "Use pnpm."}}}),
    )
    .await;
    assert_ack(&ack, "h-2", "default");
    assert!(
        gw.call("default", "deploy", json!({}))
            .await
            .unwrap()
            .result
            .is_err()
    );

    let ack = update(
        &mut ci,
        json!({"type": "hooks.update", "requestId": "h-3", "onPreToolUse": [],
               "transforms": {"custom_instructions": null}}),
    )
    .await;
    assert_ack(&ack, "h-3", "default");
    let call = gw.call("default", "deploy", json!({}));
    serve_one(&mut ci, "deploy", json!("deployed")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("deployed"));
}

#[tokio::test]
async fn external_providers_cannot_add_gate_rules_by_update() {
    let gw = TestGateway::start().await;
    let mut browser = external_provider(&gw, "browser", json!({"tools": [tool("page")]})).await;
    let error = update(
        &mut browser,
        json!({"type": "hooks.update", "requestId": "h-1",
               "onPreToolUse": [{"match": {"tool": "shell"}, "action": "gate", "gateId": "g"}]}),
    )
    .await;
    assert_error(&error, "UNAUTHORIZED", "hooks.update");
    assert_eq!(error["requestId"], "h-1");
}

#[tokio::test]
async fn an_update_without_session_id_is_acked_once_per_bound_session() {
    let gw = TestGateway::start().await;
    gw.create_session("second");
    let mut tap = local_provider(
        &gw,
        "tap",
        json!({"session": "all", "tools": [tool("tap_a")]}),
    )
    .await;
    tap.send(local_message(
        json!({"type": "tools.update", "requestId": "all-1", "tools": [tool("tap_b")]}),
    ))
    .unwrap();
    let mut acked = Vec::new();
    for _ in 0..2 {
        let ack = local_reply(&mut tap).await;
        assert_eq!(ack["type"], "ack", "{ack}");
        assert_eq!(ack["requestId"], "all-1");
        assert_eq!(ack["revision"], 1);
        acked.push(ack["sessionId"].as_str().unwrap().to_owned());
    }
    acked.sort();
    assert_eq!(acked, ["default", "second"]);
    for session in ["default", "second"] {
        assert!(gw.session(session).tool("tap_b").is_some(), "{session}");
    }
    // A session joined later starts from the state every session got.
    gw.create_session("third");
    tap.send(local_message(
        json!({"type": "session.ready", "sessionId": "third"}),
    ))
    .unwrap();
    tap.send(local_message(
        json!({"type": "stream.query", "queryId": "barrier", "sessionId": "third", "streams": []}),
    ))
    .unwrap();
    assert_eq!(local_reply(&mut tap).await["type"], "stream.history");
    let third = gw.session("third");
    assert!(third.tool("tap_a").is_some());
    assert!(third.tool("tap_b").is_some());
    // One session only, by sessionId: revisions are per session.
    tap.send(local_message(json!({"type": "tools.update", "requestId": "one", "sessionId": "second", "remove": ["tap_a"]})))
        .unwrap();
    let ack = local_reply(&mut tap).await;
    assert_eq!(ack["sessionId"], "second");
    assert_eq!(ack["revision"], 2);
    assert!(gw.session("second").tool("tap_a").is_none());
    assert!(gw.session("default").tool("tap_a").is_some());
}
