//! Walking the workspace the way `list_files` and `search_code` both need:
//! ignore files honoured, `.git/` skipped, symlinks never followed, and a
//! `path` argument narrowing the walk without losing the ignore rules of the
//! directories above it.
//!
//! The walker reads directories by path, so a directory swapped for a
//! symlink mid-walk could take it outside the workspace. What it yields is
//! therefore only a candidate: `search_code` opens each file beneath the
//! root ([`WalkScope::workspace`]), and `list_files` checks each entry is
//! still reachable beneath it before listing its name.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bridge_policy::WorkspaceRoot;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;

use crate::{ToolContext, ToolError};

/// Where a walk starts and what it may yield.
#[derive(Debug, Clone)]
pub(crate) struct WalkScope {
    workspace: WorkspaceRoot,
    root: PathBuf,
    target: PathBuf,
    include_hidden: bool,
}

impl WalkScope {
    /// The whole workspace, or the file or directory `path` inside it.
    pub(crate) fn new(
        tool: &str,
        ctx: &ToolContext,
        path: Option<&str>,
        include_hidden: bool,
    ) -> Result<Self, ToolError> {
        let workspace = ctx.guard.root().clone();
        let root = workspace.path().to_path_buf();
        let target = match path {
            None => root.clone(),
            Some(path) => {
                let resolved = ctx.resolve_read(path)?;
                workspace
                    .symlink_metadata(&resolved)
                    .map_err(|err| ToolError::file_op(tool, "stat", path, err))?;
                resolved
            }
        };
        Ok(Self {
            workspace,
            root,
            target,
            include_hidden,
        })
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace root whose handle every open of the walk starts from.
    pub(crate) fn workspace(&self) -> &WorkspaceRoot {
        &self.workspace
    }

    /// A walker over the scope. It starts at the workspace root and prunes
    /// everything that is neither above nor inside the target, so the
    /// `.gitignore` files of the target's parents still apply. If the target
    /// itself is ignored, the walk starts at the target instead: naming a path
    /// explicitly overrides the ignore rules for it, as in ripgrep.
    pub(crate) fn builder(&self) -> WalkBuilder {
        let start = if self.target == self.root || self.reachable_from_root() {
            &self.root
        } else {
            &self.target
        };
        let mut builder = base_builder(start);
        let target = Arc::new(self.target.clone());
        let include_hidden = self.include_hidden;
        // The common case, the whole workspace, skips the per-entry path
        // comparisons below.
        let whole_workspace = self.target == self.root;
        builder.filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            if entry.file_name() == OsStr::new(".git") {
                return false;
            }
            if whole_workspace {
                return include_hidden || !is_hidden(entry.file_name());
            }
            let path = entry.path();
            if path.starts_with(target.as_path()) {
                return path == target.as_path() || include_hidden || !is_hidden(entry.file_name());
            }
            target.starts_with(path)
        });
        builder
    }

    /// Whether a walk from the root reaches the target, that is, no ignore
    /// file hides it. Only the directories above the target are read.
    fn reachable_from_root(&self) -> bool {
        let mut builder = base_builder(&self.root);
        let target = Arc::new(self.target.clone());
        let filter_target = Arc::clone(&target);
        builder.filter_entry(move |entry| {
            entry.depth() == 0
                || (entry.file_name() != OsStr::new(".git")
                    && filter_target.starts_with(entry.path()))
        });
        builder
            .build()
            .filter_map(Result::ok)
            .any(|entry| entry.path() == target.as_path())
    }
}

/// Checks that files a walk yielded are regular files beneath the root
/// now: each directory is read once through the root's handle
/// ([`WorkspaceRoot::regular_files_in`]) rather than each file looked up.
/// Only the directories on the path to the current one are kept, so what
/// is held is bounded by the tree's depth.
pub(crate) struct FilesBeneath<'a> {
    workspace: &'a WorkspaceRoot,
    /// Ancestors of the last checked file's directory, outermost first,
    /// with their files; `None` for one that could not be read beneath the
    /// root.
    read: Vec<(PathBuf, Option<HashSet<OsString>>)>,
}

impl<'a> FilesBeneath<'a> {
    pub(crate) fn new(workspace: &'a WorkspaceRoot) -> Self {
        Self {
            workspace,
            read: Vec::new(),
        }
    }

    /// Whether `path` (absolute, as the walk yielded it) names a regular
    /// file beneath the root.
    pub(crate) fn has(&mut self, path: &Path) -> bool {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return false;
        };
        // A depth-first walk: the directory is the last one read, or below
        // one of those read once the walk's finished siblings are popped.
        while self
            .read
            .last()
            .is_some_and(|(read, _)| !dir.starts_with(read))
        {
            self.read.pop();
        }
        if self.read.last().is_none_or(|(read, _)| read != dir) {
            let files = self.workspace.regular_files_in(dir).ok();
            self.read.push((dir.to_path_buf(), files));
        }
        self.read
            .last()
            .and_then(|(_, files)| files.as_ref())
            .is_some_and(|files| files.contains(name))
    }
}

fn base_builder(start: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(start);
    builder
        .standard_filters(true)
        // Hidden entries are filtered by `filter_entry` so an explicitly named
        // hidden target still works.
        .hidden(false)
        // Ignore files above the workspace (a home directory's `.gitignore`)
        // must not hide workspace files.
        .parents(false)
        .git_global(false)
        // Users' `.gitignore` files apply even in a directory that is not (or
        // not yet) a git repository.
        .require_git(false)
        .follow_links(false);
    builder
}

fn is_hidden(name: &OsStr) -> bool {
    name.as_encoded_bytes().first() == Some(&b'.')
}

/// A `glob` argument. A glob without `/` matches file names at any depth
/// (`*.rs`), like a `.gitignore` line; one with `/` matches the whole
/// workspace-relative path (`src/**/*.rs`), where `*` never crosses a `/`.
#[derive(Debug, Clone)]
pub(crate) struct GlobFilter {
    matcher: GlobMatcher,
    file_name_only: bool,
}

impl GlobFilter {
    pub(crate) fn new(tool: &str, glob: &str) -> Result<Self, ToolError> {
        // `./src/*.rs` and `/src/*.rs` both mean "from the workspace root".
        let trimmed = glob
            .strip_prefix("./")
            .or_else(|| glob.strip_prefix('/'))
            .unwrap_or(glob);
        if trimmed.is_empty() {
            return Err(ToolError::InvalidArguments(format!(
                "{tool}: glob must not be empty"
            )));
        }
        let matcher = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|err| {
                ToolError::InvalidArguments(format!("{tool}: invalid glob {glob:?}: {err}"))
            })?
            .compile_matcher();
        Ok(Self {
            matcher,
            file_name_only: !trimmed.contains('/'),
        })
    }

    /// `relative` is the workspace-relative path of a file.
    pub(crate) fn matches(&self, relative: &Path) -> bool {
        if self.file_name_only {
            relative
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(relative)
        }
    }
}
