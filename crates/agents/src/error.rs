//! Why an agent's configuration could not be found, read, changed or
//! staged. The messages are the ones the CLI shows; it chooses the exit
//! code (crates/cli/src/exit.rs).

/// A failure of this crate.
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    // Where things are: what the user must say or fix first.
    #[error("unknown editor {0:?}")]
    UnknownEditor(String),
    #[error("neither HOME nor USERPROFILE is set; pass --extensions-dir")]
    NoHomeForEditor,
    #[error("cannot read the current directory: {0}")]
    CurrentDir(std::io::Error),
}
