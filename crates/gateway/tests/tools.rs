//! Provider tools over real sockets: registration rules, multi-instance
//! routing, concurrency, timeouts, cancellation, terminal ordering,
//! progress, disconnects, file references and retries.

use std::time::Duration;

use base64::Engine;
use bridge_gateway::GatewaySettings;
use bridge_testkit::ProviderClient;
use serde_json::{Value, json};

use crate::support::{TestGateway, fast_registry_settings, fast_settings, tool};

/// Connects and authenticates a project provider without registering.
pub(crate) async fn connected(gw: &TestGateway) -> ProviderClient {
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    client
}

/// Sends a `hello` that must fail; returns the `error`.
pub(crate) async fn hello_error(client: &mut ProviderClient, name: &str, fields: Value) -> Value {
    let mut hello = json!({"type": "hello", "name": name, "protocolVersion": 2});
    hello
        .as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    client.send(hello).await.unwrap();
    let error = client.expect("error").await.unwrap();
    assert_eq!(error["replyTo"], "hello", "{error}");
    error
}

/// Answers the next `tool.call` with `data`; returns the call.
pub(crate) async fn answer(provider: &mut ProviderClient, data: Value) -> Value {
    let call = provider.expect("tool.call").await.unwrap();
    provider
        .send(json!({"type": "tool.result", "id": call["id"], "data": data}))
        .await
        .unwrap();
    call
}

/// Makes the gateway see activity from `provider` and waits until it has
/// (an unknown type is answered with an error, after the touch).
async fn touch(provider: &mut ProviderClient) {
    provider.send(json!({"type": "x.touch"})).await.unwrap();
    let error = provider.expect("error").await.unwrap();
    assert_eq!(error["code"], "UNKNOWN_TYPE");
}

pub(crate) async fn external_provider(
    gw: &TestGateway,
    name: &str,
    fields: Value,
) -> ProviderClient {
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .send(json!({"type": "auth", "mode": "pair", "name": name}))
        .await
        .unwrap();
    client.expect("auth.pairing").await.unwrap();
    let code = gw.gateway.pending_pairings()[0].code.clone();
    client
        .send(json!({"type": "auth.confirm", "code": code}))
        .await
        .unwrap();
    client.expect("sessions").await.unwrap();
    client.hello(name, fields).await.unwrap();
    client
}

/// Polls a condition the gateway reaches after a disconnect (there is no
/// message to wait for: the provider is gone).
pub(crate) async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..200 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

fn tool_names(gw: &TestGateway) -> Vec<String> {
    gw.session("default")
        .tools()
        .iter()
        .map(|t| t.spec.name.clone())
        .collect()
}

fn failure_code(outcome: &bridge_engine::CallOutcome) -> String {
    outcome.result.as_ref().unwrap_err().code.clone()
}

#[tokio::test]
async fn invalid_tool_names_are_invalid_json_and_the_connection_stays_open() {
    let gw = TestGateway::start().await;
    let mut client = connected(&gw).await;
    for bad in [
        "",
        "has space",
        "semi;colon",
        "x".repeat(65).as_str(),
        "ünïcode",
    ] {
        let error = hello_error(&mut client, "p", json!({"tools": [tool(bad)]})).await;
        assert_eq!(error["code"], "INVALID_JSON", "{bad:?}: {error}");
    }
    let error = hello_error(
        &mut client,
        "p",
        json!({"tools": [tool("twice"), tool("twice")]}),
    )
    .await;
    assert_eq!(error["code"], "INVALID_JSON");
    let ack = client
        .hello(
            "p",
            json!({"tools": [tool(&"x".repeat(64)), tool("ok-name_2")]}),
        )
        .await
        .unwrap();
    assert!(ack["providerId"].is_string());
    assert!(tool_names(&gw).contains(&"ok-name_2".to_owned()));
}

#[tokio::test]
async fn more_than_100_tools_is_payload_too_large() {
    let gw = TestGateway::start().await;
    let mut client = connected(&gw).await;
    let tools: Vec<Value> = (0..101).map(|i| tool(&format!("t{i}"))).collect();
    let error = hello_error(&mut client, "big", json!({"tools": tools})).await;
    assert_eq!(error["code"], "PAYLOAD_TOO_LARGE");
    let tools: Vec<Value> = (0..100).map(|i| tool(&format!("t{i}"))).collect();
    client.hello("big", json!({"tools": tools})).await.unwrap();
    assert!(tool_names(&gw).contains(&"t99".to_owned()));
}

