//! `GET /healthz`.

use crate::support::TestDaemon;

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
    // An upstream that accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let daemon = TestDaemon::with(crate::support::Setup::default().config_toml(format!(
        "[backends.stuck]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
    )))
    .await;
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
