//! End-to-end tests of the `copilot-bridge` binary, run as a user would run it.

mod cli_config;
mod cli_tool;
mod support;
