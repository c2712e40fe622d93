//! The WebSocket transport: malformed frames, writer ordering, keepalive,
//! the auth deadline, shutdown, and one provider's flood against another's
//! calls — all over real sockets.

use std::time::{Duration, Instant};

use bridge_gateway::GatewaySettings;
use bridge_testkit::ProviderClient;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::support::{TestGateway, fast_registry_settings, fast_settings, tool};

pub type RawSocket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A registered provider on a bare tokio-tungstenite socket (for frames
/// `ProviderClient` cannot send, and for peers that never read).
pub async fn raw_provider(gw: &TestGateway, name: &str, tools: Value) -> RawSocket {
    let (ws, _) = tokio_tungstenite::connect_async(gw.url.as_str())
        .await
        .unwrap();
    register_raw(gw, ws, name, tools).await
}

pub async fn register_raw(
    gw: &TestGateway,
    mut ws: RawSocket,
    name: &str,
    tools: Value,
) -> RawSocket {
    let token = gw.project_token("default");
    ws.send(Message::text(
        json!({"type": "auth", "token": token}).to_string(),
    ))
    .await
    .unwrap();
    assert_eq!(next_json(&mut ws).await["type"], "sessions");
    let hello = json!({"type": "hello", "name": name, "protocolVersion": 2,
        "session": "default", "tools": tools});
    ws.send(Message::text(hello.to_string())).await.unwrap();
    assert_eq!(next_json(&mut ws).await["type"], "hello.ack");
    ws
}

/// The next JSON message on a raw socket, skipping pings.
pub async fn next_json(ws: &mut RawSocket) -> Value {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("a message within 5 s")
            .expect("the socket is open")
            .unwrap();
        match frame {
            Message::Text(text) => return serde_json::from_str(text.as_str()).unwrap(),
            Message::Close(frame) => panic!("closed: {frame:?}"),
            _ => continue,
        }
    }
}

/// Reads until the close frame; returns its code and the messages before it.
pub async fn close_code(ws: &mut RawSocket) -> (Option<u16>, Vec<Value>) {
    let mut before = Vec::new();
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .expect("the close within 5 s");
        match frame {
            Some(Ok(Message::Text(text))) => {
                before.push(serde_json::from_str(text.as_str()).unwrap())
            }
            Some(Ok(Message::Close(frame))) => {
                return (frame.map(|f| u16::from(f.code)), before);
            }
            Some(Ok(_)) => continue,
            None | Some(Err(_)) => return (None, before),
        }
    }
}

/// Polls `condition` (gateway-side state with no event to await) for up to
/// five seconds.
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Answers the next `tool.call` on `provider` with `data`.
async fn answer(provider: &mut ProviderClient, data: Value) {
    let call = provider.expect("tool.call").await.unwrap();
    provider
        .send(json!({"type": "tool.result", "id": call["id"], "data": data}))
        .await
        .unwrap();
}

pub async fn assert_still_serves(gw: &TestGateway, provider: &mut ProviderClient, tool_name: &str) {
    let call = gw.call("default", tool_name, json!({}));
    answer(provider, json!("still here")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("still here"));
}

#[tokio::test]
async fn binary_frames_get_invalid_json_and_the_connection_stays() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = gw.provider("bin", json!({"tools": [tool("bin_t")]})).await;
    provider.send_binary(vec![0, 1, 2, 3]).await.unwrap();
    let error = provider.expect("error").await.unwrap();
    assert_eq!(error["code"], "INVALID_JSON");
    assert_still_serves(&gw, &mut provider, "bin_t").await;
}

