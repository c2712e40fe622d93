//! The OpenAI- and Anthropic-compatible facade: `POST /v1/chat/completions`,
//! `POST /v1/responses`, `GET /v1/models` and `POST /v1/messages`, over the
//! daemon's chat backends (`bridge_compose::Backends`).
//!
//! Every route needs the daemon's token, as `Authorization: Bearer` (what
//! OpenAI clients send as their API key) or `x-api-key` (what Anthropic
//! clients send). Errors are in each API's own shape ([`errors`]).

mod anthropic;
pub mod body;
pub mod errors;
mod models;
pub mod normalize;
mod openai;
pub mod request_log;
mod responses;
pub mod store;
pub mod timing;
mod upstream;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};

use crate::app::ServerContext;
use errors::{ErrorKind, FacadeError};

/// The facade's routes, behind its token check.
pub(crate) fn routes(ctx: ServerContext) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(openai::chat_completions))
        .route("/v1/responses", post(responses::create))
        .route("/v1/models", get(models::list))
        .route("/v1/messages", post(anthropic::messages))
        .route("/v1/messages/count_tokens", post(anthropic::count_tokens))
        .route_layer(middleware::from_fn_with_state(ctx.clone(), require_token))
        // Outside the token check: a refused key is logged too.
        .layer(middleware::from_fn_with_state(
            ctx.request_journal.clone(),
            request_log::log_requests,
        ))
        .with_state(ctx)
}

/// The presented key: `Authorization: Bearer …` or `x-api-key: …`.
fn presented_key(request: &Request) -> Option<&str> {
    crate::guard::presented_token(request.headers(), None).or_else(|| {
        request
            .headers()
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    })
}

async fn require_token(State(ctx): State<ServerContext>, request: Request, next: Next) -> Response {
    let valid = presented_key(&request)
        .is_some_and(|key| bridge_util::ids::constant_time_eq(key, &ctx.token));
    if valid {
        return next.run(request).await;
    }
    if let Some(note) = request.extensions().get::<request_log::RequestNote>() {
        note.reason("invalid_api_key: missing or wrong API key");
    }
    let error = FacadeError::new(
        axum::http::StatusCode::UNAUTHORIZED,
        ErrorKind::Authentication,
        "invalid_api_key",
        "missing or wrong API key: use the `token` of gateway.json in the state directory \
         (`copilot-bridge status` shows where) as the API key",
    );
    let anthropic = request.uri().path().starts_with("/v1/messages")
        || request.headers().contains_key("anthropic-version");
    if anthropic {
        error.anthropic_response()
    } else {
        error.openai_response()
    }
}
