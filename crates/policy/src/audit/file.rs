//! The file side of the audit writer: the directory and files created
//! private to their owner, and a file's identity (to notice a path that
//! names another file).

use std::fs::{self, File};
use std::path::Path;

use crate::PolicyError;

pub(super) fn create_dir(dir: &Path) -> Result<(), PolicyError> {
    bridge_util::owner_only::create_dir(dir).map_err(|source| PolicyError::Io {
        path: dir.display().to_string(),
        source,
    })
}

pub(super) fn file_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    fs::metadata(path).map(|m| identity_of(&m))
}

#[cfg(unix)]
pub(super) fn identity_of(metadata: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (metadata.dev(), metadata.ino())
}

#[cfg(not(unix))]
pub(super) fn identity_of(metadata: &fs::Metadata) -> (u64, u64) {
    (metadata.len(), 0)
}

/// Opens for appending, creating the file private to its owner: never
/// through a symlink, only a regular file of this user; a file that exists
/// with wider permissions (created by hand, copied) is narrowed.
pub(super) fn open_append(path: &Path) -> std::io::Result<File> {
    bridge_util::owner_only::open_append(path)
}
