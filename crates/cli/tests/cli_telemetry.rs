//! OpenTelemetry export (docs/telemetry.md): `serve` with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` at the testkit's OTLP/HTTP receiver — a
//! chat completion carrying `traceparent` is a `chat` span in that trace
//! with its token counts; tool calls over `/rpc` are `execute_tool` spans
//! with the policy's decision; a collector that hangs costs no call its
//! time; the trace goes on to the MCP servers the hub calls. (Content
//! capture: cli_telemetry_content.rs.)

use std::time::Duration;

use bridge_testkit::otlp::{Behaviour, OtlpReceiver, ReceivedSpan};
use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::{Value, json};

use crate::cli_serve::Served;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";
/// Long enough for a batch to be exported on a loaded machine.
pub(crate) const EXPORTED: Duration = Duration::from_secs(20);

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{PARENT_ID}-01")
}

pub(crate) fn with_telemetry<'a>(
    receiver: &'a str,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
    ];
    env.extend_from_slice(extra);
    env
}

/// A workspace whose notes.txt holds a token no span may carry.
pub(crate) fn notes_with_a_token() -> TempWorkspace {
    let workspace = TempWorkspace::new();
    workspace.write(
        "notes.txt",
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 inside\n",
    );
    workspace
}

/// A collector, the mock with `replies`, and a daemon exporting to the
/// collector.
pub(crate) async fn exporting_hub(replies: Vec<MockReply>) -> (OtlpReceiver, MockLlm, Served) {
    let receiver = OtlpReceiver::start().await;
    let mock = MockLlm::start(replies).await;
    let served = crate::agents::serve_with_env(
        &mock,
        TempWorkspace::new(),
        &with_telemetry(&receiver.endpoint(), &[]),
    );
    (receiver, mock, served)
}

/// `serve` with `env`, whose rules block `list_files`.
pub(crate) fn serve_blocking_list_files(
    mock: &MockLlm,
    workspace: TempWorkspace,
    env: &[(&str, &str)],
) -> Served {
    let bridge = crate::support::Bridge::new();
    std::fs::write(
        bridge.state.path().join("config.toml"),
        "[permissions]\nblocked_tools = [\"list_files\"]\n",
    )
    .unwrap();
    crate::agents::serve_in(mock, bridge, workspace, env)
}

/// Over `/rpc`, in the client's trace: `read_file` of notes.txt (allowed)
/// and `list_files` (denied by [`serve_blocking_list_files`]'s rules).
pub(crate) async fn read_allowed_and_list_denied(served: &Served) {
    let read = traced_rpc(
        served,
        "session.tools.call",
        json!({"session": "default", "name": "read_file", "arguments": {"path": "notes.txt"}}),
    )
    .await;
    assert!(read.get("error").is_none(), "{read}");
    let denied = traced_rpc(
        served,
        "session.tools.call",
        json!({"session": "default", "name": "list_files", "arguments": {}}),
    )
    .await;
    assert!(denied.get("error").is_some(), "{denied}");
}

