//! The dashboard at `/ui` (docs/dashboard.md): a page shell and its
//! embedded assets, a one-time login turned into a session cookie, and the
//! data the page reads: the daemon's own `/rpc` methods a person may call
//! (as the approver) and a live stream of the approval queue.
//!
//! As safe as the daemon: `/ui` answers loopback peers only (even when the
//! daemon is bound beyond loopback); a request that says where it comes
//! from must come from exactly the daemon's own origin (scheme, host and
//! port: cookies ignore ports, so a page on another local port would
//! otherwise ride the cookie); every data route needs the session cookie,
//! every state change the session's CSRF token too; the page cannot be
//! framed and loads nothing from elsewhere (CSP).

pub mod assets;
pub mod auth;
mod stream;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::http::PeerAddr;
use crate::rpc::{Caller, Client, RpcState};

pub use auth::UiAuth;

/// The pages, each served the same shell (the page script renders by path).
pub const PAGES: &[&str] = &[
    "/ui",
    "/ui/",
    "/ui/overview",
    "/ui/approvals",
    "/ui/sessions",
    "/ui/sessions/{id}",
    "/ui/activity",
    "/ui/orchestrations",
    "/ui/orchestrations/{id}",
    "/ui/configuration",
];

/// The `/rpc` methods the dashboard may call, as the person it is.
const METHODS: &[&str] = &[
    "bridge.status",
    "bridge.config",
    "approvals.list",
    "approvals.answer",
    "approvals.rules",
    "approvals.revoke",
    "session.list",
    "session.transcripts",
    "session.events",
    "orchestrate.list",
    "orchestrate.watch",
    "orchestrate.cancel",
    "activity.audit",
    "activity.requests",
];

/// The largest `/ui/api/rpc` body.
const MAX_RPC_BYTES: usize = 64 * 1024;

const CSP: &str = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
                   form-action 'self'; object-src 'none'";

/// `/ui` and everything under it.
pub fn routes(state: RpcState) -> Router {
    let mut router = Router::new();
    for page in PAGES {
        router = router.route(page, get(shell));
    }
    router
        .route("/ui/assets/{name}", get(asset))
        .route("/ui/login", get(login))
        .route("/ui/logout", post(logout))
        .route("/ui/api/session", get(session))
        .route("/ui/api/rpc", post(rpc))
        .route("/ui/api/stream", get(stream::follow))
        .with_state(state)
        .layer(middleware::from_fn(guard))
}

/// Every `/ui` request: a loopback peer, the daemon's own origin when one
/// is said, and the headers that keep the page to itself.
async fn guard(request: Request, next: Next) -> Response {
    let loopback = request
        .extensions()
        .get::<PeerAddr>()
        .is_some_and(|peer| peer.0.ip().is_loopback());
    if !loopback {
        return refusal(
            StatusCode::FORBIDDEN,
            "the dashboard answers this machine only",
        );
    }
    if let Err(why) = same_origin(request.headers()) {
        return refusal(StatusCode::FORBIDDEN, &why);
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        // The login code must not leave in a Referer.
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// `Ok` unless the request says it comes from a page of another origin:
/// its `Origin` must be `http://` + its own `Host` (which the host check
/// already limits to this daemon's names), and a browser's
/// `Sec-Fetch-Site` must not be another site or origin.
fn same_origin(headers: &HeaderMap) -> Result<(), String> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = text(header::HOST).unwrap_or_default();
        let own = format!("http://{host}");
        if origin.to_str().ok() != Some(own.as_str()) {
            return Err(format!(
                "a request from {} is refused: only the dashboard's own page ({own}) may use it",
                bridge_policy::redact::printable(&String::from_utf8_lossy(origin.as_bytes()), 100)
            ));
        }
    }
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return Err(format!("a {site} request is refused"));
    }
    Ok(())
}

fn refusal(status: StatusCode, why: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json!({"error": why}).to_string(),
    )
        .into_response()
}

fn unauthorized() -> Response {
    refusal(
        StatusCode::UNAUTHORIZED,
        "not logged in: run `copilot-bridge ui` to open the dashboard",
    )
}

