//! A fake OpenClaw gateway on a real socket (127.0.0.1, port 0): it sends
//! the challenge, records every `connect` (and checks its device
//! signature as the gateway does), answers with the recorded `hello-ok`
//! (or a refusal), and answers requests through a handler. Tests push raw
//! frames, drop the connection and read what the client sent.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bridge_openclaw::device::{SignedFields, payload_v3, verify};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

/// The frames of a recorded transcript in `tests/fixtures/`.
pub fn transcript(name: &str) -> Vec<(String, Value)> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("{path}: {err}"))
        .lines()
        .map(|line| {
            let record: Value = serde_json::from_str(line).unwrap();
            (
                record["dir"].as_str().unwrap().to_owned(),
                record["frame"].clone(),
            )
        })
        .collect()
}

/// The first frame of `transcript` that `pick` accepts.
pub fn frame_where(transcript: &[(String, Value)], pick: impl Fn(&Value) -> bool) -> Value {
    transcript
        .iter()
        .map(|(_, frame)| frame)
        .find(|frame| pick(frame))
        .cloned()
        .expect("the transcript has that frame")
}

/// The recorded `hello-ok` payload (device identity, v3).
pub fn recorded_hello() -> Value {
    let frames = transcript("handshake-cli-device-v3.jsonl");
    frame_where(&frames, |frame| frame["payload"]["type"] == "hello-ok")["payload"].clone()
}

/// What the fake answers a request with.
pub enum Answer {
    Ok(Value),
    Error(Value),
    /// Frames sent before the answer, then the answer.
    EventsThen(Vec<Value>, Value),
    /// The answer after a delay (other requests are served meanwhile).
    Later(Duration, Value),
    /// No answer at all.
    Silent,
}

type Handler = Box<dyn Fn(&str, &Value) -> Answer + Send + Sync>;
type ConnectPolicy = Box<dyn Fn(&Value) -> Option<Value> + Send + Sync>;

/// One `connect` the fake received.
#[derive(Debug, Clone)]
pub struct Connect {
    pub at: Instant,
    pub params: Value,
    /// The device signature checked as the gateway checks it (None: no
    /// device block).
    pub signature_valid: Option<bool>,
}

#[derive(Default)]
struct State {
    connects: Mutex<Vec<Connect>>,
    hello: Mutex<Value>,
    policy: Mutex<Option<ConnectPolicy>>,
    handler: Mutex<Option<Handler>>,
    requests: Mutex<Vec<(String, Value)>>,
    client_closes: Mutex<Vec<Option<u16>>>,
    current: Mutex<Option<mpsc::UnboundedSender<Message>>>,
    ticks: Mutex<Option<Duration>>,
    /// Close the socket right after accepting it (before the challenge).
    hang_up_at_once: Mutex<bool>,
}

pub struct FakeGateway {
    pub url: String,
    state: Arc<State>,
    server: JoinHandle<()>,
}

