//! Parsing of scalar values, each with the text a user sees when theirs is wrong.

use std::net::IpAddr;
use std::str::FromStr;

/// Log verbosity, with the names of the original `COPILOT_LOG_LEVEL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogLevel {
    None,
    Error,
    Warning,
    Info,
    Debug,
    All,
}

impl LogLevel {
    pub const ALLOWED: &'static str = "one of debug, info, warning, error, none, all";

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::All => "all",
        }
    }

    /// The equivalent `tracing` filter directive.
    pub fn as_filter(self) -> &'static str {
        match self {
            Self::None => "off",
            Self::Error => "error",
            Self::Warning => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::All => "trace",
        }
    }
}

impl FromStr for LogLevel {
    type Err = &'static str;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(Self::None),
            "error" => Ok(Self::Error),
            "warning" | "warn" => Ok(Self::Warning),
            "info" => Ok(Self::Info),
            "debug" => Ok(Self::Debug),
            "all" => Ok(Self::All),
            _ => Err(Self::ALLOWED),
        }
    }
}

pub(crate) fn parse_port(text: &str, allow_zero: bool) -> Result<u16, &'static str> {
    let expected = if allow_zero {
        "a port number from 0 to 65535 (0 picks a free port)"
    } else {
        "a port number from 1 to 65535"
    };
    match text.trim().parse::<i64>() {
        Ok(n) if (if allow_zero { 0 } else { 1 }..=65535).contains(&n) => {
            u16::try_from(n).map_err(|_| expected)
        }
        _ => Err(expected),
    }
}

pub(crate) fn parse_retries(text: &str) -> Result<u32, &'static str> {
    const EXPECTED: &str = "a whole number from 0 to 100";
    match text.trim().parse::<i64>() {
        Ok(n) if (0..=100).contains(&n) => u32::try_from(n).map_err(|_| EXPECTED),
        _ => Err(EXPECTED),
    }
}

pub(crate) fn parse_idle_secs(text: &str) -> Result<u64, &'static str> {
    const EXPECTED: &str = "a whole number of seconds from 0 to 86400";
    match text.trim().parse::<i64>() {
        Ok(n) if (0..=86_400).contains(&n) => u64::try_from(n).map_err(|_| EXPECTED),
        _ => Err(EXPECTED),
    }
}

/// A whole number above zero: a count or a number of milliseconds.
pub(crate) fn parse_positive(text: &str) -> Result<u64, &'static str> {
    match text.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("a positive whole number"),
    }
}

pub(crate) fn parse_bool(text: &str) -> Result<bool, &'static str> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err("true or false (also 1/0, yes/no, on/off)"),
    }
}

pub(crate) fn parse_ip(text: &str) -> Result<IpAddr, &'static str> {
    text.trim()
        .parse()
        .map_err(|_| "an IP address such as 127.0.0.1 or ::1")
}

pub(crate) fn parse_url(text: &str) -> Result<String, &'static str> {
    let trimmed = text.trim();
    let rest = trimmed
        .strip_prefix("https://")
        .or_else(|| trimmed.strip_prefix("http://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') && !trimmed.contains(' ') => {
            Ok(trimmed.trim_end_matches('/').to_owned())
        }
        _ => Err("an http:// or https:// URL"),
    }
}

/// A WebSocket URL (the OpenClaw gateway's): `ws://`, a host, no spaces;
/// a trailing `/` dropped. `wss://` is refused: the client has no TLS, and
/// a remote gateway is reached through a tunnel instead.
pub(crate) fn parse_ws_url(text: &str) -> Result<String, &'static str> {
    let trimmed = text.trim();
    if trimmed.starts_with("wss://") {
        return Err(
            "a ws:// URL: wss:// is not supported; reach a remote gateway through a tunnel (ssh -L 18789:127.0.0.1:18789 HOST) and use ws://127.0.0.1:18789",
        );
    }
    match trimmed.strip_prefix("ws://") {
        Some(host)
            if !host.is_empty()
                && !host.starts_with(['/', ':', '?', '#'])
                && !trimmed.chars().any(char::is_whitespace) =>
        {
            Ok(trimmed.trim_end_matches('/').to_owned())
        }
        _ => Err("a ws:// URL with a host, e.g. ws://127.0.0.1:18789"),
    }
}

