//! Pieces shared by the read-side tools (`read_file`, `list_files`,
//! `search_code`, `symbols`): argument decoding, running blocking work off the
//! async runtime, and opening a workspace file for reading.

use std::fs::{File, Metadata};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{ToolContext, ToolError};

/// Decodes the arguments object of `tool` into its typed form; serde's message
/// names the offending field.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|err| ToolError::InvalidArguments(format!("{tool}: {err}")))
}

/// Runs filesystem work on the blocking pool so a slow disk never stalls the
/// async runtime that serves other sessions.
pub(crate) async fn run_blocking<T, F>(tool: &'static str, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ToolError::Failed(format!("{tool}: worker task failed: {err}")))?
}

/// A regular file of the workspace, resolved through the policy and open.
pub(crate) struct WorkspaceFile {
    pub relative: String,
    /// The open file; `metadata` describes this handle, not the path, so a
    /// file swapped after the check is never read by mistake.
    pub handle: File,
    pub metadata: Metadata,
}

/// Resolves `path` for reading, opens it and checks the open file is a
/// regular file: a missing file is `NotFound`, a directory is a caller
/// mistake. It is opened non-blocking, so a FIFO put in its place makes the
/// call fail instead of hang.
pub(crate) fn resolve_regular_file(
    tool: &str,
    ctx: &ToolContext,
    path: &str,
) -> Result<WorkspaceFile, ToolError> {
    let absolute = ctx.resolve_read(path)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let handle = match options.open(&absolute) {
        Ok(handle) => handle,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(ToolError::NotFound(path.to_owned()));
        }
        Err(err) => return Err(ToolError::io(format!("{tool}: cannot open {path}"), err)),
    };
    let metadata = handle
        .metadata()
        .map_err(|err| ToolError::io(format!("{tool}: cannot stat {path}"), err))?;
    if metadata.is_dir() {
        return Err(ToolError::InvalidArguments(format!(
            "{tool}: {path} is a directory, not a file (use list_files to see its contents)"
        )));
    }
    if !metadata.is_file() {
        return Err(ToolError::InvalidArguments(format!(
            "{tool}: {path} is not a regular file"
        )));
    }
    Ok(WorkspaceFile {
        relative: ctx.relative(&absolute),
        handle,
        metadata,
    })
}

/// How many leading bytes are inspected for a NUL to call a file binary (the
/// same window git and ripgrep use).
pub(crate) const BINARY_SNIFF_BYTES: usize = 8 * 1024;

pub(crate) fn looks_binary(prefix: &[u8]) -> bool {
    prefix[..prefix.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}
