#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conformance;
#[allow(dead_code)]
mod support;
