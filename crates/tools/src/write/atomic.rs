//! Atomic file replacement: the new content goes to a temp file in the target's
//! directory, is flushed to disk, then renamed over the target. A crash at any
//! point leaves either the old file or the new one, never half of either.
//!
//! The directory is held open beneath the workspace root while the temp file
//! is created and renamed in it (see bridge-policy's `paths::beneath`), so a
//! symlink swapped in after the policy check cannot move the write elsewhere.

use std::fs::Permissions;
use std::io;
use std::path::Path;

use bridge_policy::WorkspaceRoot;
pub(crate) use bridge_policy::paths::StagedFile;

/// Writes `contents` to a temp file beside `target` (a resolved path) and
/// syncs it. The temp file takes `permissions` (the replaced file's, to keep
/// modes such as the executable bit) or, for a new file, the conventional
/// 0644 (the umask cannot be read without changing it; 0644 is what a
/// default umask gives and what editors create).
pub(crate) fn stage(
    root: &WorkspaceRoot,
    target: &Path,
    contents: &[u8],
    permissions: Option<Permissions>,
) -> io::Result<StagedFile> {
    let (dir, name) = root.parent_dir(target)?;
    dir.stage(&name, contents, permissions)
}

/// Atomically replaces (or creates) `target` with `contents`, keeping the
/// permissions of the file it replaces.
pub(crate) fn write_atomic(root: &WorkspaceRoot, target: &Path, contents: &[u8]) -> io::Result<()> {
    let permissions = existing_permissions(root, target)?;
    stage(root, target, contents, permissions)?.commit()
}

/// The permissions of `path` if it exists, `None` if it does not.
pub(crate) fn existing_permissions(
    root: &WorkspaceRoot,
    path: &Path,
) -> io::Result<Option<Permissions>> {
    match root.metadata(path) {
        Ok(meta) => Ok(Some(meta.permissions())),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// Makes renames and removals in `dir` durable (best effort: some
/// filesystems refuse to sync a directory, and the data is already safe in
/// either name).
pub(crate) fn sync_dir(root: &WorkspaceRoot, dir: &Path) {
    if let Ok(dir) = root.open_dir(dir) {
        dir.sync();
    }
}
