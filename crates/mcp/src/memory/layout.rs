//! Where OpenClaw keeps its memory, in either of the two layouts:
//!
//! - **workspace** (current OpenClaw): an agent's workspace, found as
//!   OpenClaw finds it (`OpenClawConfig::workspace_for`, by default
//!   `~/.openclaw/workspace/`), holding `MEMORY.md`, the user's
//!   preferences in `USER.md`, `DREAMS.md` and daily notes in
//!   `memory/YYYY-MM-DD.md` (or `memory/YYYY-MM-DD-<slug>.md`);
//! - **memory directory** (the older layout): notes in
//!   `~/.openclaw/memory/*.md` and preferences in `~/.openclaw/USER.md`.
//!
//! Detection never fails: a layout whose directory does not exist yet is
//! still a layout, and the tools say that nothing is there. Other agents'
//! workspaces are found from the same configuration ([`MemoryLayout::for_agent`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bridge_config::openclaw::valid_agent_id;
use bridge_config::{OpenClawConfig, WorkspaceRank};

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
    /// The agent whose memory this is, when it came from OpenClaw's configuration.
    pub agent_id: Option<String>,
    /// The configuration other agents' workspaces are found from (`None`:
    /// only this directory is served, `agentId` is refused).
    pub openclaw: Option<Arc<OpenClawConfig>>,
}

/// Why an `agentId` has no memory to serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error("agentId: {0}")]
    Invalid(String),
    #[error(
        "agentId {id:?}: this memory server serves one directory ({root}), not OpenClaw's agents"
    )]
    NotConfigured { id: String, root: String },
    #[error(
        "no OpenClaw agent {id:?}: it is not in agents.list of {config}, and its workspace {workspace} does not exist"
    )]
    Unknown {
        id: String,
        config: String,
        workspace: String,
    },
}

impl MemoryLayout {
    pub fn workspace(root: &Path, reason: impl Into<String>) -> Self {
        Self {
            kind: LayoutKind::Workspace,
            root: root.to_path_buf(),
            user_prefs: root.join("USER.md"),
            reason: reason.into(),
            agent_id: None,
            openclaw: None,
        }
    }

    pub fn memory_dir(root: &Path, reason: impl Into<String>) -> Self {
        let parent = root.parent().unwrap_or(root);
        Self {
            kind: LayoutKind::MemoryDir,
            root: root.to_path_buf(),
            user_prefs: parent.join("USER.md"),
            reason: reason.into(),
            agent_id: None,
            openclaw: None,
        }
    }

    /// The default agent's memory: `explicit` (the `--workspace` flag)
    /// first, then the workspace OpenClaw's order gives
    /// (`OpenClawConfig::workspace_for`); when that holds no memory yet and
    /// OpenClaw's state directory has the older `memory/` directory, that.
    /// A workspace set for the bridge (`openclaw.workspace`) is taken as it is.
    pub fn detect(explicit: Option<&Path>, openclaw: &OpenClawConfig) -> Self {
        let mut layout = match explicit {
            Some(dir) => Self::for_directory(dir, "--workspace"),
            None => Self::found(openclaw),
        };
        layout.agent_id = Some(openclaw.default_agent_id().to_owned());
        layout.openclaw = Some(Arc::new(openclaw.clone()));
        layout
    }

    fn found(openclaw: &OpenClawConfig) -> Self {
        let (workspace, found_by) = openclaw.workspace_for(None);
        let pinned =
            openclaw.workspace.is_some() && openclaw.workspace_rank == WorkspaceRank::Explicit;
        let memory_dir = openclaw.state_dir.join("memory");
        if pinned || holds_workspace_memory(&workspace) {
            Self::workspace(&workspace, found_by)
        } else if memory_dir.is_dir() {
            Self::memory_dir(&memory_dir, "detected (memory directory layout)")
        } else {
            Self::workspace(&workspace, format!("{found_by} (nothing found yet)"))
        }
    }

    /// The memory of `agent_id` (validated as OpenClaw validates ids): this
    /// layout for the agent it already is, else that agent's workspace. An
    /// agent neither listed in openclaw.json nor with a workspace on disk is
    /// an error, as is any agent when no OpenClaw configuration is known.
    pub fn for_agent(&self, agent_id: &str) -> Result<Self, AgentError> {
        let id = valid_agent_id(agent_id).map_err(AgentError::Invalid)?;
        if self.agent_id.as_deref() == Some(id.as_str()) {
            return Ok(self.clone());
        }
        let Some(openclaw) = &self.openclaw else {
            return Err(AgentError::NotConfigured {
                id,
                root: self.root.display().to_string(),
            });
        };
        let (workspace, found_by) = openclaw.workspace_for(Some(&id));
        if openclaw.agent(&id).is_none() && !workspace.is_dir() {
            return Err(AgentError::Unknown {
                id,
                config: openclaw.config_path.display().to_string(),
                workspace: workspace.display().to_string(),
            });
        }
        let mut layout = Self::workspace(&workspace, format!("agent {id}: {found_by}"));
        layout.agent_id = Some(id);
        layout.openclaw = Some(Arc::clone(openclaw));
        Ok(layout)
    }

    /// Whether there is memory here to serve: a workspace holding
    /// `MEMORY.md` (or another root note) or `memory/`, or a memory
    /// directory that exists. A few `stat`s.
    pub fn holds_memory(&self) -> bool {
        match self.kind {
            LayoutKind::Workspace => holds_workspace_memory(&self.root),
            LayoutKind::MemoryDir => self.root.is_dir(),
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
    /// (for a workspace, what OpenClaw's own memory search covers,
    /// `MEMORY.md`, `USER.md` and `memory/**`, and `DREAMS.md`, which it
    /// reads as memory too; every note for a memory directory).
    pub fn note_scopes(&self) -> NoteScopes {
        match self.kind {
            LayoutKind::Workspace => NoteScopes {
                top_files: ROOT_NOTES.to_vec(),
                directory: Some("memory"),
            },
            LayoutKind::MemoryDir => NoteScopes {
                top_files: Vec::new(),
                directory: Some(""),
            },
        }
    }
}

/// The notes OpenClaw treats as memory at a workspace's root.
pub const ROOT_NOTES: [&str; 5] = [
    "MEMORY.md",
    "memory.md",
    "USER.md",
    "DREAMS.md",
    "dreams.md",
];

/// What the search walks, relative to the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteScopes {
    /// Single files at the root.
    pub top_files: Vec<&'static str>,
    /// A directory walked recursively (`""`: the root itself).
    pub directory: Option<&'static str>,
}

fn holds_workspace_memory(dir: &Path) -> bool {
    ROOT_NOTES.iter().any(|name| dir.join(name).is_file()) || dir.join("memory").is_dir()
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
