//! Integration tests of bridge-tools on real temp workspaces, one binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod format;
mod list;
mod patch;
mod read;
mod redaction;
mod runner;
mod search;
mod shell;
mod symbols;
mod write;
