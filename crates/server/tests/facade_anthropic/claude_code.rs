//! What the latest Claude Code sends with its default settings, through an
//! OpenAI-wire upstream and natively to an Anthropic one: a system message
//! in the conversation, per-message `output_config`, per-block
//! `cache_control`, deferred tools, a tool search's `tool_reference`,
//! server tools, `anthropic-beta`.

use bridge_testkit::{MockLlm, MockReply, MockToolCall};
use serde_json::{Value, json};

use super::{chat_requests, post_messages, sse_records};
use crate::support::{Setup, TestDaemon};

fn claude_code_request() -> Value {
    json!({
        "model": "claude-opus-4-7",
        "max_tokens": 32000,
        "stream": true,
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "what's the weather?", "cache_control": {"type": "ephemeral"}}]},
            {"role": "system", "content": "The user's timezone is UTC.", "output_config": {"effort": "low"}},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_call_search", "name": "ToolSearch", "input": {"query": "weather"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_call_search",
                 "content": [{"type": "tool_reference", "tool_name": "mcp__weather__forecast"}]},
            ]},
        ],
        "tools": [
            {"name": "ToolSearch", "description": "Finds tools", "input_schema": {"type": "object"}},
            {"name": "mcp__weather__forecast", "description": "Forecast", "defer_loading": true,
             "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        ],
    })
}

#[tokio::test]
async fn claude_codes_default_request_reaches_an_openai_upstream() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: Some("Checking.".into()),
        calls: vec![MockToolCall::new(
            "call_7",
            "mcp__weather__forecast",
            r#"{"city":"Oslo"}"#,
        )],
    }])
    .await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;

    let response = post_messages(&daemon, &claude_code_request()).await;
    assert_eq!(response.status(), 200);
    let records = sse_records(response).await;
    let start = &records[0].1;
    assert_eq!(start["type"], "message_start");
    let input_tokens = start["message"]["usage"]["input_tokens"].as_u64().unwrap();
    assert!(
        input_tokens > 20,
        "an estimate of the prompt: {input_tokens}"
    );
    let call = records
        .iter()
        .find(|(name, data)| {
            name == "content_block_start" && data["content_block"]["type"] == "tool_use"
        })
        .expect("the tool call is a tool_use block");
    assert_eq!(call.1["content_block"]["id"], "toolu_call_7");
    assert_eq!(call.1["content_block"]["name"], "mcp__weather__forecast");

    let sent = &chat_requests(&mock)[0].body;
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "system", "assistant", "tool"]);
    assert_eq!(
        sent["messages"][2]["content"],
        "The user's timezone is UTC."
    );
    // The upstream's own id shape, both in the call and in its result.
    assert_eq!(sent["messages"][3]["tool_calls"][0]["id"], "call_search");
    assert_eq!(sent["messages"][4]["tool_call_id"], "call_search");
    let result = sent["messages"][4]["content"].as_str().unwrap();
    assert!(result.contains("mcp__weather__forecast"), "{result}");
    // The deferred tool is an ordinary function; the server tool is left out.
    let tools: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["ToolSearch", "mcp__weather__forecast"]);
    assert!(sent.get("output_config").is_none() && sent.get("thinking").is_none());
    daemon.stop().await;
}

#[tokio::test]
async fn an_anthropic_upstream_gets_it_natively_with_the_clients_betas() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Sunny."])]).await;
    let daemon = TestDaemon::with(Setup::default().anthropic_backend(&mock.base_url())).await;

    let response = daemon
        .http()
        .post(daemon.url("/v1/messages"))
        .header("x-api-key", &daemon.token)
        .header("anthropic-version", "2023-06-01")
        .header(
            "anthropic-beta",
            "tool-search-tool-2025-10-19,context-1m-2025-08-07",
        )
        .json(&claude_code_request())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let records = sse_records(response).await;
    assert_eq!(records.last().unwrap().0, "message_stop");

    let sent = &chat_requests(&mock)[0];
    assert_eq!(
        sent.header("anthropic-beta"),
        Some("tool-search-tool-2025-10-19,context-1m-2025-08-07")
    );
    let request = claude_code_request();
    assert_eq!(sent.body["messages"], request["messages"]);
    assert_eq!(sent.body["tools"], request["tools"]);
    assert_eq!(sent.body["output_config"], request["output_config"]);
    daemon.stop().await;
}

#[tokio::test]
async fn the_model_list_has_anthropics_shape_for_anthropic_clients() {
    let mock = MockLlm::start(vec![]).await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;
    let list = |anthropic: bool| {
        let mut request = daemon
            .http()
            .get(daemon.url("/v1/models"))
            .header("x-api-key", &daemon.token);
        if anthropic {
            request = request.header("anthropic-version", "2023-06-01");
        }
        request.send()
    };

    let anthropic: Value = list(true).await.unwrap().json().await.unwrap();
    let data = anthropic["data"].as_array().unwrap();
    assert!(!data.is_empty(), "{anthropic}");
    assert_eq!(data[0]["type"], "model");
    assert!(data[0]["display_name"].is_string() && data[0]["created_at"].is_string());
    assert_eq!(anthropic["has_more"], false);
    assert_eq!(anthropic["first_id"], data[0]["id"]);
    assert_eq!(anthropic["last_id"], data[data.len() - 1]["id"]);

    let openai: Value = list(false).await.unwrap().json().await.unwrap();
    assert_eq!(openai["object"], "list");
    assert_eq!(openai["data"][0]["object"], "model");
    daemon.stop().await;
}
