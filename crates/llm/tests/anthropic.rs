//! The Anthropic backend against the testkit's mock upstream over real HTTP.

use std::time::{Duration, Instant};

use bridge_llm::translate::anthropic::encode_events;
use bridge_llm::{
    AnthropicBackend, AnthropicConfig, ChatBackend, ChatEvent, ChatRequest, FinishReason, LlmError,
    Message, Role, ToolCall, ToolDefinition, collect,
};
use bridge_testkit::mock_llm::MOCK_MODELS;
use bridge_testkit::{MockLlm, MockReply, MockToolCall};
use futures::StreamExt;
use serde_json::json;

const API_KEY: &str = "sk-ant-test-123";

fn backend_at(base_url: &str, idle_timeout: Duration) -> AnthropicBackend {
    let mut config = AnthropicConfig::new("anthropic-test", "claude-mock");
    config.base_url = base_url.into();
    config.api_key = Some(API_KEY.into());
    config.extra_headers = vec![("anthropic-beta".into(), "tools-2024".into())];
    config.request_timeout = Duration::from_secs(5);
    config.idle_timeout = idle_timeout;
    AnthropicBackend::new(config).unwrap()
}

fn backend_for(mock: &MockLlm) -> AnthropicBackend {
    backend_at(&mock.base_url(), Duration::from_secs(5))
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::text(Role::User, text)],
        ..ChatRequest::default()
    }
}

async fn all_items(
    backend: &AnthropicBackend,
    request: ChatRequest,
) -> Vec<Result<ChatEvent, LlmError>> {
    backend.stream(&request).await.unwrap().collect().await
}

fn texts(items: &[Result<ChatEvent, LlmError>]) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(ChatEvent::TextDelta { text }) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(header, _)| header.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

#[tokio::test]
async fn text_streams_with_usage_and_the_request_carries_anthropic_headers() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hel", "lo, ", "wörld 🌍"])]).await;
    let mut request = ask("hi there");
    request
        .messages
        .insert(0, Message::text(Role::System, "be brief"));
    let items = all_items(&backend_for(&mock), request).await;
    assert_eq!(texts(&items), ["Hel", "lo, ", "wörld 🌍"]);
    let events: Vec<ChatEvent> = items.into_iter().map(Result::unwrap).collect();
    let usage = events
        .iter()
        .find_map(|event| match event {
            ChatEvent::Usage { usage } => Some(*usage),
            _ => None,
        })
        .expect("usage from message_start and message_delta");
    assert!(
        usage.prompt_tokens > 0 && usage.completion_tokens > 0,
        "{usage:?}"
    );
    assert_eq!(
        events.last(),
        Some(&ChatEvent::Finish {
            reason: FinishReason::Stop
        })
    );

    let recorded = mock.requests();
    assert_eq!(recorded.len(), 1);
    let sent = &recorded[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(header(&sent.headers, "x-api-key"), Some(API_KEY));
    assert_eq!(
        header(&sent.headers, "anthropic-version"),
        Some("2023-06-01")
    );
    assert_eq!(header(&sent.headers, "anthropic-beta"), Some("tools-2024"));
    assert_eq!(header(&sent.headers, "authorization"), None);
    assert_eq!(sent.body["model"], json!("claude-mock"));
    assert_eq!(sent.body["system"], json!("be brief"));
    assert_eq!(sent.body["max_tokens"], json!(4096));
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi there"}]}])
    );
}

