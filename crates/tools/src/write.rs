//! `create_file` and `edit_file`: whole-file writes and exact string
//! replacement, both written atomically (temp file + fsync + rename).

pub(crate) mod atomic;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bridge_policy::{Access, WorkspaceRoot};
use bridge_protocol::ToolEffect;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::read::support::{
    open_regular, parse_args, read_bounded, run_blocking, sha256_of, writes_its_path,
};
use crate::{Tool, ToolContext, ToolError};

pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(CreateFile), Arc::new(EditFile)]
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Text content of a file the tool will change: refused when it is missing,
/// over the read limit, or binary (a NUL byte or not UTF-8).
pub(crate) fn read_text_for_edit(
    root: &WorkspaceRoot,
    path: &Path,
    relative: &str,
    limit: u64,
) -> Result<String, ToolError> {
    let (handle, meta) = open_regular("edit_file", root, path, relative)?;
    if meta.len() > limit {
        return Err(ToolError::TooLarge {
            path: relative.to_owned(),
            size: meta.len(),
            limit,
        });
    }
    let bytes = read_bounded("edit_file", handle, relative, limit)?;
    if bytes.contains(&0) {
        return Err(ToolError::Binary(relative.to_owned()));
    }
    String::from_utf8(bytes).map_err(|_| ToolError::Binary(relative.to_owned()))
}

struct CreateFile;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateFileArgs {
    path: String,
    content: String,
    #[serde(default)]
    overwrite: bool,
}

#[async_trait]
impl Tool for CreateFile {
    fn name(&self) -> &'static str {
        "create_file"
    }

    fn description(&self) -> &'static str {
        "Create a file with the given content, creating parent directories. Refuses to replace an existing file unless overwrite is true. Written atomically."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "Workspace-relative path of the file."},
                "content": {"type": "string", "description": "The whole content of the file."},
                "overwrite": {"type": "boolean", "default": false, "description": "Replace the file if it exists."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Write
    }

    fn accesses(&self, args: &Value) -> Result<Vec<Access>, ToolError> {
        writes_its_path(self.name(), args)
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: CreateFileArgs = parse_args(self.name(), args)?;
        let path = ctx.resolve_write(&args.path)?;
        let relative = ctx.relative(&path);
        let content = args.content.into_bytes();
        let sha256 = sha256_hex(&content);
        let bytes = content.len();
        let overwrite = args.overwrite;
        let created = run_blocking("create_file", {
            let relative = relative.clone();
            let root = ctx.guard.root().clone();
            move || create(&root, &path, &relative, &content, overwrite)
        })
        .await?;
        Ok(json!({"path": relative, "bytes": bytes, "sha256": sha256, "created": created}))
    }
}

/// Writes the file; returns whether it was newly created.
fn create(
    root: &WorkspaceRoot,
    path: &Path,
    relative: &str,
    content: &[u8],
    overwrite: bool,
) -> Result<bool, ToolError> {
    let existing = match root.symlink_metadata(path) {
        Ok(meta) => Some(meta),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(ToolError::file_op("create_file", "stat", relative, err)),
    };
    if let Some(meta) = &existing {
        if meta.is_dir() {
            return Err(ToolError::Conflict {
                message: format!("{relative} is a directory"),
                details: json!({"path": relative}),
            });
        }
        if !overwrite {
            return Err(exists_conflict(root, path, relative));
        }
    }
    let written = |err| ToolError::file_op("create_file", "write", relative, err);
    if let Some(parent) = path.parent() {
        root.create_dir_all(parent).map_err(written)?;
    }
    let permissions = atomic::existing_permissions(root, path).map_err(written)?;
    let staged = atomic::stage(root, path, content, permissions).map_err(written)?;
    if existing.is_some() {
        staged.commit()
    } else {
        // Another writer may have created the file since the check above:
        // never replace what nobody asked us to replace.
        match staged.commit_new() {
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                return Err(exists_conflict(root, path, relative));
            }
            other => other,
        }
    }
    .map_err(written)?;
    Ok(existing.is_none())
}

fn exists_conflict(root: &WorkspaceRoot, path: &Path, relative: &str) -> ToolError {
    let existing_sha = open_regular("create_file", root, path, relative)
        .and_then(|(handle, _)| sha256_of("create_file", handle, relative))
        .ok();
    ToolError::Conflict {
        message: format!("{relative} already exists; pass overwrite: true to replace it"),
        details: json!({"path": relative, "sha256": existing_sha}),
    }
}

