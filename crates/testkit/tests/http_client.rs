//! A minimal HTTP/1.1 client over a raw TcpStream: the mock must be
//! checked byte for byte, including responses a real client would reject
//! (connections dropped mid-body).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// False when the connection ended before the body did.
    pub complete: bool,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|err| panic!("body is not JSON ({err}): {}", self.body))
    }

    /// The JSON payloads of `data:` lines, without the final `[DONE]`.
    pub fn sse_data(&self) -> Vec<Value> {
        self.body
            .split("\n\n")
            .filter_map(|event| event.strip_prefix("data: "))
            .filter(|data| *data != "[DONE]")
            .map(|data| {
                serde_json::from_str(data)
                    .unwrap_or_else(|err| panic!("bad SSE data {data}: {err}"))
            })
            .collect()
    }

    /// `(event name, data)` pairs of an Anthropic-style stream.
    pub fn sse_events(&self) -> Vec<(String, Value)> {
        self.body
            .split("\n\n")
            .filter(|event| !event.is_empty())
            .map(|event| {
                let (name_line, data_line) = event
                    .split_once('\n')
                    .unwrap_or_else(|| panic!("event without data: {event:?}"));
                let name = name_line.strip_prefix("event: ").expect("event: line");
                let data = data_line.strip_prefix("data: ").expect("data: line");
                (
                    name.to_owned(),
                    serde_json::from_str(data).expect("event data is JSON"),
                )
            })
            .collect()
    }
}

pub async fn get(address: SocketAddr, path: &str) -> HttpResponse {
    send(address, "GET", path, &[], None).await
}

pub async fn post_json(address: SocketAddr, path: &str, body: &Value) -> HttpResponse {
    send(
        address,
        "POST",
        path,
        &[("content-type", "application/json")],
        Some(body.to_string().as_bytes()),
    )
    .await
}

pub async fn send(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> HttpResponse {
    let mut stream = TcpStream::connect(address).await.expect("connect to mock");
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = body.unwrap_or_default();
    request.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    stream
        .write_all(request.as_bytes())
        .await
        .expect("write request");
    stream.write_all(body).await.expect("write body");
    let mut raw = Vec::new();
    // A dropped connection may end in a reset: what arrived is what counts.
    let mut buffer = [0_u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => raw.extend_from_slice(&buffer[..read]),
        }
    }
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> HttpResponse {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let rest = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(": "))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    let (body, complete) = if chunked {
        decode_chunked(rest)
    } else {
        let expected = headers
            .iter()
            .find(|(name, _)| name == "content-length")
            .and_then(|(_, value)| value.parse::<usize>().ok());
        (
            rest.to_vec(),
            expected.is_none_or(|length| length == rest.len()),
        )
    };
    HttpResponse {
        status,
        headers,
        body: String::from_utf8(body).expect("UTF-8 body"),
        complete,
    }
}

fn decode_chunked(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = rest.windows(2).position(|window| window == b"\r\n") else {
            return (body, false);
        };
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size = usize::from_str_radix(size_text.trim(), 16).expect("chunk size");
        rest = &rest[line_end + 2..];
        if size == 0 {
            return (body, true);
        }
        if rest.len() < size + 2 {
            body.extend_from_slice(&rest[..size.min(rest.len())]);
            return (body, false);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// Time until the first bytes of the response arrive, and until the
/// connection closes: tells a stream apart from a buffered body.
pub async fn timed_post(address: SocketAddr, path: &str, body: &Value) -> (Duration, Duration) {
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).await.expect("connect to mock");
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("write request");
    let mut buffer = [0_u8; 8192];
    let mut first = None;
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                first.get_or_insert(started.elapsed());
            }
        }
    }
    (first.expect("some bytes"), started.elapsed())
}
