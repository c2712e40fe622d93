//! `GET /v1/models`: every configured backend's models and the names
//! `[models.map]` routes, in OpenAI's list
//! shape, or in Anthropic's when the client says it speaks Anthropic (an
//! `anthropic-version` header, which the Anthropic SDKs always send).

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde_json::{Value, json};

use crate::app::ServerContext;

/// What a model list says when no backend reports when a model was made.
const UNKNOWN_CREATED_AT: &str = "1970-01-01T00:00:00Z";

pub(crate) async fn list(State(ctx): State<ServerContext>, headers: HeaderMap) -> Json<Value> {
    let mut models = Vec::new();
    for (entry, names) in ctx.backends.list_models().await {
        models.extend(names.into_iter().map(|name| (name, entry.name.clone())));
    }
    // The names `[models.map]` routes are names clients can pick too.
    for mapping in &ctx.backends.routes().map {
        if !mapping.is_glob() && !models.iter().any(|(name, _)| name == &mapping.pattern) {
            models.push((mapping.pattern.clone(), mapping.target.backend.clone()));
        }
    }
    if headers.contains_key("anthropic-version") {
        Json(anthropic_list(&models))
    } else {
        Json(openai_list(&models))
    }
}

fn openai_list(models: &[(String, String)]) -> Value {
    let data: Vec<Value> = models
        .iter()
        .map(
            |(id, backend)| json!({"id": id, "object": "model", "created": 0, "owned_by": backend}),
        )
        .collect();
    json!({"object": "list", "data": data})
}

/// Anthropic's page shape; the whole list is one page.
fn anthropic_list(models: &[(String, String)]) -> Value {
    let data: Vec<Value> = models
        .iter()
        .map(|(id, _)| {
            json!({"type": "model", "id": id, "display_name": id, "created_at": UNKNOWN_CREATED_AT})
        })
        .collect();
    json!({
        "data": data,
        "has_more": false,
        "first_id": models.first().map(|(id, _)| id),
        "last_id": models.last().map(|(id, _)| id),
    })
}
