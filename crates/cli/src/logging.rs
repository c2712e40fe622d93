//! Logging to stderr, every line passed through the secret redactor.

use std::io::{self, IsTerminal, Write};

use bridge_config::LogLevel;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Installs the global subscriber. `RUST_LOG` refines the configured level.
pub fn init(level: LogLevel) {
    // The MCP SDK reports every request at info: that is debug detail for us.
    let directives = match level {
        LogLevel::Info => format!("{},rmcp=warn", level.as_filter()),
        other => other.as_filter().to_owned(),
    };
    let filter = EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new(directives));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(RedactingStderr)
        .with_ansi(io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}

/// Makes writers that redact what they are given before it reaches stderr.
#[derive(Debug, Clone, Copy)]
struct RedactingStderr;

impl<'a> MakeWriter<'a> for RedactingStderr {
    type Writer = RedactingWriter;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter { buffer: Vec::new() }
    }
}

/// Buffers one event and writes it redacted when dropped, so a secret split
/// across several `write` calls is still seen whole.
struct RedactingWriter {
    buffer: Vec<u8>,
}

impl Write for RedactingWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactingWriter {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.buffer);
        let _ = io::stderr()
            .lock()
            .write_all(bridge_policy::redact(&text).as_bytes());
    }
}
