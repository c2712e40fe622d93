//! More of `registry`: split off to keep files readable.

use super::*;

#[tokio::test]
async fn lifecycle_listeners_hear_start_idle_and_a_held_shutdown() {
    let workspace = TempWorkspace::new();
    let registry = registry();
    let recorder = Arc::new(Recorder::default());
    registry.add_listener(recorder.clone());
    let first = session(&registry, &workspace, "s1");
    let _second = session(&registry, &workspace, "s2");
    assert_eq!(registry.default_session().unwrap().id(), "s1");
    assert!(
        registry
            .create(SessionSpec {
                id: Some("s1".into()),
                label: String::new(),
                cwd: workspace.path().to_path_buf(),
                foreground: false,
                door: bridge_engine::Door::Rpc,
            })
            .is_err()
    );

    first.user_message("fix the bug");
    first.turn_finished();
    first.turn_finished(); // already idle: heard once

    // Released early: end returns well before the 300 ms deadline.
    let releaser = {
        let recorder = recorder.clone();
        tokio::spawn(async move {
            loop {
                if let Some(tx) = recorder.hold.lock().unwrap().take() {
                    let _ = tx.send(());
                    break;
                }
                tokio::task::yield_now().await;
            }
        })
    };
    let started = std::time::Instant::now();
    registry.end("s1", None).await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(250));
    releaser.await.unwrap();
    assert!(registry.get("s1").is_none());
    assert_eq!(
        registry.default_session().unwrap().id(),
        "s2",
        "the default moves on"
    );

    // Held to the deadline when nobody releases.
    let started = std::time::Instant::now();
    registry
        .end("s2", Some(Duration::from_millis(150)))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert!(registry.is_empty());
    assert!(
        registry.end("s2", None).await.is_err(),
        "ending twice is an error"
    );

    let events = recorder.events.lock().unwrap().clone();
    assert_eq!(
        events,
        [
            "started s1",
            "started s2",
            "idle s1",
            "ending s1",
            "ended s1",
            "ending s2",
            "ended s2"
        ]
    );
}

#[tokio::test]
async fn context_and_timeline_are_kept_per_owner() {
    let workspace = TempWorkspace::new();
    let registry = registry();
    let session = session(&registry, &workspace, "s1");
    session.set_context("ci", Some("CI is passing".into()));
    session.set_context("git", Some("2 commits behind".into()));
    session.set_context("ci", Some("CI is failing".into()));
    assert_eq!(
        session.context(),
        vec![
            ("ci".into(), "CI is failing".into()),
            ("git".into(), "2 commits behind".into())
        ]
    );
    session.set_context("ci", None);
    assert_eq!(session.context().len(), 1);
    for i in 0..250 {
        session.log("test", &format!("line {i}"));
    }
    let timeline = session.timeline(1000);
    assert_eq!(
        timeline.len(),
        200,
        "the timeline keeps the newest 200 lines"
    );
    assert_eq!(timeline.last().unwrap().text, "line 249");
    session.log("test", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789");
    assert!(
        !session.timeline(1)[0].text.contains("ghp_abcdef"),
        "timeline lines are redacted"
    );
}
