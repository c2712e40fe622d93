//! Payload limits and the connection cap (spec: "Payload limits").

use std::time::Duration;

use bridge_testkit::ProviderClient;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::support::{TestGateway, tool};
use crate::transport::{close_code, eventually, raw_provider};

const MIB: usize = 1024 * 1024;

/// A JSON text of exactly `size` bytes: `template` with its `@` replaced by
/// enough `x`s.
fn padded(template: &str, size: usize) -> String {
    let filler = size - (template.len() - 1);
    template.replacen('@', &"x".repeat(filler), 1)
}

#[tokio::test]
async fn a_message_over_2_mib_gets_payload_too_large_and_the_connection_stays() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = gw.provider("big", json!({"tools": [tool("big_t")]})).await;
    let limit = gw.gateway.settings().message_max_bytes;
    assert_eq!(limit, 2 * MIB);
    let push = padded(r#"{"type":"push","event":"@","level":"keep"}"#, limit + 1);
    provider.send_text(push).await.unwrap();
    let error = provider.expect("error").await.unwrap();
    assert_eq!(error["code"], "PAYLOAD_TOO_LARGE");
    assert_eq!(error["replyTo"], "push");
    // Exactly at the limit is fine (a push at level keep has no answer, so
    // the next call's tool.call is the next message).
    let push = padded(r#"{"type":"push","event":"@","level":"keep"}"#, limit);
    provider.send_text(push).await.unwrap();
    let call = gw.call("default", "big_t", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    provider
        .send(json!({"type": "tool.result", "id": request["id"], "data": "ok"}))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!("ok"));
}

#[tokio::test]
async fn a_tool_result_up_to_5_mib_is_delivered_to_the_caller() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = gw.provider("shots", json!({"tools": [tool("shot")]})).await;
    let limit = gw.gateway.settings().tool_result_max_bytes;
    assert_eq!(limit, 5 * MIB);
    let call = gw.call("default", "shot", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    let id = request["id"].as_str().unwrap();
    let template = format!(r#"{{"type":"tool.result","id":"{id}","data":"@"}}"#);
    provider.send_text(padded(&template, limit)).await.unwrap();
    let data = call.await.unwrap().result.unwrap();
    let expected = limit - (template.len() - 1);
    assert_eq!(data.as_str().map(str::len), Some(expected));
}

#[tokio::test]
async fn a_tool_result_over_5_mib_is_refused_and_the_call_waits_for_a_smaller_one() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = gw.provider("shots", json!({"tools": [tool("shot")]})).await;
    let limit = gw.gateway.settings().tool_result_max_bytes;
    let call = gw.call("default", "shot", json!({}));
    let request = provider.expect("tool.call").await.unwrap();
    let id = request["id"].as_str().unwrap();
    let template = format!(r#"{{"type":"tool.result","id":"{id}","data":"@"}}"#);
    provider
        .send_text(padded(&template, limit + 1))
        .await
        .unwrap();
    let error = provider.expect("error").await.unwrap();
    assert_eq!(error["code"], "PAYLOAD_TOO_LARGE");
    assert_eq!(error["replyTo"], "tool.result");
    assert!(!call.is_finished(), "the call must still be pending");
    // The provider downscales and resends.
    provider
        .send(json!({"type": "tool.result", "id": id, "data": "small"}))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!("small"));
}

/// Above the hard frame limit the frame is not read at all: the peer gets
/// PAYLOAD_TOO_LARGE, then close 1009. Other providers carry on.
#[tokio::test]
async fn a_frame_over_the_hard_limit_gets_payload_too_large_then_close_1009() {
    let gw = TestGateway::start().await;
    let (mut other, _) = gw
        .provider("other", json!({"tools": [tool("other_t")]}))
        .await;
    let ws = raw_provider(&gw, "huge", json!([tool("huge_t")])).await;
    let hard = gw.gateway.settings().frame_hard_max_bytes;
    let (mut sink, stream) = ws.split();
    // The gateway stops reading mid-frame, so the write may never finish;
    // read the answer meanwhile.
    let text = padded(r#"{"type":"tool.result","id":"x","data":"@"}"#, hard + 1);
    let writer = tokio::spawn(async move {
        let _ = sink.send(Message::text(text)).await;
        sink
    });
    let mut ws_stream = stream;
    let (code, before) = {
        let mut before = Vec::new();
        let code = loop {
            let frame = tokio::time::timeout(Duration::from_secs(5), ws_stream.next())
                .await
                .expect("an answer within 5 s");
            match frame {
                Some(Ok(Message::Text(text))) => {
                    before.push(serde_json::from_str::<Value>(text.as_str()).unwrap());
                }
                Some(Ok(Message::Close(frame))) => break frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => continue,
                None | Some(Err(_)) => break None,
            }
        };
        (code, before)
    };
    writer.abort();
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["code"], "PAYLOAD_TOO_LARGE");
    assert_eq!(code, Some(1009));
    let call = gw.call("default", "other_t", json!({}));
    let request = other.expect("tool.call").await.unwrap();
    other
        .send(json!({"type": "tool.result", "id": request["id"], "data": 1}))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!(1));
}

