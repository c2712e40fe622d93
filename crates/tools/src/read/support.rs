//! Pieces shared by the read-side tools (`read_file`, `list_files`,
//! `search_code`, `symbols`): argument decoding, running blocking work off the
//! async runtime, and opening a workspace file for reading.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

use std::borrow::Cow;

use bridge_policy::paths::OpenMode;
use bridge_policy::{Access, WorkspaceRoot};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{ToolContext, ToolError};

/// Decodes the arguments object of `tool` into its typed form; serde's message
/// names the offending field.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|err| ToolError::InvalidArguments(format!("{tool}: {err}")))
}

/// The declared access of a tool that writes the one file its `path`
/// argument names. Only `path` is read here (the tool checks the rest when
/// it runs), and without copying the other arguments.
pub(crate) fn writes_its_path(tool: &str, args: &Value) -> Result<Vec<Access>, ToolError> {
    #[derive(Deserialize)]
    struct PathOnly<'a> {
        #[serde(borrow)]
        path: Cow<'a, str>,
    }
    let parsed = PathOnly::deserialize(args)
        .map_err(|err| ToolError::InvalidArguments(format!("{tool}: {err}")))?;
    Ok(vec![Access::Write(parsed.path.into_owned())])
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
/// regular file (see [`open_regular`]).
pub(crate) fn resolve_regular_file(
    tool: &str,
    ctx: &ToolContext,
    path: &str,
) -> Result<WorkspaceFile, ToolError> {
    let absolute = ctx.resolve_read(path)?;
    let (handle, metadata) = open_regular(tool, ctx.guard.root(), &absolute, path)?;
    Ok(WorkspaceFile {
        relative: ctx.relative(&absolute),
        handle,
        metadata,
    })
}

/// Opens an already resolved path for reading, beneath the workspace root
/// in the kernel (a symlink swapped in since the check is refused), and
/// checks the open handle is a regular file: a missing file is `NotFound`,
/// a directory or anything else is a caller mistake (`InvalidArguments`).
/// It is opened non-blocking, so a FIFO put in a file's place makes the
/// call fail instead of hang.
pub(crate) fn open_regular(
    tool: &str,
    root: &WorkspaceRoot,
    absolute: &Path,
    shown: &str,
) -> Result<(File, Metadata), ToolError> {
    let handle = root
        .open_file(absolute, OpenMode::Read)
        .map_err(|err| ToolError::from_open(tool, shown, err))?;
    let metadata = handle
        .metadata()
        .map_err(|err| ToolError::io(format!("{tool}: cannot stat {shown}"), err))?;
    if metadata.is_dir() {
        return Err(ToolError::InvalidArguments(format!(
            "{tool}: {shown} is a directory, not a file (use list_files to see its contents)"
        )));
    }
    if !metadata.is_file() {
        return Err(ToolError::InvalidArguments(format!(
            "{tool}: {shown} is not a regular file"
        )));
    }
    Ok((handle, metadata))
}

/// Reads an open file whole, but never more than `limit` bytes: the file may
/// have grown since it was measured.
pub(crate) fn read_bounded(
    tool: &str,
    handle: File,
    shown: &str,
    limit: u64,
) -> Result<Vec<u8>, ToolError> {
    let mut bytes = Vec::new();
    handle
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| ToolError::io(format!("{tool}: cannot read {shown}"), err))?;
    let size = bytes.len() as u64;
    if size > limit {
        return Err(ToolError::TooLarge {
            path: shown.to_owned(),
            size,
            limit,
        });
    }
    Ok(bytes)
}

/// SHA-256 (hex) of an open file, streamed.
pub(crate) fn sha256_of(tool: &str, mut handle: File, shown: &str) -> Result<String, ToolError> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0_u8; 64 * 1024];
    loop {
        let read = handle
            .read(&mut buffer)
            .map_err(|err| ToolError::io(format!("{tool}: cannot read {shown}"), err))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// How many leading bytes are inspected for a NUL to call a file binary (the
/// same window git and ripgrep use).
pub(crate) const BINARY_SNIFF_BYTES: usize = 8 * 1024;

pub(crate) fn looks_binary(prefix: &[u8]) -> bool {
    prefix[..prefix.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}
