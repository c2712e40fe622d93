//! What tells a file that changed from the one read before, with one
//! `stat` and without reading it: its size, modification time and inode
//! (an editor that saves by rename gets a new inode with the same size and
//! second). Used by what follows a file while the daemon runs (a
//! workspace's `.agent-policy.yaml`, config.toml).

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::time::SystemTime;

/// A file as last seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub len: u64,
    pub modified: Option<SystemTime>,
    pub inode: u64,
}

impl FileStamp {
    /// The stamp of what `meta` describes; `None` when it could not be had
    /// (no file).
    pub fn of(meta: std::io::Result<std::fs::Metadata>) -> Option<Self> {
        meta.ok().map(|meta| Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode: meta.ino(),
        })
    }

    /// The path itself (a symlink is not followed).
    pub fn of_path(path: &Path) -> Option<Self> {
        Self::of(std::fs::symlink_metadata(path))
    }
}
