//! `GET /healthz`.

use crate::support::TestDaemon;

#[tokio::test]
async fn healthz_answers_without_a_token() {
    let daemon = TestDaemon::start().await;
    let health: serde_json::Value = daemon
        .http()
        .get(daemon.url("/healthz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["ok"], true);
    assert_eq!(health["sessions"], 1);
    daemon.stop().await;
}
