//! The OpenAI backend against the testkit's mock upstream over real HTTP.

use std::time::{Duration, Instant};

use bridge_llm::{ChatBackend, ChatEvent, FinishReason, LlmError, OpenAiBackend, collect};
use bridge_testkit::mock_llm::MOCK_MODELS;
use bridge_testkit::{MockLlm, MockReply, MockToolCall};
use futures::StreamExt;
use serde_json::json;

use crate::support::{API_KEY, all_items, ask, backend, final_error, texts};

const IDLE: Duration = Duration::from_secs(5);

fn backend_for(mock: &MockLlm) -> OpenAiBackend {
    backend(&format!("{}/v1", mock.base_url()), IDLE)
}

#[tokio::test]
async fn text_streams_as_deltas_then_usage_then_finish() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hel", "lo, ", "wörld 🌍"])]).await;
    let items = all_items(&backend_for(&mock), ask("hi there")).await;
    assert_eq!(texts(&items), ["Hel", "lo, ", "wörld 🌍"]);
    let events: Vec<ChatEvent> = items.into_iter().map(Result::unwrap).collect();
    let usage = events.iter().find_map(|event| match event {
        ChatEvent::Usage { usage } => Some(*usage),
        _ => None,
    });
    let usage = usage.expect("usage requested with stream_options must be reported");
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
}

#[tokio::test]
async fn a_tool_call_with_arguments_split_across_chunks_is_reassembled() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: Some("Checking.".into()),
        calls: vec![MockToolCall {
            id: "call_read".into(),
            name: "read_file".into(),
            argument_chunks: vec!["{\"pa".into(), "th\": \"sr".into(), "c/main.rs\"}".into()],
        }],
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
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments,
            } => Some(arguments.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["{\"pa", "th\": \"sr", "c/main.rs\"}"]);
    let position = |wanted: &ChatEvent| events.iter().position(|event| event == wanted).unwrap();
    let start = position(&ChatEvent::ToolCallStart {
        index: 0,
        id: "call_read".into(),
        name: "read_file".into(),
    });
    let end = position(&ChatEvent::ToolCallEnd { index: 0 });
    let finish = position(&ChatEvent::Finish {
        reason: FinishReason::ToolCalls,
    });
    assert!(start < end && end < finish, "{events:?}");
    assert_eq!(finish, events.len() - 1);
}

