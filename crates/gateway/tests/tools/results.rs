//! More of `tools`: split off to keep files readable.

use super::*;

#[tokio::test]
async fn progress_is_shown_in_the_session_timeline() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = gw.provider("shots", json!({"tools": [tool("t")]})).await;
    let call = gw.call("default", "t", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    provider
        .send(json!({"type": "tool.progress", "id": request["id"], "message": "Capturing viewport... 60%"}))
        .await
        .unwrap();
    provider
        .send(json!({"type": "tool.result", "id": request["id"], "data": "done"}))
        .await
        .unwrap();
    call.await.unwrap();
    let timeline = gw.session("default").timeline(50);
    assert!(
        timeline
            .iter()
            .any(|e| e.source == "shots" && e.text == "Capturing viewport... 60%"),
        "{timeline:?}"
    );
}

#[tokio::test]
async fn a_disconnect_fails_in_flight_calls_and_others_keep_working() {
    let gw = TestGateway::start().await;
    let (mut crashing, _) = gw.provider("crashing", json!({"tools": [tool("a")]})).await;
    let (mut steady, _) = gw.provider("steady", json!({"tools": [tool("b")]})).await;
    let call = gw.call("default", "a", json!({}));
    crashing.expect("tool.call").await.unwrap();
    crashing.abort();
    let outcome = tokio::time::timeout(Duration::from_secs(2), call)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(failure_code(&outcome), "DISCONNECTED");
    let call = gw.call("default", "b", json!({}));
    answer(&mut steady, json!("still here")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("still here"));
    eventually("the crashed provider's tool is gone", || {
        !tool_names(&gw).contains(&"a".to_owned())
    })
    .await;
}

#[tokio::test]
async fn a_file_ref_inside_persist_dir_is_returned_inline() {
    let gw = TestGateway::start().await;
    let (mut provider, ack) = gw.provider("shots", json!({"tools": [tool("shot")]})).await;
    let dir = std::path::PathBuf::from(ack["persistDir"].as_str().unwrap());
    let bytes: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    let path = dir.join("shot-1.png");
    std::fs::write(&path, &bytes).unwrap();
    let call = gw.call("default", "shot", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    provider
        .send(json!({"type": "tool.result", "id": request["id"],
            "file": {"path": path, "mimeType": "image/png", "size": bytes.len(), "ttl": 300}}))
        .await
        .unwrap();
    let result = call.await.unwrap().result.unwrap();
    assert_eq!(result["file"]["mimeType"], "image/png");
    assert_eq!(result["file"]["size"], 10_000);
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(result["base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, bytes);
}

/// Answers the next call with a file reference to `path`; returns the
/// call's outcome.
async fn answer_with_file(
    gw: &TestGateway,
    provider: &mut ProviderClient,
    path: &std::path::Path,
) -> Result<Value, bridge_engine::ToolFailure> {
    let call = gw.call("default", "shot", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    provider
        .send(json!({"type": "tool.result", "id": request["id"],
            "file": {"path": path, "mimeType": "image/png", "size": 10, "ttl": 60}}))
        .await
        .unwrap();
    call.await.unwrap().result
}

#[tokio::test]
async fn a_file_ref_outside_persist_dir_is_unauthorized_even_through_a_symlink() {
    let gw = TestGateway::start().await;
    let (mut provider, ack) = gw.provider("shots", json!({"tools": [tool("shot")]})).await;
    let dir = std::path::PathBuf::from(ack["persistDir"].as_str().unwrap());
    let secret = gw.state_dir.path().join("outside.txt");
    std::fs::write(&secret, "not the provider's").unwrap();
    let link = dir.join("innocent.png");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    for path in [
        link,
        secret.clone(),
        dir.join("sub/../../../outside.txt"),
        dir.join("sub"),
    ] {
        let failure = answer_with_file(&gw, &mut provider, &path)
            .await
            .unwrap_err();
        assert_eq!(failure.code, "UNAUTHORIZED", "{path:?}: {failure:?}");
        assert!(!failure.message.contains("not the provider's"));
        let error = provider.expect("error").await.unwrap();
        assert_eq!(error["code"], "UNAUTHORIZED");
        assert_eq!(error["replyTo"], "tool.result");
    }
    let failure = answer_with_file(&gw, &mut provider, &dir.join("missing.png"))
        .await
        .unwrap_err();
    assert_eq!(failure.code, "NOT_FOUND");
    // A relative path is taken relative to persistDir.
    std::fs::write(dir.join("rel.png"), b"relative").unwrap();
    let result = answer_with_file(&gw, &mut provider, std::path::Path::new("rel.png"))
        .await
        .unwrap();
    assert_eq!(
        result["base64"],
        base64::engine::general_purpose::STANDARD.encode(b"relative")
    );
}

#[tokio::test]
async fn external_providers_cannot_use_file_refs() {
    let gw = TestGateway::start().await;
    let mut provider = external_provider(
        &gw,
        "ext",
        json!({"session": "default", "tools": [tool("shot")]}),
    )
    .await;
    let call = gw.call("default", "shot", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    provider
        .send(json!({"type": "tool.result", "id": request["id"],
            "file": {"path": "/tmp/x.png", "mimeType": "image/png", "size": 10}}))
        .await
        .unwrap();
    let error = provider.expect("error").await.unwrap();
    assert_eq!(error["code"], "UNAUTHORIZED");
    assert_eq!(error["replyTo"], "tool.result");
    assert_eq!(failure_code(&call.await.unwrap()), "UNAUTHORIZED");
    // Still connected and serving.
    let call = gw.call("default", "shot", json!({}));
    answer(&mut provider, json!("inline")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("inline"));
}

#[tokio::test]
async fn many_concurrent_calls_each_get_their_own_result() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = gw.provider("echo", json!({"tools": [tool("echo")]})).await;
    let calls: Vec<_> = (0..200)
        .map(|i| gw.call("default", "echo", json!({"x": i.to_string()})))
        .collect();
    for _ in 0..200 {
        let request = provider.expect("tool.call").await.unwrap();
        provider
            .send(json!({"type": "tool.result", "id": request["id"], "data": request["args"]["x"]}))
            .await
            .unwrap();
    }
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap().result.unwrap(), json!(i.to_string()));
    }
}
