//! An incremental decoder of server-sent events (the WHATWG `text/event-stream`
//! format), fed with byte chunks as they arrive from the network.
//!
//! Chunks may split the stream anywhere: inside a line, between the `\r` and
//! `\n` of a line ending, or inside a multi-byte UTF-8 character. Lines are
//! therefore kept as bytes until complete and only then decoded. A line that
//! grows beyond the configured limit is an error rather than unbounded memory
//! growth: an upstream that never sends a line ending must not exhaust us.

/// The default limit of one line: far above any real chunk of a chat answer,
/// far below what would hurt the process.
pub const DEFAULT_MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// One dispatched event: its `event:` name, if any, and its `data:` lines
/// joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("server-sent event line longer than {limit} bytes without a line ending")]
    LineTooLong { limit: usize },
    #[error("server-sent event larger than {limit} bytes")]
    EventTooLarge { limit: usize },
    #[error("server-sent event line is not valid UTF-8: {line:?}")]
    InvalidUtf8 { line: String },
}

#[derive(Debug)]
pub struct SseDecoder {
    max_line_bytes: usize,
    /// Bytes of the current, not yet terminated line.
    pending: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting the next chunk
    /// belongs to the same line ending.
    after_cr: bool,
    event_name: Option<String>,
    data: String,
    has_data: bool,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE_BYTES)
    }
}

impl SseDecoder {
    pub fn new(max_line_bytes: usize) -> Self {
        Self {
            max_line_bytes,
            pending: Vec::new(),
            after_cr: false,
            event_name: None,
            data: String::new(),
            has_data: false,
        }
    }