#[tokio::test]
async fn a_name_held_by_another_provider_is_tool_conflict_naming_the_holder() {
    let gw = TestGateway::start().await;
    let (mut alpha, _) = gw
        .provider("alpha", json!({"tools": [tool("shared")]}))
        .await;
    let mut beta = connected(&gw).await;
    let error = hello_error(
        &mut beta,
        "beta",
        json!({"tools": [tool("mine"), tool("shared")]}),
    )
    .await;
    assert_eq!(error["code"], "TOOL_CONFLICT");
    assert_eq!(error["sessionId"], "default");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("'shared'") && message.contains("alpha"),
        "{message}"
    );
    // All or nothing: none of beta's tools went in; alpha is unaffected.
    assert!(!tool_names(&gw).contains(&"mine".to_owned()));
    let call = gw.call("default", "shared", json!({}));
    answer(&mut alpha, json!("alpha's")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("alpha's"));
    // Beta renames and registers on the same connection.
    beta.hello("beta", json!({"tools": [tool("mine")]}))
        .await
        .unwrap();
}

#[tokio::test]
async fn workspace_tool_names_are_tool_conflict() {
    let gw = TestGateway::start().await;
    assert!(tool_names(&gw).contains(&"read_file".to_owned()));
    let mut client = connected(&gw).await;
    let error = hello_error(&mut client, "p", json!({"tools": [tool("read_file")]})).await;
    assert_eq!(error["code"], "TOOL_CONFLICT");
    assert!(
        error["message"].as_str().unwrap().contains("workspace"),
        "{error}"
    );
}

#[tokio::test]
async fn meta_tool_names_and_other_providers_list_prefixes_are_reserved() {
    let gw = TestGateway::start().await;
    let (_browser, _) = gw
        .provider("browser", json!({"tools": [tool("page_title")]}))
        .await;
    let mut client = connected(&gw).await;
    let error = hello_error(
        &mut client,
        "p",
        json!({"tools": [tool("list_p_instances")]}),
    )
    .await;
    assert_eq!(error["code"], "TOOL_CONFLICT");
    let error = hello_error(
        &mut client,
        "p",
        json!({"tools": [tool("list_browser_tabs")]}),
    )
    .await;
    assert_eq!(error["code"], "TOOL_CONFLICT");
    assert!(error["message"].as_str().unwrap().contains("browser"));
    // Its own prefix and unrelated list_ names are fine.
    client
        .hello(
            "p",
            json!({"tools": [tool("list_p_things"), tool("list_files_here")]}),
        )
        .await
        .unwrap();
}

async fn browser_tab(
    gw: &TestGateway,
    instance: &str,
    metadata: Value,
    tools: Value,
) -> ProviderClient {
    gw.provider(
        "browser",
        json!({"instance": instance, "metadata": metadata, "tools": tools}),
    )
    .await
    .0
}

