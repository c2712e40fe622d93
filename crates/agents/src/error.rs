//! Why an agent's configuration could not be found, read, changed or
//! staged. The messages are the ones the CLI shows; it chooses the exit
//! code (crates/cli/src/exit.rs).

use std::path::PathBuf;

use crate::json_edit::EditError;

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
    #[error("HOME is not set; use --scope project")]
    NoHomeForUserScope,
    #[error("cannot start Codex ({}): {source}", path.display())]
    CodexStart {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    CodexTrust(String),
    #[error("neither COPILOT_HOME nor HOME is set")]
    NoCopilotHome,
    #[error("{} is not the editor's extension list ({source}); nothing was changed", path.display())]
    NotAnExtensionList {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot remove the old {}: {source}", path.display())]
    RemoveOldExtension {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Removing the VS Code extension (a usage error, unlike [`Self::Remove`]).
    #[error("cannot remove {}: {source}", path.display())]
    RemoveExtension {
        path: PathBuf,
        source: std::io::Error,
    },

    // The agents' files.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot list {}: {source}", path.display())]
    List {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot remove {}: {source}", path.display())]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create the backup {}: {source}; nothing was changed", path.display())]
    CreateBackup {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the backup {}: {source}", path.display())]
    WriteBackup {
        path: PathBuf,
        source: std::io::Error,
    },

    // What is in them.
    #[error("{} is not JSON ({source}); fix or remove it first, nothing was changed", path.display())]
    ChainNotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot change {}: {source}", path.display())]
    EditHooks { path: PathBuf, source: EditError },
    /// An agent's file read to see what of ours it holds (`installed`).
    #[error("cannot read {}: {source}", path.display())]
    Unreadable { path: PathBuf, source: EditError },
    #[error("cannot edit {}: {source}", path.display())]
    EditOpenclaw { path: PathBuf, source: EditError },
    #[error("cannot edit {}: plugins.load.paths holds something other than paths; fix it first, nothing was changed", path.display())]
    LoadPathsNotPaths { path: PathBuf },
    #[error("cannot edit {}: plugins.load.paths is not a list; fix it first, nothing was changed", path.display())]
    LoadPathsNotList { path: PathBuf },
    /// The token OpenClaw is to send could not be kept in the daemon's
    /// state directory `home` (the CLI keeps it, `openclaw register`).
    #[error("cannot keep the daemon's token in {}: {source}", home.display())]
    KeepToken {
        home: PathBuf,
        source: std::io::Error,
    },

    // What we ship.
    #[error("the shipped extension has no package.json")]
    NoShippedManifest,
    #[error("the shipped package.json: {0}")]
    ShippedManifest(serde_json::Error),
    #[error("the shipped package.json has no version")]
    NoShippedVersion,
    #[error("the shipped extension file {} is not text", path.display())]
    ShippedNotText { path: PathBuf },
}
