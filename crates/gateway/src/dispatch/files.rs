//! File references in `tool.result`: a local provider wrote a large result
//! under its `persistDir`; the gateway reads it (off the runtime) and hands
//! it to the caller inline. The path is the provider's input: it must
//! resolve, symlinks and all, inside the provider's own `persistDir`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine;
use bridge_engine::ToolFailure;
use bridge_protocol::provider::{FileRef, tool_error_code};
use serde_json::{Value, json};

/// Largest file a reference may point to.
pub(crate) const FILE_REF_MAX_BYTES: u64 = 64 * 1024 * 1024;

pub(crate) async fn read_file_ref(
    persist_dir: PathBuf,
    file: FileRef,
) -> Result<Value, ToolFailure> {
    tokio::task::spawn_blocking(move || read_blocking(&persist_dir, &file))
        .await
        .map_err(|err| {
            ToolFailure::new(
                tool_error_code::INTERNAL,
                format!("reading a file reference failed: {err}"),
            )
        })?
}

fn unauthorized(message: String) -> ToolFailure {
    ToolFailure::new(tool_error_code::UNAUTHORIZED, message)
}

fn read_blocking(persist_dir: &Path, file: &FileRef) -> Result<Value, ToolFailure> {
    let shown = bridge_protocol::excerpt(&file.path).to_string();
    let root = persist_dir.canonicalize().map_err(|err| {
        ToolFailure::new(
            tool_error_code::INTERNAL,
            format!("the provider's persistDir is unavailable: {err}"),
        )
    })?;
    let requested = Path::new(&file.path);
    let requested = if requested.is_absolute() {
        requested.to_path_buf()
    } else {
        persist_dir.join(requested)
    };
    let resolved = requested.canonicalize().map_err(|err| {
        ToolFailure::new(
            tool_error_code::NOT_FOUND,
            format!("file reference {shown} cannot be resolved: {err}"),
        )
    })?;
    if !resolved.starts_with(&root) {
        return Err(unauthorized(format!(
            "file reference {shown} is outside the provider's persistDir"
        )));
    }
    let mut handle = File::open(&resolved).map_err(|err| {
        ToolFailure::new(
            tool_error_code::NOT_FOUND,
            format!("file reference {shown} cannot be opened: {err}"),
        )
    })?;
    // The path may have been swapped for a symlink since it was resolved:
    // check what was actually opened.
    if let Some(opened) = opened_path(&handle)
        && !opened.starts_with(&root)
    {
        return Err(unauthorized(format!(
            "file reference {shown} is outside the provider's persistDir"
        )));
    }
    let metadata = handle.metadata().map_err(|err| {
        ToolFailure::new(
            tool_error_code::INTERNAL,
            format!("file reference {shown}: {err}"),
        )
    })?;
    if !metadata.is_file() {
        return Err(unauthorized(format!(
            "file reference {shown} is not a regular file"
        )));
    }
    if metadata.len() > FILE_REF_MAX_BYTES {
        return Err(too_large(&shown, metadata.len()));
    }
    let mut bytes = Vec::new();
    (&mut handle)
        .take(FILE_REF_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| {
            ToolFailure::new(
                tool_error_code::INTERNAL,
                format!("reading file reference {shown}: {err}"),
            )
        })?;
    let size = bytes.len() as u64;
    if size > FILE_REF_MAX_BYTES {
        return Err(too_large(&shown, size));
    }
    Ok(json!({
        "file": {
            "mimeType": clean_mime(&file.mime_type),
            "size": size,
            "path": resolved.display().to_string(),
        },
        "base64": base64::engine::general_purpose::STANDARD.encode(&bytes),
    }))
}

fn too_large(shown: &str, size: u64) -> ToolFailure {
    ToolFailure::new(
        "PAYLOAD_TOO_LARGE",
        format!("file reference {shown} is {size} bytes; the limit is {FILE_REF_MAX_BYTES}"),
    )
}

/// Where an open file really is (Linux: its `/proc/self/fd` link).
fn opened_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

fn clean_mime(mime: &str) -> String {
    let plain = !mime.is_empty()
        && mime.len() <= 127
        && mime
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/+-.;= ".contains(c));
    if plain {
        mime.to_owned()
    } else {
        "application/octet-stream".to_owned()
    }
}
