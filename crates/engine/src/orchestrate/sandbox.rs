//! Separate working directories for sub-tasks of one wave that write, and
//! merging their changes back.
//!
//! A wave's [`Snapshot`] is the workspace as it is when the wave starts:
//! in a git repository a commit of the working tree (tracked and untracked
//! files, `.gitignore` respected, made with a private index: the user's
//! index, branch and stash stay untouched) checked out per sub-task with
//! `git worktree add --detach`; elsewhere a copy of the workspace (again
//! without ignored files) that each sub-task's copy is compared with.
//!
//! [`merge_back`] then applies each sub-task's changes in plan order, file
//! by file: a file the workspace still has as the snapshot had it takes the
//! sub-task's version; one changed meanwhile (by an earlier sub-task of the
//! wave) is merged three ways, and a merge that conflicts is reported with
//! its hunks. A sub-task with any conflict changes nothing in the
//! workspace: its changes are never half applied, never resolved silently.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use bridge_policy::paths::{OpenMode, WorkspaceRoot};

use super::result::{Conflict, Workdir};

/// Files a copy-mode snapshot may hold; a bigger workspace should be a git
/// repository (worktrees share its objects instead of copying).
pub const MAX_COPY_FILES: usize = 20_000;
/// Bytes a copy-mode snapshot may hold.
pub const MAX_COPY_BYTES: u64 = 512 * 1024 * 1024;
/// Where context files of sub-tasks live inside a working directory; never
/// merged back.
pub const SCRATCH_DIR: &str = ".copilot-bridge";

/// The workspace as a wave found it.
#[derive(Debug)]
pub enum Snapshot {
    Git {
        /// The repository's top level.
        toplevel: PathBuf,
        /// The workspace inside it ("" when it is the top level).
        prefix: PathBuf,
        commit: String,
    },
    Copy {
        base: PathBuf,
    },
}

/// One sub-task's working directory.
#[derive(Debug)]
pub struct Sandbox {
    /// The directory the sub-task works in (the workspace's counterpart).
    pub cwd: PathBuf,
    /// The worktree or copy (removed by [`Snapshot::remove`]).
    root: PathBuf,
}

/// A sub-task's change to one file (workspace-relative path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    /// `None`: deleted.
    pub content: Option<Vec<u8>>,
    pub executable: bool,
}

fn git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    // The repository's hooks are not ours to run (`worktree add` would run
    // post-checkout).
    command.args(["-c", "core.hooksPath=/dev/null"]);
    command.current_dir(dir).env_clear();
    command.envs(bridge_launch::env::ChildEnv::minimal().build());
    // A snapshot commit needs an identity; the user's may not be set.
    for (name, value) in [
        ("GIT_AUTHOR_NAME", "copilot-bridge"),
        ("GIT_AUTHOR_EMAIL", "copilot-bridge@localhost"),
        ("GIT_COMMITTER_NAME", "copilot-bridge"),
        ("GIT_COMMITTER_EMAIL", "copilot-bridge@localhost"),
        ("GIT_TERMINAL_PROMPT", "0"),
    ] {
        command.env(name, value);
    }
    command
}

fn run(mut command: Command, what: &str) -> Result<Vec<u8>, String> {
    let output = command
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| format!("{what}: cannot run git: {err}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "{what}: git failed: {}",
            bridge_policy::redact::shorten(stderr.trim(), 400)
        ));
    }
    Ok(output.stdout)
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).trim().to_owned()
}

impl Snapshot {
    /// Takes the snapshot of `workspace`, keeping copies under `scratch`.
    pub fn take(workspace: &Path, scratch: &Path) -> Result<Self, String> {
        match git_toplevel(workspace) {
            Some(toplevel) => Self::take_git(workspace, toplevel, scratch),
            None => {
                let base = scratch.join("base");
                copy_tree(workspace, &base)?;
                Ok(Self::Copy { base })
            }
        }
    }

