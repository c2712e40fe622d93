//! The agents' own telemetry through the hub (docs/telemetry.md, "The
//! agents' own telemetry"): OTLP/HTTP the daemon takes at `/v1/traces`,
//! `/v1/metrics`, `/v1/logs` and forwards to its collector, marked; bad
//! requests answered in OTLP's shape; 404 when the hub exports nothing.

use bridge_testkit::TempWorkspace;
use serde_json::Value;

use crate::cli_serve::Served;
use crate::cli_telemetry::{EXPORTED, exporting_hub};

/// POST `body` to the daemon's `path` with `headers`: status and body.
async fn post_otlp(
    served: &Served,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    let mut request = reqwest::Client::new().post(served.url(path)).body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let answer = request.send().await.unwrap();
    let status = answer.status().as_u16();
    (status, answer.bytes().await.unwrap().to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_own_telemetry_is_forwarded_marked_as_through_the_hub() {
    use bridge_testkit::otlp::{gzip, json as otlp_json, one_span_request, protobuf};
    let (receiver, _mock, served) = exporting_hub(vec![]).await;
    let bearer = format!("Bearer {}", served.token);
    let agent_trace = "0af7651916cd43dd8448eb211c80319c";

    // Protobuf, gzipped, with the bearer token.
    let request = one_span_request(
        "claude-code",
        agent_trace,
        "b7ad6b7169203331",
        "claude_code.tool",
    );
    let (status, _) = post_otlp(
        &served,
        "/v1/traces",
        &[
            ("authorization", &bearer),
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "gzip"),
        ],
        gzip(&protobuf(&request)),
    )
    .await;
    assert_eq!(status, 200, "{}", served.log());
    // JSON with x-api-key, re-encoded for the exporter (protobuf).
    let request = one_span_request("codex", agent_trace, "c7ad6b7169203332", "codex.turn");
    let (status, body) = post_otlp(
        &served,
        "/v1/traces",
        &[
            ("x-api-key", &served.token),
            ("content-type", "application/json"),
        ],
        otlp_json(&request).into_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(body, b"{}");

    for (name, service) in [("claude_code.tool", "claude-code"), ("codex.turn", "codex")] {
        let span = receiver
            .wait_for_span(EXPORTED, |span| span.name == name)
            .await
            .unwrap_or_else(|| panic!("{name} forwarded: {:?}", receiver.spans()));
        assert_eq!(span.trace_id, agent_trace, "ids unchanged");
        assert_eq!(span.resource["service.name"], service);
        assert_eq!(span.attributes["agent.step"], "tool");
        let mark = span.resource["copilot_bridge.forwarded_by"]
            .as_str()
            .unwrap();
        assert!(
            mark.starts_with("copilot-bridge "),
            "the hub's mark, not the sender's: {mark}"
        );
    }
    assert!(
        receiver
            .requests()
            .iter()
            .all(|r| r.content_type == "application/x-protobuf")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_otlp_requests_get_otlp_shaped_errors_and_the_daemon_keeps_serving() {
    use bridge_testkit::otlp::{gzip, one_span_request, protobuf};
    let (_receiver, mock, served) = exporting_hub(vec![]).await;
    let bearer = format!("Bearer {}", served.token);
    let json_type = ("content-type", "application/json");
    let good = protobuf(&one_span_request(
        "a",
        "0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331",
        "s",
    ));
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<u8>, u16);
    let cases: Vec<Case<'_>> = vec![
        ("no token", vec![json_type], b"{}".to_vec(), 401),
        (
            "wrong token",
            vec![("authorization", "Bearer nope"), json_type],
            b"{}".to_vec(),
            401,
        ),
        (
            "a browser page",
            vec![
                ("authorization", &bearer),
                json_type,
                ("origin", "http://127.0.0.1:3000"),
            ],
            b"{}".to_vec(),
            403,
        ),
        (
            "not OTLP's type",
            vec![("authorization", &bearer), ("content-type", "text/plain")],
            b"hi".to_vec(),
            415,
        ),
        (
            "not JSON",
            vec![("authorization", &bearer), json_type],
            b"{not json".to_vec(),
            400,
        ),
        (
            "not protobuf",
            vec![
                ("authorization", &bearer),
                ("content-type", "application/x-protobuf"),
            ],
            vec![0xff; 64],
            400,
        ),
        (
            "a broken gzip",
            vec![
                ("authorization", &bearer),
                json_type,
                ("content-encoding", "gzip"),
            ],
            b"\x1f\x8bnope".to_vec(),
            400,
        ),
        (
            "a gzip bomb",
            vec![
                ("authorization", &bearer),
                json_type,
                ("content-encoding", "gzip"),
            ],
            gzip(&vec![b' '; 40 * 1024 * 1024]),
            413,
        ),
        (
            "an unknown encoding",
            vec![
                ("authorization", &bearer),
                json_type,
                ("content-encoding", "br"),
            ],
            b"{}".to_vec(),
            415,
        ),
    ];
    for (label, headers, body, expected) in cases {
        let (status, answer) = post_otlp(&served, "/v1/traces", &headers, body).await;
        assert_eq!(
            status,
            expected,
            "{label}: {}",
            String::from_utf8_lossy(&answer)
        );
        // JSON errors carry {code, message} (protobuf ones a Status).
        if let Ok(error) = serde_json::from_slice::<Value>(&answer) {
            assert!(error["message"].is_string(), "{label}: {error}");
        }
    }
    // Still serving, and a good request still goes through.
    let (status, _) = post_otlp(
        &served,
        "/v1/traces",
        &[
            ("authorization", &bearer),
            ("content-type", "application/x-protobuf"),
        ],
        good,
    )
    .await;
    assert_eq!(status, 200);

    // A daemon that exports nothing takes nothing: 404, said in OTLP's shape.
    let off = crate::agents::serve_with(&mock, TempWorkspace::new());
    let bearer = format!("Bearer {}", off.token);
    let (status, answer) = post_otlp(
        &off,
        "/v1/metrics",
        &[("authorization", &bearer), json_type],
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(status, 404);
    let error: Value = serde_json::from_slice(&answer).unwrap();
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("OTEL_EXPORTER_OTLP_ENDPOINT"),
        "{error}"
    );
    // Not a model call: the request log has none of these.
    assert!(!off.log().contains("/v1/metrics"), "{}", off.log());
}
