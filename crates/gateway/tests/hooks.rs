//! Provider hook rules, gates and transforms over real sockets: matching,
//! deny / context / gate, fail-closed timeouts and disconnects, limits,
//! the capability matrix, protected sections and callbacks.

use std::time::Duration;

use bridge_engine::CallOutcome;
use bridge_testkit::ProviderClient;
use serde_json::{Value, json};

use crate::support::{TestGateway, tool};
use crate::tools::{answer, connected, eventually, external_provider, hello_error};

fn rules(rules: Value) -> Value {
    json!({"hooks": {"onPreToolUse": rules}})
}

fn denial(outcome: &CallOutcome) -> String {
    let failure = outcome.result.as_ref().unwrap_err();
    assert_eq!(failure.code, "policy_denied", "{failure:?}");
    failure.message.clone()
}

/// A provider serving `tools`, for rules to act on.
async fn worker(gw: &TestGateway, tools: &[&str]) -> ProviderClient {
    let tools: Vec<Value> = tools.iter().map(|t| tool(t)).collect();
    gw.provider("worker", json!({"tools": tools})).await.0
}

#[tokio::test]
async fn a_deny_rule_blocks_matching_tools_before_they_reach_the_provider() {
    let gw = TestGateway::start().await;
    let mut worker = worker(&gw, &["danger_zone", "safe"]).await;
    let (guard, _) = gw
        .provider("guard", rules(json!([{"match": {"tool": "danger_*"}, "action": "deny", "reason": "no danger today"}])))
        .await;
    let outcome = gw.call("default", "danger_zone", json!({})).await.unwrap();
    let message = denial(&outcome);
    assert!(
        message.contains("no danger today") && message.contains("guard"),
        "{message}"
    );
    worker
        .expect_silence(Duration::from_millis(100))
        .await
        .unwrap();

    let call = gw.call("default", "safe", json!({}));
    answer(&mut worker, json!("ok")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("ok"));

    // The rules leave with their provider.
    guard.close().await;
    eventually("the guard's rules are gone", || {
        gw.session("default").rule_count("guard") == 0
    })
    .await;
    let call = gw.call("default", "danger_zone", json!({}));
    answer(&mut worker, json!("allowed now")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("allowed now"));
}

#[tokio::test]
async fn context_rules_match_args_by_regex_and_files_by_glob() {
    let gw = TestGateway::start().await;
    let mut worker = worker(&gw, &["deploy", "edit"]).await;
    let (_guard, _) = gw
        .provider(
            "guard",
            rules(json!([
                {"match": {"tool": "deploy", "args": "\"x\":\"prod(uction)?\""}, "action": "context", "content": "Production deploy: double-check."},
                {"match": {"tool": "edit", "file": "*.sql"}, "action": "context", "content": "Migration file: keep it backward compatible."}
            ])),
        )
        .await;
    let call = gw.call("default", "deploy", json!({"x": "prod"}));
    answer(&mut worker, json!("deployed")).await;
    assert_eq!(
        call.await.unwrap().context,
        vec!["Production deploy: double-check."]
    );

    let call = gw.call("default", "deploy", json!({"x": "staging"}));
    answer(&mut worker, json!("deployed")).await;
    assert!(call.await.unwrap().context.is_empty());

    let call = gw.call("default", "edit", json!({"path": "db/0042_users.sql"}));
    answer(&mut worker, json!("edited")).await;
    assert_eq!(
        call.await.unwrap().context,
        vec!["Migration file: keep it backward compatible."]
    );

    let call = gw.call("default", "edit", json!({"path": "src/main.rs"}));
    answer(&mut worker, json!("edited")).await;
    assert!(call.await.unwrap().context.is_empty());
}

