//! The session server over a byte stream (the stdio form), and the stdio
//! proxy to a daemon.

use super::*;

#[tokio::test]
async fn over_a_byte_stream_it_lists_calls_and_announces() {
    let fx = Fixture::start().await;
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    let server = SessionServer::for_session(fx.session("default"));
    let serving = tokio::spawn(async move {
        let running = server.serve(server_end).await.unwrap();
        let _ = running.waiting().await;
    });
    let mut client = Client::connect(client_end).await;
    assert!(client.tool_names().await.is_empty());
    let mut echo = fx
        .provider("default", "echo", json!({"tools": [tool("say")]}))
        .await;
    client.list_changed().await;
    assert_eq!(client.tool_names().await, ["say"]);
    let (result, _) = call_answered(
        &client,
        &mut echo,
        "say",
        json!({"city": "hi"}),
        json!({"data": "hi"}),
    )
    .await;
    assert_eq!(text_of(&result), "hi");
    let info = client.running.peer_info().unwrap();
    let tools = info.capabilities.tools.clone().unwrap();
    assert_eq!(tools.list_changed, Some(true));
    drop(client);
    serving.await.unwrap();
}

/// Points the proxy at the fixture's server while it runs.
struct FixtureLocator {
    base_url: String,
}

#[async_trait::async_trait]
impl DaemonLocator for FixtureLocator {
    async fn locate(&self, _start: bool) -> Result<DaemonEndpoint, String> {
        Ok(DaemonEndpoint {
            base_url: self.base_url.clone(),
            token: "unused-here".to_owned(),
        })
    }
}

#[tokio::test]
async fn the_proxy_forwards_lists_calls_and_changes_and_says_when_the_daemon_is_gone() {
    let fx = Fixture::start().await;
    let mut weather = fx
        .provider("default", "weather", json!({"tools": [tool("forecast")]}))
        .await;
    let proxy = SessionProxy::new(
        Box::new(FixtureLocator {
            base_url: fx.base_url.clone(),
        }),
        None,
    );
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = proxy.serve(server_end).await.unwrap();
        let _ = running.waiting().await;
    });
    let mut client = Client::connect(client_end).await;
    assert_eq!(client.tool_names().await, ["forecast"]);
    let (result, _) = call_answered(
        &client,
        &mut weather,
        "forecast",
        json!({"city": "Oslo"}),
        json!({"data": {"temp": 3}}),
    )
    .await;
    assert_eq!(result.structured_content, Some(json!({"temp": 3})));
    let message = invalid_params(
        client
            .call("forecast", json!({"_depth": "x", "city": "a"}))
            .await,
    );
    assert!(
        message.contains("`_depth`"),
        "the daemon's errors pass through: {message}"
    );

    weather
        .send(json!({"type": "tools.update", "requestId": "r", "tools": [tool("radar")]}))
        .await
        .unwrap();
    weather.expect("ack").await.unwrap();
    client.list_changed().await;
    assert_eq!(client.tool_names().await, ["forecast", "radar"]);

    fx.stop.cancel();
    fx.server.abort();
    let gone = client
        .call("forecast", json!({"city": "Oslo"}))
        .await
        .unwrap();
    assert_eq!(gone.is_error, Some(true));
    assert!(
        text_of(&gone).contains("the copilot-bridge daemon is not available"),
        "{}",
        text_of(&gone)
    );
}