#[tokio::test]
async fn parallel_tool_calls_keep_their_ids_names_and_arguments_apart() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: None,
        calls: vec![
            MockToolCall {
                id: "call_1".into(),
                name: "read_file".into(),
                argument_chunks: vec!["{\"path\":".into(), "\"a.rs\"}".into()],
            },
            MockToolCall::new("call_2", "list_dir", "{\"path\":\".\"}"),
            MockToolCall::new("call_3", "search", "{\"query\":\"ünïcode\"}"),
        ],
    }])
    .await;
    let backend = backend_for(&mock);
    let response = collect(backend.stream(&ask("go")).await.unwrap())
        .await
        .unwrap();
    let calls: Vec<(&str, &str, &str)> = response
        .tool_calls
        .iter()
        .map(|call| {
            (
                call.id.as_str(),
                call.name.as_str(),
                call.arguments.as_str(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_1", "read_file", "{\"path\":\"a.rs\"}"),
            ("call_2", "list_dir", "{\"path\":\".\"}"),
            ("call_3", "search", "{\"query\":\"ünïcode\"}"),
        ]
    );
    assert_eq!(response.text, "");
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn a_whole_answer_is_asked_for_unstreamed_and_keeps_its_tool_calls() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: Some("Reading.".into()),
        calls: vec![
            MockToolCall::new("call_1", "read_file", "{\"path\":\"a.rs\"}"),
            MockToolCall::new("call_2", "list_dir", "{}"),
        ],
    }])
    .await;
    let response = backend_for(&mock).complete(&ask("go")).await.unwrap();
    assert_eq!(response.text, "Reading.");
    let calls: Vec<(&str, &str, &str)> = response
        .tool_calls
        .iter()
        .map(|call| {
            (
                call.id.as_str(),
                call.name.as_str(),
                call.arguments.as_str(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_1", "read_file", "{\"path\":\"a.rs\"}"),
            ("call_2", "list_dir", "{}")
        ]
    );
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
    assert!(
        response
            .usage
            .is_some_and(|usage| usage.completion_tokens > 0)
    );
    let sent = &mock.requests()[0];
    assert_eq!(sent.body["stream"], json!(false));
    assert!(sent.body.get("stream_options").is_none(), "{}", sent.body);
    assert_eq!(sent.header("accept"), Some("application/json"));
}

#[tokio::test]
async fn multibyte_text_in_many_small_chunks_arrives_intact() {
    let chunks = ["日本", "語の", "テキ", "スト", " ✓ ", "🦀🦀", "é"];
    let mock = MockLlm::start(vec![MockReply::chunks(chunks)]).await;
    let response = collect(backend_for(&mock).stream(&ask("x")).await.unwrap())
        .await
        .unwrap();
    assert_eq!(response.text, chunks.concat());
}

#[tokio::test]
async fn rate_limit_is_an_http_error_with_message_and_retry_after() {
    let mock = MockLlm::start(vec![MockReply::Error {
        status: 429,
        body: "Rate limit reached for gpt-4o".into(),
        retry_after_secs: Some(7),
    }])
    .await;
    let err = backend_for(&mock).stream(&ask("x")).await.err().unwrap();
    assert_eq!(
        err,
        LlmError::Http {
            backend: "openai-test".into(),
            status: 429,
            message: "Rate limit reached for gpt-4o".into(),
            retry_after: Some(Duration::from_secs(7)),
        }
    );
}

#[tokio::test]
async fn an_html_error_page_becomes_a_short_message() {
    let page = format!(
        "<html>\r\n<head><title>500 Internal Server Error</title></head>\r\n<body>{}</body></html>",
        "<p>nginx</p>".repeat(500)
    );
    let mock = MockLlm::start(vec![MockReply::Raw {
        status: 500,
        content_type: "text/html".into(),
        body_chunks: vec![page],
    }])
    .await;
    let err = backend_for(&mock).stream(&ask("x")).await.err().unwrap();
    let LlmError::Http {
        status,
        message,
        retry_after,
        ..
    } = &err
    else {
        panic!("expected an HTTP error, got {err:?}");
    };
    assert_eq!(*status, 500);
    assert_eq!(*retry_after, None);
    assert!(message.contains("500 Internal Server Error"), "{message}");
    assert!(message.len() < 1000, "the whole page was kept: {message}");
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_with_the_upstream_message() {
    let mock = MockLlm::start(vec![MockReply::error(401, "Incorrect API key provided")]).await;
    let err = backend_for(&mock).stream(&ask("x")).await.err().unwrap();
    assert!(matches!(err, LlmError::Auth { .. }), "{err:?}");
    assert!(
        err.to_string().contains("Incorrect API key provided"),
        "{err}"
    );
}

#[tokio::test]
async fn a_success_that_is_not_an_event_stream_is_a_protocol_error() {
    let mock = MockLlm::start(vec![MockReply::Raw {
        status: 200,
        content_type: "text/html; charset=utf-8".into(),
        body_chunks: vec!["<html><body>Please log in to the proxy</body></html>".into()],
    }])
    .await;
    let err = backend_for(&mock).stream(&ask("x")).await.err().unwrap();
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("text/html"), "{message}");
    assert!(message.contains("Please log in to the proxy"), "{message}");
}

#[tokio::test]
async fn an_invalid_json_chunk_is_a_protocol_error_quoting_it() {
    let mock = MockLlm::start(vec![MockReply::Raw {
        status: 200,
        content_type: "text/event-stream".into(),
        body_chunks: vec![
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"fine\"}}]}\n\n".into(),
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"cont".into(),
            "ent\":oops}}]}\n\n".into(),
            "data: [DONE]\n\n".into(),
        ],
    }])
    .await;
    let items = all_items(&backend_for(&mock), ask("x")).await;
    assert_eq!(texts(&items), ["fine"]);
    let err = items.last().unwrap().clone().unwrap_err();
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("invalid JSON in stream chunk 2"),
        "{message}"
    );
    assert!(message.contains("\"content\":oops"), "{message}");
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
    let backend = backend(&format!("{}/v1", mock.base_url()), idle);
    let started = Instant::now();
    let err = final_error(&backend, ask("x")).await;
    assert_eq!(
        err,
        LlmError::Timeout {
            backend: "openai-test".into(),
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
async fn a_slow_stream_whose_chunks_each_come_within_the_idle_timeout_completes() {
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks: vec!["a".into(), "b".into(), "c".into(), "d".into(), "e".into()],
        delay_ms: 120,
    }])
    .await;
    // 600 ms in all, more than the idle timeout: it limits silence, not length.
    let backend = backend(
        &format!("{}/v1", mock.base_url()),
        Duration::from_millis(400),
    );
    let response = collect(backend.stream(&ask("x")).await.unwrap())
        .await
        .unwrap();
    assert_eq!(response.text, "abcde");
}

