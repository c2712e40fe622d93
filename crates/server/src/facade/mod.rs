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
use axum::body::Body;
use axum::extract::{FromRequest, Request, State};
use axum::http::HeaderMap;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};

use crate::app::ServerContext;
use errors::{ErrorKind, FacadeError};
use request_log::RequestNote;
use timing::Overhead;

/// The facade's routes, behind its token check.
pub(crate) fn routes(ctx: ServerContext) -> Router {
    Router::new()
        .route(
            "/v1/chat/completions",
            post(|request: FacadeRequest| {
                request.answer(FacadeError::openai_response, openai::chat_completions)
            }),
        )
        .route(
            "/v1/responses",
            post(|request: FacadeRequest| {
                request.answer(FacadeError::openai_response, responses::create)
            }),
        )
        .route("/v1/models", get(models::list))
        .route(
            "/v1/messages",
            post(|request: FacadeRequest| {
                request.answer(FacadeError::anthropic_response, anthropic::messages)
            }),
        )
        .route("/v1/messages/count_tokens", post(anthropic::count_tokens))
        .route_layer(middleware::from_fn_with_state(ctx.clone(), require_token))
        // Outside the token check: a refused key is logged too.
        .layer(middleware::from_fn_with_state(
            ctx.request_journal.clone(),
            request_log::log_requests,
        ))
        .with_state(ctx)
}

/// What a facade route's answer works with besides the request's JSON
/// body: the daemon, the request's note for the log, its headers.
pub(crate) struct FacadeCall {
    pub ctx: ServerContext,
    pub note: RequestNote,
    pub headers: HeaderMap,
    /// The route (`/v1/messages`, …).
    pub path: String,
}

/// A facade request as a route receives it.
pub(crate) struct FacadeRequest {
    call: FacadeCall,
    body: Body,
}

impl FromRequest<ServerContext> for FacadeRequest {
    type Rejection = std::convert::Infallible;

    async fn from_request(request: Request, ctx: &ServerContext) -> Result<Self, Self::Rejection> {
        let (parts, body) = request.into_parts();
        let call = FacadeCall {
            ctx: ctx.clone(),
            // The request log's middleware puts one in every facade request.
            note: parts.extensions.get().cloned().unwrap_or_default(),
            headers: parts.headers,
            path: parts.uri.path().to_owned(),
        };
        Ok(Self { call, body })
    }
}

impl FacadeRequest {
    /// The route's `answer` to the request's JSON object body (415, 413 or
    /// 400 before it when the body is not one), timed: an error answered in
    /// the API's shape (`shape`) and noted for the log, and the
    /// `x-bridge-overhead-ms` header either way.
    pub(crate) async fn answer(
        self,
        shape: fn(&FacadeError) -> Response,
        answer: impl AsyncFnOnce(
            &FacadeCall,
            serde_json::Map<String, serde_json::Value>,
            &mut Overhead,
        ) -> Result<Response, FacadeError>,
    ) -> Response {
        let Self { call, body } = self;
        let mut overhead = Overhead::start();
        let answered = match body::read_json_object(&call.headers, body).await {
            Ok(object) => answer(&call, object, &mut overhead).await,
            Err(refused) => Err(refused),
        };
        let mut response = answered.unwrap_or_else(|error| {
            call.note.reason(&error.reason());
            shape(&error)
        });
        overhead.stamp(response.headers_mut());
        response
    }
}

/// The presented key: `Authorization: Bearer …` or `x-api-key: …`.
fn presented_key(headers: &axum::http::HeaderMap) -> Option<&str> {
    crate::guard::presented_token(headers, None).or_else(|| {
        headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    })
}

/// Whether `headers` carry the daemon's token the way the facade takes it
/// (also the agents' OTLP export, crates/server/src/otlp.rs).
pub(crate) fn has_token(ctx: &ServerContext, headers: &axum::http::HeaderMap) -> bool {
    presented_key(headers).is_some_and(|key| bridge_util::ids::constant_time_eq(key, &ctx.token))
}

async fn require_token(State(ctx): State<ServerContext>, request: Request, next: Next) -> Response {
    let valid = has_token(&ctx, request.headers());
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
