//! Which files the memory tools may open. A name a client sends is refused
//! before it touches the disk when it holds a null byte, is absolute, has a
//! `..` component or does not end in `.md`; then the file's physical path
//! (every symlink resolved) must still lie inside the memory root, and it is
//! opened beneath the root in the kernel (bridge-policy's
//! `WorkspaceRoot::open_file`), so a symlink swapped in after the check
//! cannot take the read outside.
//! In a workspace only the memory notes are readable (`MEMORY.md`,
//! `USER.md`, `DREAMS.md`, `memory/**`), not the rest of the agent's workspace.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use bridge_policy::paths::{OpenMode, is_escape};
use bridge_policy::{PathError, WorkspaceRoot};

use super::layout::{LayoutKind, MemoryLayout, ROOT_NOTES};

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
    /// The memory root, whose handle the read starts from.
    pub root: WorkspaceRoot,
}

impl ResolvedNote {
    /// The note's text (lossy UTF-8), read beneath the memory root; a note
    /// over `max_bytes` is refused.
    pub fn read(&self, max_bytes: u64) -> Result<String, NoteError> {
        let unreadable = |reason: String| NoteError::Unreadable {
            name: self.name.clone(),
            reason,
        };
        let file =
            self.root
                .open_file(&self.path, OpenMode::Read)
                .map_err(|err| match is_escape(&err) {
                    true => NoteError::Refused(format!("{:?} {err}", self.name)),
                    false => unreadable(err.to_string()),
                })?;
        let size = file
            .metadata()
            .map_err(|err| unreadable(err.to_string()))?
            .len();
        if size > max_bytes {
            return Err(unreadable(format!(
                "it is {size} bytes; at most {max_bytes} are served"
            )));
        }
        let mut bytes = Vec::new();
        file.take(max_bytes)
            .read_to_end(&mut bytes)
            .map_err(|err| unreadable(err.to_string()))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
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
                "{requested:?} is not a memory note (MEMORY.md, USER.md, DREAMS.md or a file under memory/)"
            ))
        })?,
    };
    let name = parts.join("/");
    let not_found = || NoteError::NotFound {
        name: name.clone(),
        root: layout.root.display().to_string(),
    };
    let root = WorkspaceRoot::new(&layout.root).map_err(|_| not_found())?;
    let physical = match root.resolve(&name) {
        Ok(path) => path,
        Err(PathError::SymlinkEscape { .. } | PathError::OutsideWorkspace { .. }) => {
            return Err(NoteError::Refused(format!(
                "{requested:?} leads through a symlink outside the memory root {}",
                root.path().display()
            )));
        }
        Err(err) => {
            return Err(NoteError::Unreadable {
                name,
                reason: err.to_string(),
            });
        }
    };
    match root.metadata(&physical) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => {
            return Err(NoteError::Refused(format!(
                "{requested:?} is not a regular file"
            )));
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
        Err(err) => {
            return Err(NoteError::Unreadable {
                name,
                reason: err.to_string(),
            });
        }
    }
    Ok(ResolvedNote {
        path: physical,
        name,
        root,
    })
}

/// In a workspace: a note at the root ([`ROOT_NOTES`]), `memory/...`, or a
/// bare daily-note name found under `memory/` (`2026-01-02.md`).
fn workspace_note_parts(layout: &MemoryLayout, parts: Vec<String>) -> Option<Vec<String>> {
    match parts.as_slice() {
        [single] if ROOT_NOTES.contains(&single.as_str()) => Some(parts),
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