pub(crate) fn parse_host(text: &str) -> Result<String, &'static str> {
    let trimmed = text.trim();
    let valid = !trimmed.is_empty()
        && trimmed.len() <= 253
        && trimmed
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    if valid {
        Ok(trimmed.to_owned())
    } else {
        Err("a host name or IP address")
    }
}

/// A bearer token a user chose: long enough not to be guessed, and only
/// characters a header carries as they are.
pub(crate) fn parse_token(text: &str) -> Result<String, &'static str> {
    let token = text.trim();
    let printable = token.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if (16..=512).contains(&token.len()) && printable {
        Ok(token.to_owned())
    } else {
        Err(
            "16 to 512 visible ASCII characters without spaces (e.g. the output of `openssl rand -hex 32`)",
        )
    }
}

/// Comma-separated host names, lowercased, without ports.
pub(crate) fn parse_host_names(text: &str) -> Result<Vec<String>, &'static str> {
    const EXPECTED: &str =
        "host names separated by commas, without ports or schemes (e.g. bridge.lan,devbox)";
    let mut names = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let valid = name.len() <= 253
            && !name.starts_with(['.', '-'])
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
        if !valid {
            return Err(EXPECTED);
        }
        names.push(name.to_ascii_lowercase());
    }
    Ok(names)
}

/// Ollama's own `OLLAMA_HOST` forms (`host`, `host:port`, a URL) as a base
/// URL. Never an error: the variable is Ollama's, not ours to reject.
pub(crate) fn ollama_base_url(text: &str) -> String {
    let host = text.trim().trim_end_matches('/');
    if host.contains("://") {
        host.to_owned()
    } else {
        format!("http://{host}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_reject_out_of_range_and_garbage() {
        assert_eq!(parse_port("9400", false), Ok(9400));
        assert!(parse_port("0", false).is_err());
        assert_eq!(parse_port("0", true), Ok(0));
        assert!(parse_port("65536", true).is_err());
        assert!(parse_port("-1", true).is_err());
        assert!(parse_port("80a", true).is_err());
    }

    #[test]
    fn retries_reject_negative() {
        assert_eq!(parse_retries("0"), Ok(0));
        assert!(parse_retries("-2").is_err());
        assert!(parse_retries("1000").is_err());
    }

    #[test]
    fn urls_need_a_scheme_and_host() {
        assert_eq!(
            parse_url("http://localhost:11434/"),
            Ok("http://localhost:11434".to_owned())
        );
        assert!(parse_url("localhost:11434").is_err());
        assert!(parse_url("https:///x").is_err());
    }

    #[test]
    fn gateway_urls_are_websocket_urls() {
        assert_eq!(
            parse_ws_url(" ws://claw.example:8080/ "),
            Ok("ws://claw.example:8080".to_owned())
        );
        assert!(
            parse_ws_url("wss://claw.example:8443")
                .is_err_and(|why| why.contains("wss:// is not supported"))
        );
        assert_eq!(
            parse_ws_url("ws://[::1]:18789"),
            Ok("ws://[::1]:18789".to_owned())
        );
        for bad in ["http://x", "ws://", "ws:///x", "ws://a b", "claw:18789"] {
            assert!(parse_ws_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn log_levels_accept_the_spec_names() {
        for name in ["debug", "info", "warning", "error", "none", "all", "WARN"] {
            assert!(name.parse::<LogLevel>().is_ok(), "{name}");
        }
        assert!("verbose".parse::<LogLevel>().is_err());
    }
}
