//! The Copilot CLI's wire framing: JSON-RPC 2.0 messages, each preceded by
//! LSP-style headers (`Content-Length: N\r\n\r\n`), over the child's stdio.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest message body accepted from the CLI. Session events carry tool
/// output and file contents, so this is generous, but a corrupt or hostile
/// length must not make us allocate without bound.
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// Longest header line; real headers are a few dozen bytes.
const MAX_HEADER_LINE: usize = 1024;

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("the stream ended")]
    Eof,
    #[error("reading failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("not the Copilot SDK protocol (expected a Content-Length header, got {0:?})")]
    Garbage(String),
    #[error("message of {0} bytes is larger than the {MAX_BODY_BYTES}-byte limit")]
    TooLarge(usize),
    #[error("message body is not JSON: {0}")]
    BadJson(String),
}

/// Reads one framed message. Headers other than `Content-Length` (such as
/// `Content-Type`) are accepted and ignored, as LSP peers do.
pub async fn read_message<R: AsyncBufRead + Unpin>(reader: &mut R) -> Result<Value, FrameError> {
    let mut length: Option<usize> = None;
    let mut saw_any = false;
    loop {
        let mut line = Vec::new();
        let read = (&mut *reader)
            .take(MAX_HEADER_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return Err(if saw_any {
                FrameError::Garbage("a header cut off by the end of the stream".to_owned())
            } else {
                FrameError::Eof
            });
        }
        saw_any = true;
        if line.len() > MAX_HEADER_LINE || !line.ends_with(b"\n") {
            return Err(FrameError::Garbage(excerpt(&line)));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(FrameError::Garbage(excerpt(&line)));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let parsed = value
                .trim()
                .parse::<usize>()
                .map_err(|_| FrameError::Garbage(excerpt(&line)))?;
            length = Some(parsed);
        } else if !is_header_name(name) {
            return Err(FrameError::Garbage(excerpt(&line)));
        }
    }
    let length =
        length.ok_or_else(|| FrameError::Garbage("headers without Content-Length".to_owned()))?;
    if length > MAX_BODY_BYTES {
        return Err(FrameError::TooLarge(length));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.map_err(|err| {
        if err.kind() == std::io::ErrorKind::UnexpectedEof {
            FrameError::Garbage(format!(
                "a {length}-byte message cut off by the end of the stream"
            ))
        } else {
            FrameError::Io(err)
        }
    })?;
    serde_json::from_slice(&body)
        .map_err(|err| FrameError::BadJson(format!("{err}: {}", excerpt(&body))))
}

/// Writes one framed message and flushes it.
pub async fn write_message<W: AsyncWrite + Unpin>(
    writer: &mut W,
    message: &Value,
) -> std::io::Result<()> {
    let body = serde_json::to_vec(message)?;
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(&body);
    writer.write_all(&frame).await?;
    writer.flush().await
}

fn is_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The start of unexpected bytes, for an error message a person can act on.
fn excerpt(bytes: &[u8]) -> String {
    const SHOWN_BYTES: usize = 120;
    // Redacted before it is cut: keep what the redactor needs past the cut.
    let window = bytes
        .len()
        .min(SHOWN_BYTES + bridge_policy::redact::CUT_CONTEXT_BYTES);
    let text = String::from_utf8_lossy(&bytes[..window]);
    bridge_policy::redact::redact_and_cut(text.trim_end(), SHOWN_BYTES).noted()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    async fn read(bytes: &[u8]) -> Result<Value, FrameError> {
        let mut reader = tokio::io::BufReader::new(bytes);
        read_message(&mut reader).await
    }

    #[tokio::test]
    async fn a_written_message_reads_back() {
        let mut buffer = Vec::new();
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"é": "ü"}});
        write_message(&mut buffer, &message).await.unwrap();
        assert!(buffer.starts_with(b"Content-Length: "));
        assert_eq!(read(&buffer).await.unwrap(), message);
    }

    #[tokio::test]
    async fn extra_headers_are_ignored_and_case_does_not_matter() {
        let frame = b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}";
        assert_eq!(read(frame).await.unwrap(), json!({}));
    }

    #[tokio::test]
    async fn plain_text_is_garbage_not_a_hang() {
        let err = read(b"Welcome to Copilot!\n").await.unwrap_err();
        assert!(
            matches!(err, FrameError::Garbage(ref text) if text.contains("Welcome")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn the_end_of_the_stream_is_eof_only_between_messages() {
        assert!(matches!(read(b"").await.unwrap_err(), FrameError::Eof));
        assert!(matches!(
            read(b"Content-Length: 10\r\n\r\n{}").await.unwrap_err(),
            FrameError::Garbage(_)
        ));
    }

    #[tokio::test]
    async fn oversized_and_non_json_bodies_are_refused() {
        let huge = format!("Content-Length: {}\r\n\r\n", MAX_BODY_BYTES + 1);
        assert!(matches!(
            read(huge.as_bytes()).await.unwrap_err(),
            FrameError::TooLarge(_)
        ));
        assert!(matches!(
            read(b"Content-Length: 3\r\n\r\nabc").await.unwrap_err(),
            FrameError::BadJson(_)
        ));
    }
}