#[tokio::test]
async fn the_request_carries_auth_headers_model_and_passthrough_fields() {
    let mock = MockLlm::start(vec![MockReply::text("ok"), MockReply::text("ok")]).await;
    let backend = backend_for(&mock);
    let mut request = ask("hello");
    request.extra.insert("seed".into(), json!(1234));
    request
        .extra
        .insert("response_format".into(), json!({"type": "json_object"}));
    request.temperature = Some(0.25);
    collect(backend.stream(&request).await.unwrap())
        .await
        .unwrap();
    let mut named = ask("again");
    named.model = Some("gpt-4o".into());
    collect(backend.stream(&named).await.unwrap())
        .await
        .unwrap();

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {API_KEY}").as_str())
    );
    assert_eq!(first.header("x-team"), Some("bridge"));
    assert_eq!(first.body["model"], json!("mock-model"));
    assert_eq!(first.body["seed"], json!(1234));
    assert_eq!(
        first.body["response_format"],
        json!({"type": "json_object"})
    );
    assert_eq!(first.body["temperature"], json!(0.25));
    assert_eq!(first.body["stream"], json!(true));
    assert_eq!(first.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        first.body["messages"],
        json!([{"role": "user", "content": "hello"}])
    );
    assert_eq!(requests[1].body["model"], json!("gpt-4o"));
}

#[tokio::test]
async fn models_are_listed_from_the_models_endpoint() {
    let mock = MockLlm::start(Vec::new()).await;
    let models = backend_for(&mock).models().await.unwrap();
    assert_eq!(models, MOCK_MODELS);
    let requests = mock.requests();
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].path, "/v1/models");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {API_KEY}").as_str())
    );
}

