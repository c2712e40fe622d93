//! The quickstart of the spec, end to end over a real socket.

use serde_json::json;

use crate::support::{TestGateway, tool};

#[tokio::test]
async fn the_quickstart_happy_path_completes_a_tool_call() {
    let gw = TestGateway::start().await;
    let token = gw.project_token("default");
    let mut provider = bridge_testkit::ProviderClient::connect(&gw.url)
        .await
        .unwrap();
    let sessions = provider.authenticate(&token).await.unwrap();
    assert_eq!(sessions["active"][0]["id"], "default");
    assert!(
        sessions.get("token").is_none(),
        "project providers get no token"
    );
    let ack = provider
        .hello(
            "my-provider",
            json!({"session": "default", "tools": [tool("greet")]}),
        )
        .await
        .unwrap();
    assert_eq!(ack["protocolVersion"], 2);
    assert!(ack["providerId"].as_str().unwrap().starts_with("p-"));
    assert!(ack["reconnectToken"].as_str().unwrap().len() > 16);

    let call = gw.call("default", "greet", json!({"x": "world"}));
    let request = provider.expect("tool.call").await.unwrap();
    assert_eq!(request["tool"], "greet");
    assert_eq!(request["sessionId"], "default");
    assert_eq!(request["args"], json!({"x": "world"}));
    provider
        .send(json!({"type": "tool.result", "id": request["id"], "data": "Hello, world!"}))
        .await
        .unwrap();
    let outcome = call.await.unwrap();
    assert_eq!(outcome.result.unwrap(), json!("Hello, world!"));
}