impl Drop for FakeGateway {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeGateway {
    /// Answers with the recorded hello (tick interval 30 s) and no request
    /// handler (requests stay unanswered).
    pub async fn start() -> FakeGateway {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}", listener.local_addr().unwrap());
        let state = Arc::new(State::default());
        *state.hello.lock().unwrap() = recorded_hello();
        let serving = Arc::clone(&state);
        let server = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let state = Arc::clone(&serving);
                tokio::spawn(async move {
                    if *state.hang_up_at_once.lock().unwrap() {
                        drop(socket);
                        return;
                    }
                    if let Ok(ws) = tokio_tungstenite::accept_async(socket).await {
                        serve(state, ws).await;
                    }
                });
            }
        });
        FakeGateway { url, state, server }
    }

    /// Changes the hello-ok payload: `change` edits the recorded one.
    pub fn edit_hello(&self, change: impl FnOnce(&mut Value)) {
        change(&mut self.state.hello.lock().unwrap());
    }

    /// `policy(connect params)` returns Some(error object) to refuse.
    pub fn refuse_when(&self, policy: impl Fn(&Value) -> Option<Value> + Send + Sync + 'static) {
        *self.state.policy.lock().unwrap() = Some(Box::new(policy));
    }

    pub fn on_request(&self, handler: impl Fn(&str, &Value) -> Answer + Send + Sync + 'static) {
        *self.state.handler.lock().unwrap() = Some(Box::new(handler));
    }

    /// Sends a `tick` event every `every` on each connection.
    pub fn tick_every(&self, every: Duration) {
        *self.state.ticks.lock().unwrap() = Some(every);
    }

    pub fn hang_up_at_once(&self, yes: bool) {
        *self.state.hang_up_at_once.lock().unwrap() = yes;
    }

    pub fn connects(&self) -> Vec<Connect> {
        self.state.connects.lock().unwrap().clone()
    }

    /// Requests (method, params) after the handshake, in order.
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Close codes the client sent (None: a close without a frame).
    pub fn client_closes(&self) -> Vec<Option<u16>> {
        self.state.client_closes.lock().unwrap().clone()
    }

    /// Sends `message` on the current connection.
    pub fn push(&self, message: Message) {
        if let Some(out) = self.state.current.lock().unwrap().as_ref() {
            let _ = out.send(message);
        }
    }

    pub fn push_text(&self, text: impl Into<String>) {
        self.push(Message::text(text.into()));
    }

    /// The server closes the current connection (code 1012, restart).
    pub fn close_connection(&self) {
        self.push(Message::Close(Some(
            tokio_tungstenite::tungstenite::protocol::CloseFrame {
                code: 1012.into(),
                reason: "service restart".into(),
            },
        )));
    }

    /// Waits until `count` connects were received.
    pub async fn wait_connects(&self, count: usize, within: Duration) -> Vec<Connect> {
        let deadline = Instant::now() + within;
        loop {
            let connects = self.connects();
            if connects.len() >= count || Instant::now() > deadline {
                return connects;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn serve(state: Arc<State>, ws: Ws) {
    let (mut sink, mut stream) = ws.split();
    let (out, mut queue) = mpsc::unbounded_channel::<Message>();
    let nonce = format!("nonce-{}", rand_suffix());
    let ts = now_ms();
    let challenge = json!({"type": "event", "event": "connect.challenge",
        "payload": {"nonce": nonce, "ts": ts, "capabilities": ["model-catalog-snapshot"]}});
    if sink
        .send(Message::text(challenge.to_string()))
        .await
        .is_err()
    {
        return;
    }
    // The connect request.
    let connect = loop {
        match stream.next().await {
            Some(Ok(Message::Text(text))) => {
                let frame: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                if frame["method"] == "connect" {
                    break frame;
                }
            }
            Some(Ok(Message::Close(frame))) => {
                state
                    .client_closes
                    .lock()
                    .unwrap()
                    .push(frame.map(|f| u16::from(f.code)));
                return;
            }
            Some(Ok(_)) => {}
            _ => return,
        }
    };
    let params = connect["params"].clone();
    let signature_valid = check_signature(&params, &nonce, ts);
    state.connects.lock().unwrap().push(Connect {
        at: Instant::now(),
        params: params.clone(),
        signature_valid,
    });
    let refusal = state
        .policy
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|policy| policy(&params));
    if let Some(error) = refusal {
        let reason = error["message"].as_str().unwrap_or("refused").to_owned();
        let res = json!({"type": "res", "id": connect["id"], "ok": false, "error": error});
        let _ = sink.send(Message::text(res.to_string())).await;
        let _ = sink
            .send(Message::Close(Some(
                tokio_tungstenite::tungstenite::protocol::CloseFrame {
                    code: 1008.into(),
                    reason: reason.into(),
                },
            )))
            .await;
        return;
    }
    let hello = state.hello.lock().unwrap().clone();
    let res = json!({"type": "res", "id": connect["id"], "ok": true, "payload": hello});
    if sink.send(Message::text(res.to_string())).await.is_err() {
        return;
    }
    *state.current.lock().unwrap() = Some(out.clone());
    let ticks = *state.ticks.lock().unwrap();
    let mut tick = tokio::time::interval(ticks.unwrap_or(Duration::from_secs(3600)));
    tick.tick().await;
    let mut seq = 0u64;
    loop {
        tokio::select! {
            _ = tick.tick(), if ticks.is_some() => {
                seq += 1;
                let frame = json!({"type": "event", "event": "tick", "payload": {"ts": now_ms()}, "seq": seq});
                if sink.send(Message::text(frame.to_string())).await.is_err() { break; }
            }
            queued = queue.recv() => {
                let Some(message) = queued else { break };
                let closing = matches!(message, Message::Close(_));
                if sink.send(message).await.is_err() || closing { break; }
            }
            received = stream.next() => match received {
                Some(Ok(Message::Text(text))) => answer(&state, &text, &out),
                Some(Ok(Message::Close(frame))) => {
                    state.client_closes.lock().unwrap().push(frame.map(|f| u16::from(f.code)));
                    break;
                }
                Some(Ok(_)) => {}
                _ => break,
            },
        }
    }
    let mut current = state.current.lock().unwrap();
    if current
        .as_ref()
        .is_some_and(|sender| sender.same_channel(&out))
    {
        *current = None;
    }
}

fn answer(state: &Arc<State>, text: &str, out: &mpsc::UnboundedSender<Message>) {
    let frame: Value = serde_json::from_str(text).unwrap();
    let method = frame["method"].as_str().unwrap_or_default().to_owned();
    state
        .requests
        .lock()
        .unwrap()
        .push((method.clone(), frame["params"].clone()));
    let reply = match state.handler.lock().unwrap().as_ref() {
        Some(handler) => handler(&method, &frame["params"]),
        None => Answer::Silent,
    };
    let res = |ok: bool, body: Value| {
        let key = if ok { "payload" } else { "error" };
        Message::text(json!({"type": "res", "id": frame["id"], "ok": ok, key: body}).to_string())
    };
    match reply {
        Answer::Ok(payload) => {
            let _ = out.send(res(true, payload));
        }
        Answer::Error(error) => {
            let _ = out.send(res(false, error));
        }
        Answer::EventsThen(events, payload) => {
            for event in events {
                let _ = out.send(Message::text(event.to_string()));
            }
            let _ = out.send(res(true, payload));
        }
        Answer::Later(delay, payload) => {
            let out = out.clone();
            let message = res(true, payload);
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = out.send(message);
            });
        }
        Answer::Silent => {}
    }
}

