//! `GET /healthz`.

use crate::support::TestDaemon;

/// A daemon whose one backend, `stuck`, accepts connections and never
/// answers (kept listening while the listener is held).
async fn with_a_backend_that_hangs() -> (TestDaemon, tokio::net::TcpListener) {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let daemon = TestDaemon::with(crate::support::Setup::default().config_toml(format!(
        "[backends.stuck]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
    )))
    .await;
    (daemon, silent)
}

#[tokio::test]
async fn healthz_answers_without_a_token() {
    let daemon = TestDaemon::start().await;
    let health = daemon.health().await;
    assert_eq!(health["ok"], true);
    assert_eq!(health["sessions"], 1);
    assert_eq!(health["service"], "copilot-bridge");
    assert_eq!(health["providers"], 0);
    assert_eq!(health["connections"], 0);
    assert_eq!(health["pid"], std::process::id());
    // No backend configured: an empty map, not a missing field.
    assert_eq!(health["backends"], serde_json::json!({}));
    daemon.stop().await;
}

#[tokio::test]
async fn healthz_reports_the_backend_and_answers_from_cache_when_a_backend_hangs() {
    let (daemon, silent) = with_a_backend_that_hangs().await;
    for _ in 0..2 {
        let started = std::time::Instant::now();
        let health = daemon.health().await;
        assert!(
            started.elapsed() < std::time::Duration::from_millis(1500),
            "/healthz took {:?}",
            started.elapsed()
        );
        assert_eq!(
            health["backends"],
            serde_json::json!({"stuck": "unavailable"})
        );
    }
    drop(silent);
    daemon.stop().await;
}

#[tokio::test]
async fn healthz_without_backends_names_the_daemon_at_once_whatever_its_backends_do() {
    // The whole answer waits for the probe (up to HEALTH_PROBE_WAIT, 500 ms).
    let (daemon, silent) = with_a_backend_that_hangs().await;
    let started = std::time::Instant::now();
    let identity = daemon.get_json("/healthz?backends=false").await;
    assert!(
        started.elapsed() < std::time::Duration::from_millis(450),
        "/healthz?backends=false took {:?}",
        started.elapsed()
    );
    assert_eq!(identity["ok"], true);
    assert_eq!(identity["service"], "copilot-bridge");
    assert_eq!(identity["pid"], std::process::id());
    assert!(identity.get("backends").is_none(), "{identity}");
    // Asked for, the backends are still there.
    let health = daemon.get_json("/healthz?backends=true").await;
    assert_eq!(
        health["backends"],
        serde_json::json!({"stuck": "unavailable"})
    );
    // A value that is not a boolean is refused, saying why.
    let refused = daemon
        .http()
        .get(daemon.url("/healthz?backends=maybe"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let reason = refused.text().await.unwrap();
    assert!(reason.contains("backends"), "{reason}");
    drop(silent);
    daemon.stop().await;
}
