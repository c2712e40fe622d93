//! Which files the memory tools may open. A name a client sends is refused
//! before it touches the disk when it holds a null byte, is absolute, has a
//! `..` component or does not end in `.md`; then the file's canonical path
//! (every symlink resolved) must still lie inside the memory root.
//! In a workspace only the memory notes are readable (`MEMORY.md`,
//! `memory/**`, `USER.md`), not the rest of the agent's workspace.

use std::path::{Component, Path, PathBuf};

use super::layout::{LayoutKind, MemoryLayout};

/// Why a note cannot be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("refused: {0}")]
    Refused(String),
    #[error("no memory file {name:?} in {root}")]
    NotFound { name: String, root: String },
    #[error("cannot read memory file {name:?}: {reason}")]
    Unreadable { name: String, reason: String },
}

/// A note the tools may read: where it is and how to name it to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedNote {
    pub path: PathBuf,
    /// Relative to the memory root, `/`-separated.
    pub name: String,
}

/// Resolves `requested` (relative to the memory root) to a readable note.
pub fn resolve_note(layout: &MemoryLayout, requested: &str) -> Result<ResolvedNote, NoteError> {
    let refused = |why: &str| Err(NoteError::Refused(format!("{requested:?} {why}")));
    if requested.contains('\0') {
        return refused("contains a null byte");
    }
    let trimmed = requested.trim();
    if trimmed.is_empty() {
        return refused("is empty");
    }
    let relative = Path::new(trimmed);
    let mut parts: Vec<String> = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => return refused("has a `..` component"),
            Component::RootDir | Component::Prefix(_) => {
                return refused("is absolute; name a file relative to the memory root");
            }
        }
    }
    let Some(file_name) = parts.last() else {
        return refused("names no file");
    };
    if !Path::new(file_name)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("md"))
    {
        return refused("is not a Markdown note (only .md files are served)");
    }
    let parts = match layout.kind {
        LayoutKind::MemoryDir => parts,
        LayoutKind::Workspace => workspace_note_parts(layout, parts).ok_or_else(|| {
            NoteError::Refused(format!(
                "{requested:?} is not a memory note (MEMORY.md, USER.md or a file under memory/)"
            ))
        })?,
    };
    let name = parts.join("/");
    let candidate = parts
        .iter()
        .fold(layout.root.clone(), |path, part| path.join(part));
    let not_found = || NoteError::NotFound {
        name: name.clone(),
        root: layout.root.display().to_string(),
    };
    let root = std::fs::canonicalize(&layout.root).map_err(|_| not_found())?;
    let physical = match std::fs::canonicalize(&candidate) {
        Ok(path) => path,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
        Err(err) => {
            return Err(NoteError::Unreadable {
                name,
                reason: err.to_string(),
            });
        }
    };
    if !physical.starts_with(&root) {
        return Err(NoteError::Refused(format!(
            "{requested:?} leads through a symlink outside the memory root {}",
            root.display()
        )));
    }
    if !physical.is_file() {
        return Err(NoteError::Refused(format!(
            "{requested:?} is not a regular file"
        )));
    }
    Ok(ResolvedNote {
        path: physical,
        name,
    })
}

/// In a workspace: `MEMORY.md`, `memory.md`, `USER.md`, `memory/...`, or a
/// bare daily-note name found under `memory/` (`2026-01-02.md`).
fn workspace_note_parts(layout: &MemoryLayout, parts: Vec<String>) -> Option<Vec<String>> {
    match parts.as_slice() {
        [single] if ["MEMORY.md", "memory.md", "USER.md"].contains(&single.as_str()) => Some(parts),
        [single] => {
            let under_memory = vec!["memory".to_owned(), single.clone()];
            layout
                .root
                .join("memory")
                .join(single)
                .exists()
                .then_some(under_memory)
        }
        [first, ..] if first == "memory" => Some(parts),
        _ => None,
    }
}

/// Whether `path` (found by walking the root) really lies inside `root`
/// once symlinks are resolved; `None` when it does not or cannot be resolved.
pub fn contained(root: &Path, path: &Path) -> Option<PathBuf> {
    let physical = std::fs::canonicalize(path).ok()?;
    physical.starts_with(root).then_some(physical)
}
