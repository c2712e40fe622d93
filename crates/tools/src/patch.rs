//! `apply_patch`: applies a unified diff of one or more files, all or nothing.
//!
//! Every target is resolved through the write policy first; then every
//! file's new content is computed in memory with each hunk's preimage
//! verified; only when no hunk of any file conflicts are the files written
//! (atomically, with rollback if a rename fails midway). A conflict is a
//! result (`ok: false` with every conflicting hunk), not an error.

pub mod apply;
mod commit;
mod model;
mod names;
pub mod parse;

use std::collections::HashSet;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use bridge_policy::{Access, WorkspaceRoot};
use bridge_protocol::ToolEffect;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use apply::{Applied, HunkConflict, apply_hunks};
pub use model::{FileChange, FilePatch, Hunk, HunkLine};
pub use parse::{DiffParseError, parse_unified_diff};

use crate::read::support::{open_regular, parse_args, read_bounded, run_blocking};
use crate::{Tool, ToolContext, ToolError};
use commit::{FileChangePlan, commit_all};

pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(ApplyPatch)]
}

struct ApplyPatch;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApplyPatchArgs {
    unified_diff: String,
    #[serde(default = "verify_by_default")]
    verify: bool,
}

fn verify_by_default() -> bool {
    true
}

/// A conflict as reported to the caller: the file, then the hunk details.
#[derive(Debug, Serialize)]
struct FileConflict {
    file: String,
    #[serde(flatten)]
    conflict: HunkConflict,
}

#[async_trait]
impl Tool for ApplyPatch {
    fn name(&self) -> &'static str {
        "apply_patch"
    }

    fn description(&self) -> &'static str {
        "Apply a unified diff (one or more files: '--- a/path' / '+++ b/path' headers, '@@ -l,s +l,s @@' hunks; /dev/null to create or delete). All or nothing: if any hunk's context does not match the file, nothing is written and every conflicting hunk is returned with the expected and actual lines. With verify: false a hunk that does not match at its stated line is applied where it matches uniquely."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "unifiedDiff": {"type": "string", "minLength": 1, "description": "The unified diff, paths relative to the workspace root."},
                "verify": {"type": "boolean", "default": true, "description": "Require every hunk to match exactly at its stated line."}
            },
            "required": ["unifiedDiff"],
            "additionalProperties": false
        })
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Write
    }

    /// Every file the diff names is a write.
    fn accesses(&self, args: &Value) -> Result<Vec<Access>, ToolError> {
        let args = ApplyPatchArgs::deserialize(args)
            .map_err(|err| ToolError::InvalidArguments(format!("{}: {err}", self.name())))?;
        Ok(parse_diff(&args.unified_diff)?
            .iter()
            .map(|file| Access::Write(file.path().to_owned()))
            .collect())
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: ApplyPatchArgs = parse_args(self.name(), args)?;
        let files = parse_diff(&args.unified_diff)?;
        // Every target passes the write policy before any file is read.
        let mut targets = Vec::with_capacity(files.len());
        let mut seen = HashSet::new();
        for file in files {
            let path = ctx.resolve_write(file.path())?;
            if !seen.insert(path.clone()) {
                return Err(ToolError::InvalidArguments(format!(
                    "apply_patch: {} is named by two file headers of the diff",
                    file.path()
                )));
            }
            let relative = ctx.relative(&path);
            targets.push(Target {
                file,
                path,
                relative,
            });
        }
        let limit = ctx.settings.read_max_bytes;
        let verify = args.verify;
        let root = ctx.guard.root().clone();
        run_blocking("apply_patch", move || {
            apply_all(&root, targets, verify, limit)
        })
        .await
    }
}

fn parse_diff(diff: &str) -> Result<Vec<FilePatch>, ToolError> {
    parse_unified_diff(diff)
        .map_err(|err| ToolError::InvalidArguments(format!("apply_patch: malformed diff at {err}")))
}

struct Target {
    file: FilePatch,
    path: PathBuf,
    relative: String,
}

