//! Integration tests of bridge-tools on real temp workspaces, one binary.

mod common;
mod format;
mod list;
mod patch;
mod read;
mod runner;
mod search;
mod shell;
mod symbols;
mod write;
