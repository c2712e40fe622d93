//! The small pieces every crate of copilot-bridge needs done safely, once:
//! [`Secret`] (never shown by `Debug`/`Display`), [`ids`] (ids, tokens,
//! pairing codes, `constant_time_eq`), [`sync`] (poison-tolerant locks),
//! [`recovery`] (error classification and the one [`Backoff`]),
//! [`owner_only`] (files and directories private to their owner, never
//! through a symlink), [`batch`] (messages queued together sent with one
//! flush), [`json`] (sizes of JSON without building it), [`file_stamp`]
//! (whether a followed file changed), [`jsonl_pages`] (JSON Lines logs
//! read newest first, a page at a time, backwards from the disk) and
//! [`time`].
//!
//! This crate must not decide anything about a tool call (that is
//! bridge-policy), talk to the network, start processes, or depend on
//! another crate of the workspace: everything depends on it.

pub mod batch;
pub mod file_stamp;
pub mod ids;
pub mod json;
pub mod jsonl_pages;
pub mod owner_only;
pub mod recovery;
pub mod secret;
pub mod sync;
pub mod time;

pub use recovery::{Backoff, ErrorClass, ErrorPolicy, RecoveryAction};
pub use secret::Secret;
