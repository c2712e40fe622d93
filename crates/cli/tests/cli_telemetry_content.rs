//! Content on spans (docs/telemetry.md, "Content is off by default"): with
//! `COPILOT_BRIDGE_OTEL_CAPTURE_CONTENT=true`, tool calls carry their
//! arguments and results, and model calls — the hub's own agent's and the
//! facade's, whole or streamed — the conversation sent and the answer; all
//! redacted and cut.

use bridge_testkit::otlp::OtlpReceiver;
use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::json;

use crate::cli_telemetry::{EXPORTED, notes_with_a_token, span_named, traced_rpc, with_telemetry};

const CAPTURE: (&str, &str) = ("COPILOT_BRIDGE_OTEL_CAPTURE_CONTENT", "true");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_capture_on_spans_carry_content_redacted() {
    let receiver = OtlpReceiver::start().await;
    let mock = MockLlm::start(vec![]).await;
    let endpoint = receiver.endpoint();
    let workspace = notes_with_a_token();
    let served =
        crate::agents::serve_with_env(&mock, workspace, &with_telemetry(&endpoint, &[CAPTURE]));
    let read = traced_rpc(
        &served,
        "session.tools.call",
        json!({"session": "default", "name": "read_file", "arguments": {"path": "notes.txt"}}),
    )
    .await;
    assert!(read.get("error").is_none(), "{read}");
    let span = span_named(&receiver, &served, "execute_tool read_file").await;
    let arguments = span.attributes["gen_ai.tool.call.arguments"]
        .as_str()
        .unwrap();
    assert!(arguments.contains("notes.txt"), "{arguments}");
    let result = span.attributes["gen_ai.tool.call.result"].as_str().unwrap();
    assert!(result.contains("inside"), "{result}");
    assert!(!result.contains("ghp_abcdef"), "redacted: {result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_capture_on_the_agent_s_model_calls_carry_prompt_and_answer_redacted() {
    let receiver = OtlpReceiver::start().await;
    let mock = MockLlm::start(vec![MockReply::text(
        "Your key ghp_abcdefghijklmnopqrstuvwxyz0123456789 is noted.",
    )])
    .await;
    let endpoint = receiver.endpoint();
    let served = crate::agents::serve_with_env(
        &mock,
        TempWorkspace::new(),
        &with_telemetry(&endpoint, &[CAPTURE]),
    );
    let (code, stdout, stderr) = crate::cli_chat::chat(
        &served,
        &[
            "-p",
            "Remember sk-proj-abcdefghijklmnopqrstuvwxyz012345 for me",
        ],
        None,
    )
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let chat = receiver
        .wait_for_span(EXPORTED, |span| {
            span.name.starts_with("chat ") && span.attributes.contains_key("gen_ai.input.messages")
        })
        .await
        .unwrap_or_else(|| panic!("{:?}", receiver.spans()));
    let input = chat.attributes["gen_ai.input.messages"].as_str().unwrap();
    assert!(input.contains("Remember"), "{input}");
    assert!(!input.contains("sk-proj-abcdef"), "redacted: {input}");
    let output = chat.attributes["gen_ai.output.messages"].as_str().unwrap();
    assert!(output.contains("is noted"), "{output}");
    assert!(!output.contains("ghp_abcdef"), "redacted: {output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_capture_on_facade_requests_carry_prompt_and_answer_redacted() {
    let receiver = OtlpReceiver::start().await;
    let answer = "Stored ghp_abcdefghijklmnopqrstuvwxyz0123456789 as asked.";
    let mock = MockLlm::start(vec![MockReply::text(answer), MockReply::text(answer)]).await;
    let endpoint = receiver.endpoint();
    let served = crate::agents::serve_with_env(
        &mock,
        TempWorkspace::new(),
        &with_telemetry(&endpoint, &[CAPTURE]),
    );
    // A whole answer over the OpenAI wire.
    let whole = served
        .post_json(
            "/v1/chat/completions",
            json!({"model": "mock-model", "messages": [
                {"role": "user", "content": "Whole: keep sk-proj-abcdefghijklmnopqrstuvwxyz012345"}]}),
        )
        .await;
    assert!(
        whole["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("as asked"),
        "{whole}"
    );
    // A streamed one over the Anthropic wire.
    let streamed = reqwest::Client::new()
        .post(served.url("/v1/messages"))
        .header("x-api-key", &served.token)
        .header("anthropic-version", "2023-06-01")
        .json(&json!({"model": "mock-model", "max_tokens": 64, "stream": true, "messages": [
            {"role": "user", "content": "Streamed: keep sk-proj-abcdefghijklmnopqrstuvwxyz012345"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status().as_u16(), 200);
    let events = streamed.text().await.unwrap();
    assert!(events.contains("as asked"), "{events}");

    for (asked, door) in [("Whole:", "chat completions"), ("Streamed:", "messages")] {
        let span = receiver
            .wait_for_span(EXPORTED, |span| {
                span.name.starts_with("chat ")
                    && span.attributes["gen_ai.input.messages"]
                        .as_str()
                        .is_some_and(|input| input.contains(asked))
            })
            .await
            .unwrap_or_else(|| panic!("{door}: {:#?}\n{}", receiver.spans(), served.log()));
        let input = span.attributes["gen_ai.input.messages"].as_str().unwrap();
        assert!(
            !input.contains("sk-proj-abcdef"),
            "{door}, redacted: {input}"
        );
        let output = span.attributes["gen_ai.output.messages"]
            .as_str()
            .unwrap_or_else(|| panic!("{door}: no answer on {:?}", span.attributes));
        assert!(output.contains("as asked"), "{door}: {output}");
        assert!(!output.contains("ghp_abcdef"), "{door}, redacted: {output}");
    }
}
