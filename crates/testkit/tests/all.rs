//! Tests of the mock LLM upstream over real HTTP on 127.0.0.1, one binary.

// Test helpers outside #[test] fns (the raw HTTP client) may panic too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod binary;
mod endpoints;
mod http_client;
mod openai;