/// One JSON-RPC call over POST /rpc with a `traceparent` header.
pub(crate) async fn traced_rpc(served: &Served, method: &str, params: Value) -> Value {
    reqwest::Client::new()
        .post(served.url("/rpc"))
        .bearer_auth(&served.token)
        .header("traceparent", traceparent())
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

pub(crate) async fn span_named(
    receiver: &OtlpReceiver,
    served: &Served,
    name: &str,
) -> ReceivedSpan {
    receiver
        .wait_for_span(EXPORTED, |span| span.name == name)
        .await
        .unwrap_or_else(|| {
            panic!(
                "no span {name:?}; got {:?}\n{}",
                receiver.spans().iter().map(|s| &s.name).collect::<Vec<_>>(),
                served.log()
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_completion_with_traceparent_is_a_chat_span_in_that_trace() {
    let receiver = OtlpReceiver::start().await;
    let mock = MockLlm::start(vec![MockReply::text("Hello from the mock.")]).await;
    let endpoint = receiver.endpoint();
    let served =
        crate::agents::serve_with_env(&mock, TempWorkspace::new(), &with_telemetry(&endpoint, &[]));
    let answer: Value = reqwest::Client::new()
        .post(served.url("/v1/chat/completions"))
        .bearer_auth(&served.token)
        .header("traceparent", traceparent())
        .header("user-agent", "claude-cli/2.1.328 (external, cli)")
        .json(&json!({"model": "mock-model", "messages": [{"role": "user", "content": "say hello please"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "Hello from the mock."
    );

    // The client's trace went on to the backend.
    let upstream = mock.requests().into_iter().last().unwrap();
    let sent = upstream.header("traceparent").unwrap_or_default();
    assert!(
        sent.contains(TRACE_ID),
        "traceparent to the backend: {sent:?}"
    );
    let span = span_named(&receiver, &served, "chat mock-model").await;
    assert_eq!(span.trace_id, TRACE_ID, "continued from traceparent");
    assert_eq!(span.parent_span_id, PARENT_ID);
    assert_eq!(span.kind, 3, "client");
    let attributes = &span.attributes;
    assert_eq!(attributes["gen_ai.operation.name"], "chat");
    assert_eq!(attributes["gen_ai.request.model"], "mock-model");
    assert!(
        attributes["gen_ai.usage.input_tokens"].as_i64().unwrap() > 0,
        "{attributes:?}"
    );
    assert!(
        attributes["gen_ai.usage.output_tokens"].as_i64().unwrap() > 0,
        "{attributes:?}"
    );
    assert_eq!(attributes["copilot_bridge.client.agent"], "claude-cli");
    assert!(
        attributes.contains_key("gen_ai.provider.name"),
        "{attributes:?}"
    );
    assert!(
        !attributes.contains_key("gen_ai.input.messages"),
        "content is off by default"
    );
    assert_eq!(span.resource["service.name"], "copilot-bridge");
    // The metrics of the same call.
    for metric in [
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "copilot_bridge.facade.requests",
        "copilot_bridge.approvals.pending",
        "copilot_bridge.provider.connections",
    ] {
        assert!(
            receiver.wait_for_metric(EXPORTED, metric).await,
            "{metric}: {:?}",
            receiver.metrics()
        );
    }
    // Protobuf unless told otherwise.
    assert!(
        receiver
            .requests()
            .iter()
            .all(|r| r.content_type == "application/x-protobuf")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_over_rpc_are_execute_tool_spans_with_their_decision() {
    let receiver = OtlpReceiver::start().await;
    let mock = MockLlm::start(vec![]).await;
    let endpoint = receiver.endpoint();
    let served = serve_blocking_list_files(
        &mock,
        notes_with_a_token(),
        &with_telemetry(&endpoint, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]),
    );
    read_allowed_and_list_denied(&served).await;

    let allowed = span_named(&receiver, &served, "execute_tool read_file").await;
    assert_eq!(allowed.trace_id, TRACE_ID);
    assert_eq!(allowed.parent_span_id, PARENT_ID);
    assert_eq!(allowed.attributes["gen_ai.tool.name"], "read_file");
    assert_eq!(allowed.attributes["copilot_bridge.decision"], "allow");
    assert_eq!(allowed.attributes["copilot_bridge.door"], "rpc");
    assert!(allowed.attributes["gen_ai.tool.call.id"].is_string());
    assert!(
        !allowed.attributes.contains_key("gen_ai.tool.call.result"),
        "content is off by default"
    );
    let refused = span_named(&receiver, &served, "execute_tool list_files").await;
    assert_eq!(refused.attributes["copilot_bridge.decision"], "deny");
    assert!(
        refused.attributes["copilot_bridge.decision.reason"]
            .as_str()
            .unwrap()
            .contains("blocked_tools"),
        "{:?}",
        refused.attributes
    );
    assert_eq!(refused.status_code, 2, "an error status");
    assert!(
        receiver
            .requests()
            .iter()
            .all(|r| r.content_type == "application/json")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asked_call_carries_its_decision_and_the_wait_for_the_answer() {
    use crate::cli_approvals::{answered, approvals, ask_id, shell_call};
    let receiver = OtlpReceiver::start().await;
    let mock = MockLlm::start(vec![]).await;
    let endpoint = receiver.endpoint();
    let served = crate::agents::serve_with_env(
        &mock,
        TempWorkspace::new(),
        &with_telemetry(&endpoint, &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "60")]),
    );
    let command = "python3 -c 'print(6*7)'";
    let call = shell_call(&served, command);
    let id = ask_id(&served, command).await;
    // The person takes a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(approvals(&served, &["allow", &id]).status.success());
    let ran = answered(call).await;
    assert_eq!(ran["result"]["result"]["stdout"], "42\n", "{ran}");

    let tool = span_named(&receiver, &served, "execute_tool shell").await;
    // The decision that stood: a person's allow, after the rules asked.
    assert_eq!(tool.attributes["copilot_bridge.decision"], "allow");
    let reason = tool.attributes["copilot_bridge.decision.reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("allow"), "{:?}", tool.attributes);
    let wait = span_named(&receiver, &served, "approval wait").await;
    assert_eq!(wait.parent_span_id, tool.span_id, "the wait under the call");
    assert_eq!(wait.attributes["copilot_bridge.approval.outcome"], "allow");
    let waited_ms = (wait.end_unix_nano - wait.start_unix_nano) / 1_000_000;
    assert!(waited_ms >= 300, "waited {waited_ms} ms");
    assert!(
        tool.end_unix_nano - tool.start_unix_nano >= wait.end_unix_nano - wait.start_unix_nano,
        "the call lasts at least its wait"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_hangs_costs_no_call_its_time() {
    let receiver = OtlpReceiver::start().await;
    receiver.set_behaviour(Behaviour::Hang);
    let mock = MockLlm::start(vec![]).await;
    let endpoint = receiver.endpoint();
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "hello\n");
    let served = crate::agents::serve_with_env(&mock, workspace, &with_telemetry(&endpoint, &[]));
    // Far more spans than one batch, while every export hangs: each call
    // still answers at once (bounded well below the 10 s export timeout).
    for n in 0..600 {
        let started = std::time::Instant::now();
        let read = served
            .rpc_raw(
                "session.tools.call",
                json!({"session": "default", "name": "read_file", "arguments": {"path": "notes.txt"}}),
            )
            .await;
        assert!(read.get("error").is_none(), "call {n}: {read}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "call {n} waited on the collector"
        );
    }
    // The daemon is still healthy and says nothing is wrong with the calls.
    let health: Value = reqwest::get(served.url("/healthz"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["ok"], true, "{health}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_s_own_agent_run_is_one_trace_of_its_model_and_tool_calls() {
    let receiver = OtlpReceiver::start().await;
    let mock = MockLlm::start(vec![
        MockReply::tool_call("call_1", "read_file", &json!({"path": "notes.txt"})),
        MockReply::text("The notes say pineapple."),
    ])
    .await;
    let endpoint = receiver.endpoint();
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "pineapple\n");
    let served = crate::agents::serve_with_env(&mock, workspace, &with_telemetry(&endpoint, &[]));
    let (code, stdout, stderr) =
        crate::cli_chat::chat(&served, &["-p", "What do the notes say?"], None).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");

    let run = span_named(&receiver, &served, "invoke_agent native").await;
    assert_eq!(run.attributes["gen_ai.operation.name"], "invoke_agent");
    // Each model request carried the run's trace to the backend.
    let chat_requests: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|request| request.path == "/v1/chat/completions")
        .collect();
    assert_eq!(chat_requests.len(), 2);
    for request in chat_requests {
        let sent = request.header("traceparent").unwrap_or_default();
        assert!(
            sent.starts_with(&format!("00-{}-{}-", run.trace_id, run.span_id)),
            "{sent:?}"
        );
    }
    let tool = span_named(&receiver, &served, "execute_tool read_file").await;
    assert_eq!(tool.trace_id, run.trace_id, "one trace");
    assert_eq!(tool.parent_span_id, run.span_id, "under the run");
    assert_eq!(tool.attributes["copilot_bridge.door"], "engine");
    let deadline = tokio::time::Instant::now() + EXPORTED;
    let chats = loop {
        let chats: Vec<ReceivedSpan> = receiver
            .spans()
            .into_iter()
            .filter(|span| span.name.starts_with("chat ") && span.trace_id == run.trace_id)
            .collect();
        if chats.len() >= 2 || tokio::time::Instant::now() > deadline {
            break chats;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(chats.len(), 2, "both model calls: {:?}", receiver.spans());
    for chat in &chats {
        assert_eq!(chat.parent_span_id, run.span_id);
        assert!(
            chat.attributes
                .contains_key("gen_ai.response.finish_reasons"),
            "{:?}",
            chat.attributes
        );
        assert!(
            chat.attributes["gen_ai.usage.output_tokens"]
                .as_i64()
                .unwrap()
                > 0
        );
    }
    assert!(
        receiver
            .wait_for_metric(EXPORTED, "gen_ai.client.operation.time_to_first_chunk")
            .await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_call_continues_the_trace_of_its_meta_traceparent() {
    let receiver = OtlpReceiver::start().await;
    let mock = MockLlm::start(vec![]).await;
    let endpoint = receiver.endpoint();
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "hello\n");
    let served = crate::agents::serve_with_env(&mock, workspace, &with_telemetry(&endpoint, &[]));
    let mut mcp =
        bridge_testkit::mcp_http::McpHttp::connect(&served.url("/mcp/code"), &served.token).await;
    let answer = mcp
        .call_with_meta(
            "copilot_read_file",
            json!({"path": "notes.txt"}),
            json!({"traceparent": traceparent()}),
        )
        .await;
    assert!(answer.contains("hello"), "{answer}");

    let request = span_named(&receiver, &served, "tools/call copilot_read_file").await;
    assert_eq!(
        request.trace_id, TRACE_ID,
        "continued from _meta.traceparent"
    );
    assert_eq!(request.parent_span_id, PARENT_ID);
    assert_eq!(request.kind, 2, "server");
    assert_eq!(request.attributes["mcp.method.name"], "tools/call");
    assert!(
        request.attributes["mcp.session.id"].is_string(),
        "{:?}",
        request.attributes
    );
    let tool = receiver
        .wait_for_span(EXPORTED, |span| {
            span.name.starts_with("execute_tool") && span.trace_id == TRACE_ID
        })
        .await
        .unwrap_or_else(|| panic!("{:?}", receiver.spans()));
    assert_eq!(
        tool.parent_span_id, request.span_id,
        "the tool call under the MCP request"
    );
    assert_eq!(tool.attributes["copilot_bridge.door"], "mcp");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_is_passed_on_to_the_mcp_servers_the_hub_calls() {
    let receiver = OtlpReceiver::start().await;
    let mock = MockLlm::start(vec![]).await;
    let endpoint = receiver.endpoint();
    let bridge = crate::support::Bridge::new();
    std::fs::write(
        bridge.state.path().join("config.toml"),
        format!(
            "[mcp.servers.test]\ncommand = {:?}\n",
            bridge_testkit::built_binary("mcp-test-server")
                .display()
                .to_string()
        ),
    )
    .unwrap();
    let served = crate::agents::serve_in(
        &mock,
        bridge,
        TempWorkspace::new(),
        &with_telemetry(&endpoint, &[]),
    );
    // The server's answer: the `_meta` it was sent, as JSON (the hub
    // redacts parts of it, so it is read as text).
    let meta_seen = |answer: &Value| -> String {
        answer["result"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_owned()
    };
    let call = json!({"session": "default", "name": "test__meta", "arguments": {}});

    let traced = traced_rpc(&served, "session.tools.call", call.clone()).await;
    let meta = meta_seen(&traced);
    assert!(
        meta.contains(&format!("\"traceparent\":\"00-{TRACE_ID}-")),
        "the server is in the caller's trace: {meta}"
    );
    assert!(!meta.contains("tracestate"), "none was sent: {meta}");
    span_named(&receiver, &served, "execute_tool test__meta").await;

    // Nothing traced, nothing passed.
    let untraced = served.rpc_raw("session.tools.call", call).await;
    let meta = meta_seen(&untraced);
    assert!(!meta.contains("traceparent"), "{meta}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestration_is_one_trace_with_a_span_per_sub_task() {
    use crate::cli_orchestrate::{orchestrate, output, two_task_plan};
    let receiver = OtlpReceiver::start().await;
    let ws = TempWorkspace::new();
    let (mock, plan) = two_task_plan(&ws).await;
    let bridge = crate::support::Bridge::new();
    let mut command = orchestrate(
        &bridge,
        &mock,
        ws.path(),
        &["--plan", plan.to_str().unwrap(), "--json"],
    );
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let out = output(command).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The command flushed its spans before it exited.
    let spans = receiver.spans();
    let whole = spans
        .iter()
        .find(|span| span.name == "invoke_agent orchestrator")
        .unwrap_or_else(|| panic!("{:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>()));
    let runs: Vec<_> = spans
        .iter()
        .filter(|span| span.name == "invoke_agent native")
        .collect();
    assert_eq!(runs.len(), 2, "a span per sub-task");
    for run in &runs {
        assert_eq!(run.trace_id, whole.trace_id, "one trace");
        assert_eq!(run.parent_span_id, whole.span_id, "under the orchestration");
        assert!(
            spans
                .iter()
                .any(|span| span.name.starts_with("chat ") && span.parent_span_id == run.span_id),
            "the sub-task's model call under it"
        );
    }
}