struct EditFile;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EditFileArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    expected_sha256: Option<String>,
}

#[async_trait]
impl Tool for EditFile {
    fn name(&self) -> &'static str {
        "edit_file"
    }

    fn description(&self) -> &'static str {
        "Replace one exact occurrence of oldString with newString in a text file. oldString must occur exactly once; include surrounding lines to make it unique. Optional expectedSha256 guards against editing a file that changed since it was read."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "Workspace-relative path of the file."},
                "oldString": {"type": "string", "minLength": 1, "description": "Exact text to replace; must occur exactly once."},
                "newString": {"type": "string", "description": "Replacement text."},
                "expectedSha256": {"type": "string", "pattern": "^[0-9a-fA-F]{64}$", "description": "SHA-256 (hex) the file must have before the edit."}
            },
            "required": ["path", "oldString", "newString"],
            "additionalProperties": false
        })
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Write
    }

    fn accesses(&self, args: &Value) -> Result<Vec<Access>, ToolError> {
        writes_its_path(self.name(), args)
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: EditFileArgs = parse_args(self.name(), args)?;
        if args.old_string.is_empty() {
            return Err(ToolError::InvalidArguments(
                "edit_file: oldString must not be empty (use create_file to write a whole file)"
                    .to_owned(),
            ));
        }
        if args.old_string == args.new_string {
            return Err(ToolError::InvalidArguments(
                "edit_file: oldString and newString are identical; nothing to change".to_owned(),
            ));
        }
        let path = ctx.resolve_write(&args.path)?;
        let relative = ctx.relative(&path);
        let limit = ctx.settings.read_max_bytes;
        let sha256 = run_blocking("edit_file", {
            let relative = relative.clone();
            let root = ctx.guard.root().clone();
            move || edit(&root, path, &relative, &args, limit)
        })
        .await?;
        Ok(json!({"path": relative, "sha256": sha256, "replacements": 1}))
    }
}

fn edit(
    root: &WorkspaceRoot,
    path: PathBuf,
    relative: &str,
    args: &EditFileArgs,
    limit: u64,
) -> Result<String, ToolError> {
    let content = read_text_for_edit(root, &path, relative, limit)?;
    if let Some(expected) = &args.expected_sha256 {
        let actual = sha256_hex(content.as_bytes());
        if !expected.eq_ignore_ascii_case(&actual) {
            return Err(ToolError::Conflict {
                message: format!(
                    "{relative} has changed: expected sha256 {expected}, found {actual}; read it again before editing"
                ),
                details: json!({"path": relative, "expectedSha256": expected, "actualSha256": actual}),
            });
        }
    }
    let (old, new) = match_line_endings(&content, &args.old_string, &args.new_string);
    let starts: Vec<usize> = content
        .match_indices(old.as_str())
        .map(|(at, _)| at)
        .collect();
    match starts.as_slice() {
        [] => Err(ToolError::Conflict {
            message: format!("oldString not found in {relative}"),
            details: json!({"path": relative, "occurrences": 0}),
        }),
        [_] => {
            let updated = content.replacen(old.as_str(), &new, 1);
            atomic::write_atomic(root, &path, updated.as_bytes())
                .map_err(|err| ToolError::file_op("edit_file", "write", relative, err))?;
            Ok(sha256_hex(updated.as_bytes()))
        }
        several => {
            let lines: Vec<usize> = several
                .iter()
                .take(20)
                .map(|&at| content[..at].matches('\n').count() + 1)
                .collect();
            Err(ToolError::Conflict {
                message: format!(
                    "oldString occurs {} times in {relative} (at lines {}); include more context to make it unique",
                    several.len(),
                    lines
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                details: json!({"path": relative, "occurrences": several.len(), "lines": lines}),
            })
        }
    }
}

/// Models write `\n`; a CRLF file would then never match a multi-line
/// oldString. When the text as given is absent but its CRLF form is present,
/// edit in the file's convention (and write newString in it too).
fn match_line_endings(content: &str, old: &str, new: &str) -> (String, String) {
    let as_given_found = content.contains(old);
    if as_given_found || !old.contains('\n') || old.contains("\r\n") || !content.contains("\r\n") {
        return (old.to_owned(), new.to_owned());
    }
    let to_crlf = |text: &str| text.replace("\r\n", "\n").replace('\n', "\r\n");
    let crlf_old = to_crlf(old);
    if content.contains(&crlf_old) {
        (crlf_old, to_crlf(new))
    } else {
        (old.to_owned(), new.to_owned())
    }
}
