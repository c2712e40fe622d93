#![allow(clippy::unwrap_used, clippy::expect_used)]

mod auth;
mod binding;
mod conformance;
mod hooks;
mod lifecycle;
mod limits;
mod memory;
mod project;
mod push;
mod state_machine;
#[allow(dead_code)]
mod support;
mod tools;
mod transport;
mod updates;