    fn take_git(workspace: &Path, toplevel: PathBuf, scratch: &Path) -> Result<Self, String> {
        let prefix = workspace
            .strip_prefix(&toplevel)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let git_dir = PathBuf::from(text(run(
            {
                let mut c = git(&toplevel);
                c.args(["rev-parse", "--absolute-git-dir"]);
                c
            },
            "finding the repository",
        )?));
        std::fs::create_dir_all(scratch)
            .map_err(|err| format!("cannot create {}: {err}", scratch.display()))?;
        let index = scratch.join("snapshot-index");
        // Starting from the user's index keeps git's stat cache: only
        // changed files are hashed again.
        if let Err(err) = std::fs::copy(git_dir.join("index"), &index)
            && err.kind() != std::io::ErrorKind::NotFound
        {
            return Err(format!("cannot copy the git index: {err}"));
        }
        let mut add = git(&toplevel);
        add.env("GIT_INDEX_FILE", &index)
            .args(["add", "-A", "--", "."]);
        run(add, "snapshotting the workspace")?;
        let mut write = git(&toplevel);
        write.env("GIT_INDEX_FILE", &index).arg("write-tree");
        let tree = text(run(write, "snapshotting the workspace")?);
        let _ = std::fs::remove_file(&index);
        let mut head = git(&toplevel);
        head.args(["rev-parse", "--verify", "-q", "HEAD"]);
        let parent = run(head, "reading HEAD").ok().map(text);
        let mut commit = git(&toplevel);
        commit.args([
            "commit-tree",
            &tree,
            "-m",
            "copilot-bridge orchestrate snapshot",
        ]);
        if let Some(parent) = parent.filter(|p| !p.is_empty()) {
            commit.args(["-p", &parent]);
        }
        let commit = text(run(commit, "snapshotting the workspace")?);
        Ok(Self::Git {
            toplevel,
            prefix,
            commit,
        })
    }

    pub fn workdir(&self) -> Workdir {
        match self {
            Self::Git { .. } => Workdir::Worktree,
            Self::Copy { .. } => Workdir::Copy,
        }
    }

    /// A working directory for sub-task `id` at `dir` (which must not
    /// exist).
    pub fn sandbox(&self, dir: &Path) -> Result<Sandbox, String> {
        match self {
            Self::Git {
                toplevel,
                prefix,
                commit,
            } => {
                let mut add = git(toplevel);
                add.args(["worktree", "add", "--detach", "--quiet"])
                    .arg(dir)
                    .arg(commit);
                run(add, "making a worktree")?;
                Ok(Sandbox {
                    cwd: dir.join(prefix),
                    root: dir.to_path_buf(),
                })
            }
            Self::Copy { base } => {
                copy_tree(base, dir)?;
                Ok(Sandbox {
                    cwd: dir.to_path_buf(),
                    root: dir.to_path_buf(),
                })
            }
        }
    }

