//! The terminal chat's screen (`copilot-bridge chat`): the transcript
//! (prompts, answers streamed as Markdown and committed line by line,
//! tool calls with their decisions, results and diffs, errors), the
//! composer (multi-line, history, `@path` completion, slash commands), the
//! approval overlay of pending asks, pickers and the status line, drawn
//! with ratatui for the full screen or the inline mode.
//!
//! It is a pure state machine: keys, pastes, the daemon's transcript
//! events and the runtime's answers come in through [`App`]'s methods,
//! [`Action`]s go out. It must not do I/O of any kind (no terminal, no
//! daemon connection, no files, no clock, no tokio): the CLI's `chat`
//! command owns the event loop and carries the actions out. It knows the
//! daemon only by the JSON shapes of its events and asks.

mod app;
mod commands;
mod composer;
mod events;
mod highlight;
mod markdown;
mod overlay;
mod render;
mod slash;
mod style;
mod tools;
mod transcript;
mod types;
mod wrap;

pub use app::App;
pub use types::{Action, Decision, ModelChoice, Runner, Scope, SessionChoice, StatusInfo};
