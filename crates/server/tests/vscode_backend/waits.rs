//! The `vscode` backend's bounds against an in-process editor: waits that
//! time out and tell the editor to stop, an answer nobody reads.

use std::time::Duration;

use serde_json::{Value, json};

use super::vscode_health;
use crate::support::TestDaemon;

/// An in-process editor (the gateway's internal trust level) offering one
/// model; what it is sent.
async fn local_editor(daemon: &TestDaemon) -> bridge_gateway::LocalProvider {
    use bridge_protocol::provider::ProviderMessage;
    let mut local = daemon.ctx.gateway.connect_local();
    let hello: ProviderMessage = serde_json::from_value(
        json!({"type": "hello", "name": "vscode", "protocolVersion": 2, "session": "all"}),
    )
    .unwrap();
    local.send(hello).unwrap();
    loop {
        let message = local.recv().await.expect("the gateway answers the hello");
        if message.type_name() == "hello.ack" {
            break;
        }
    }
    let offer: ProviderMessage = serde_json::from_value(
        json!({"type": "chat.models", "available": true, "models": [{"id": "slowpoke"}]}),
    )
    .unwrap();
    local.send(offer).unwrap();
    local
}

/// The next `chat.*` message the editor is sent, as JSON.
async fn next_chat_message(local: &mut bridge_gateway::LocalProvider) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(5), local.recv())
            .await
            .expect("a message within 5 s")
            .expect("the connection stays open");
        if message.type_name().starts_with("chat.") {
            return serde_json::to_value(&message).unwrap();
        }
    }
}

#[tokio::test]
async fn an_editor_that_goes_quiet_times_out_and_is_told_to_stop() {
    use bridge_llm::{ChatBackend, ChatEvent, ChatRequest, LlmError, Message, Role};
    use bridge_protocol::provider::ProviderMessage;
    use bridge_server::vscode::VscodeBackend;
    use futures::StreamExt;

    let daemon = TestDaemon::start().await;
    let mut local = local_editor(&daemon).await;
    vscode_health(&daemon, "ok").await;
    let backend = VscodeBackend::new(daemon.ctx.gateway.clone())
        .with_patience(Duration::from_millis(300), Duration::from_millis(300));
    let request = ChatRequest {
        model: Some("slowpoke".into()),
        messages: vec![Message::text(Role::User, "hi")],
        ..ChatRequest::default()
    };

    // No first part: a timeout (504 at the facade), and the editor is told.
    let started = std::time::Instant::now();
    let error = backend.stream(&request).await.err().unwrap();
    assert!(matches!(error, LlmError::Timeout { .. }), "{error}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let sent = next_chat_message(&mut local).await;
    assert_eq!(sent["type"], "chat.request");
    let cancel = next_chat_message(&mut local).await;
    assert_eq!(cancel, json!({"type": "chat.cancel", "id": sent["id"]}));

    // A pause after the first part: the stream ends with the timeout.
    let answering = tokio::spawn(async move {
        let sent = next_chat_message(&mut local).await;
        let delta: ProviderMessage = serde_json::from_value(
            json!({"type": "chat.delta", "id": sent["id"], "text": "thinking"}),
        )
        .unwrap();
        local.send(delta).unwrap();
        let cancel = next_chat_message(&mut local).await;
        (sent, cancel)
    });
    let mut stream = backend.stream(&request).await.unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        ChatEvent::TextDelta {
            text: "thinking".into()
        }
    );
    let error = stream.next().await.unwrap().err().unwrap();
    assert!(matches!(error, LlmError::Timeout { .. }), "{error}");
    drop(stream);
    let (sent, cancel) = answering.await.unwrap();
    assert_eq!(cancel, json!({"type": "chat.cancel", "id": sent["id"]}));
    daemon.stop().await;
}

#[tokio::test]
async fn an_answer_nobody_reads_is_cancelled_not_buffered_without_bound() {
    use bridge_llm::{ChatBackend, ChatEvent, ChatRequest, Message, Role};
    use bridge_protocol::provider::ProviderMessage;
    use bridge_server::vscode::VscodeBackend;
    use futures::StreamExt;

    let daemon = TestDaemon::start().await;
    let mut local = local_editor(&daemon).await;
    vscode_health(&daemon, "ok").await;
    let backend = VscodeBackend::new(daemon.ctx.gateway.clone());
    let request = ChatRequest {
        model: Some("slowpoke".into()),
        messages: vec![Message::text(Role::User, "write a lot")],
        ..ChatRequest::default()
    };
    let flooding = tokio::spawn(async move {
        let sent = next_chat_message(&mut local).await;
        let chunk = "x".repeat(2 << 20);
        for _ in 0..10 {
            let delta: ProviderMessage = serde_json::from_value(
                json!({"type": "chat.delta", "id": sent["id"], "text": chunk}),
            )
            .unwrap();
            local.send(delta).unwrap();
        }
        (sent, next_chat_message(&mut local).await)
    });
    // The first part answers the head; nothing more is read meanwhile.
    let mut stream = backend.stream(&request).await.unwrap();
    let (sent, cancel) = flooding.await.unwrap();
    assert_eq!(cancel, json!({"type": "chat.cancel", "id": sent["id"]}));
    let mut received = 0;
    let mut last = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(ChatEvent::TextDelta { text }) => received += text.len(),
            other => last = Some(other),
        }
    }
    assert!(received <= 16 << 20, "{received} bytes were kept");
    let error = last.unwrap().err().unwrap().to_string();
    assert!(error.contains("did not read"), "{error}");
    daemon.stop().await;
}
