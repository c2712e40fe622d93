//! Integration tests of bridge-agents: the library on temporary
//! directories, as the CLI uses it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod env;
mod extensions;
mod hook;
mod hooks;
mod json_edit;
mod launch;
mod openclaw;
