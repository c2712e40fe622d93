//! A WebSocket client that speaks to the gateway as a provider would:
//! real frames over a real socket, JSON in and out.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long `recv` waits before a test fails instead of hanging.
pub const RECV_TIMEOUT: Duration = Duration::from_secs(5);

pub type ClientError = Box<dyn std::error::Error + Send + Sync>;

/// What came off the socket.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    Json(Value),
    /// The gateway closed the connection (code and reason, if given).
    Closed(Option<(u16, String)>),
}

/// One provider connection.
pub struct ProviderClient {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl std::fmt::Debug for ProviderClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderClient").finish_non_exhaustive()
    }
}

impl ProviderClient {
    /// Connects to `url` (e.g. `ws://127.0.0.1:PORT/`).
    pub async fn connect(url: &str) -> Result<Self, ClientError> {
        let (ws, _) = tokio_tungstenite::connect_async(url).await?;
        Ok(Self { ws })
    }

    /// Sends a JSON message.
    pub async fn send(&mut self, message: Value) -> Result<(), ClientError> {
        self.ws.send(Message::text(message.to_string())).await?;
        Ok(())
    }

    /// Sends raw text (malformed input tests).
    pub async fn send_text(&mut self, text: impl Into<String>) -> Result<(), ClientError> {
        self.ws.send(Message::text(text.into())).await?;
        Ok(())
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.ws.send(Message::binary(bytes)).await?;
        Ok(())
    }

    /// The next message or close, skipping pings; `Err` after `timeout`.
    pub async fn recv_within(&mut self, timeout: Duration) -> Result<Received, ClientError> {
        let next = async {
            loop {
                match self.ws.next().await {
                    None => return Ok(Received::Closed(None)),
                    Some(Err(err)) => {
                        return match err {
                            tokio_tungstenite::tungstenite::Error::ConnectionClosed
                            | tokio_tungstenite::tungstenite::Error::AlreadyClosed => {
                                Ok(Received::Closed(None))
                            }
                            other => Err(ClientError::from(other)),
                        };
                    }
                    Some(Ok(Message::Text(text))) => {
                        let value: Value = serde_json::from_str(text.as_str())?;
                        return Ok(Received::Json(value));
                    }
                    Some(Ok(Message::Close(frame))) => {
                        return Ok(Received::Closed(
                            frame.map(|f: CloseFrame| (u16::from(f.code), f.reason.to_string())),
                        ));
                    }
                    Some(Ok(_)) => continue,
                }
            }
        };
        match tokio::time::timeout(timeout, next).await {
            Ok(received) => received,
            Err(_) => Err(format!("nothing received within {timeout:?}").into()),
        }
    }

    /// The next JSON message; fails on close or timeout.
    pub async fn recv(&mut self) -> Result<Value, ClientError> {
        match self.recv_within(RECV_TIMEOUT).await? {
            Received::Json(value) => Ok(value),
            Received::Closed(frame) => Err(format!("connection closed: {frame:?}").into()),
        }
    }

    /// The next message, which must have `type` = `kind`.
    pub async fn expect(&mut self, kind: &str) -> Result<Value, ClientError> {
        let message = self.recv().await?;
        if message["type"] != kind {
            return Err(format!("expected a {kind} message, got {message}").into());
        }
        Ok(message)
    }

    /// [`expect`](Self::expect) with its own time limit: for a message that
    /// waits on something slow (a real agent's run).
    pub async fn expect_within(
        &mut self,
        kind: &str,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let message = match self.recv_within(timeout).await? {
            Received::Json(value) => value,
            Received::Closed(frame) => return Err(format!("connection closed: {frame:?}").into()),
        };
        if message["type"] != kind {
            return Err(format!("expected a {kind} message, got {message}").into());
        }
        Ok(message)
    }

    /// Reads until a message of type `kind` arrives, returning it and what
    /// was skipped (for messages whose relative order is not specified).
    pub async fn expect_skipping(
        &mut self,
        kind: &str,
    ) -> Result<(Value, Vec<Value>), ClientError> {
        let mut skipped = Vec::new();
        loop {
            let message = self.recv().await?;
            if message["type"] == kind {
                return Ok((message, skipped));
            }
            skipped.push(message);
        }
    }

    /// Waits for the gateway to close the connection, returning the close
    /// code; messages before the close are returned too.
    pub async fn expect_close(&mut self) -> Result<(Option<u16>, Vec<Value>), ClientError> {
        let mut before = Vec::new();
        loop {
            match self.recv_within(RECV_TIMEOUT).await? {
                Received::Json(value) => before.push(value),
                Received::Closed(frame) => return Ok((frame.map(|(code, _)| code), before)),
            }
        }
    }

    /// Asserts nothing arrives for `quiet` (a message would be returned).
    pub async fn expect_silence(&mut self, quiet: Duration) -> Result<(), ClientError> {
        match self.recv_within(quiet).await {
            Err(_) => Ok(()),
            Ok(received) => Err(format!("expected silence, got {received:?}").into()),
        }
    }

    /// `auth` with `token`, then the `sessions` answer.
    pub async fn authenticate(&mut self, token: &str) -> Result<Value, ClientError> {
        self.send(json!({"type": "auth", "token": token})).await?;
        self.expect("sessions").await
    }

    /// `hello` with `fields` merged over `{name, protocolVersion: 2}`, then
    /// the `hello.ack`.
    pub async fn hello(&mut self, name: &str, fields: Value) -> Result<Value, ClientError> {
        let mut hello = json!({"type": "hello", "name": name, "protocolVersion": 2});
        if let (Some(target), Value::Object(extra)) = (hello.as_object_mut(), fields) {
            target.extend(extra);
        }
        self.send(hello).await?;
        self.expect("hello.ack").await
    }

    /// Connects, authenticates with `token` and registers: the common
    /// start of a test.
    pub async fn register(
        url: &str,
        token: &str,
        name: &str,
        fields: Value,
    ) -> Result<(Self, Value), ClientError> {
        let mut client = Self::connect(url).await?;
        client.authenticate(token).await?;
        let ack = client.hello(name, fields).await?;
        Ok((client, ack))
    }

    /// Closes the socket politely.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }

    /// Drops the TCP connection without a close handshake (a crash).
    pub fn abort(self) {
        drop(self);
    }
}
