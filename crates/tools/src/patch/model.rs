//! The parsed form of a unified diff.

/// One file's part of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// Path before the change; `None` for `/dev/null` (a creation).
    pub old_path: Option<String>,
    /// Path after the change; `None` for `/dev/null` (a deletion).
    pub new_path: Option<String>,
    pub hunks: Vec<Hunk>,
    /// 1-based line of the diff where this file's header starts.
    pub line: usize,
}

/// What a [`FilePatch`] does to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileChange {
    Create,
    Delete,
    Modify,
}

impl FileChange {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "created",
            Self::Delete => "deleted",
            Self::Modify => "modified",
        }
    }
}

impl FilePatch {
    pub fn change(&self) -> FileChange {
        match (&self.old_path, &self.new_path) {
            (None, _) => FileChange::Create,
            (_, None) => FileChange::Delete,
            _ => FileChange::Modify,
        }
    }

    /// The workspace path the patch changes.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or_default()
    }
}

/// One `@@` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// First old line (1-based; 0 with `old_len == 0` means "before line 1").
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub lines: Vec<HunkLine>,
    /// The old side's last line has no newline (`\ No newline at end of file`).
    pub old_missing_newline: bool,
    /// The new side's last line has no newline.
    pub new_missing_newline: bool,
    /// 1-based line of the `@@` header in the diff.
    pub line: usize,
}

impl Hunk {
    /// Index (0-based) of the first old line this hunk covers; for a pure
    /// insertion, the index it inserts before.
    pub fn old_index(&self) -> usize {
        if self.old_len == 0 {
            self.old_start
        } else {
            self.old_start - 1
        }
    }
}

/// A hunk body line, without its marker and without its `\n` (a `\r` of a
/// CRLF diff is kept; the applier treats it as part of the line ending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    Context(String),
    Remove(String),
    Add(String),
}
