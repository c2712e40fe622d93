//! The command line, and the request template made from it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use serde_json::Value;

use crate::client::{RequestTemplate, Target, parse_header};
use crate::run::Phase;

/// Loads a local HTTP server with one JSON POST and prints one JSON line of
/// results (latency percentiles in µs, throughput, errors by kind).
#[derive(Debug, Parser)]
#[command(name = "loadgen", version)]
pub struct Options {
    /// http:// URL on this machine (loopback only).
    #[arg(long)]
    pub url: String,
    /// A request header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// The JSON object to POST.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// A file holding the JSON object to POST.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// Ask for a stream (`"stream": true` is set in the body) and read each
    /// answer as SSE up to its end marker; otherwise `"stream": false`.
    #[arg(long)]
    pub stream: bool,
    /// What every whole stream carries at its end (`message_stop` for
    /// Anthropic's messages, `response.completed` for OpenAI's responses).
    #[arg(long, default_value = crate::client::DONE_MARKER)]
    pub end_marker: String,
    /// Open loop: requests per second, latency from each request's due time.
    #[arg(
        long,
        conflicts_with = "concurrency",
        required_unless_present = "concurrency"
    )]
    pub rate: Option<f64>,
    /// Closed loop: this many workers send back to back (saturation).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Measured seconds.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of the same load before the measured run (not reported,
    /// except for its error count).
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// Seconds answers may still take after the sending ends.
    #[arg(long, default_value_t = 5.0)]
    pub drain: f64,
    /// Open loop: keep-alive connections (each carries one request at a time).
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Runtime worker threads (default: the CPUs this process may use).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Text every successful answer must contain (else `unexpected_body`).
    #[arg(long)]
    pub expect: Option<String>,
    /// A name copied into the report.
    #[arg(long, default_value = "")]
    pub label: String,
}

/// What to run, as the options say.
#[derive(Debug, Clone, Copy)]
pub enum Load {
    Open { rate: f64 },
    Closed { concurrency: usize },
}

impl Options {
    pub fn load(&self) -> Result<Load, String> {
        match (self.rate, self.concurrency) {
            (Some(rate), None) => Ok(Load::Open { rate }),
            (None, Some(0)) => Err("--concurrency must be at least 1".to_owned()),
            (None, Some(concurrency)) => Ok(Load::Closed { concurrency }),
            _ => Err("give either --rate (open loop) or --concurrency (closed loop)".to_owned()),
        }
    }

    /// How many connections the load needs.
    pub fn connection_count(&self) -> Result<usize, String> {
        match self.load()? {
            Load::Open { .. } if self.connections == 0 => {
                Err("--connections must be at least 1".to_owned())
            }
            Load::Open { .. } => Ok(self.connections),
            Load::Closed { concurrency } => Ok(concurrency),
        }
    }

    pub fn measured(&self) -> Result<Phase, String> {
        Ok(Phase {
            duration: seconds("--duration", self.duration)?,
            drain: seconds("--drain", self.drain)?,
        })
    }

    pub fn warmup_phase(&self) -> Result<Option<Phase>, String> {
        let duration = seconds("--warmup", self.warmup)?;
        Ok((!duration.is_zero()).then_some(Phase {
            duration,
            drain: seconds("--drain", self.drain)?,
        }))
    }

    pub async fn template(&self) -> Result<RequestTemplate, String> {
        let target = Target::resolve(&self.url).await?;
        let headers = self
            .headers
            .iter()
            .map(|header| parse_header(header))
            .collect::<Result<Vec<_>, _>>()?;
        let text = match (&self.body, &self.body_file) {
            (Some(body), _) => body.clone(),
            (None, Some(path)) => std::fs::read_to_string(path)
                .map_err(|err| format!("cannot read {}: {err}", path.display()))?,
            (None, None) => return Err("give the request body: --body or --body-file".to_owned()),
        };
        Ok(RequestTemplate {
            target: Arc::new(target),
            headers,
            body: body_with_stream(&text, self.stream)?,
            stream: self.stream,
            end_marker: Bytes::from(self.end_marker.clone()),
            expect: self.expect.clone().map(Bytes::from),
        })
    }
}

fn seconds(flag: &str, value: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value)
        .map_err(|err| format!("{flag} must be a number of seconds >= 0, not {value}: {err}"))
}

/// The body with `"stream"` set as asked, so the body and the way its
/// answers are read cannot disagree.
pub fn body_with_stream(text: &str, stream: bool) -> Result<Bytes, String> {
    let mut body: Value =
        serde_json::from_str(text).map_err(|err| format!("the body is not JSON: {err}"))?;
    let object = body
        .as_object_mut()
        .ok_or("the body must be a JSON object")?;
    object.insert("stream".to_owned(), Value::Bool(stream));
    let bytes =
        serde_json::to_vec(&body).map_err(|err| format!("cannot encode the body: {err}"))?;
    Ok(Bytes::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_flag_is_written_into_the_body() {
        let body = body_with_stream(r#"{"model":"m","stream":false}"#, true).unwrap();
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["stream"], true);
        assert_eq!(value["model"], "m");
        assert!(body_with_stream("[1]", false).is_err());
        assert!(body_with_stream("{", false).is_err());
    }

    #[test]
    fn one_of_rate_and_concurrency_chooses_the_loop() {
        let open =
            Options::try_parse_from(["loadgen", "--url", "http://127.0.0.1:1/", "--rate", "500"])
                .unwrap();
        assert!(matches!(open.load(), Ok(Load::Open { rate }) if rate == 500.0));
        assert_eq!(open.connection_count(), Ok(64));
        let closed = Options::try_parse_from([
            "loadgen",
            "--url",
            "http://127.0.0.1:1/",
            "--concurrency",
            "8",
        ])
        .unwrap();
        assert_eq!(closed.connection_count(), Ok(8));
        assert!(
            Options::try_parse_from([
                "loadgen",
                "--url",
                "http://127.0.0.1:1/",
                "--rate",
                "1",
                "--concurrency",
                "2"
            ])
            .is_err()
        );
        assert!(Options::try_parse_from(["loadgen", "--url", "http://127.0.0.1:1/"]).is_err());
    }
}
