//! Where OpenClaw keeps its memory, in either of the two layouts:
//!
//! - **workspace** (current OpenClaw): the agent workspace, by default
//!   `~/.openclaw/workspace/`, holding `MEMORY.md`, daily notes in
//!   `memory/YYYY-MM-DD.md` and the user's preferences in `USER.md`;
//! - **memory directory** (the older layout): notes in
//!   `~/.openclaw/memory/*.md` and preferences in `~/.openclaw/USER.md`.
//!
//! Detection never fails: a layout whose directory does not exist yet is
//! still a layout, and the tools say that nothing is there.

use std::path::{Path, PathBuf};

use bridge_config::OpenClawConfig;

/// The two layouts OpenClaw has used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutKind {
    Workspace,
    MemoryDir,
}

impl LayoutKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Workspace => "workspace",
            Self::MemoryDir => "memory directory",
        }
    }
}

/// Where the memory is, and how that was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryLayout {
    pub kind: LayoutKind,
    /// The containment root: every note read lies inside it.
    pub root: PathBuf,
    /// `USER.md`: inside `root` for a workspace, beside the memory directory otherwise.
    pub user_prefs: PathBuf,
    /// How the layout was chosen (for `--help`-level diagnostics and logs).
    pub reason: String,
}

impl MemoryLayout {
    pub fn workspace(root: &Path, reason: impl Into<String>) -> Self {
        Self {
            kind: LayoutKind::Workspace,
            root: root.to_path_buf(),
            user_prefs: root.join("USER.md"),
            reason: reason.into(),
        }
    }

    pub fn memory_dir(root: &Path, reason: impl Into<String>) -> Self {
        let parent = root.parent().unwrap_or(root);
        Self {
            kind: LayoutKind::MemoryDir,
            root: root.to_path_buf(),
            user_prefs: parent.join("USER.md"),
            reason: reason.into(),
        }
    }

    /// Picks the layout: `explicit` (the `--workspace` flag) first, then
    /// the configured workspace (`OPENCLAW_WORKSPACE`), then what exists
    /// under OpenClaw's state directory (`OPENCLAW_STATE_DIR`, else
    /// `~/.openclaw`); bridge-config reads both.
    pub fn detect(explicit: Option<&Path>, openclaw: &OpenClawConfig) -> Self {
        if let Some(dir) = explicit {
            return Self::for_directory(dir, "--workspace");
        }
        if let Some(dir) = &openclaw.workspace {
            return Self::workspace(dir, "OPENCLAW_WORKSPACE");
        }
        let workspace = openclaw.state_dir.join("workspace");
        let memory_dir = openclaw.state_dir.join("memory");
        if holds_workspace_memory(&workspace) {
            Self::workspace(&workspace, "detected (workspace layout)")
        } else if memory_dir.is_dir() {
            Self::memory_dir(&memory_dir, "detected (memory directory layout)")
        } else {
            Self::workspace(&workspace, "default (nothing found yet)")
        }
    }

    /// A directory the user named: a workspace if it looks like one, else a
    /// memory directory if it holds notes directly, else a workspace.
    pub fn for_directory(dir: &Path, reason: &str) -> Self {
        if holds_workspace_memory(dir) || !holds_markdown(dir) {
            Self::workspace(dir, format!("{reason} (workspace layout)"))
        } else {
            Self::memory_dir(dir, format!("{reason} (memory directory layout)"))
        }
    }

    /// The files the search covers, as paths relative to [`Self::root`]
    /// (`MEMORY.md` and `memory/**` for a workspace; every note for a
    /// memory directory).
    pub fn note_scopes(&self) -> NoteScopes {
        match self.kind {
            LayoutKind::Workspace => NoteScopes {
                top_files: vec!["MEMORY.md", "memory.md"],
                directory: Some("memory"),
            },
            LayoutKind::MemoryDir => NoteScopes {
                top_files: Vec::new(),
                directory: Some(""),
            },
        }
    }
}

/// What the search walks, relative to the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteScopes {
    /// Single files at the root.
    pub top_files: Vec<&'static str>,
    /// A directory walked recursively (`""`: the root itself).
    pub directory: Option<&'static str>,
}

fn holds_workspace_memory(dir: &Path) -> bool {
    ["MEMORY.md", "memory.md", "USER.md"]
        .iter()
        .any(|name| dir.join(name).is_file())
        || dir.join("memory").is_dir()
}

fn holds_markdown(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            entry
                .path()
                .extension()
                .is_some_and(|ext| ext.eq_ignore_ascii_case("md"))
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn openclaw(state_dir: &Path, workspace: Option<&str>) -> OpenClawConfig {
        OpenClawConfig {
            workspace: workspace.map(PathBuf::from),
            ..OpenClawConfig::in_state_dir(state_dir)
        }
    }

    #[test]
    fn workspace_env_wins_over_detection() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".openclaw/memory")).unwrap();
        let layout = MemoryLayout::detect(
            None,
            &openclaw(&home.path().join(".openclaw"), Some("/elsewhere/ws")),
        );
        assert_eq!(layout.kind, LayoutKind::Workspace);
        assert_eq!(layout.root, Path::new("/elsewhere/ws"));
        assert_eq!(layout.user_prefs, Path::new("/elsewhere/ws/USER.md"));
    }

    #[test]
    fn detects_the_memory_directory_layout_when_no_workspace_memory_exists() {
        let home = tempfile::tempdir().unwrap();
        let state = home.path().join(".openclaw");
        std::fs::create_dir_all(state.join("memory")).unwrap();
        std::fs::create_dir_all(state.join("workspace")).unwrap();
        let layout = MemoryLayout::detect(None, &openclaw(&state, None));
        assert_eq!(layout.kind, LayoutKind::MemoryDir);
        assert_eq!(layout.root, state.join("memory"));
        assert_eq!(layout.user_prefs, state.join("USER.md"));
        std::fs::write(state.join("workspace/MEMORY.md"), "x").unwrap();
        let layout = MemoryLayout::detect(None, &openclaw(&state, None));
        assert_eq!(layout.kind, LayoutKind::Workspace);
        assert_eq!(layout.root, state.join("workspace"));
    }

    #[test]
    fn an_explicit_directory_of_notes_is_a_memory_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("note.md"), "x").unwrap();
        let layout = MemoryLayout::for_directory(dir.path(), "--workspace");
        assert_eq!(layout.kind, LayoutKind::MemoryDir);
        std::fs::write(dir.path().join("MEMORY.md"), "x").unwrap();
        let layout = MemoryLayout::for_directory(dir.path(), "--workspace");
        assert_eq!(layout.kind, LayoutKind::Workspace);
    }
}