#[tokio::test]
async fn parallel_tool_calls_with_arguments_in_many_chunks_are_numbered_from_zero() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: Some("Checking both.".into()),
        calls: vec![
            MockToolCall {
                id: "toolu_1".into(),
                name: "read_file".into(),
                argument_chunks: ["{\"pa", "th\": \"s", "rc/mä", "in.rs\"}"]
                    .map(String::from)
                    .to_vec(),
            },
            MockToolCall {
                id: "toolu_2".into(),
                name: "list_dir".into(),
                argument_chunks: vec!["{\"path\":".into(), " \".\"}".into()],
            },
        ],
    }])
    .await;
    let backend = backend_for(&mock);
    let events: Vec<ChatEvent> = backend
        .stream(&ask("read it"))
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    let starts: Vec<(usize, String)> = events
        .iter()
        .filter_map(|event| match event {
            ChatEvent::ToolCallStart { index, id, .. } => Some((*index, id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [(0, "toolu_1".into()), (1, "toolu_2".into())]);
    let fragments = events
        .iter()
        .filter(|event| matches!(event, ChatEvent::ToolCallArgumentsDelta { index: 0, .. }))
        .count();
    assert_eq!(fragments, 4, "each chunk arrives as its own delta");

    let stream = futures::stream::iter(events.into_iter().map(Ok)).boxed();
    let response = collect(stream).await.unwrap();
    assert_eq!(response.text, "Checking both.");
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall {
                id: "toolu_1".into(),
                name: "read_file".into(),
                arguments: "{\"path\": \"src/mäin.rs\"}".into(),
            },
            ToolCall {
                id: "toolu_2".into(),
                name: "list_dir".into(),
                arguments: "{\"path\": \".\"}".into(),
            },
        ]
    );
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn a_whole_answer_is_asked_for_unstreamed_and_keeps_its_tool_calls() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: Some("Checking.".into()),
        calls: vec![MockToolCall::new(
            "toolu_1",
            "read_file",
            "{\"path\": \"src/mäin.rs\"}",
        )],
    }])
    .await;
    let response = backend_for(&mock).complete(&ask("read it")).await.unwrap();
    assert_eq!(response.text, "Checking.");
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "toolu_1".into(),
            name: "read_file".into(),
            arguments: "{\"path\":\"src/mäin.rs\"}".into(),
        }]
    );
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
    let sent = &mock.requests()[0];
    assert_eq!(sent.body["stream"], json!(false));
    assert_eq!(header(&sent.headers, "accept"), Some("application/json"));
}

#[tokio::test]
async fn a_tool_call_without_text_and_a_follow_up_with_its_result() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall {
                id: "toolu_x".into(),
                name: "run".into(),
                argument_chunks: vec!["{\"cmd\":\"ls\"}".into()],
            }],
        },
        MockReply::chunks(["done"]),
    ])
    .await;
    let backend = backend_for(&mock);
    let mut request = ask("list");
    request.tools = vec![ToolDefinition {
        name: "run".into(),
        description: "Runs a command".into(),
        parameters: json!({"type": "object", "properties": {"cmd": {"type": "string"}}}),
    }];
    let first = collect(backend.stream(&request).await.unwrap())
        .await
        .unwrap();
    assert_eq!(first.text, "");
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].arguments, "{\"cmd\":\"ls\"}");

    request.messages.push(Message {
        role: Role::Assistant,
        content: None,
        tool_calls: first.tool_calls.clone(),
        tool_call_id: None,
    });
    request
        .messages
        .push(Message::tool_result("toolu_x", "a.txt"));
    let second = collect(backend.stream(&request).await.unwrap())
        .await
        .unwrap();
    assert_eq!(second.text, "done");

    let sent = &mock.requests()[1].body;
    assert_eq!(
        sent["tools"],
        json!([{"name": "run", "description": "Runs a command",
            "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}])
    );
    assert_eq!(
        sent["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_x", "name": "run", "input": {"cmd": "ls"}}]})
    );
    assert_eq!(
        sent["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_x", "content": "a.txt"}]})
    );
}

#[tokio::test]
async fn a_non_streamed_message_when_extra_turns_streaming_off_gives_the_same_answer() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: Some("Sure.".into()),
        calls: vec![MockToolCall {
            id: "toolu_w".into(),
            name: "write".into(),
            argument_chunks: vec!["{\"a\":".into(), "1}".into()],
        }],
    }])
    .await;
    let mut request = ask("write");
    request.extra.insert("stream".into(), json!(false));
    let response = collect(backend_for(&mock).stream(&request).await.unwrap())
        .await
        .unwrap();
    assert_eq!(mock.requests()[0].body["stream"], json!(false));
    assert_eq!(response.text, "Sure.");
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "toolu_w".into(),
            name: "write".into(),
            arguments: "{\"a\":1}".into(),
        }]
    );
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
    assert!(response.usage.is_some_and(|usage| usage.prompt_tokens > 0));
}

