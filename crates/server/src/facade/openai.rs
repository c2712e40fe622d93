//! `POST /v1/chat/completions` in OpenAI's format, streaming (SSE) and not.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::errors::{ErrorKind, FacadeError};
use crate::app::ServerContext;

pub(crate) async fn chat_completions(
    State(_ctx): State<ServerContext>,
    _headers: HeaderMap,
    _body: Body,
) -> Response {
    FacadeError::new(
        StatusCode::NOT_IMPLEMENTED,
        ErrorKind::Server,
        "not_implemented",
        "not yet",
    )
    .openai_response()
}