fn target_description(gw: &TestGateway, tool: &str) -> String {
    let entry = gw.session("default").tool(tool).unwrap();
    entry.spec.input_schema["properties"]["target"]["description"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn instances_share_one_tool_with_target_and_a_meta_tool() {
    let gw = TestGateway::start().await;
    let mut tab_a = browser_tab(
        &gw,
        "tab-a",
        json!({"title": "Dashboard", "url": "https://app.example.com"}),
        json!([tool("screenshot")]),
    )
    .await;
    let mut tab_b = browser_tab(
        &gw,
        "tab-b",
        json!({"title": "Settings"}),
        json!([tool("screenshot"), tool("only_b")]),
    )
    .await;

    let names = tool_names(&gw);
    assert_eq!(names.iter().filter(|n| *n == "screenshot").count(), 1);
    assert!(names.contains(&"list_browser_instances".to_owned()));
    let described = target_description(&gw, "screenshot");
    assert!(
        described.contains("tab-a (Dashboard — https://app.example.com)"),
        "{described}"
    );
    assert!(described.contains("tab-b (Settings)"), "{described}");
    // The provider's own parameters survive the injection.
    let schema = gw
        .session("default")
        .tool("screenshot")
        .unwrap()
        .spec
        .input_schema
        .clone();
    assert_eq!(schema["properties"]["x"]["type"], "string");

    let listed = gw
        .session("default")
        .call_tool(
            "list_browser_instances",
            json!({}),
            bridge_engine::CallOrigin::Rpc,
        )
        .await
        .result
        .unwrap();
    let ids: Vec<&str> = listed["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&"tab-a") && ids.contains(&"tab-b"));
    let tab_a_listed = listed["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "tab-a")
        .unwrap();
    assert_eq!(tab_a_listed["metadata"]["title"], "Dashboard");

    // An explicit target routes there, and `target` never reaches the provider.
    let call = gw.call(
        "default",
        "screenshot",
        json!({"target": "tab-a", "x": "1"}),
    );
    let sent = answer(&mut tab_a, json!("from a")).await;
    assert_eq!(sent["args"], json!({"x": "1"}));
    assert_eq!(call.await.unwrap().result.unwrap(), json!("from a"));

    // No target: the most recently active instance (tab-a just answered).
    let call = gw.call("default", "screenshot", json!({}));
    answer(&mut tab_a, json!("a again")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("a again"));
    touch(&mut tab_b).await;
    let call = gw.call("default", "screenshot", json!({}));
    answer(&mut tab_b, json!("from b")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("from b"));

    // A tool only one instance has goes there even if another is more recent.
    touch(&mut tab_a).await;
    let call = gw.call("default", "only_b", json!({}));
    answer(&mut tab_b, json!("b only")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("b only"));

    // Unknown target: NOT_FOUND naming the available instances.
    let outcome = gw
        .call("default", "screenshot", json!({"target": "tab-z"}))
        .await
        .unwrap();
    let failure = outcome.result.unwrap_err();
    assert_eq!(failure.code, "NOT_FOUND");
    assert!(
        failure.message.contains("tab-a") && failure.message.contains("tab-b"),
        "{}",
        failure.message
    );

    // Instances leave: the description follows; the last one takes the tools.
    tab_b.close().await;
    eventually("tab-b is gone from the target description", || {
        !target_description(&gw, "screenshot").contains("tab-b")
    })
    .await;
    assert!(!tool_names(&gw).contains(&"only_b".to_owned()));
    tab_a.close().await;
    eventually("the browser tools are gone", || {
        let names = tool_names(&gw);
        !names.contains(&"screenshot".to_owned())
            && !names.contains(&"list_browser_instances".to_owned())
    })
    .await;
}

#[tokio::test]
async fn a_retryable_failure_is_retried_once_on_another_instance() {
    let gw = TestGateway::start().await;
    let mut tab_a = browser_tab(&gw, "tab-a", json!({}), json!([tool("click")])).await;
    let mut tab_b = browser_tab(&gw, "tab-b", json!({}), json!([tool("click")])).await;
    touch(&mut tab_a).await;
    let call = gw.call("default", "click", json!({"x": "1"}));
    let first = tab_a.expect("tool.call").await.unwrap();
    tab_a
        .send(json!({"type": "tool.result", "id": first["id"], "error": "tab busy", "errorCode": "INTERNAL", "retryable": true}))
        .await
        .unwrap();
    let second = answer(&mut tab_b, json!("clicked on b")).await;
    assert_ne!(first["id"], second["id"]);
    assert_eq!(second["args"], json!({"x": "1"}));
    assert_eq!(call.await.unwrap().result.unwrap(), json!("clicked on b"));

    // With an explicit target there is no retry elsewhere.
    let call = gw.call("default", "click", json!({"target": "tab-a"}));
    let request = tab_a.expect("tool.call").await.unwrap();
    tab_a
        .send(json!({"type": "tool.result", "id": request["id"], "error": "busy", "errorCode": "INTERNAL", "retryable": true}))
        .await
        .unwrap();
    assert_eq!(failure_code(&call.await.unwrap()), "INTERNAL");
    tab_b
        .expect_silence(Duration::from_millis(100))
        .await
        .unwrap();
}

#[tokio::test]
async fn concurrency_limits_queue_in_order_and_refuse_past_the_queue_limit() {
    let settings = GatewaySettings {
        concurrency_queue_limit: 2,
        ..fast_settings()
    };
    let gw = TestGateway::start_with(settings, fast_registry_settings()).await;
    let (mut slow, _) = gw
        .provider(
            "slow",
            json!({"tools": [tool("work")], "concurrency": {"max": 1, "scope": "instance"}}),
        )
        .await;
    let (mut other, _) = gw
        .provider("other", json!({"tools": [tool("quick")]}))
        .await;
    let first = gw.call("default", "work", json!({"x": "1"}));
    let in_flight = slow.expect("tool.call").await.unwrap();
    assert_eq!(in_flight["args"]["x"], "1");
    let second = gw.call("default", "work", json!({"x": "2"}));
    let third = gw.call("default", "work", json!({"x": "3"}));
    // No event marks a call as queued; give both tasks time to queue.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let refused = gw.call("default", "work", json!({"x": "4"}));
    let refused = tokio::time::timeout(Duration::from_secs(1), refused)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(failure_code(&refused), "RATE_LIMITED");
    slow.expect_silence(Duration::from_millis(100))
        .await
        .unwrap();

    // Another provider is not held up.
    let quick = gw.call("default", "quick", json!({}));
    answer(&mut other, json!("quick")).await;
    assert_eq!(quick.await.unwrap().result.unwrap(), json!("quick"));

    slow.send(json!({"type": "tool.result", "id": in_flight["id"], "data": 1}))
        .await
        .unwrap();
    let next = answer(&mut slow, json!(2)).await;
    assert_eq!(next["args"]["x"], "2");
    let last = answer(&mut slow, json!(3)).await;
    assert_eq!(last["args"]["x"], "3");
    assert_eq!(first.await.unwrap().result.unwrap(), json!(1));
    assert_eq!(second.await.unwrap().result.unwrap(), json!(2));
    assert_eq!(third.await.unwrap().result.unwrap(), json!(3));
}

#[tokio::test]
async fn provider_scope_limits_all_instances_together() {
    let gw = TestGateway::start().await;
    let concurrency = json!({"max": 1, "scope": "provider"});
    let (mut tab_a, _) = gw
        .provider(
            "browser",
            json!({"instance": "a", "tools": [tool("t")], "concurrency": concurrency}),
        )
        .await;
    let (mut tab_b, _) = gw
        .provider(
            "browser",
            json!({"instance": "b", "tools": [tool("t")], "concurrency": concurrency}),
        )
        .await;
    let first = gw.call("default", "t", json!({"target": "a"}));
    let request = tab_a.expect("tool.call").await.unwrap();
    let second = gw.call("default", "t", json!({"target": "b"}));
    tab_b
        .expect_silence(Duration::from_millis(150))
        .await
        .unwrap();
    tab_a
        .send(json!({"type": "tool.result", "id": request["id"], "data": "a"}))
        .await
        .unwrap();
    answer(&mut tab_b, json!("b")).await;
    assert_eq!(first.await.unwrap().result.unwrap(), json!("a"));
    assert_eq!(second.await.unwrap().result.unwrap(), json!("b"));
}

#[tokio::test]
async fn a_timed_out_call_is_cancelled_and_its_late_result_ignored() {
    let gw = TestGateway::start().await;
    let mut slow_tool = tool("slow");
    slow_tool["timeout"] = json!(150);
    let (mut provider, _) = gw
        .provider("p", json!({"tools": [slow_tool, tool("fast")]}))
        .await;
    let call = gw.call("default", "slow", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    let cancel = provider.expect("tool.cancel").await.unwrap();
    assert_eq!(cancel["id"], request["id"]);
    assert_eq!(cancel["sessionId"], "default");
    assert_eq!(cancel["reason"], "timeout");
    let outcome = call.await.unwrap();
    assert_eq!(failure_code(&outcome), "CANCELLED");
    // The late answer is dropped without an error; the connection goes on.
    provider
        .send(json!({"type": "tool.result", "id": request["id"], "data": "late"}))
        .await
        .unwrap();
    let call = gw.call("default", "fast", json!({}));
    answer(&mut provider, json!("fast")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("fast"));
}

#[tokio::test]
async fn the_default_timeout_applies_to_tools_without_one() {
    let settings = GatewaySettings {
        default_tool_timeout: Duration::from_millis(150),
        ..fast_settings()
    };
    let gw = TestGateway::start_with(settings, fast_registry_settings()).await;
    let (mut provider, _) = gw.provider("p", json!({"tools": [tool("t")]})).await;
    let call = gw.call("default", "t", json!({}));
    provider.expect("tool.call").await.unwrap();
    assert_eq!(
        provider.expect("tool.cancel").await.unwrap()["reason"],
        "timeout"
    );
    assert_eq!(failure_code(&call.await.unwrap()), "CANCELLED");
}

#[tokio::test]
async fn a_caller_that_stops_waiting_cancels_the_call() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = gw.provider("p", json!({"tools": [tool("t")]})).await;
    let call = gw.call("default", "t", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    call.abort();
    let cancel = provider.expect("tool.cancel").await.unwrap();
    assert_eq!(cancel["id"], request["id"]);
    assert_eq!(cancel["reason"], "cancelled");
}

#[tokio::test]
async fn the_first_terminal_result_wins_and_unknown_ids_are_ignored() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = gw.provider("p", json!({"tools": [tool("t")]})).await;
    let call = gw.call("default", "t", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    provider
        .send(json!({"type": "tool.result", "id": request["id"], "data": "first"}))
        .await
        .unwrap();
    provider
        .send(json!({"type": "tool.result", "id": request["id"], "data": "second"}))
        .await
        .unwrap();
    provider
        .send(json!({"type": "tool.result", "id": "c-never-sent", "data": "?"}))
        .await
        .unwrap();
    provider
        .send(json!({"type": "tool.progress", "id": "c-never-sent", "message": "?"}))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!("first"));
    provider
        .expect_silence(Duration::from_millis(150))
        .await
        .unwrap();
}

mod results;
