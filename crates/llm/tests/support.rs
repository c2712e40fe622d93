//! Shared helpers: backends pointed at a test upstream, and a raw HTTP/1.1
//! upstream on a loopback socket.

use std::time::Duration;

use bridge_llm::{
    ChatBackend, ChatEvent, ChatRequest, LlmError, Message, OpenAiBackend, OpenAiConfig, Role,
};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub const API_KEY: &str = "sk-test-123";

/// An OpenAI backend on `base_url` with short timeouts, an API key and one
/// extra header.
pub fn backend(base_url: &str, idle_timeout: Duration) -> OpenAiBackend {
    let mut config = OpenAiConfig::new("openai-test", base_url, "mock-model");
    config.api_key = Some(API_KEY.into());
    config.extra_headers = vec![("X-Team".into(), "bridge".into())];
    config.request_timeout = Duration::from_secs(5);
    config.idle_timeout = idle_timeout;
    OpenAiBackend::new(config).unwrap()
}

pub fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::text(Role::User, text)],
        ..ChatRequest::default()
    }
}

/// Every item of the answer, errors included.
pub async fn all_items(
    backend: &OpenAiBackend,
    request: ChatRequest,
) -> Vec<Result<ChatEvent, LlmError>> {
    let stream = backend.stream(&request).await.unwrap();
    stream.collect().await
}

/// The last item of the answer, which must be an error.
pub async fn final_error(backend: &OpenAiBackend, request: ChatRequest) -> LlmError {
    let mut items = all_items(backend, request).await;
    match items.pop() {
        Some(Err(err)) => err,
        other => panic!("expected the answer to end with an error, got {other:?} after {items:?}"),
    }
}

pub fn texts(items: &[Result<ChatEvent, LlmError>]) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(ChatEvent::TextDelta { text }) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// One connection served by hand: the response written in `parts` with a
/// pause after each, so each arrives as its own read on the client.
pub struct RawUpstream {
    pub base_url: String,
    /// Resolves to true when the client closed the connection within the
    /// watch time after the last part.
    pub client_closed: JoinHandle<bool>,
}

pub const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

pub async fn raw_upstream(parts: Vec<Vec<u8>>, watch: Duration) -> RawUpstream {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let client_closed = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        read_request(&mut socket).await;
        for part in parts {
            if socket.write_all(&part).await.is_err() {
                return true;
            }
            socket.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        let mut buffer = [0u8; 1024];
        matches!(
            tokio::time::timeout(watch, socket.read(&mut buffer)).await,
            Ok(Ok(0) | Err(_))
        )
    });
    RawUpstream {
        base_url: format!("http://{address}/v1"),
        client_closed,
    }
}

/// Reads the request head and its `content-length` body, so that closing the
/// socket later never resets it under unread data.
async fn read_request(socket: &mut TcpStream) {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    let head_end = loop {
        let read = socket.read(&mut buffer).await.unwrap();
        assert!(read > 0, "client closed before sending its request");
        received.extend_from_slice(&buffer[..read]);
        if let Some(at) = received.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&received[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map(|value| value.trim().parse().unwrap())
        .unwrap_or(0);
    while received.len() < head_end + length {
        let read = socket.read(&mut buffer).await.unwrap();
        assert!(read > 0, "client closed in the middle of its request");
        received.extend_from_slice(&buffer[..read]);
    }
}
