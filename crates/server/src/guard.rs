//! Who may talk to the daemon: a loopback `Host` everywhere (a web page that
//! rebinds its DNS name to 127.0.0.1 still sends its own name), loopback
//! `Origin` on `/rpc` and `/healthz` (browser tabs are providers, so `/`
//! accepts any origin and relies on its own auth), and the bearer token on
//! `/rpc`.
//!
//! A daemon bound beyond loopback (which needs an explicit token) also
//! accepts IP-literal hosts, which no DNS answer can rebind, and the names
//! of `allowed_hosts`; every other name is still refused.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A refusal in the one JSON shape of the daemon's HTTP errors.
pub(crate) fn refusal(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"code": code, "message": message.into()}});
    (status, axum::Json(body)).into_response()
}

/// Which `Host` names a daemon accepts besides loopback ones.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostPolicy {
    /// Bound beyond loopback: IP literals are accepted.
    pub(crate) ip_literals: bool,
    /// Lowercased names from `allowed_hosts`.
    pub(crate) names: Arc<[String]>,
}

impl HostPolicy {
    fn accepts(&self, host: &str) -> bool {
        if is_loopback_host(host) {
            return true;
        }
        let Some(name) = host_name(host) else {
            return false;
        };
        if self.ip_literals && name.parse::<std::net::IpAddr>().is_ok() {
            return true;
        }
        let bracketed = host.trim().starts_with('[');
        !bracketed && self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// The name of `host` without its port (`[::1]:9400` → `::1`); `None` when
/// it is malformed.
fn host_name(host: &str) -> Option<&str> {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((inside, after)) if after.is_empty() || valid_port_suffix(after) => Some(inside),
            _ => None,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if valid_port_suffix(&format!(":{port}")) => Some(name),
        Some(_) => None,
        None => Some(host),
    }
}

pub(crate) async fn require_allowed_host(
    State(policy): State<HostPolicy>,
    request: Request,
    next: Next,
) -> Response {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let (first, second) = (hosts.next(), hosts.next());
    if second.is_some() {
        // Which one a proxy or the router would believe is anyone's guess.
        return refusal(
            StatusCode::BAD_REQUEST,
            "forbidden_host",
            "more than one Host header",
        );
    }
    let header_host = first.map(|v| v.to_str().unwrap_or_default());
    // An absolute-form target (`GET http://name/ HTTP/1.1`) names the host
    // too, and HTTP says it wins over the header: both must be loopback.
    let target_host = request.uri().authority().map(|a| a.as_str());
    let named = header_host.or(target_host);
    let all_accepted = [header_host, target_host]
        .into_iter()
        .flatten()
        .all(|host| policy.accepts(host));
    match named {
        Some(_) if all_accepted => next.run(request).await,
        Some(_) => refusal(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            if policy.ip_literals {
                "the Host header must be a loopback name, an IP address or a name listed in \
                 allowed_hosts (COPILOT_BRIDGE_ALLOWED_HOSTS); the daemon refuses other names \
                 to defeat DNS rebinding"
            } else {
                "the Host header must be a loopback name (localhost, 127.0.0.1 or [::1]) or a \
                 name listed in allowed_hosts; the daemon refuses other names to defeat DNS \
                 rebinding"
            },
        ),
        None => refusal(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            "a Host header is required (localhost, 127.0.0.1 or [::1])",
        ),
    }
}

pub(crate) async fn require_loopback_origin(request: Request, next: Next) -> Response {
    // Not a browser (curl, the CLI, scripts) when there is none: the token
    // is the check. More than one must all be loopback.
    let origins = request.headers().get_all(header::ORIGIN);
    if origins
        .iter()
        .all(|origin| origin.to_str().is_ok_and(is_loopback_origin))
    {
        return next.run(request).await;
    }
    refusal(
        StatusCode::FORBIDDEN,
        "forbidden_origin",
        "requests from web pages are refused here unless their Origin is loopback \
         (http://localhost, http://127.0.0.1 or http://[::1])",
    )
}

/// Every route the daemon serves, for the 404 text and the start banner.
pub(crate) const ROUTES: &str = "/ (provider WebSocket), /rpc (JSON-RPC), /healthz, \
    /v1/chat/completions, /v1/responses, /v1/messages, /v1/messages/count_tokens, /v1/models \
    (OpenAI and Anthropic facade), /mcp/code, /mcp/memory, /mcp/session (MCP)";

pub(crate) async fn not_found(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    tracing::info!(
        "{method} {} 404: no such route",
        bridge_protocol::excerpt(uri.path())
    );
    refusal(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no such route; the daemon serves {ROUTES}"),
    )
}

/// `localhost`, `127.0.0.1` or `[::1]`, with or without a port.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    // A bare `::1` has no brackets, so its last `:` is not a port.
    if host.trim().starts_with(':') {
        return false;
    }
    host_name(host).is_some_and(|name| {
        name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "::1"
    })
}