/// The payload v3 a connect's device signed, rebuilt from its params the
/// way the gateway rebuilds it.
pub(crate) fn signed_payload(params: &Value) -> Option<String> {
    let device = params.get("device")?;
    let scopes: Vec<&str> = params["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|scope| scope.as_str().unwrap())
        .collect();
    Some(payload_v3(&SignedFields {
        device_id: device["id"].as_str().unwrap(),
        client_id: params["client"]["id"].as_str().unwrap(),
        client_mode: params["client"]["mode"].as_str().unwrap(),
        role: params["role"].as_str().unwrap(),
        scopes: &scopes,
        signed_at_ms: device["signedAt"].as_u64().unwrap(),
        token: params["auth"]["token"].as_str().unwrap_or(""),
        nonce: device["nonce"].as_str().unwrap(),
        platform: params["client"]["platform"].as_str().unwrap(),
        device_family: params["client"]["deviceFamily"].as_str().unwrap_or(""),
    }))
}

/// The device signature checked the way the gateway does.
fn check_signature(params: &Value, nonce: &str, ts: u64) -> Option<bool> {
    let device = params.get("device")?;
    let payload = signed_payload(params)?;
    Some(
        device["nonce"] == nonce
            && device["signedAt"] == ts
            && verify(
                device["publicKey"].as_str().unwrap(),
                &payload,
                device["signature"].as_str().unwrap(),
            ),
    )
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn rand_suffix() -> String {
    bridge_util::ids::random_hex(8)
}
