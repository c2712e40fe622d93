//! bridge-loadgen's integration tests: real loads against the testkit's
//! mock upstream on 127.0.0.1.

// Test helpers outside #[test] fns may panic too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod floor;
mod loops;
