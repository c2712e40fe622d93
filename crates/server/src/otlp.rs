//! The agents' own telemetry through the hub (docs/telemetry.md): OTLP/HTTP
//! at `/v1/traces`, `/v1/metrics` and `/v1/logs`, with the token the facade
//! takes (bearer or `x-api-key`), never from a browser page (any `Origin`
//! is refused), the body bounded before and after decompression, forwarded
//! to the hub's exporter by `bridge_telemetry::forward`. Not model calls:
//! not in the request log. 404 when the hub exports nothing.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bridge_config::Signal;
use bridge_telemetry::forward::{self, Answer, Encoding};

use crate::app::ServerContext;

/// The most of a (compressed) body read.
const MAX_BODY_BYTES: usize = forward::MAX_DECODED_BYTES;

pub(crate) fn routes(ctx: ServerContext) -> Router {
    Router::new()
        .route(
            "/v1/traces",
            post(|State(ctx), headers, body| receive(ctx, Signal::Traces, headers, body)),
        )
        .route(
            "/v1/metrics",
            post(|State(ctx), headers, body| receive(ctx, Signal::Metrics, headers, body)),
        )
        .route(
            "/v1/logs",
            post(|State(ctx), headers, body| receive(ctx, Signal::Logs, headers, body)),
        )
        .with_state(ctx)
}

async fn receive(ctx: ServerContext, signal: Signal, headers: HeaderMap, body: Body) -> Response {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = text(header::CONTENT_TYPE).unwrap_or_default();
    let encoding = Encoding::of_content_type(&content_type).unwrap_or(Encoding::Json);
    if headers.contains_key(header::ORIGIN) {
        return answer(forward::error(
            403,
            7,
            "telemetry is not taken from a browser page",
            encoding,
        ));
    }
    if !crate::facade::has_token(&ctx, &headers) {
        return answer(forward::error(
            401,
            16,
            "missing or wrong API key: send the daemon's token as a bearer token or x-api-key (`copilot-bridge setup --agent claude` prints the lines)",
            encoding,
        ));
    }
    let Some(forwarder) = ctx.otlp.clone() else {
        return answer(forward::not_exported(signal, encoding));
    };
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(_) => {
            return answer(forward::error(
                413,
                8,
                "the request is larger than 16 MiB, or its body broke off",
                encoding,
            ));
        }
    };
    let content_encoding = text(header::CONTENT_ENCODING);
    answer(
        forwarder
            .forward(signal, &content_type, content_encoding.as_deref(), body)
            .await,
    )
}

fn answer(answer: Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, answer.content_type)],
        answer.body,
    )
        .into_response()
}
