//! One HTTP/1.1 keep-alive connection and one request/answer exchange on
//! it, over hyper's connection API (no pool, no redirects, no
//! decompression: nothing the measurement would pay for).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST, HeaderName, HeaderValue};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Where requests go: a loopback address and the request target.
#[derive(Debug, Clone)]
pub struct Target {
    pub address: SocketAddr,
    /// `host:port`, for the `Host` header.
    pub authority: String,
    /// Path and query.
    pub path: String,
}

impl Target {
    /// Parses an `http://` URL and resolves it; refuses anything that is not
    /// on this machine, since the tool exists to load local servers only.
    pub async fn resolve(url: &str) -> Result<Target, String> {
        let uri: Uri = url
            .parse()
            .map_err(|err| format!("invalid URL {url:?}: {err}"))?;
        if uri.scheme_str() != Some("http") {
            return Err(format!("only http:// URLs are supported, not {url:?}"));
        }
        let authority = uri
            .authority()
            .ok_or_else(|| format!("the URL {url:?} has no host"))?;
        let port = authority.port_u16().unwrap_or(80);
        let mut addresses = tokio::net::lookup_host((authority.host(), port))
            .await
            .map_err(|err| format!("cannot resolve {}: {err}", authority.host()))?;
        let address = addresses
            .next()
            .ok_or_else(|| format!("{} resolves to no address", authority.host()))?;
        if !address.ip().is_loopback() {
            return Err(format!(
                "{url:?} resolves to {address}, which is not a loopback address: \
                 loadgen only loads servers on this machine"
            ));
        }
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        Ok(Target {
            address,
            authority: authority.as_str().to_owned(),
            path,
        })
    }
}

/// The request every exchange sends.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    pub target: Arc<Target>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    /// The answer is an SSE stream that must carry `end_marker`.
    pub stream: bool,
    /// What a whole stream carries at its end: `data: [DONE]` (OpenAI chat
    /// completions), `message_stop` (Anthropic), `response.completed`
    /// (Responses).
    pub end_marker: Bytes,
    /// Text every successful answer's body must contain.
    pub expect: Option<Bytes>,
}

impl RequestTemplate {
    fn request(&self) -> Result<Request<Full<Bytes>>, Failure> {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(self.target.path.as_str())
            .header(HOST, self.target.authority.as_str())
            .header(CONTENT_TYPE, "application/json");
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        builder
            .body(Full::new(self.body.clone()))
            .map_err(|err| Failure::Request(err.to_string()))
    }
}

/// Parses `Name: value` (curl's `-H` syntax).
pub fn parse_header(text: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("a header is `Name: value`, not {text:?}"))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|err| format!("invalid header name in {text:?}: {err}"))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|err| format!("invalid header value for {name}: {err}"))?;
    Ok((name, value))
}

/// Why an exchange failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The request could not be built (a bad header, say).
    Request(String),
    Connect(String),
    /// The connection broke while sending or receiving.
    Io(String),
    /// A status other than 2xx; the start of the body.
    Status(u16, String),
    /// A stream that ended without its end marker.
    NoDone,
    /// A 2xx answer without the expected text; the start of the body.
    UnexpectedBody(String),
    /// Still unanswered when the run's drain time ran out.
    Timeout,
    /// Never sent: the run's drain time ran out first (open loop, a target
    /// that could not keep up with the rate).
    Unsent,
}

impl Failure {
    /// The key failures are counted under in the report.
    pub fn kind(&self) -> String {
        match self {
            Failure::Request(_) => "request".to_owned(),
            Failure::Connect(_) => "connect".to_owned(),
            Failure::Io(_) => "io".to_owned(),
            Failure::Status(status, _) => format!("status_{status}"),
            Failure::NoDone => "no_done".to_owned(),
            Failure::UnexpectedBody(_) => "unexpected_body".to_owned(),
            Failure::Timeout => "timeout".to_owned(),
            Failure::Unsent => "unsent".to_owned(),
        }
    }

    /// One line for the report.
    pub fn describe(&self) -> String {
        match self {
            Failure::Request(text) => format!("cannot build the request: {text}"),
            Failure::Connect(text) => format!("cannot connect: {text}"),
            Failure::Io(text) => format!("connection error: {text}"),
            Failure::Status(status, body) => format!("status {status}: {body}"),
            Failure::NoDone => "the stream ended without its end marker".to_owned(),
            Failure::UnexpectedBody(body) => format!("the expected text is missing: {body}"),
            Failure::Timeout => "no answer before the end of the drain time".to_owned(),
            Failure::Unsent => "not sent before the end of the drain time".to_owned(),
        }
    }
}

/// When an exchange's bytes came.
#[derive(Debug, Clone, Copy)]
pub struct Exchange {
    /// Just before the request was written (connecting included).
    pub sent: Instant,
    /// The first byte of the answer's body, if it had one.
    pub first_byte: Option<Instant>,
    /// The end of the answer's body.
    pub done: Instant,
}

/// The most of a body kept for the checks; larger bodies are still read.
const MAX_KEPT_BODY: usize = 1 << 20;
/// How much of a body a failure report quotes.
const QUOTED_BODY: usize = 200;
/// The end of an OpenAI chat-completions stream: the default end marker.
pub const DONE_MARKER: &str = "data: [DONE]";

