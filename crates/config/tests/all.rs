//! Integration tests of bridge-config: real files in temp dirs, injected environments.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod backends;
mod layering;
mod mcp;
mod openclaw;
mod telemetry;
mod validation;