    /// What the sub-task changed, workspace-relative, sorted.
    pub fn changes(&self, sandbox: &Sandbox) -> Result<Vec<Change>, String> {
        let paths: BTreeSet<String> = match self {
            Self::Git { prefix, commit, .. } => {
                let mut add = git(&sandbox.root);
                add.args(["add", "-A", "--", "."]);
                run(add, "reading a sub-task's changes")?;
                let mut diff = git(&sandbox.root);
                diff.args([
                    "diff",
                    "--cached",
                    "--no-renames",
                    "--name-only",
                    "-z",
                    commit,
                ]);
                let listed = run(diff, "reading a sub-task's changes")?;
                listed
                    .split(|b| *b == 0)
                    .filter(|p| !p.is_empty())
                    .filter_map(|p| {
                        let path = PathBuf::from(String::from_utf8_lossy(p).into_owned());
                        path.strip_prefix(prefix)
                            .ok()
                            .map(|p| p.to_string_lossy().into_owned())
                    })
                    .collect()
            }
            Self::Copy { base } => {
                let mut paths = BTreeSet::new();
                for (root, other) in [(&sandbox.cwd, base), (base, &sandbox.cwd)] {
                    for path in list_files(root)? {
                        let here = read_plain(&root.join(&path));
                        let there = read_plain(&other.join(&path));
                        if here != there {
                            paths.insert(path);
                        }
                    }
                }
                paths
            }
        };
        let mut changes = Vec::with_capacity(paths.len());
        for path in paths {
            if path == SCRATCH_DIR || path.starts_with(&format!("{SCRATCH_DIR}/")) {
                continue;
            }
            let file = sandbox.cwd.join(&path);
            let content = read_plain(&file);
            let executable = std::fs::metadata(&file)
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false);
            changes.push(Change {
                path,
                content,
                executable,
            });
        }
        Ok(changes)
    }

    /// The snapshot's content of a workspace-relative path.
    pub fn base_content(&self, path: &str) -> Option<Vec<u8>> {
        match self {
            Self::Git {
                toplevel,
                prefix,
                commit,
            } => {
                let full = prefix.join(path);
                let mut show = git(toplevel);
                show.args(["cat-file", "blob"])
                    .arg(format!("{commit}:{}", full.to_string_lossy()));
                run(show, "reading the snapshot").ok()
            }
            Self::Copy { base } => read_plain(&base.join(path)),
        }
    }

    /// Removes a sub-task's working directory.
    pub fn remove(&self, sandbox: &Sandbox) {
        if let Self::Git { toplevel, .. } = self {
            let mut remove = git(toplevel);
            remove
                .args(["worktree", "remove", "--force"])
                .arg(&sandbox.root);
            if run(remove, "removing a worktree").is_ok() {
                return;
            }
        }
        let _ = std::fs::remove_dir_all(&sandbox.root);
        if let Self::Git { toplevel, .. } = self {
            let mut prune = git(toplevel);
            prune.args(["worktree", "prune"]);
            let _ = run(prune, "pruning worktrees");
        }
    }

    /// Removes what the snapshot itself keeps (a copy's base).
    pub fn discard(&self) {
        if let Self::Copy { base } = self {
            let _ = std::fs::remove_dir_all(base);
        }
    }
}

/// The top level of the git repository `dir` is in, if git runs there.
fn git_toplevel(dir: &Path) -> Option<PathBuf> {
    let mut command = git(dir);
    command.args(["rev-parse", "--show-toplevel"]);
    let top = text(run(command, "finding the repository").ok()?);
    if top.is_empty() {
        return None;
    }
    std::fs::canonicalize(top).ok()
}

/// A regular file's bytes (`None`: missing, or not a regular file).
fn read_plain(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    std::fs::read(path).ok()
}

/// Regular files under `root` (relative, `/`-separated), ignored files and
/// `.git` left out, symlinks not followed.
fn list_files(root: &Path) -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    for entry in walker {
        let entry = entry.map_err(|err| format!("cannot list {}: {err}", root.display()))?;
        if entry.file_type().is_some_and(|t| t.is_file())
            && let Ok(relative) = entry.path().strip_prefix(root)
        {
            files.push(relative.to_string_lossy().into_owned());
        }
    }
    files.sort();
    Ok(files)
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    let files = list_files(from)?;
    if files.len() > MAX_COPY_FILES {
        return Err(format!(
            "{} has {} files, more than the {MAX_COPY_FILES} a copy may hold: make it a git repository so sub-tasks get worktrees",
            from.display(),
            files.len()
        ));
    }
    let mut bytes = 0u64;
    std::fs::create_dir_all(to).map_err(|err| format!("cannot create {}: {err}", to.display()))?;
    for file in files {
        let source = from.join(&file);
        let target = to.join(&file);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
        }
        bytes += std::fs::copy(&source, &target)
            .map_err(|err| format!("cannot copy {}: {err}", source.display()))?;
        if bytes > MAX_COPY_BYTES {
            return Err(format!(
                "{} holds more than {} MiB: make it a git repository so sub-tasks get worktrees",
                from.display(),
                MAX_COPY_BYTES / 1024 / 1024
            ));
        }
    }
    Ok(())
}

/// Reads a workspace file beneath the root (`None`: missing).
fn read_in(root: &WorkspaceRoot, path: &Path) -> Result<Option<Vec<u8>>, String> {
    match root.open_file(path, OpenMode::Read) {
        Ok(mut file) => {
            let meta = file
                .metadata()
                .map_err(|err| format!("{}: {err}", path.display()))?;
            if !meta.is_file() {
                return Err(format!("{} is not a regular file", path.display()));
            }
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)
                .map_err(|err| format!("{}: {err}", path.display()))?;
            Ok(Some(bytes))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(format!("{}: {err}", path.display())),
    }
}

