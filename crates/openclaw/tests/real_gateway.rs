//! The real OpenClaw gateway (2026.9.6, installed by
//! scripts/install-test-deps.sh) with its agent's model on the mock LLM:
//! handshake with a device identity, an agent run, memory search, a
//! gateway restart the client rides out, and a wrong token.

use std::time::{Duration, Instant};

use bridge_openclaw::{AgentAsk, ConnectionState, GatewaySettings};
use bridge_testkit::openclaw::OpenClawGateway;
use bridge_testkit::{MockLlm, MockReply};
use bridge_util::Secret;
use serde_json::json;

use crate::start;

fn settings_for(gateway: &OpenClawGateway, identity: std::path::PathBuf) -> GatewaySettings {
    GatewaySettings {
        url: gateway.url(),
        token: Some(Secret::new(gateway.token())),
        identity_file: Some(identity),
        request_timeout: Duration::from_secs(60),
        client_version: "0.1.0-test".to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_gateway_answers_an_agent_and_memory_and_survives_a_restart() {
    let mock = MockLlm::start(vec![
        MockReply::text("Hello from the mock, first."),
        MockReply::text("Hello from the mock, after the restart."),
    ])
    .await;
    let test_started = Instant::now();
    let Some(mut gateway) = OpenClawGateway::start(&mock.base_url()).await else {
        return;
    };
    let first_start = test_started.elapsed();
    gateway.write_memory(
        "# MEMORY\n\n## Decisions\n- The staging deploy uses the helm chart in infra/helm.\n",
    );
    let identity_dir = tempfile::tempdir().unwrap();
    let identity = identity_dir.path().join("openclaw-device.json");

    let client = start(settings_for(&gateway, identity.clone()));
    let handshake_started = Instant::now();
    assert!(
        client.gateway.connected(Duration::from_secs(30)).await,
        "{:?}\n{}",
        client.gateway.status(),
        gateway.output()
    );
    let handshake = handshake_started.elapsed();
    let status = client.gateway.status();
    assert_eq!(status.state, ConnectionState::Connected);
    assert_eq!(status.server.as_ref().unwrap().version, "2026.9.6");
    assert!(status.device_id.is_some(), "signed with a device identity");
    assert!(identity.exists());
    eprintln!(
        "real gateway: status {}",
        serde_json::to_string(&status).unwrap()
    );

    let asked = Instant::now();
    let reply = client
        .gateway
        .ask_agent(AgentAsk::new("Say hello", Duration::from_secs(120)))
        .await
        .unwrap_or_else(|err| panic!("{err}\n{}", gateway.output()));
    let first_ask = asked.elapsed();
    assert_eq!(reply.status, "ok", "{}", reply.raw);
    assert_eq!(
        reply.text.as_deref(),
        Some("Hello from the mock, first."),
        "{}",
        reply.raw
    );
    assert!(
        mock.requests()
            .iter()
            .any(|request| request.body.to_string().contains("Say hello")),
        "the agent asked the mock"
    );

    let searched = Instant::now();
    let found = client
        .gateway
        .request("memory.search", json!({"query": "staging deploy"}))
        .await
        .unwrap_or_else(|err| panic!("{err}\n{}", gateway.output()));
    let search = searched.elapsed();
    let hit = &found["results"][0];
    assert_eq!(hit["path"], "MEMORY.md", "{found}");
    assert!(
        hit["snippet"].as_str().unwrap().contains("helm chart"),
        "{found}"
    );
    eprintln!("real gateway: memory.search answered {found}");

    // The gateway restarts on the same port: the client comes back alone.
    let restarted = Instant::now();
    gateway.restart().await;
    let restart = restarted.elapsed();
    assert!(
        client.gateway.connected(Duration::from_secs(60)).await,
        "{:?}\n{}",
        client.gateway.status(),
        gateway.output()
    );
    let back = restarted.elapsed();
    let status = client.gateway.status();
    assert!(status.reconnects >= 1, "{status:?}");
    let asked = Instant::now();
    let reply = client
        .gateway
        .ask_agent(AgentAsk::new("Say hello again", Duration::from_secs(120)))
        .await
        .unwrap_or_else(|err| panic!("{err}\n{}", gateway.output()));
    let second_ask = asked.elapsed();
    assert_eq!(
        reply.text.as_deref(),
        Some("Hello from the mock, after the restart."),
        "{}",
        reply.raw
    );

    // A client with a wrong token: unauthorized with the gateway's
    // message, and no second attempt within 3 s.
    let mut wrong = settings_for(&gateway, identity_dir.path().join("other-device.json"));
    wrong.token = Some(Secret::new("not-the-gateway-token"));
    let refused = start(wrong);
    let deadline = Instant::now() + Duration::from_secs(30);
    while refused.gateway.status().state != ConnectionState::Unauthorized {
        assert!(Instant::now() < deadline, "{:?}", refused.gateway.status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let message = refused.gateway.status().last_error.unwrap();
    assert!(message.contains("gateway token mismatch"), "{message}");
    assert!(message.contains(&gateway.url()), "{message}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let status = refused.gateway.status();
    assert_eq!(status.state, ConnectionState::Unauthorized);
    assert_eq!(status.reconnects, 0, "no second attempt: {status:?}");
    eprintln!("real gateway: refused with: {message}");

    eprintln!(
        "real gateway timings: first start {first_start:?}, handshake {handshake:?}, \
         first ask {first_ask:?}, memory.search {search:?}, restart {restart:?}, \
         reconnected {back:?} after the restart began, second ask {second_ask:?}, \
         whole test {:?}",
        test_started.elapsed()
    );
}
