//! `POST /v1/messages` in Anthropic's format, streaming (SSE) and not.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::errors::{ErrorKind, FacadeError};
use crate::app::ServerContext;

pub(crate) async fn messages(
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
    .anthropic_response()
}