#[tokio::test]
async fn match_provider_scopes_a_rule_to_one_providers_tools() {
    let gw = TestGateway::start().await;
    let mut worker = worker(&gw, &["w_tool"]).await;
    let (mut other, _) = gw
        .provider("other", json!({"tools": [tool("o_tool")]}))
        .await;
    let (_guard, _) = gw
        .provider("guard", rules(json!([{"match": {"provider": "worker"}, "action": "deny", "reason": "worker is frozen"}])))
        .await;
    denial(&gw.call("default", "w_tool", json!({})).await.unwrap());
    worker
        .expect_silence(Duration::from_millis(50))
        .await
        .unwrap();
    let call = gw.call("default", "o_tool", json!({}));
    answer(&mut other, json!("fine")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("fine"));
}

async fn gatekeeper(gw: &TestGateway, fail_open: bool) -> ProviderClient {
    gw.provider(
        "ci",
        rules(json!([{"match": {"tool": "deploy"}, "action": "gate", "gateId": "check-ci", "failOpen": fail_open}])),
    )
    .await
    .0
}

async fn answer_gate(ci: &mut ProviderClient, decision: &str, reason: Option<&str>) -> Value {
    let check = ci.expect("gate.check").await.unwrap();
    let mut result = json!({"type": "gate.result", "gateId": check["gateId"], "callId": check["callId"], "decision": decision});
    if let Some(reason) = reason {
        result["reason"] = json!(reason);
    }
    ci.send(result).await.unwrap();
    check
}

#[tokio::test]
async fn gates_allow_deny_or_add_context() {
    let gw = TestGateway::start().await;
    let mut worker = worker(&gw, &["deploy"]).await;
    let mut ci = gatekeeper(&gw, false).await;

    let call = gw.call("default", "deploy", json!({"x": "main"}));
    let check = answer_gate(&mut ci, "allow", None).await;
    assert_eq!(check["gateId"], "check-ci");
    assert_eq!(check["sessionId"], "default");
    assert_eq!(check["tool"], "deploy");
    assert_eq!(check["args"], json!({"x": "main"}));
    assert!(check["callId"].as_str().is_some_and(|id| !id.is_empty()));
    answer(&mut worker, json!("deployed")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("deployed"));

    let call = gw.call("default", "deploy", json!({}));
    answer_gate(&mut ci, "deny", Some("CI is failing on this branch.")).await;
    let message = denial(&call.await.unwrap());
    assert!(
        message.contains("CI is failing on this branch.") && message.contains("check-ci"),
        "{message}"
    );
    worker
        .expect_silence(Duration::from_millis(50))
        .await
        .unwrap();

    let call = gw.call("default", "deploy", json!({}));
    answer_gate(&mut ci, "context", Some("CI is flaky today.")).await;
    answer(&mut worker, json!("deployed")).await;
    let outcome = call.await.unwrap();
    assert!(outcome.result.is_ok());
    assert_eq!(outcome.context, vec!["CI is flaky today."]);
}

#[tokio::test]
async fn a_silent_gate_fails_closed_and_its_late_answer_is_ignored() {
    let gw = TestGateway::start().await;
    let mut worker = worker(&gw, &["deploy"]).await;
    let mut ci = gatekeeper(&gw, false).await;
    let call = gw.call("default", "deploy", json!({}));
    let check = ci.expect("gate.check").await.unwrap();
    let message = denial(&call.await.unwrap());
    assert!(message.contains("did not respond in time"), "{message}");
    worker
        .expect_silence(Duration::from_millis(50))
        .await
        .unwrap();
    ci.send(json!({"type": "gate.result", "callId": check["callId"], "decision": "allow"}))
        .await
        .unwrap();
    ci.expect_silence(Duration::from_millis(100)).await.unwrap();
}

#[tokio::test]
async fn a_fail_open_gate_allows_on_timeout() {
    let gw = TestGateway::start().await;
    let mut worker = worker(&gw, &["deploy"]).await;
    let mut ci = gatekeeper(&gw, true).await;
    let call = gw.call("default", "deploy", json!({}));
    ci.expect("gate.check").await.unwrap();
    answer(&mut worker, json!("deployed")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("deployed"));
}