#[tokio::test]
async fn a_base_url_with_a_trailing_slash_reaches_the_same_endpoints() {
    let mock = MockLlm::start(Vec::new()).await;
    let backend = backend(&format!("{}/v1/", mock.base_url()), IDLE);
    let response = collect(backend.stream(&ask("echo me")).await.unwrap())
        .await
        .unwrap();
    assert_eq!(response.text, "echo me");
    assert_eq!(mock.requests()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn a_wrong_base_url_path_is_reported_with_the_upstream_404() {
    let mock = MockLlm::start(Vec::new()).await;
    let backend = backend(&format!("{}/api", mock.base_url()), IDLE);
    let err = backend.models().await.err().unwrap();
    let LlmError::Http {
        status, message, ..
    } = &err
    else {
        panic!("expected an HTTP error, got {err:?}");
    };
    assert_eq!(*status, 404);
    assert!(message.contains("/api/models"), "{message}");
}

#[tokio::test]
async fn dropping_the_stream_mid_answer_leaves_the_backend_usable() {
    let mock = MockLlm::start(vec![
        MockReply::Slow {
            chunks: vec!["one".into(), "two".into(), "three".into()],
            delay_ms: 200,
        },
        MockReply::text("next answer"),
    ])
    .await;
    let backend = backend_for(&mock);
    let mut stream = backend.stream(&ask("x")).await.unwrap();
    assert_eq!(
        stream.next().await,
        Some(Ok(ChatEvent::TextDelta { text: "one".into() }))
    );
    drop(stream);
    let response = collect(backend.stream(&ask("y")).await.unwrap())
        .await
        .unwrap();
    // Nothing of the cancelled answer leaks into the next one.
    assert_eq!(response.text, "next answer");
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn a_whole_json_completion_is_replayed_as_the_same_events() {
    let mock = MockLlm::start(vec![MockReply::ToolCalls {
        text: Some("Let me check.".into()),
        calls: vec![MockToolCall {
            id: "call_7".into(),
            name: "read_file".into(),
            argument_chunks: vec!["{\"path\":".into(), "\"b.rs\"}".into()],
        }],
    }])
    .await;
    let mut request = ask("x");
    // A passthrough field may turn streaming off; the answer keeps its shape.
    request.extra.insert("stream".into(), json!(false));
    let events: Vec<ChatEvent> = backend_for(&mock)
        .stream(&request)
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(mock.requests()[0].body["stream"], json!(false));
    assert_eq!(
        events[..4],
        [
            ChatEvent::TextDelta {
                text: "Let me check.".into()
            },
            ChatEvent::ToolCallStart {
                index: 0,
                id: "call_7".into(),
                name: "read_file".into()
            },
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                arguments: "{\"path\":\"b.rs\"}".into()
            },
            ChatEvent::ToolCallEnd { index: 0 },
        ]
    );
    assert!(matches!(events[4], ChatEvent::Usage { .. }), "{events:?}");
    assert_eq!(
        events[5],
        ChatEvent::Finish {
            reason: FinishReason::ToolCalls
        }
    );
}

#[tokio::test]
async fn a_json_completion_cut_by_a_dropped_connection_is_a_protocol_error() {
    let mock = MockLlm::start(vec![MockReply::DropAfter {
        chunks: vec!["never ".into(), "complete".into()],
    }])
    .await;
    let mut request = ask("x");
    request.extra.insert("stream".into(), json!(false));
    let err = backend_for(&mock).stream(&request).await.err().unwrap();
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot read the body"), "{err}");
}

#[tokio::test]
async fn an_oversized_json_answer_is_refused_not_buffered() {
    let huge = format!(
        "{{\"choices\":[{{\"index\":0,\"message\":{{\"content\":\"{}\"}}}}]}}",
        "a".repeat(5 * 1024 * 1024)
    );
    let mock = MockLlm::start(vec![MockReply::Raw {
        status: 200,
        content_type: "application/json".into(),
        body_chunks: vec![huge],
    }])
    .await;
    let err = backend_for(&mock).stream(&ask("x")).await.err().unwrap();
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("answer larger than 4194304 bytes"),
        "{message}"
    );
    assert!(message.len() < 1000, "{}", message.len());
}

#[tokio::test]
async fn without_any_model_nothing_is_sent() {
    let mock = MockLlm::start(Vec::new()).await;
    let mut config =
        bridge_llm::OpenAiConfig::new("no-model", format!("{}/v1", mock.base_url()), "");
    config.request_timeout = Duration::from_secs(5);
    let backend = OpenAiBackend::new(config).unwrap();
    let err = backend.stream(&ask("x")).await.err().unwrap();
    assert!(matches!(err, LlmError::NotConfigured(_)), "{err:?}");
    assert!(err.to_string().contains("no default model"), "{err}");
    assert!(mock.requests().is_empty());
}
