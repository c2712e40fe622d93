//! `GET /metrics` (docs/telemetry.md, "Scraping instead of pushing"): with
//! `OTEL_METRICS_EXPORTER=prometheus` the daemon serves its metrics in
//! Prometheus's text format — for its token or the scrape token kept in
//! `metrics-token`, which opens nothing else — and 404 otherwise.

use std::os::unix::fs::PermissionsExt;

use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::json;

use crate::cli_serve::Served;
use crate::cli_telemetry::{
    notes_with_a_token, read_allowed_and_list_denied, serve_blocking_list_files,
};
use crate::support::Bridge;

async fn get_metrics(served: &Served, token: Option<&str>) -> (u16, String, String) {
    let mut request = reqwest::Client::new().get(served.url("/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    // The daemon's log in the message: a refused connection once made this
    // test fail in a full run, and the state directory is gone afterwards.
    let answer = request
        .send()
        .await
        .unwrap_or_else(|err| panic!("GET /metrics: {err}\nserve.log:\n{}", served.log()));
    let status = answer.status().as_u16();
    let content_type = answer
        .headers()
        .get("content-type")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, content_type, answer.text().await.unwrap())
}

/// The sample lines of `name` (a metric family's samples, not its HELP/TYPE).
fn samples<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_serves_its_metrics_to_a_scraper_with_the_scrape_token() {
    let mock = MockLlm::start(vec![MockReply::text("Hello from the mock.")]).await;
    // No collector: scraping alone turns the metrics on.
    let served = serve_blocking_list_files(
        &mock,
        notes_with_a_token(),
        &[("OTEL_METRICS_EXPORTER", "prometheus")],
    );
    read_allowed_and_list_denied(&served).await;
    let answer = served
        .post_json(
            "/v1/chat/completions",
            json!({"model": "mock-model", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "Hello from the mock."
    );

    // The scrape token: private, and it opens /metrics alone.
    let token_file = served.state().join("metrics-token");
    let scrape_token = std::fs::read_to_string(&token_file).unwrap();
    let scrape_token = scrape_token.trim();
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let (status, content_type, text) = get_metrics(&served, Some(scrape_token)).await;
    assert_eq!(status, 200, "{text}\n{}", served.log());
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let calls = samples(&text, "copilot_bridge_tool_calls_total");
    let has = |tool: &str, decision: &str| {
        calls.iter().any(|line| {
            line.contains(&format!("gen_ai_tool_name=\"{tool}\""))
                && line.contains(&format!("copilot_bridge_decision=\"{decision}\""))
                && line.contains("copilot_bridge_door=\"rpc\"")
                && line.ends_with(" 1")
        })
    };
    assert!(has("read_file", "allow"), "{calls:#?}\n{text}");
    assert!(has("list_files", "deny"), "{calls:#?}");
    assert!(
        samples(&text, "copilot_bridge_facade_requests_total")
            .iter()
            .any(|line| line.contains("/v1/chat/completions") && line.contains("200")),
        "{text}"
    );
    assert!(
        !samples(&text, "gen_ai_client_token_usage_count").is_empty(),
        "{text}"
    );
    assert_eq!(
        samples(&text, "copilot_bridge_approvals_pending"),
        ["copilot_bridge_approvals_pending{otel_scope_name=\"copilot-bridge\"} 0"],
        "{text}"
    );

    // The daemon's own token serves too; nothing else does.
    assert_eq!(get_metrics(&served, Some(&served.token)).await.0, 200);
    assert_eq!(get_metrics(&served, None).await.0, 401);
    assert_eq!(get_metrics(&served, Some("bmt-not-the-token")).await.0, 401);
    let rpc_with_scrape_token = reqwest::Client::new()
        .post(served.url("/rpc"))
        .bearer_auth(scrape_token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "bridge.status"}))
        .send()
        .await
        .unwrap();
    assert_eq!(rpc_with_scrape_token.status().as_u16(), 401);
    // No browser page reads it.
    let from_a_page = reqwest::Client::new()
        .get(served.url("/metrics"))
        .bearer_auth(scrape_token)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(from_a_page.status().as_u16(), 403);

    // Without a collector nothing is forwarded, and status says what runs.
    let status = served.rpc("bridge.status", json!({})).await;
    assert_eq!(
        status["telemetry"],
        json!({"exporting": false, "metricsServed": true})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scrape_token_is_kept_across_restarts() {
    let mock = MockLlm::start(vec![]).await;
    let env = [("OTEL_METRICS_EXPORTER", "otlp,prometheus")];
    let first = crate::agents::serve_in(&mock, Bridge::new(), TempWorkspace::new(), &env);
    let token = std::fs::read_to_string(first.state().join("metrics-token")).unwrap();
    let Served {
        child,
        bridge,
        workspace,
        ..
    } = first;
    drop(child);
    let second = crate::agents::serve_in(&mock, bridge, workspace, &env);
    let again = std::fs::read_to_string(second.state().join("metrics-token")).unwrap();
    assert_eq!(token, again);
    let (status, _, text) = get_metrics(&second, Some(token.trim())).await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_prometheus_in_the_exporter_list_metrics_are_not_served() {
    let mock = MockLlm::start(vec![]).await;
    let served = crate::agents::serve_with_env(&mock, TempWorkspace::new(), &[]);
    let (status, _, text) = get_metrics(&served, Some(&served.token)).await;
    assert_eq!(status, 404, "{text}");
    assert!(text.contains("OTEL_METRICS_EXPORTER=prometheus"), "{text}");
    assert!(!served.state().join("metrics-token").exists());
    // A wrong value is a configuration error naming the variable.
    let refused = crate::cli_serve::command(served.state())
        .args(["config", "show"])
        .env("OTEL_METRICS_EXPORTER", "console")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr).into_owned()
        + &String::from_utf8_lossy(&refused.stdout);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("OTEL_METRICS_EXPORTER"), "{said}");
}