#[tokio::test]
async fn malformed_text_frames_get_invalid_json_and_the_connection_stays() {
    let gw = TestGateway::start().await;
    let (mut provider, _) = gw.provider("bad", json!({"tools": [tool("bad_t")]})).await;
    let cases = [
        ("{not json", None),
        ("[1, 2, 3]", None),
        ("\"a string\"", None),
        ("42", None),
        ("{\"no\": \"type\"}", None),
        ("{\"type\": 7}", None),
        (r#"{"type": "tool.result", "id": 12}"#, Some("tool.result")),
        (
            r#"{"type": "push", "event": ["x"], "level": "surface"}"#,
            Some("push"),
        ),
    ];
    for (text, reply_to) in cases {
        provider.send_text(text).await.unwrap();
        let error = provider.expect("error").await.unwrap();
        assert_eq!(error["code"], "INVALID_JSON", "for {text}: {error}");
        if let Some(reply_to) = reply_to {
            assert_eq!(error["replyTo"], reply_to, "for {text}");
        }
    }
    assert_still_serves(&gw, &mut provider, "bad_t").await;
}

/// RFC 6455 §8.1 makes a non-UTF-8 text frame fatal to the WebSocket
/// connection (and tokio-tungstenite fuses the stream after it): the peer is
/// told INVALID_JSON, then the socket closes with 1007.
#[tokio::test]
async fn a_text_frame_that_is_not_utf8_gets_invalid_json_then_close_1007() {
    let gw = TestGateway::start().await;
    let mut ws = raw_provider(&gw, "utf8", json!([tool("utf8_t")])).await;
    let frame = Frame::message(vec![b'{', 0xff, 0xfe, b'}'], OpCode::Data(Data::Text), true);
    ws.send(Message::Frame(frame)).await.unwrap();
    let (code, before) = close_code(&mut ws).await;
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["code"], "INVALID_JSON");
    assert_eq!(code, Some(1007));
    // Other providers are unaffected.
    let (mut other, _) = gw
        .provider("other", json!({"tools": [tool("other_t")]}))
        .await;
    assert_still_serves(&gw, &mut other, "other_t").await;
}