/// The session the request's cookie names.
fn logged_in(state: &RpcState, headers: &HeaderMap) -> Option<auth::UiSession> {
    let auth = &state.ctx().ui;
    let wanted = auth.cookie_name();
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == wanted)
        .and_then(|(_, value)| auth.session(value))
}

/// Why a state change is refused.
enum Refused {
    NotLoggedIn,
    NoCsrfToken,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        match self {
            Self::NotLoggedIn => unauthorized(),
            Self::NoCsrfToken => refusal(
                StatusCode::FORBIDDEN,
                "a change needs the page's CSRF token",
            ),
        }
    }
}

/// The session, and for a state change its CSRF token checked.
fn changing(state: &RpcState, headers: &HeaderMap) -> Result<auth::UiSession, Refused> {
    let session = logged_in(state, headers).ok_or(Refused::NotLoggedIn)?;
    let said = headers
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !bridge_util::ids::constant_time_eq(said, &session.csrf) {
        return Err(Refused::NoCsrfToken);
    }
    Ok(session)
}

async fn shell() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        assets::assets().shell.clone(),
    )
        .into_response()
}

async fn asset(Path(name): Path<String>) -> Response {
    match assets::asset(&name) {
        Some(asset) => (
            [
                (header::CONTENT_TYPE, asset.content_type),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            asset.body.clone(),
        )
            .into_response(),
        None => refusal(StatusCode::NOT_FOUND, "no such asset"),
    }
}

async fn login(
    State(state): State<RpcState>,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let auth = &state.ctx().ui;
    let Some(session) = query.get("code").and_then(|code| auth.redeem(code)) else {
        return (
            StatusCode::UNAUTHORIZED,
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            "This login link is used up or expired (a link works once, for 60 seconds).\n\
             Run `copilot-bridge ui` for a new one.\n",
        )
            .into_response();
    };
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/ui",
        auth.cookie_name(),
        session.cookie
    );
    Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(header::LOCATION, "/ui/overview")
        .header(header::SET_COOKIE, cookie)
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::empty())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn logout(State(state): State<RpcState>, headers: HeaderMap) -> Response {
    let session = match changing(&state, &headers) {
        Ok(session) => session,
        Err(refused) => return refused.into_response(),
    };
    let auth = &state.ctx().ui;
    auth.end(&session.cookie);
    let expired = format!(
        "{}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0",
        auth.cookie_name()
    );
    (StatusCode::NO_CONTENT, [(header::SET_COOKIE, expired)]).into_response()
}

/// What the page needs to act: its CSRF token.
async fn session(State(state): State<RpcState>, headers: HeaderMap) -> Response {
    match logged_in(&state, &headers) {
        Some(session) => (
            [(header::CACHE_CONTROL, "no-store")],
            axum::Json(json!({"csrf": session.csrf})),
        )
            .into_response(),
        None => unauthorized(),
    }
}

/// One JSON-RPC request to a method of [`METHODS`], answered as for the
/// approver (a person logged in to the dashboard), answers said to come
/// from the web.
async fn rpc(State(state): State<RpcState>, headers: HeaderMap, body: Body) -> Response {
    if let Err(refused) = changing(&state, &headers) {
        return refused.into_response();
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_RPC_BYTES).await else {
        return refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("a dashboard request is at most {MAX_RPC_BYTES} bytes"),
        );
    };
    let Ok(mut request) = serde_json::from_slice::<Value>(&bytes) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "the body is not a JSON-RPC request",
        );
    };
    let method = request["method"].as_str().unwrap_or_default().to_owned();
    if !METHODS.contains(&method.as_str()) {
        return refusal(
            StatusCode::FORBIDDEN,
            &format!(
                "the dashboard may call {}, not {method:?}",
                METHODS.join(", ")
            ),
        );
    }
    if method == "approvals.answer"
        && let Some(params) = request["params"].as_object_mut()
    {
        params.insert("surface".to_owned(), json!("web"));
    }
    let client = Client::new(Caller::Approver);
    match state.handle_text(&request.to_string(), &client).await {
        Some(answer) => (
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            answer,
        )
            .into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}