#[tokio::test]
async fn a_gate_pending_at_disconnect_denies_even_when_fail_open() {
    let gw = TestGateway::start().await;
    let mut worker = worker(&gw, &["deploy"]).await;
    let mut ci = gatekeeper(&gw, true).await;
    let call = gw.call("default", "deploy", json!({}));
    ci.expect("gate.check").await.unwrap();
    ci.abort();
    let message = denial(&call.await.unwrap());
    assert!(message.contains("unavailable"), "{message}");
    worker
        .expect_silence(Duration::from_millis(50))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_stuck_gate_does_not_hold_up_other_tools() {
    let gw = TestGateway::start().await;
    let mut worker = worker(&gw, &["deploy", "status"]).await;
    let mut ci = gatekeeper(&gw, false).await;
    let gated = gw.call("default", "deploy", json!({}));
    ci.expect("gate.check").await.unwrap();
    let call = gw.call("default", "status", json!({}));
    answer(&mut worker, json!("green")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("green"));
    denial(&gated.await.unwrap());
}

#[tokio::test]
async fn invalid_rules_are_invalid_json_naming_the_problem() {
    let gw = TestGateway::start().await;
    let mut client = connected(&gw).await;
    let error = hello_error(
        &mut client,
        "p",
        rules(json!([{"match": {"args": "(unclosed"}, "action": "deny"}])),
    )
    .await;
    assert_eq!(error["code"], "INVALID_JSON");
    assert!(
        error["message"].as_str().unwrap().contains("(unclosed"),
        "{error}"
    );
    let error = hello_error(
        &mut client,
        "p",
        rules(json!([{"match": {"tool": "x"}, "action": "gate"}])),
    )
    .await;
    assert_eq!(error["code"], "INVALID_JSON");
    assert!(
        error["message"].as_str().unwrap().contains("gateId"),
        "{error}"
    );
    let error = hello_error(
        &mut client,
        "p",
        rules(json!([{"match": {}, "action": "context"}])),
    )
    .await;
    assert_eq!(error["code"], "INVALID_JSON");
    let huge = "a".repeat(5000);
    let error = hello_error(
        &mut client,
        "p",
        rules(json!([{"match": {"args": huge}, "action": "deny"}])),
    )
    .await;
    assert_eq!(error["code"], "INVALID_JSON");
    // Nothing was installed; a valid hello still works.
    client
        .hello(
            "p",
            rules(json!([{"match": {"tool": "x"}, "action": "deny"}])),
        )
        .await
        .unwrap();
    assert_eq!(gw.session("default").rule_count("p"), 1);
}

#[tokio::test]
async fn more_than_50_rules_is_payload_too_large() {
    let gw = TestGateway::start().await;
    let mut client = connected(&gw).await;
    let many: Vec<Value> = (0..51)
        .map(|i| json!({"match": {"tool": format!("t{i}")}, "action": "deny"}))
        .collect();
    let error = hello_error(&mut client, "p", rules(json!(many))).await;
    assert_eq!(error["code"], "PAYLOAD_TOO_LARGE");
    let fifty: Vec<Value> = (0..50)
        .map(|i| json!({"match": {"tool": format!("t{i}")}, "action": "deny"}))
        .collect();
    client.hello("p", rules(json!(fifty))).await.unwrap();
    assert_eq!(gw.session("default").rule_count("p"), 50);
}

async fn external_hello_error(gw: &TestGateway, fields: Value) -> Value {
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .send(json!({"type": "auth", "mode": "pair"}))
        .await
        .unwrap();
    client.expect("auth.pairing").await.unwrap();
    let code = gw.gateway.pending_pairings()[0].code.clone();
    client
        .send(json!({"type": "auth.confirm", "code": code}))
        .await
        .unwrap();
    client.expect("sessions").await.unwrap();
    let mut fields = fields;
    fields["session"] = json!("default");
    hello_error(&mut client, "ext", fields).await
}

#[tokio::test]
async fn external_providers_get_only_static_appends() {
    let gw = TestGateway::start().await;
    let error = external_hello_error(
        &gw,
        rules(json!([{"match": {"tool": "x"}, "action": "context", "content": "c"}])),
    )
    .await;
    assert_eq!(error["code"], "UNAUTHORIZED");
    for action in ["callback", "prepend", "replace"] {
        let fields = json!({"hooks": {"transforms": {"custom_instructions": {"action": action, "content": "c"}}}});
        let error = external_hello_error(&gw, fields).await;
        assert_eq!(error["code"], "UNAUTHORIZED", "{action}: {error}");
    }
    let fields = json!({"session": "default", "hooks": {"transforms": {"custom_instructions": {"action": "append", "content": "From the browser."}}}});
    let _ext = external_provider(&gw, "ext", fields).await;
    let text = gw
        .session("default")
        .render_section("custom_instructions", "Base.")
        .await;
    assert_eq!(text, "Base.\nFrom the browser.");
}

#[tokio::test]
async fn static_transforms_apply_in_registration_order() {
    let gw = TestGateway::start().await;
    let (_first, _) = gw
        .provider(
            "first",
            json!({"hooks": {"transforms": {
                "custom_instructions": {"action": "append", "content": "Use pnpm."},
                "intro": {"action": "replace", "content": "Replaced intro."}
            }}}),
        )
        .await;
    let (_second, _) = gw
        .provider(
            "second",
            json!({"hooks": {"transforms": {
                "custom_instructions": {"action": "append", "content": "Run tests."},
                "outro": {"action": "prepend", "content": "Before."}
            }}}),
        )
        .await;
    let session = gw.session("default");
    assert_eq!(
        session.render_section("custom_instructions", "Base.").await,
        "Base.\nUse pnpm.\nRun tests."
    );
    assert_eq!(
        session.render_section("intro", "Old intro.").await,
        "Replaced intro."
    );
    assert_eq!(
        session.render_section("outro", "After.").await,
        "Before.\nAfter."
    );
}

#[tokio::test]
async fn protected_sections_take_only_appends_and_render_last() {
    let gw = TestGateway::start().await;
    let mut client = connected(&gw).await;
    for (section, action) in [
        ("safety", "replace"),
        ("safety", "prepend"),
        ("identity", "replace"),
        ("identity", "callback"),
    ] {
        let fields =
            json!({"hooks": {"transforms": {section: {"action": action, "content": "x"}}}});
        let error = hello_error(&mut client, "p", fields).await;
        assert_eq!(error["code"], "UNAUTHORIZED", "{section} {action}: {error}");
    }
    client
        .hello(
            "p",
            json!({"hooks": {"transforms": {
                "safety": {"action": "append", "content": "Also: never push to main."},
                "custom_instructions": {"action": "append", "content": "Use pnpm."}
            }}}),
        )
        .await
        .unwrap();
    let base = vec![
        ("safety".to_owned(), "Be safe.".to_owned()),
        ("identity".to_owned(), "You are the bridge.".to_owned()),
        ("custom_instructions".to_owned(), "Base.".to_owned()),
    ];
    let rendered = gw.session("default").render_prompt(&base).await;
    let names: Vec<&str> = rendered.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["custom_instructions", "safety", "identity"]);
    assert_eq!(rendered[1].1, "Be safe.\nAlso: never push to main.");
    assert_eq!(rendered[0].1, "Base.\nUse pnpm.");
}