/// The writer batches: a burst of errors arrives complete and in order, and
/// a close queued after them goes out last.
#[tokio::test]
async fn a_burst_of_replies_arrives_complete_in_order_then_the_close() {
    let gw = TestGateway::start().await;
    let mut ws = raw_provider(&gw, "burst", json!([tool("burst_t")])).await;
    const N: usize = 2000;
    for i in 0..N {
        ws.feed(Message::text(format!(r#"{{"type":"nope.{i}"}}"#)))
            .await
            .unwrap();
    }
    ws.feed(Message::text(r#"{"type":"goodbye"}"#))
        .await
        .unwrap();
    ws.flush().await.unwrap();
    let (code, before) = close_code(&mut ws).await;
    assert_eq!(before.len(), N);
    for (i, error) in before.iter().enumerate() {
        assert_eq!(error["code"], "UNKNOWN_TYPE");
        assert_eq!(
            error["replyTo"],
            format!("nope.{i}"),
            "message {i} out of order"
        );
    }
    assert_eq!(code, Some(1000));
}

#[tokio::test]
async fn a_peer_that_stops_answering_pings_is_dropped_and_its_calls_end_disconnected() {
    let ping = Duration::from_millis(150);
    let settings = GatewaySettings {
        ping_interval: ping,
        ..fast_settings()
    };
    let gw = TestGateway::start_with(settings, fast_registry_settings()).await;
    // A reading peer answers pings (tungstenite pongs while it reads) and
    // stays through many intervals.
    let (alive, _) = gw
        .provider("alive", json!({"tools": [tool("alive_t")]}))
        .await;
    let reading = tokio::spawn(async move {
        let mut alive = alive;
        alive.expect_silence(ping * 6).await.unwrap();
        alive
    });
    // A peer that never reads again is half-open.
    let (silent, _) = gw
        .provider("silent", json!({"tools": [tool("silent_t")]}))
        .await;
    let started = Instant::now();
    let call = gw.call("default", "silent_t", json!({}));
    let outcome = tokio::time::timeout(Duration::from_secs(3), call)
        .await
        .expect("the half-open peer is dropped within 3 s")
        .unwrap();
    let waited = started.elapsed();
    let failure = outcome.result.unwrap_err();
    assert_eq!(failure.code, "DISCONNECTED", "{failure:?}");
    assert!(
        waited >= ping * 2 - Duration::from_millis(20),
        "dropped after {waited:?}, before two intervals"
    );
    let mut alive = reading.await.unwrap();
    assert_still_serves(&gw, &mut alive, "alive_t").await;
    drop(silent);
}

#[tokio::test]
async fn an_unauthenticated_connection_is_closed_at_the_auth_deadline() {
    let settings = GatewaySettings {
        auth_timeout: Duration::from_millis(200),
        ..fast_settings()
    };
    let gw = TestGateway::start_with(settings, fast_registry_settings()).await;
    let mut idle = ProviderClient::connect(&gw.url).await.unwrap();
    // Authenticated in time: the deadline no longer applies.
    let (mut bound, _) = gw
        .provider("bound", json!({"tools": [tool("bound_t")]}))
        .await;
    let started = Instant::now();
    let (code, before) = idle.expect_close().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(before.len(), 1);
    assert_eq!(before[0]["code"], "AUTH_FAILED");
    assert_eq!(code, Some(1008));
    bound
        .expect_silence(Duration::from_millis(300))
        .await
        .unwrap();
    assert_still_serves(&gw, &mut bound, "bound_t").await;
}

#[tokio::test]
async fn shutdown_closes_every_connection_with_1001() {
    let gw = TestGateway::start().await;
    let (mut a, _) = gw.provider("a", json!({"tools": [tool("a_t")]})).await;
    let mut unauthenticated = ProviderClient::connect(&gw.url).await.unwrap();
    gw.gateway.shutdown().await;
    for client in [&mut a, &mut unauthenticated] {
        let (code, _) = client.expect_close().await.unwrap();
        assert_eq!(code, Some(1001));
    }
}

/// One provider floods junk (and never reads the errors); another
/// provider's calls still complete promptly.
#[tokio::test]
async fn a_flood_of_junk_from_one_provider_does_not_stall_another() {
    let gw = TestGateway::start().await;
    let (mut worker, _) = gw
        .provider("worker", json!({"tools": [tool("work")]}))
        .await;
    let mut flooder = raw_provider(&gw, "flooder", json!([tool("flood_t")])).await;
    let flood = tokio::spawn(async move {
        for i in 0..10_000u32 {
            let junk = if i % 2 == 0 {
                "{junk".to_owned()
            } else {
                format!("[{i}]")
            };
            if flooder.send(Message::text(junk)).await.is_err() {
                break;
            }
        }
        flooder
    });
    // Calls run back to back for as long as the flood lasts.
    let mut slowest = Duration::ZERO;
    let mut calls = 0;
    while calls < 20 || !flood.is_finished() {
        calls += 1;
        let started = Instant::now();
        let call = gw.call("default", "work", json!({}));
        answer(&mut worker, json!("done")).await;
        assert_eq!(call.await.unwrap().result.unwrap(), json!("done"));
        slowest = slowest.max(started.elapsed());
    }
    let _flooder = flood.await.unwrap();
    assert!(
        slowest < Duration::from_millis(500),
        "slowest of {calls} calls during the flood: {slowest:?}"
    );
}

/// A provider that never reads fills its bounded outbound queue and is
/// disconnected; the gateway does not buffer for it without limit.
#[tokio::test]
async fn a_provider_that_never_reads_is_disconnected_when_its_queue_fills() {
    let settings = GatewaySettings {
        outbound_queue: 32,
        ..fast_settings()
    };
    let gw = TestGateway::start_with(settings, fast_registry_settings()).await;
    let (mut worker, _) = gw
        .provider("worker", json!({"tools": [tool("work")]}))
        .await;
    // A small receive window keeps the kernel from absorbing megabytes of
    // replies before the queue gets a chance to fill.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let addr = gw.url.trim_start_matches("ws://").trim_end_matches('/');
    let stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    let (ws, _) = tokio_tungstenite::client_async(gw.url.as_str(), MaybeTlsStream::Plain(stream))
        .await
        .unwrap();
    let mut flooder = register_raw(&gw, ws, "flooder", json!([tool("flood_t")])).await;
    let pending = gw.call("default", "flood_t", json!({}));
    assert_eq!(gw.gateway.status().connections, 2);
    let flood = tokio::spawn(async move {
        let junk = r#"{"type":"tool.result","id":12}"#;
        for _ in 0..2_000_000u32 {
            if flooder.send(Message::text(junk)).await.is_err() {
                return true;
            }
        }
        false
    });
    let disconnected = tokio::time::timeout(Duration::from_secs(20), flood)
        .await
        .expect("the flooder is disconnected within 20 s")
        .unwrap();
    assert!(
        disconnected,
        "two million unread replies and still connected"
    );
    let outcome = pending.await.unwrap();
    assert_eq!(outcome.result.unwrap_err().code, "DISCONNECTED");
    eventually("the flooder's slot is free", || {
        gw.gateway.status().connections == 1
    })
    .await;
    assert_still_serves(&gw, &mut worker, "work").await;
}
