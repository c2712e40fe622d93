//! Atomic file replacement: the new content goes to a temp file in the target's
//! directory, is flushed to disk, then renamed over the target. A crash at any
//! point leaves either the old file or the new one, never half of either.

use std::fs::{self, Permissions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// New content written and synced next to its target, not yet visible there.
#[derive(Debug)]
pub(crate) struct StagedFile {
    temp: NamedTempFile,
    target: PathBuf,
}

impl StagedFile {
    /// Renames the staged content over the target.
    pub(crate) fn commit(self) -> io::Result<()> {
        let target = self.target;
        self.temp.persist(&target).map_err(|err| err.error)?;
        sync_parent(&target);
        Ok(())
    }

    /// Renames without syncing the directory: for callers that rename several
    /// files into one directory and sync it once with [`sync_dir`].
    pub(crate) fn commit_unsynced(self) -> io::Result<()> {
        self.temp.persist(&self.target).map_err(|err| err.error)?;
        Ok(())
    }

    /// Like [`commit`](Self::commit), but fails with `AlreadyExists` instead
    /// of replacing a file that appeared at the target meanwhile.
    pub(crate) fn commit_new(self) -> io::Result<()> {
        let target = self.target;
        self.temp
            .persist_noclobber(&target)
            .map_err(|err| err.error)?;
        sync_parent(&target);
        Ok(())
    }
}

/// Writes `contents` to a temp file beside `target` and syncs it. The temp
/// file takes `permissions` (the replaced file's, to keep modes such as the
/// executable bit) or, for a new file, the conventional 0644.
pub(crate) fn stage(
    target: &Path,
    contents: &[u8],
    permissions: Option<Permissions>,
) -> io::Result<StagedFile> {
    let dir = target.parent().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} has no parent directory", target.display()),
        )
    })?;
    let mut temp = tempfile::Builder::new()
        .prefix(".bridge-write-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    temp.write_all(contents)?;
    if let Some(permissions) = permissions.or_else(new_file_permissions) {
        temp.as_file().set_permissions(permissions)?;
    }
    temp.as_file().sync_all()?;
    Ok(StagedFile {
        temp,
        target: target.to_path_buf(),
    })
}

/// Atomically replaces (or creates) `target` with `contents`, keeping the
/// permissions of the file it replaces.
pub(crate) fn write_atomic(target: &Path, contents: &[u8]) -> io::Result<()> {
    let permissions = existing_permissions(target)?;
    stage(target, contents, permissions)?.commit()
}

/// The permissions of `path` if it exists as a file, `None` if it does not.
pub(crate) fn existing_permissions(path: &Path) -> io::Result<Option<Permissions>> {
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(meta.permissions())),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

#[cfg(unix)]
fn new_file_permissions() -> Option<Permissions> {
    use std::os::unix::fs::PermissionsExt;
    // The umask cannot be read without changing it; 0644 is what a default
    // umask gives and what editors create.
    Some(Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn new_file_permissions() -> Option<Permissions> {
    None
}

/// Makes the rename itself durable. Best effort: some filesystems refuse to
/// sync a directory, and the data is already safe in either name.
fn sync_parent(target: &Path) {
    if let Some(parent) = target.parent() {
        sync_dir(parent);
    }
}

/// Makes renames and removals in `dir` durable (best effort, as above).
pub(crate) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(dir) = fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}
