//! Who may talk to the daemon: loopback `Host` everywhere (a web page that
//! rebinds its DNS name to 127.0.0.1 still sends its own name), loopback
//! `Origin` on `/rpc` and `/healthz` (browser tabs are providers, so `/`
//! accepts any origin and relies on its own auth), and the bearer token on
//! `/rpc`.

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A refusal in the one JSON shape of the daemon's HTTP errors.
pub(crate) fn refusal(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"code": code, "message": message.into()}});
    (status, axum::Json(body)).into_response()
}

pub(crate) async fn require_loopback_host(request: Request, next: Next) -> Response {
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
    let all_loopback = [header_host, target_host]
        .into_iter()
        .flatten()
        .all(is_loopback_host);
    match named {
        Some(_) if all_loopback => next.run(request).await,
        Some(_) => refusal(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            "the Host header must be a loopback name (localhost, 127.0.0.1 or [::1]); \
             the daemon refuses other names to defeat DNS rebinding",
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

pub(crate) async fn not_found() -> Response {
    refusal(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such route; the daemon serves / (provider WebSocket), /rpc and /healthz",
    )
}

/// `localhost`, `127.0.0.1` or `[::1]`, with or without a port.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        // `[::1]` or `[::1]:9400`.
        match rest.split_once(']') {
            Some((inside, after)) if after.is_empty() || valid_port_suffix(after) => inside,
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if valid_port_suffix(&format!(":{port}")) => name,
            Some(_) => return false,
            None => host,
        }
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "::1"
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
