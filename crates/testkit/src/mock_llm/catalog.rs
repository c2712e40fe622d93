//! The non-chat endpoints: model lists and the Copilot token exchange.

use serde_json::{Value, json};

use super::body::unix_now;

/// Model ids listed by `GET /v1/models` and `GET /models`.
pub const MOCK_MODELS: [&str; 3] = ["gpt-4o-mini", "gpt-4o", "claude-sonnet-4"];

/// Model names listed by Ollama's `GET /api/tags`.
pub const MOCK_OLLAMA_MODELS: [&str; 2] = ["llama3.2:latest", "qwen2.5-coder:7b"];

/// Lifetime of a mock Copilot token, and when clients should refresh it.
pub const COPILOT_TOKEN_LIFETIME_SECS: u64 = 1800;
pub const COPILOT_TOKEN_REFRESH_IN_SECS: u64 = 1500;

pub(crate) fn openai_models() -> Value {
    let data: Vec<Value> = MOCK_MODELS
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 1_700_000_000, "owned_by": "mock-llm"}))
        .collect();
    json!({"object": "list", "data": data})
}

pub(crate) fn ollama_tags() -> Value {
    let models: Vec<Value> = MOCK_OLLAMA_MODELS
        .iter()
        .map(|name| {
            json!({
                "name": name,
                "model": name,
                "modified_at": "2026-01-01T00:00:00Z",
                "size": 2_019_393_189_u64,
                "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
                "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B", "quantization_level": "Q4_K_M"},
            })
        })
        .collect();
    json!({"models": models})
}

/// The token exchange answer; `api_base` is where this mock is reachable,
/// so a client that follows `endpoints.api` stays on the mock.
pub(crate) fn copilot_token(api_base: &str, sequence: u64) -> Value {
    let now = unix_now();
    json!({
        "token": format!("tid=mock{sequence};exp={};sku=mock", now + COPILOT_TOKEN_LIFETIME_SECS),
        "expires_at": now + COPILOT_TOKEN_LIFETIME_SECS,
        "refresh_in": COPILOT_TOKEN_REFRESH_IN_SECS,
        "endpoints": {"api": api_base},
    })
}