#[tokio::test]
async fn invalid_tool_arguments_are_refused_before_anything_is_sent() {
    let mock = MockLlm::start(vec![]).await;
    let mut request = ask("x");
    request.messages.push(Message {
        role: Role::Assistant,
        content: None,
        tool_calls: vec![ToolCall {
            id: "toolu_bad".into(),
            name: "run".into(),
            arguments: "{\"cmd\": ".into(),
        }],
        tool_call_id: None,
    });
    let err = backend_for(&mock).stream(&request).await.err().unwrap();
    assert!(matches!(err, LlmError::NotConfigured(_)), "{err:?}");
    assert!(err.to_string().contains("toolu_bad"), "{err}");
    assert!(mock.requests().is_empty(), "garbage was sent");
}

#[tokio::test]
async fn rate_limit_is_an_http_error_with_the_anthropic_message_and_retry_after() {
    let mock = MockLlm::start(vec![MockReply::Error {
        status: 429,
        body: "Number of request tokens has exceeded your rate limit".into(),
        retry_after_secs: Some(9),
    }])
    .await;
    let err = backend_for(&mock).stream(&ask("x")).await.err().unwrap();
    assert_eq!(
        err,
        LlmError::Http {
            backend: "anthropic-test".into(),
            status: 429,
            message: "Number of request tokens has exceeded your rate limit".into(),
            retry_after: Some(Duration::from_secs(9)),
        }
    );
}

#[tokio::test]
async fn unauthorized_and_forbidden_are_auth_errors() {
    for status in [401, 403] {
        let mock = MockLlm::start(vec![MockReply::error(status, "invalid x-api-key")]).await;
        let err = backend_for(&mock).stream(&ask("x")).await.err().unwrap();
        assert!(matches!(err, LlmError::Auth { .. }), "{status}: {err:?}");
        assert!(err.to_string().contains("invalid x-api-key"), "{err}");
        assert!(err.to_string().contains(&status.to_string()), "{err}");
    }
}

#[tokio::test]
async fn an_html_error_page_becomes_a_short_http_message() {
    let page = format!(
        "<html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
        "<p>cloudflare</p>".repeat(500)
    );
    let mock = MockLlm::start(vec![MockReply::Raw {
        status: 502,
        content_type: "text/html".into(),
        body_chunks: vec![page],
    }])
    .await;
    let err = backend_for(&mock).stream(&ask("x")).await.err().unwrap();
    let LlmError::Http {
        status, message, ..
    } = &err
    else {
        panic!("expected an HTTP error, got {err:?}");
    };
    assert_eq!(*status, 502);
    assert!(message.contains("502 Bad Gateway"), "{message}");
    assert!(message.len() < 1000, "the whole page was kept: {message}");
}

#[tokio::test]
async fn a_success_that_is_not_an_event_stream_is_a_protocol_error() {
    let mock = MockLlm::start(vec![MockReply::Raw {
        status: 200,
        content_type: "text/html".into(),
        body_chunks: vec!["<html>Sign in to the proxy</html>".into()],
    }])
    .await;
    let err = backend_for(&mock).stream(&ask("x")).await.err().unwrap();
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
    assert!(err.to_string().contains("Sign in to the proxy"), "{err}");
}

#[tokio::test]
async fn bad_json_mid_stream_and_error_events_are_protocol_errors() {
    let mock = MockLlm::start(vec![
        MockReply::Raw {
            status: 200,
            content_type: "text/event-stream".into(),
            body_chunks: vec![
                "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n".into(),
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"fine\"}}\n\n".into(),
                "event: content_block_delta\ndata: {\"type\":\"content_bl".into(),
                "ock_delta\",oops}\n\n".into(),
            ],
        },
        MockReply::Raw {
            status: 200,
            content_type: "text/event-stream".into(),
            body_chunks: vec![
                "event: ping\ndata: {\"type\":\"ping\"}\n\n".into(),
                "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into(),
            ],
        },
    ])
    .await;
    let backend = backend_for(&mock);
    let items = all_items(&backend, ask("x")).await;
    assert_eq!(texts(&items), ["fine"]);
    let err = items.last().unwrap().clone().unwrap_err();
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
    assert!(
        err.to_string().contains("invalid JSON in stream event 3"),
        "{err}"
    );
    assert!(err.to_string().contains("oops"), "{err}");

    let items = all_items(&backend, ask("x")).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let err = items[0].clone().unwrap_err();
    assert!(err.to_string().contains("Overloaded"), "{err}");
}