fn apply_all(
    root: &WorkspaceRoot,
    targets: Vec<Target>,
    verify: bool,
    limit: u64,
) -> Result<Value, ToolError> {
    let mut plans = Vec::with_capacity(targets.len());
    let mut summaries = Vec::with_capacity(targets.len());
    let mut conflicts = Vec::new();
    for target in targets {
        match plan_file(root, &target, verify, limit)? {
            Ok((plan, offsets)) => {
                let mut summary = json!({
                    "path": target.relative,
                    "status": target.file.change().as_str(),
                    "hunks": target.file.hunks.len(),
                });
                if !offsets.is_empty() {
                    summary["offsets"] = offsets
                        .iter()
                        .map(|(hunk, offset)| json!({"hunk": hunk, "offset": offset}))
                        .collect();
                }
                summaries.push(summary);
                plans.extend(plan);
            }
            Err(file_conflicts) => {
                conflicts.extend(file_conflicts.into_iter().map(|conflict| FileConflict {
                    file: target.relative.clone(),
                    conflict,
                }))
            }
        }
    }
    if !conflicts.is_empty() {
        let message = format!("{} conflict(s); nothing was written", conflicts.len());
        return Ok(json!({"ok": false, "files": [], "conflicts": conflicts, "message": message}));
    }
    commit_all(root, &plans)?;
    Ok(json!({"ok": true, "files": summaries, "conflicts": []}))
}

type Planned = Result<(Option<FileChangePlan>, Vec<(usize, isize)>), Vec<HunkConflict>>;

/// The new state of one file, or its conflicts. `None` as plan: the content
/// does not change, nothing to write.
fn plan_file(
    root: &WorkspaceRoot,
    target: &Target,
    verify: bool,
    limit: u64,
) -> Result<Planned, ToolError> {
    let change = target.file.change();
    let relative = &target.relative;
    let conflict = |reason: String| Ok(Err(vec![HunkConflict::whole_file(reason)]));
    let original = match (change, root.symlink_metadata(&target.path)) {
        (FileChange::Create, Ok(_)) => {
            return conflict(format!(
                "{relative} already exists, but the diff creates it (--- /dev/null)"
            ));
        }
        (FileChange::Create, Err(err)) if err.kind() == io::ErrorKind::NotFound => None,
        (_, Err(err)) if err.kind() == io::ErrorKind::NotFound => {
            return conflict(format!("{relative} does not exist"));
        }
        (_, Err(err)) => return Err(ToolError::file_op("apply_patch", "stat", relative, err)),
        (_, Ok(_)) => {
            // Whole-file problems are conflicts of this file, reported with
            // every other conflict, not errors that hide them.
            let (handle, meta) = match open_regular("apply_patch", root, &target.path, relative) {
                Ok(opened) => opened,
                Err(ToolError::InvalidArguments(message)) => return conflict(message),
                Err(err) => return Err(err),
            };
            let bytes = match read_bounded("apply_patch", handle, relative, limit) {
                Ok(bytes) => bytes,
                Err(err @ ToolError::TooLarge { .. }) => return conflict(err.to_string()),
                Err(err) => return Err(err),
            };
            if bytes.contains(&0) || std::str::from_utf8(&bytes).is_err() {
                return conflict(format!("{relative} is a binary file and cannot be patched"));
            }
            Some((bytes, meta.permissions()))
        }
    };
    let text = original
        .as_ref()
        .map(|(bytes, _)| String::from_utf8_lossy(bytes))
        .unwrap_or_default();
    let applied = match apply_hunks(&text, &target.file.hunks, verify) {
        Ok(applied) => applied,
        Err(conflicts) => return Ok(Err(conflicts)),
    };
    let content = if change == FileChange::Delete {
        if !applied.content.is_empty() {
            let remaining = applied.content.lines().count();
            return conflict(format!(
                "{relative} is deleted, but {remaining} of its lines are not in the diff: the file has changed"
            ));
        }
        None
    } else {
        if original
            .as_ref()
            .is_some_and(|(bytes, _)| bytes == applied.content.as_bytes())
        {
            return Ok(Ok((None, applied.offsets)));
        }
        Some(applied.content.into_bytes())
    };
    let plan = FileChangePlan {
        path: target.path.clone(),
        relative: relative.clone(),
        original,
        content,
    };
    Ok(Ok((Some(plan), applied.offsets)))
}
