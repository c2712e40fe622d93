//! `GET /v1/models`: every configured backend's models, OpenAI's list shape.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::app::ServerContext;

pub(crate) async fn list(State(ctx): State<ServerContext>) -> Json<Value> {
    let mut data = Vec::new();
    for (entry, models) in ctx.backends.list_models().await {
        for model in models {
            data.push(json!({
                "id": model,
                "object": "model",
                "created": 0,
                "owned_by": entry.name,
            }));
        }
    }
    Json(json!({"object": "list", "data": data}))
}