fn valid_port_suffix(suffix: &str) -> bool {
    suffix.strip_prefix(':').is_some_and(|port| {
        !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
    })
}

/// `http(s)://` + a loopback host. `null` (sandboxed frames, files) is not
/// loopback.
pub(crate) fn is_loopback_origin(origin: &str) -> bool {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    rest.is_some_and(|authority| !authority.contains('/') && is_loopback_host(authority))
}

/// The bearer token of a request: `Authorization: Bearer <token>`, or for
/// WebSocket upgrades (browsers cannot set headers there) `?token=`.
pub(crate) fn presented_token<'a>(
    headers: &'a HeaderMap,
    query_token: Option<&'a str>,
) -> Option<&'a str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then_some(token.trim())
        })
        .or(query_token)
}

pub(crate) fn unauthorized() -> Response {
    let mut response = refusal(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "missing or wrong bearer token: send `Authorization: Bearer <token>` with the `token` \
         of gateway.json in the state directory",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_with_and_without_ports() {
        for host in [
            "localhost",
            "LOCALHOST:9400",
            "127.0.0.1",
            "127.0.0.1:1",
            "[::1]",
            "[::1]:9400",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:9400",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "127.0.0.2",
            "0.0.0.0:9400",
            "[::1]x",
            "localhost:",
            "localhost:abc",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn beyond_loopback_ip_literals_and_listed_names_pass_other_names_do_not() {
        let policy = HostPolicy {
            ip_literals: true,
            names: Arc::from(vec!["bridge.lan".to_owned()]),
        };
        for host in [
            "127.0.0.1:9400",
            "192.168.1.20:9400",
            "10.0.0.1",
            "[fe80::1]:9400",
            "BRIDGE.lan:9400",
            "localhost",
        ] {
            assert!(policy.accepts(host), "{host}");
        }
        for host in [
            "evil.example",
            "bridge.lan.evil.example",
            "192.168.1.20.nip.io",
            "[bridge.lan]",
            "192.168.1.20:x",
            "",
        ] {
            assert!(!policy.accepts(host), "{host}");
        }
        let loopback_only = HostPolicy::default();
        assert!(!loopback_only.accepts("192.168.1.20:9400"));
        assert!(loopback_only.accepts("[::1]:9400"));
    }

    #[test]
    fn loopback_origins() {
        assert!(is_loopback_origin("http://localhost:3000"));
        assert!(is_loopback_origin("https://127.0.0.1"));
        assert!(is_loopback_origin("http://[::1]:8080"));
        assert!(!is_loopback_origin("null"));
        assert!(!is_loopback_origin("http://evil.example"));
        assert!(!is_loopback_origin("http://localhost.evil.example"));
        assert!(!is_loopback_origin("file://"));
    }

    #[test]
    fn bearer_token_from_header_or_query() {
        let mut headers = HeaderMap::new();
        assert_eq!(presented_token(&headers, Some("q")), Some("q"));
        headers.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(presented_token(&headers, Some("q")), Some("abc"));
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(presented_token(&headers, None), None);
    }
}