#[tokio::test]
async fn a_dropped_connection_ends_the_answer_with_stream_ended_early() {
    let mock = MockLlm::start(vec![MockReply::DropAfter {
        chunks: vec!["The answer ".into(), "is".into()],
    }])
    .await;
    let items = all_items(&backend_for(&mock), ask("x")).await;
    assert_eq!(texts(&items), ["The answer ", "is"]);
    let err = items.last().unwrap().clone().unwrap_err();
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
    assert!(err.to_string().contains("stream ended early"), "{err}");
}

#[tokio::test]
async fn silence_beyond_the_idle_timeout_is_a_timeout() {
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks: vec!["late".into()],
        delay_ms: 3_000,
    }])
    .await;
    let idle = Duration::from_millis(300);
    let backend = backend_at(&mock.base_url(), idle);
    let started = Instant::now();
    let items = all_items(&backend, ask("x")).await;
    let err = items.last().unwrap().clone().unwrap_err();
    assert_eq!(
        err,
        LlmError::Timeout {
            backend: "anthropic-test".into(),
            after: idle
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn models_are_listed_from_v1_models() {
    let mock = MockLlm::start(vec![]).await;
    let models = backend_for(&mock).models().await.unwrap();
    assert_eq!(models, MOCK_MODELS.map(String::from).to_vec());
    let recorded = mock.requests();
    assert_eq!(recorded[0].path, "/v1/models");
    assert_eq!(header(&recorded[0].headers, "x-api-key"), Some(API_KEY));
}

#[tokio::test]
async fn a_bad_configuration_is_refused_at_start() {
    let mut config = AnthropicConfig::new("a", "m");
    assert_eq!(config.base_url, "https://api.anthropic.com");
    config.base_url = "ftp://example.com".into();
    let err = AnthropicBackend::new(config).err().unwrap();
    assert!(err.to_string().contains("not http(s)"), "{err}");
    let mut config = AnthropicConfig::new("a", "m");
    config.api_key = Some("key\nwith newline".into());
    let err = AnthropicBackend::new(config).err().unwrap();
    assert!(!err.to_string().contains("newline"), "key leaked: {err}");
    let debug = format!("{:?}", {
        let mut config = AnthropicConfig::new("a", "m");
        config.api_key = Some("secret-key".into());
        config
    });
    assert!(!debug.contains("secret-key"), "{debug}");
}

#[tokio::test]
async fn the_encoder_output_served_by_an_upstream_decodes_to_the_same_answer() {
    let events = vec![
        ChatEvent::TextDelta { text: "Ré".into() },
        ChatEvent::TextDelta {
            text: "sumé 🌍".into(),
        },
        ChatEvent::ToolCallStart {
            index: 0,
            id: "toolu_e".into(),
            name: "write".into(),
        },
        ChatEvent::ToolCallArgumentsDelta {
            index: 0,
            arguments: "{\"a\":".into(),
        },
        ChatEvent::ToolCallArgumentsDelta {
            index: 0,
            arguments: "1}".into(),
        },
        ChatEvent::ToolCallEnd { index: 0 },
        ChatEvent::Usage {
            usage: bridge_llm::Usage {
                prompt_tokens: 10,
                completion_tokens: 20,
            },
        },
        ChatEvent::Finish {
            reason: FinishReason::ToolCalls,
        },
    ];
    // Served in small pieces, so records and lines are split.
    let body = encode_events("msg_e", "claude", &events).concat();
    let pieces = small_pieces(&body, 5);
    let mock = MockLlm::start(vec![MockReply::Raw {
        status: 200,
        content_type: "text/event-stream".into(),
        body_chunks: pieces,
    }])
    .await;
    let decoded: Vec<ChatEvent> = all_items(&backend_for(&mock), ask("x"))
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(decoded, events);
}

/// `text` in pieces of about `size` bytes, cut on character boundaries
/// (the mock's raw chunks are strings).
fn small_pieces(text: &str, size: usize) -> Vec<String> {
    let mut pieces = vec![String::new()];
    for character in text.chars() {
        if pieces.last().is_some_and(|piece| piece.len() >= size) {
            pieces.push(String::new());
        }
        pieces.last_mut().unwrap().push(character);
    }
    pieces
}
