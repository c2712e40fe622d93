//! Staying connected: refusals wait the longest backoff, a closed
//! connection comes back after 1 s, failures back off doubling, the tick
//! watchdog closes with 4000, and stopping closes cleanly.

use std::time::{Duration, Instant};

use bridge_openclaw::{ConnectionState, GatewayError, TICK_TIMEOUT_CLOSE};
use bridge_util::Secret;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::fake::{Answer, FakeGateway, frame_where, transcript};
use crate::handshake::wait_state;
use crate::{connected, settings, start};

#[tokio::test]
async fn a_wrong_token_is_unauthorized_with_one_attempt_and_no_retry_storm() {
    let fake = FakeGateway::start().await;
    let frames = transcript("handshake-cli-badtoken.jsonl");
    let refusal = frame_where(&frames, |frame| frame["ok"] == false)["error"].clone();
    fake.refuse_when(move |params| (params["auth"]["token"] != "right").then(|| refusal.clone()));
    let mut wrong = settings(&fake.url);
    wrong.token = Some(Secret::new("wrong-token-value"));
    let client = start(wrong);
    let status = wait_state(&client.gateway, ConnectionState::Unauthorized).await;
    let message = status.last_error.clone().unwrap();
    assert!(
        message.contains("unauthorized: gateway token mismatch"),
        "{message}"
    );
    assert!(message.contains(&fake.url), "{message}");
    assert!(message.contains("OPENCLAW_GATEWAY_TOKEN"), "{message}");
    assert!(!message.contains("wrong-token-value"), "{message}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(fake.connects().len(), 1, "one attempt in 3 s");
    let status = client.gateway.status();
    assert_eq!(status.state, ConnectionState::Unauthorized);
    assert!(status.next_attempt_ms.unwrap() > 20_000, "{status:?}");
    assert_eq!(status.reconnects, 0);
}

#[tokio::test]
async fn a_closed_connection_comes_back_after_about_a_second() {
    let fake = FakeGateway::start().await;
    fake.on_request(|_, _| Answer::Ok(json!({"ok": true})));
    let client = connected(settings(&fake.url)).await;
    fake.close_connection();
    let status = wait_state(&client.gateway, ConnectionState::Disconnected).await;
    assert!(
        status.last_error.as_deref().unwrap().contains("1012"),
        "{status:?}"
    );
    let next = status.next_attempt_ms.unwrap();
    assert!((500..=1000).contains(&next), "{next}");
    // Meanwhile requests fail at once.
    let err = client.gateway.request("x", json!({})).await.unwrap_err();
    assert!(matches!(err, GatewayError::NotConnected { .. }), "{err}");

    let connects = fake.wait_connects(2, Duration::from_secs(3)).await;
    assert_eq!(connects.len(), 2);
    let gap = connects[1].at - connects[0].at;
    assert!(
        gap >= Duration::from_millis(950) && gap < Duration::from_millis(2500),
        "{gap:?}"
    );
    assert!(client.gateway.connected(Duration::from_secs(2)).await);
    assert_eq!(client.gateway.status().reconnects, 1);
    client.gateway.request("x", json!({})).await.unwrap();

    // A second close soon after waits 2 s: a connection that did not stay
    // up (30 s) does not reset the backoff, so a gateway that hangs up at
    // once is not hammered.
    fake.close_connection();
    let connects = fake.wait_connects(3, Duration::from_secs(4)).await;
    let gap = connects[2].at - connects[1].at;
    assert!(
        gap >= Duration::from_millis(1950) && gap < Duration::from_millis(3500),
        "{gap:?}"
    );
}

#[tokio::test]
async fn failed_attempts_wait_one_then_two_seconds() {
    let fake = FakeGateway::start().await;
    fake.hang_up_at_once(true);
    let client = start(settings(&fake.url));
    let mut attempts = Vec::new();
    let deadline = Instant::now() + Duration::from_millis(3600);
    let mut last = u64::MAX;
    while Instant::now() < deadline {
        let status = client.gateway.status();
        if status.reconnects != last {
            last = status.reconnects;
            attempts.push(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(attempts.len(), 3, "attempts at 0, 1 s and 3 s");
    let first = attempts[1] - attempts[0];
    let second = attempts[2] - attempts[1];
    assert!(
        first >= Duration::from_millis(950) && first < Duration::from_millis(2000),
        "{first:?}"
    );
    assert!(
        second >= Duration::from_millis(1950) && second < Duration::from_millis(3000),
        "{second:?}"
    );
    assert_eq!(client.gateway.status().state, ConnectionState::Disconnected);

    // The gateway comes back: connected on the next attempt.
    fake.hang_up_at_once(false);
    assert!(client.gateway.connected(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn a_gateway_that_asks_to_wait_is_retried_soon_not_unauthorized() {
    let fake = FakeGateway::start().await;
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let once = std::sync::Arc::clone(&refused);
    fake.refuse_when(move |_| {
        (!once.swap(true, std::sync::atomic::Ordering::SeqCst)).then(|| {
            json!({"code": "UNAVAILABLE", "message": "gateway starting", "retryable": true,
                   "retryAfterMs": 200, "details": {"reason": "startup-sidecars"}})
        })
    });
    let started = Instant::now();
    let client = connected(settings(&fake.url)).await;
    assert!(
        started.elapsed() < Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(fake.connects().len(), 2);
    assert_eq!(client.gateway.status().reconnects, 1);
}

#[tokio::test]
async fn two_silent_tick_intervals_close_with_4000_and_reconnect() {
    let fake = FakeGateway::start().await;
    fake.edit_hello(|hello| hello["policy"]["tickIntervalMs"] = json!(200));
    let client = connected(settings(&fake.url)).await;
    let connected_at = Instant::now();
    let connects = fake.wait_connects(2, Duration::from_secs(3)).await;
    assert_eq!(connects.len(), 2, "reconnected after the watchdog");
    assert_eq!(
        fake.client_closes().first(),
        Some(&Some(TICK_TIMEOUT_CLOSE))
    );
    let closed_after = connects[1].at - connected_at;
    // 400 ms of silence, then the 1 s backoff.
    assert!(
        closed_after >= Duration::from_millis(1350) && closed_after < Duration::from_millis(3000),
        "{closed_after:?}"
    );
    assert!(client.gateway.connected(Duration::from_secs(1)).await);
}

#[tokio::test]
async fn ticks_keep_the_connection() {
    let fake = FakeGateway::start().await;
    fake.edit_hello(|hello| hello["policy"]["tickIntervalMs"] = json!(200));
    fake.tick_every(Duration::from_millis(100));
    let client = connected(settings(&fake.url)).await;
    let mut ticks = client.gateway.subscribe();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(fake.connects().len(), 1);
    assert!(fake.client_closes().is_empty());
    assert_eq!(client.gateway.status().state, ConnectionState::Connected);
    assert_eq!(ticks.try_recv().unwrap().event, "tick");
}

#[tokio::test]
async fn stopping_closes_with_1000_and_fails_what_waits() {
    let fake = FakeGateway::start().await;
    fake.on_request(|_, _| Answer::Silent);
    let stop = CancellationToken::new();
    let gateway = bridge_openclaw::Gateway::start(settings(&fake.url), stop.clone());
    assert!(gateway.connected(Duration::from_secs(5)).await);
    let waiting = {
        let gateway = gateway.clone();
        tokio::spawn(async move { gateway.request("agent.wait", json!({})).await })
    };
    while fake.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.cancel();
    let result = waiting.await.unwrap();
    assert!(
        matches!(result, Err(GatewayError::Closed { .. })),
        "{result:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(fake.client_closes(), [Some(1000)]);
    let status = gateway.status();
    assert_eq!(status.state, ConnectionState::Disconnected);
    assert_eq!(status.last_error.as_deref(), Some("stopped"));
    assert!(status.next_attempt_ms.is_none());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(fake.connects().len(), 1, "no attempt after stop");
}
