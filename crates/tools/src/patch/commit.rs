//! Writes the files of a patch all or nothing: every new content is staged in
//! a synced temp file first; only then are they renamed into place, and if a
//! rename fails midway the files already changed are put back from their
//! in-memory originals. Every file operation happens beneath the workspace
//! root in the kernel (see bridge-policy's `paths::beneath`).

use std::collections::BTreeSet;
use std::fs::Permissions;
use std::path::{Path, PathBuf};

use bridge_policy::WorkspaceRoot;

use crate::ToolError;
use crate::write::atomic::{self, StagedFile};

/// One file's change, with what is needed to undo it.
#[derive(Debug)]
pub(crate) struct FileChangePlan {
    pub path: PathBuf,
    /// Workspace-relative path, for messages.
    pub relative: String,
    /// Content and permissions before the change; `None` for a creation.
    pub original: Option<(Vec<u8>, Permissions)>,
    /// Content after the change; `None` for a deletion.
    pub content: Option<Vec<u8>>,
}

/// Applies every plan or, on failure, none (as far as the filesystem lets us).
pub(crate) fn commit_all(root: &WorkspaceRoot, plans: &[FileChangePlan]) -> Result<(), ToolError> {
    let mut created_dirs = Vec::new();
    let staged = match stage_all(root, plans, &mut created_dirs) {
        Ok(staged) => staged,
        Err(err) => {
            remove_dirs(root, &created_dirs);
            return Err(err);
        }
    };
    let mut done: Vec<&FileChangePlan> = Vec::with_capacity(plans.len());
    let mut staged = staged.into_iter();
    for plan in plans {
        let result = match staged.next().flatten() {
            Some(file) => file.commit_unsynced(),
            None => root.remove_file(&plan.path),
        };
        if let Err(err) = result {
            // Drop (and so delete) the temp files not yet renamed before
            // removing the directories they sit in.
            drop(staged);
            let unrestored = roll_back(root, &done);
            remove_dirs(root, &created_dirs);
            let message = if unrestored.is_empty() {
                format!(
                    "could not write {}: {err}; nothing was changed (the {} file(s) already written were restored)",
                    plan.relative,
                    done.len()
                )
            } else {
                format!(
                    "could not write {}: {err}; restoring failed for {} (they may be left changed)",
                    plan.relative,
                    unrestored.join(", ")
                )
            };
            return Err(ToolError::Failed(message));
        }
        done.push(plan);
    }
    let dirs: BTreeSet<&Path> = plans.iter().filter_map(|plan| plan.path.parent()).collect();
    for dir in dirs {
        atomic::sync_dir(root, dir);
    }
    Ok(())
}

fn stage_all(
    root: &WorkspaceRoot,
    plans: &[FileChangePlan],
    created_dirs: &mut Vec<PathBuf>,
) -> Result<Vec<Option<StagedFile>>, ToolError> {
    let mut staged = Vec::with_capacity(plans.len());
    for plan in plans {
        let Some(content) = &plan.content else {
            staged.push(None);
            continue;
        };
        if let Some(parent) = plan.path.parent() {
            let made = root.create_dir_all(parent).map_err(|err| {
                ToolError::file_op(
                    "apply_patch",
                    "create the directory of",
                    &plan.relative,
                    err,
                )
            })?;
            created_dirs.extend(made);
        }
        let permissions = plan.original.as_ref().map(|(_, perms)| perms.clone());
        let file = atomic::stage(root, &plan.path, content, permissions)
            .map_err(|err| ToolError::file_op("apply_patch", "write", &plan.relative, err))?;
        staged.push(Some(file));
    }
    Ok(staged)
}

/// Removes the directories a failed patch created, innermost first, so it
/// leaves no empty directories behind.
fn remove_dirs(root: &WorkspaceRoot, created: &[PathBuf]) {
    for dir in created.iter().rev() {
        let _ = root.remove_empty_dir(dir);
    }
}

/// Undoes `done` in reverse; returns the files that could not be restored.
fn roll_back(root: &WorkspaceRoot, done: &[&FileChangePlan]) -> Vec<String> {
    let mut unrestored = Vec::new();
    for plan in done.iter().rev() {
        let restored = match &plan.original {
            Some((content, permissions)) => {
                atomic::stage(root, &plan.path, content, Some(permissions.clone()))
                    .and_then(StagedFile::commit)
            }
            None => root.remove_file(&plan.path),
        };
        if let Err(err) = restored {
            tracing::error!(path = %plan.relative, error = %err, "apply_patch rollback failed");
            unrestored.push(plan.relative.clone());
        }
    }
    unrestored
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn plan(path: PathBuf, original: Option<&str>, content: Option<&str>) -> FileChangePlan {
        let permissions = fs::metadata(&path).map(|meta| meta.permissions()).ok();
        FileChangePlan {
            relative: path.display().to_string(),
            original: original.map(|text| (text.as_bytes().to_vec(), permissions.expect("exists"))),
            content: content.map(|text| text.as_bytes().to_vec()),
            path,
        }
    }

    #[test]
    fn a_failure_midway_restores_the_files_already_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let modified = dir.path().join("a.txt");
        fs::write(&modified, "old a\n").expect("write a");
        let created = dir.path().join("new/dir/c.txt");
        // The deletion fails: the file vanished after planning.
        let vanished = dir.path().join("gone.txt");
        let plans = vec![
            plan(modified.clone(), Some("old a\n"), Some("new a\n")),
            plan(created.clone(), None, Some("c\n")),
            FileChangePlan {
                path: vanished,
                relative: "gone.txt".to_owned(),
                original: Some((
                    b"gone\n".to_vec(),
                    fs::metadata(&modified).expect("meta").permissions(),
                )),
                content: None,
            },
        ];
        let root = WorkspaceRoot::new(dir.path()).expect("root");
        let err = commit_all(&root, &plans).expect_err("the deletion fails");
        assert!(err.to_string().contains("gone.txt"), "{err}");
        assert_eq!(fs::read_to_string(&modified).expect("a"), "old a\n");
        assert!(!created.exists());
        assert!(
            !dir.path().join("new").exists(),
            "created directories are removed"
        );
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from("a.txt")]);
    }

    #[test]
    fn all_changes_land_together() {
        let dir = tempfile::tempdir().expect("tempdir");
        let modified = dir.path().join("a.txt");
        let deleted = dir.path().join("b.txt");
        fs::write(&modified, "old a\n").expect("write a");
        fs::write(&deleted, "b\n").expect("write b");
        let created = dir.path().join("sub/c.txt");
        let plans = vec![
            plan(modified.clone(), Some("old a\n"), Some("new a\n")),
            plan(deleted.clone(), Some("b\n"), None),
            plan(created.clone(), None, Some("c\n")),
        ];
        let root = WorkspaceRoot::new(dir.path()).expect("root");
        commit_all(&root, &plans).expect("commit");
        assert_eq!(fs::read_to_string(&modified).expect("a"), "new a\n");
        assert!(!deleted.exists());
        assert_eq!(fs::read_to_string(&created).expect("c"), "c\n");
    }
}