async fn callback_provider(gw: &TestGateway) -> ProviderClient {
    gw.provider(
        "rules",
        json!({"hooks": {"transforms": {"code_change_rules": {"action": "callback"}}}}),
    )
    .await
    .0
}

#[tokio::test]
async fn callback_transforms_round_trip() {
    let gw = TestGateway::start().await;
    let mut provider = callback_provider(&gw).await;
    let session = gw.session("default");
    let render = tokio::spawn(async move {
        session
            .render_section("code_change_rules", "Existing.")
            .await
    });
    let request = provider.expect("transform.request").await.unwrap();
    assert_eq!(request["sessionId"], "default");
    assert_eq!(request["section"], "code_change_rules");
    assert_eq!(request["current"], "Existing.");
    provider
        .send(json!({"type": "transform.result", "callId": request["callId"], "content": "Existing.\nLive: CI green."}))
        .await
        .unwrap();
    assert_eq!(render.await.unwrap(), "Existing.\nLive: CI green.");
}

#[tokio::test]
async fn an_unanswered_callback_keeps_the_current_text() {
    let gw = TestGateway::start().await;
    let mut provider = callback_provider(&gw).await;
    let session = gw.session("default");
    let render = tokio::spawn(async move {
        session
            .render_section("code_change_rules", "Existing.")
            .await
    });
    let request = provider.expect("transform.request").await.unwrap();
    assert_eq!(render.await.unwrap(), "Existing.");
    // The late answer is ignored without an error.
    provider
        .send(json!({"type": "transform.result", "callId": request["callId"], "content": "late"}))
        .await
        .unwrap();
    provider
        .expect_silence(Duration::from_millis(100))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_callback_pending_at_disconnect_keeps_the_current_text() {
    let gw = TestGateway::start().await;
    let mut provider = callback_provider(&gw).await;
    let session = gw.session("default");
    let started = std::time::Instant::now();
    let render = tokio::spawn(async move {
        session
            .render_section("code_change_rules", "Existing.")
            .await
    });
    provider.expect("transform.request").await.unwrap();
    provider.abort();
    assert_eq!(render.await.unwrap(), "Existing.");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn rebinding_replaces_rules_and_transforms() {
    let gw = TestGateway::start().await;
    let mut client = connected(&gw).await;
    client
        .hello("p", json!({"hooks": {
            "onPreToolUse": [{"match": {"tool": "a"}, "action": "deny"}, {"match": {"tool": "b"}, "action": "deny"}],
            "transforms": {"one": {"action": "append", "content": "1"}, "two": {"action": "append", "content": "2"}}
        }}))
        .await
        .unwrap();
    assert_eq!(gw.session("default").rule_count("p"), 2);
    client
        .hello(
            "p",
            json!({"hooks": {
                "onPreToolUse": [{"match": {"tool": "c"}, "action": "deny"}],
                "transforms": {"two": {"action": "append", "content": "2b"}}
            }}),
        )
        .await
        .unwrap();
    let session = gw.session("default");
    assert_eq!(session.rule_count("p"), 1);
    assert_eq!(session.render_section("one", "").await, "");
    assert_eq!(session.render_section("two", "").await, "2b");
}

#[tokio::test]
async fn a_reconnect_takeover_keeps_the_new_connections_rules_and_tools() {
    let gw = TestGateway::start().await;
    let fields = json!({
        "tools": [tool("t")],
        "hooks": {
            "onPreToolUse": [{"match": {"tool": "t", "args": "forbidden"}, "action": "deny", "reason": "no"}],
            "transforms": {"notes": {"action": "append", "content": "kept"}}
        }
    });
    let (mut old, ack) = gw.provider("p", fields.clone()).await;
    let mut new = connected(&gw).await;
    let mut fields = fields;
    fields["reconnectToken"] = ack["reconnectToken"].clone();
    new.hello("p", fields).await.unwrap();
    old.expect_close().await.unwrap();
    // The replaced connection's teardown has run once its slot is free.
    eventually("the old connection is gone", || {
        gw.gateway.status().connections == 1
    })
    .await;
    let session = gw.session("default");
    assert_eq!(session.rule_count("p"), 1);
    assert_eq!(session.render_section("notes", "").await, "kept");
    denial(
        &gw.call("default", "t", json!({"x": "forbidden"}))
            .await
            .unwrap(),
    );
    let call = gw.call("default", "t", json!({"x": "fine"}));
    answer(&mut new, json!("served by the new connection")).await;
    assert_eq!(
        call.await.unwrap().result.unwrap(),
        json!("served by the new connection")
    );
}