/// What merging one sub-task's changes did.
#[derive(Debug, Default)]
pub struct Merged {
    /// Files written or removed in the workspace.
    pub changed: Vec<String>,
    /// Non-empty: nothing was written.
    pub conflicts: Vec<Conflict>,
}

/// Applies `changes` (made by `task` from `snapshot`) to the workspace at
/// `root`, all or nothing.
pub fn merge_back(
    root: &WorkspaceRoot,
    snapshot: &Snapshot,
    task: &str,
    changes: &[Change],
) -> Result<Merged, String> {
    let mut writes: Vec<(PathBuf, Option<Vec<u8>>, bool, String)> = Vec::new();
    let mut merged = Merged::default();
    for change in changes {
        let path = root
            .resolve(&change.path)
            .map_err(|err| format!("{}: {err}", change.path))?;
        let ours = read_in(root, &path)?;
        let base = snapshot.base_content(&change.path);
        let theirs = change.content.clone();
        if ours == theirs {
            continue;
        }
        let result = if ours == base {
            Ok(theirs)
        } else {
            three_way(base.as_deref(), ours.as_deref(), theirs.as_deref(), task)
        };
        match result {
            Ok(content) => writes.push((path, content, change.executable, change.path.clone())),
            Err(hunks) => merged.conflicts.push(Conflict {
                file: change.path.clone(),
                hunks,
            }),
        }
    }
    if !merged.conflicts.is_empty() {
        return Ok(merged);
    }
    for (path, content, executable, shown) in writes {
        match content {
            Some(bytes) => {
                if let Some(parent) = path.parent() {
                    root.create_dir_all(parent)
                        .map_err(|err| format!("{shown}: {err}"))?;
                }
                let (dir, name) = root
                    .parent_dir(&path)
                    .map_err(|err| format!("{shown}: {err}"))?;
                let mode = if executable { 0o755 } else { 0o644 };
                dir.stage(&name, &bytes, Some(std::fs::Permissions::from_mode(mode)))
                    .and_then(|staged| staged.commit())
                    .map_err(|err| format!("{shown}: {err}"))?;
            }
            None => match root.remove_file(&path) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(format!("{shown}: {err}")),
            },
        }
        merged.changed.push(shown);
    }
    Ok(merged)
}

/// A text three-way merge; `Err` holds the conflicting hunks.
fn three_way(
    base: Option<&[u8]>,
    ours: Option<&[u8]>,
    theirs: Option<&[u8]>,
    task: &str,
) -> Result<Option<Vec<u8>>, Vec<String>> {
    fn as_text(bytes: Option<&[u8]>) -> Option<&str> {
        match bytes {
            None => Some(""),
            Some(bytes) => std::str::from_utf8(bytes).ok(),
        }
    }
    // A deletion against an edit, or a file that is not text, cannot be
    // merged line by line.
    let (Some(ours), Some(theirs)) = (ours, theirs) else {
        return Err(Vec::new());
    };
    let (Some(base), Some(ours), Some(theirs)) =
        (as_text(base), as_text(Some(ours)), as_text(Some(theirs)))
    else {
        return Err(Vec::new());
    };
    match diffy::merge(base, ours, theirs) {
        Ok(merged) => Ok(Some(merged.into_bytes())),
        Err(marked) => Err(conflict_hunks(&marked, task)),
    }
}

/// The conflict blocks of a merge's marked text, markers named.
fn conflict_hunks(marked: &str, task: &str) -> Vec<String> {
    let mut hunks = Vec::new();
    let mut current: Option<String> = None;
    for line in marked.lines() {
        if line.starts_with("<<<<<<<") {
            current = Some(String::from("<<<<<<< workspace\n"));
            continue;
        }
        let Some(hunk) = current.as_mut() else {
            continue;
        };
        if line.starts_with(">>>>>>>") {
            hunk.push_str(&format!(">>>>>>> {task}\n"));
            hunks.extend(current.take());
        } else if line.starts_with("|||||||") {
            hunk.push_str("||||||| snapshot\n");
        } else {
            hunk.push_str(line);
            hunk.push('\n');
        }
    }
    hunks
}

#[cfg(test)]
mod tests;
