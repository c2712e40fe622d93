//! bridge-launch's integration tests: real child processes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod env;
mod launch;