/// The 51st connection gets RATE_LIMITED and close 1013; the 50 keep
/// working, and a slot frees when one closes.
#[tokio::test]
async fn the_connection_cap_refuses_the_51st_and_frees_a_slot_on_close() {
    let gw = TestGateway::start().await;
    let cap = gw.gateway.settings().max_connections;
    assert_eq!(cap, 50);
    let mut providers = Vec::with_capacity(cap);
    for i in 0..cap {
        let (client, _) = gw
            .provider(&format!("p{i}"), json!({"tools": [tool(&format!("t{i}"))]}))
            .await;
        providers.push(client);
    }
    let mut refused = raw_over_cap(&gw).await;
    let (code, before) = close_code(&mut refused).await;
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["code"], "RATE_LIMITED");
    assert_eq!(code, Some(1013));
    // The 50 keep working.
    for i in [0, cap - 1] {
        let call = gw.call("default", &format!("t{i}"), json!({}));
        let request = providers[i].expect("tool.call").await.unwrap();
        providers[i]
            .send(json!({"type": "tool.result", "id": request["id"], "data": i}))
            .await
            .unwrap();
        assert_eq!(call.await.unwrap().result.unwrap(), json!(i));
    }
    // One leaves; its slot is free again.
    providers.pop().unwrap().close().await;
    eventually("a slot is free", || gw.gateway.status().connections < cap).await;
    let mut late = ProviderClient::connect(&gw.url).await.unwrap();
    let sessions = late
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    assert_eq!(sessions["active"][0]["id"], "default");
}

async fn raw_over_cap(gw: &TestGateway) -> crate::transport::RawSocket {
    let (ws, _) = tokio_tungstenite::connect_async(gw.url.as_str())
        .await
        .unwrap();
    ws
}

/// A web page holding many WebSockets open while they never authenticate:
/// each origin has a small budget of its own, refused before the upgrade,
/// and a provider with a token still gets in at once.
#[tokio::test]
async fn unauthenticated_connections_from_a_page_never_lock_a_provider_out() {
    let gw = TestGateway::start().await;
    let per_origin = gw.gateway.settings().max_unauthenticated_per_origin;
    let attempts = (0..200).map(|_| {
        let url = gw.url.clone();
        async move {
            let mut request =
                tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
                    url.as_str(),
                )
                .unwrap();
            request
                .headers_mut()
                .insert("origin", "https://evil.example".parse().unwrap());
            tokio_tungstenite::connect_async(request).await
        }
    });
    let results = futures::future::join_all(attempts).await;
    let (held, refused): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    assert_eq!(held.len(), per_origin, "the page's budget");
    for err in refused {
        let err = err.unwrap_err().to_string();
        assert!(err.contains("429"), "{err}");
    }
    let started = std::time::Instant::now();
    let mut provider = ProviderClient::connect(&gw.url).await.unwrap();
    let sessions = provider
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    assert_eq!(sessions["active"][0]["id"], "default");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // The page's sockets are dropped once the handshake deadline passed.
    let mut held: Vec<_> = held.into_iter().map(Result::unwrap).collect();
    let (socket, _) = &mut held[0];
    let first = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .expect("told within the handshake deadline")
        .unwrap()
        .unwrap();
    assert!(first.to_string().contains("no auth message"), "{first}");
}
