//! The daemon's client of the real OpenClaw gateway (2026.9.6): the
//! gateway's agent has the daemon's facade as its model (so the mock is
//! behind both), and a hub session reaches OpenClaw through the
//! `openclaw_*` tools: the handshake, `openclaw_agent_ask` end to end,
//! `openclaw_sessions`, memory from the gateway, a gateway restart the
//! daemon rides out, and a wrong token that is refused once and clearly.

use std::time::{Duration, Instant};

use bridge_testkit::openclaw::{OpenClawGateway, free_port};
use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::{Value, json};

use super::{chat_requests, serve_with_env};
use crate::cli_serve::Served;

/// How long the daemon may take to (re)connect: the gateway's own start
/// plus at most one 30 s backoff.
const CONNECT_PATIENCE: Duration = Duration::from_secs(90);

async fn health(served: &Served) -> Value {
    reqwest::get(served.url("/healthz"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Waits until `/healthz` says the OpenClaw connection is `state`.
async fn openclaw_state(served: &Served, state: &str) -> Value {
    let deadline = Instant::now() + CONNECT_PATIENCE;
    loop {
        let openclaw = health(served).await["openclaw"].clone();
        if openclaw["state"] == state {
            return openclaw;
        }
        assert!(
            Instant::now() < deadline,
            "the OpenClaw connection is not {state}: {openclaw}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `session.tools.call` of `tool` in the default session: the whole result.
async fn call(served: &Served, tool: &str, arguments: Value) -> Value {
    served
        .rpc_raw(
            "session.tools.call",
            json!({"session": "default", "name": tool, "arguments": arguments}),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_session_asks_an_openclaw_agent_through_the_real_gateway() {
    // OpenClaw's agent turns take the script in order (their last user
    // message is OpenClaw's own context, no marker to route by).
    let mock = MockLlm::start(vec![
        MockReply::chunks(["OpenClaw says hello."]),
        MockReply::chunks(["Still here after the restart."]),
    ])
    .await;
    let gateway_port = free_port();
    let gateway_url = format!("ws://127.0.0.1:{gateway_port}");
    // The daemon is told where the gateway will be; it connects once the
    // gateway is up (the token is the fixture's, derived from its port).
    let gateway_token = format!("test-gateway-token-{gateway_port}-0123456789");
    let served = serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[
            ("OPENCLAW_GATEWAY_URL", gateway_url.as_str()),
            ("OPENCLAW_GATEWAY_TOKEN", gateway_token.as_str()),
        ],
    );
    let facade = format!("http://127.0.0.1:{}", served.port);
    let Some(mut gateway) = OpenClawGateway::start_with(&facade, &served.token, gateway_port).await
    else {
        return;
    };
    assert_eq!(gateway.token(), gateway_token);
    gateway.write_memory("# MEMORY\n\n- The staging deploy uses the helm chart in infra/helm.\n");

    let connected = openclaw_state(&served, "connected").await;
    assert_eq!(connected["url"], gateway_url);
    assert_eq!(connected["server"]["version"], "2026.9.6", "{connected}");
    let status = served.rpc("bridge.status", json!({})).await;
    assert_eq!(status["openclaw"]["state"], "connected");

    let asked = call(
        &served,
        "openclaw_agent_ask",
        json!({"message": "first question: say hello", "timeoutSeconds": 120}),
    )
    .await;
    assert_eq!(
        asked["result"]["result"]["reply"],
        "OpenClaw says hello.",
        "{asked}\n{}",
        served.log()
    );
    assert_eq!(asked["result"]["result"]["status"], "ok", "{asked}");
    // OpenClaw's agent reached the mock through the daemon's facade.
    let requests = chat_requests(&mock);
    assert!(
        requests
            .iter()
            .any(|r| r.body.to_string().contains("first question")),
        "{requests:?}"
    );

    let sessions = call(&served, "openclaw_sessions", json!({"limit": 5})).await;
    let listed = &sessions["result"]["result"];
    assert!(listed["count"].as_u64().unwrap() >= 1, "{sessions}");

    let memory = call(
        &served,
        "openclaw_memory_search",
        json!({"query": "staging deploy"}),
    )
    .await;
    let found = &memory["result"]["result"];
    assert_eq!(found["source"], "gateway", "{memory}");
    assert_eq!(found["results"][0]["path"], "MEMORY.md", "{memory}");

    // The gateway restarts: the daemon notices, reconnects on its own, and
    // the next question goes through.
    gateway.restart().await;
    openclaw_state(&served, "connected").await;
    let asked = call(
        &served,
        "openclaw_agent_ask",
        json!({"message": "second question", "timeoutSeconds": 120}),
    )
    .await;
    assert_eq!(
        asked["result"]["result"]["reply"], "Still here after the restart.",
        "{asked}"
    );
    let reconnected = health(&served).await["openclaw"].clone();
    assert!(
        reconnected["reconnects"].as_u64().unwrap() >= 1,
        "{reconnected}"
    );

    // Another daemon with a wrong token: refused once, said clearly, and
    // not tried again at once; memory falls back to the local index.
    let wrong = serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[
            ("OPENCLAW_GATEWAY_URL", gateway_url.as_str()),
            ("OPENCLAW_GATEWAY_TOKEN", "not-the-gateway-token-0123"),
        ],
    );
    let refused = openclaw_state(&wrong, "unauthorized").await;
    let error = refused["lastError"].as_str().unwrap();
    assert!(error.contains("token mismatch"), "{refused}");
    assert!(error.contains("OPENCLAW_GATEWAY_TOKEN"), "{refused}");
    assert!(
        !error.contains("not-the-gateway-token"),
        "no token in the status"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let later = health(&wrong).await["openclaw"].clone();
    assert_eq!(later["reconnects"], 0, "no retry storm: {later}");
    let asked = call(&wrong, "openclaw_agent_ask", json!({"message": "hi"})).await;
    assert_eq!(asked["error"]["data"]["code"], "UNAVAILABLE", "{asked}");
    assert!(
        asked["error"]["message"]
            .as_str()
            .unwrap()
            .contains("token mismatch"),
        "{asked}"
    );
    let memory = call(&wrong, "openclaw_memory_search", json!({"query": "deploy"})).await;
    assert_eq!(
        memory["result"]["result"]["source"], "local index",
        "{memory}"
    );
    gateway.stop().await;
}
