//! The file side of the audit writer: the directory and files created
//! private to their owner, and a file's identity (to notice a path that
//! names another file).

use std::fs::{self, File, OpenOptions};
use std::path::Path;

use crate::PolicyError;

pub(super) fn create_dir(dir: &Path) -> Result<(), PolicyError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|source| PolicyError::Io {
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

/// Opens for appending, creating the file private to its owner. A file that
/// exists with wider permissions (created by hand, copied) is narrowed.
pub(super) fn open_append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        let permissions = file.metadata()?.permissions();
        if permissions.mode() & 0o077 != 0 {
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        options.open(path)
    }
}