    /// Decodes one more chunk and returns the events it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let ending = rest[end];
            let line_part = &rest[..end];
            if self.pending.len() + line_part.len() > self.max_line_bytes {
                return Err(SseError::LineTooLong {
                    limit: self.max_line_bytes,
                });
            }
            let event = if self.pending.is_empty() {
                self.process_line(line_part)?
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(line_part);
                self.process_line(&line)?
            };
            events.extend(event);
            rest = &rest[end + 1..];
            if ending == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        if self.pending.len() + rest.len() > self.max_line_bytes {
            return Err(SseError::LineTooLong {
                limit: self.max_line_bytes,
            });
        }
        self.pending.extend_from_slice(rest);
        Ok(events)
    }

    /// True when nothing has been received since the last dispatched event:
    /// an end of stream here loses nothing.
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty() && !self.has_data && self.event_name.is_none()
    }

    fn process_line(&mut self, line: &[u8]) -> Result<Option<SseEvent>, SseError> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::InvalidUtf8 {
            line: String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned(),
        })?;
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                // Many short `data:` lines without a blank line would grow
                // the event as surely as one endless line.
                if self.data.len() + value.len() + 1 > self.max_line_bytes {
                    return Err(SseError::EventTooLarge {
                        limit: self.max_line_bytes,
                    });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event_name = Some(value.to_owned()),
            // `id` and `retry` only matter to reconnecting clients; a chat
            // answer is never resumed.
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event_name = self.event_name.take();
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event: event_name,
            data: std::mem::take(&mut self.data),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = concat!(
        ": keep-alive comment\r\n",
        "data: {\"text\":\"héllo 🌍\"}\r\n",
        "\r\n",
        "event: message_start\n",
        "data: first line\n",
        "data: second line\n",
        "id: 7\n",
        "retry: 100\n",
        "\n",
        "data:no-space\r",
        "\r",
        "event: lonely\n",
        "\n",
        "data\n",
        "\n",
        "data:  two spaces ✓\n",
        "\n",
        "data: [DONE]\n",
        "\n",
    );

    fn expected() -> Vec<SseEvent> {
        let plain = |data: &str| SseEvent {
            event: None,
            data: data.to_owned(),
        };
        vec![
            plain("{\"text\":\"héllo 🌍\"}"),
            SseEvent {
                event: Some("message_start".into()),
                data: "first line\nsecond line".into(),
            },
            plain("no-space"),
            plain(""),
            plain(" two spaces ✓"),
            plain("[DONE]"),
        ]
    }

    fn decode_in_parts(parts: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        for part in parts {
            events.extend(decoder.push(part).unwrap());
        }
        assert!(decoder.is_idle(), "decoder holds leftovers");
        events
    }

    #[test]
    fn decodes_the_sample_in_one_chunk() {
        assert_eq!(decode_in_parts(&[SAMPLE.as_bytes()]), expected());
    }

    #[test]
    fn every_single_split_point_gives_the_same_events() {
        let bytes = SAMPLE.as_bytes();
        for split in 0..=bytes.len() {
            let (a, b) = bytes.split_at(split);
            assert_eq!(decode_in_parts(&[a, b]), expected(), "split at {split}");
        }
    }

    #[test]
    fn every_pair_of_split_points_gives_the_same_events() {
        let bytes = SAMPLE.as_bytes();
        for first in 0..=bytes.len() {
            for second in first..=bytes.len() {
                let parts = [&bytes[..first], &bytes[first..second], &bytes[second..]];
                assert_eq!(
                    decode_in_parts(&parts),
                    expected(),
                    "splits at {first} and {second}"
                );
            }
        }
    }

    #[test]
    fn byte_by_byte_gives_the_same_events() {
        let parts: Vec<&[u8]> = SAMPLE.as_bytes().chunks(1).collect();
        assert_eq!(decode_in_parts(&parts), expected());
    }

    #[test]
    fn an_unterminated_event_is_not_dispatched_and_the_decoder_is_not_idle() {
        let mut decoder = SseDecoder::default();
        assert!(decoder.push(b"data: partial\n").unwrap().is_empty());
        assert!(!decoder.is_idle());
        let mut decoder = SseDecoder::default();
        assert!(decoder.push(b"data: no line end").unwrap().is_empty());
        assert!(!decoder.is_idle());
    }

    #[test]
    fn a_line_beyond_the_limit_is_an_error_even_when_split() {
        let mut decoder = SseDecoder::new(16);
        assert!(decoder.push(b"data: 0123456").unwrap().is_empty());
        let err = decoder.push(b"789abcdef").unwrap_err();
        assert_eq!(err, SseError::LineTooLong { limit: 16 });
        assert!(err.to_string().contains("16 bytes"));

        let mut decoder = SseDecoder::new(16);
        let err = decoder.push(b"data: 0123456789abcdef\n").unwrap_err();
        assert_eq!(err, SseError::LineTooLong { limit: 16 });
    }

    #[test]
    fn a_line_at_the_limit_is_accepted() {
        let mut decoder = SseDecoder::new(16);
        let events = decoder.push(b"data: 0123456789\n\n").unwrap();
        assert_eq!(events[0].data, "0123456789");
    }

    #[test]
    fn an_event_of_many_lines_beyond_the_limit_is_an_error() {
        let mut decoder = SseDecoder::new(32);
        let err = decoder.push(&b"data: 0123456789\n".repeat(4)).unwrap_err();
        assert_eq!(err, SseError::EventTooLarge { limit: 32 });
    }

    #[test]
    fn invalid_utf8_is_an_error_naming_the_line() {
        let mut decoder = SseDecoder::default();
        let err = decoder.push(b"data: bad \xff byte\n").unwrap_err();
        assert!(matches!(err, SseError::InvalidUtf8 { .. }));
        assert!(err.to_string().contains("bad"), "{err}");
    }

    #[test]
    fn a_crlf_split_across_chunks_is_one_line_ending() {
        let mut decoder = SseDecoder::default();
        assert!(decoder.push(b"data: a\r").unwrap().is_empty());
        // Were the `\n` a second line ending, the event would dispatch here.
        assert!(decoder.push(b"\n").unwrap().is_empty());
        let events = decoder.push(b"\r\n").unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "a");
    }
}
