//! Integration tests of bridge-llm: the backends against real HTTP servers
//! on 127.0.0.1 (the testkit's mock LLM, and a raw TCP upstream for what the
//! mock cannot do: bytes split inside a character, watching the connection).

// Helpers outside #[test] functions panic on purpose: a test cannot go on
// without its upstream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod azure;
mod copilot;
mod ollama;
mod openai_mock;
mod openai_raw;
mod relay;
mod retry;
mod select;
mod support;