/// One keep-alive connection, opened on first use and again after it breaks.
pub struct Connection {
    address: SocketAddr,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Connection {
    pub fn new(target: &Target) -> Connection {
        Connection {
            address: target.address,
            sender: None,
        }
    }

    /// Drops the connection (after an abandoned exchange); the next
    /// exchange opens a new one.
    pub fn reset(&mut self) {
        self.sender = None;
    }

    /// Opens the connection now (outside any measured time).
    pub async fn open(&mut self) -> Result<(), Failure> {
        self.ready().await.map(|_| ())
    }

    async fn ready(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, Failure> {
        let usable = match &mut self.sender {
            Some(sender) if !sender.is_closed() => sender.ready().await.is_ok(),
            _ => false,
        };
        if !usable {
            self.sender = Some(connect(self.address).await?);
        }
        self.sender
            .as_mut()
            .ok_or_else(|| Failure::Connect("no connection".to_owned()))
    }

    /// Sends the template's request and reads the whole answer. A failed
    /// exchange drops the connection: whatever is left on it is unusable.
    pub async fn exchange(&mut self, template: &RequestTemplate) -> Result<Exchange, Failure> {
        let sent = Instant::now();
        let outcome = self.exchange_inner(template, sent).await;
        if outcome.is_err() {
            self.sender = None;
        }
        outcome
    }

    async fn exchange_inner(
        &mut self,
        template: &RequestTemplate,
        sent: Instant,
    ) -> Result<Exchange, Failure> {
        let request = template.request()?;
        let sender = self.ready().await?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|err| Failure::Io(err.to_string()))?;
        let status = response.status();
        let mut body = response.into_body();
        let mut first_byte = None;
        let mut kept = Vec::new();
        let mut tail = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|err| Failure::Io(err.to_string()))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if data.is_empty() {
                continue;
            }
            if first_byte.is_none() {
                first_byte = Some(Instant::now());
            }
            if kept.len() < MAX_KEPT_BODY {
                kept.extend_from_slice(&data);
            }
            remember_tail(&mut tail, &data);
        }
        let done = Instant::now();
        if !status.is_success() {
            return Err(Failure::Status(status.as_u16(), quote(&kept)));
        }
        // The marker may open a last record longer than the tail (a
        // `response.completed` carries the whole response): the kept body
        // is searched too.
        let marker = &template.end_marker;
        if template.stream && !contains(&tail, marker) && !contains(&kept, marker) {
            return Err(Failure::NoDone);
        }
        if let Some(expect) = &template.expect
            && !contains(&kept, expect)
        {
            return Err(Failure::UnexpectedBody(quote(&kept)));
        }
        Ok(Exchange {
            sent,
            first_byte,
            done,
        })
    }
}

async fn connect(address: SocketAddr) -> Result<SendRequest<Full<Bytes>>, Failure> {
    let stream = TcpStream::connect(address)
        .await
        .map_err(|err| Failure::Connect(format!("{address}: {err}")))?;
    stream
        .set_nodelay(true)
        .map_err(|err| Failure::Connect(format!("cannot set TCP_NODELAY: {err}")))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|err| Failure::Connect(format!("{address}: {err}")))?;
    // Ends when the connection closes; its errors reach the sender.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// Keeps the last bytes of a body, enough to find the closing marker even
/// when it is split across frames.
fn remember_tail(tail: &mut Vec<u8>, data: &[u8]) {
    const KEEP: usize = 64;
    tail.extend_from_slice(&data[data.len().saturating_sub(KEEP)..]);
    if tail.len() > KEEP {
        tail.drain(..tail.len() - KEEP);
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|window| window == needle)
}

fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(QUOTED_BODY)]);
    text.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_done_marker_is_found_when_split_across_frames() {
        let mut tail = Vec::new();
        remember_tail(&mut tail, &[b'x'; 500]);
        remember_tail(&mut tail, b"data: {}\n\ndata: [DO");
        assert!(!contains(&tail, DONE_MARKER.as_bytes()));
        remember_tail(&mut tail, b"NE]\n\n");
        assert!(contains(&tail, DONE_MARKER.as_bytes()));
        assert!(tail.len() <= 64);
    }

    #[test]
    fn headers_are_parsed_like_curl_does() {
        let (name, value) = parse_header("Authorization: Bearer abc").unwrap();
        assert_eq!(name, "authorization");
        assert_eq!(value, "Bearer abc");
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: x").is_err());
    }

    #[test]
    fn failures_are_counted_by_kind() {
        assert_eq!(Failure::Status(501, String::new()).kind(), "status_501");
        assert_eq!(Failure::NoDone.kind(), "no_done");
    }

    #[tokio::test]
    async fn only_loopback_targets_are_accepted() {
        let target = Target::resolve("http://127.0.0.1:9/v1/chat/completions?x=1")
            .await
            .unwrap();
        assert_eq!(target.authority, "127.0.0.1:9");
        assert_eq!(target.path, "/v1/chat/completions?x=1");
        let refused = Target::resolve("http://192.0.2.1/").await.unwrap_err();
        assert!(refused.contains("not a loopback address"), "{refused}");
        assert!(Target::resolve("https://127.0.0.1/").await.is_err());
    }
}
