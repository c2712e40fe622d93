//! Opening session files safely: private modes, no symlinks followed, and
//! never a blocking open of a FIFO or device someone put at a session path.

use std::fs::{File, TryLockError};
use std::io::ErrorKind;
use std::path::Path;

use bridge_util::owner_only;

use super::LogError;

/// Creates `dir` and its missing parents with mode 0700 (session logs hold
/// prompts and tool output), or checks the one there: a directory of this
/// user, never a symlink planted in its place.
pub(crate) fn create_private_dir(dir: &Path) -> Result<(), LogError> {
    owner_only::ensure_private_subdir(dir).map_err(|err| LogError::io(dir, err))
}

/// Creates the new session file `path` (mode 0600, append-only), refusing
/// to reuse an existing one.
pub(crate) fn create_session_file(path: &Path, id: &str) -> Result<File, LogError> {
    // Never through a symlink at a session path, never blocking on a FIFO.
    let file = owner_only::open_options()
        .read(true)
        .append(true)
        .create_new(true)
        .open(path)
        .map_err(|err| match err.kind() {
            ErrorKind::AlreadyExists => LogError::Exists(id.to_owned()),
            _ => LogError::io(path, err),
        })?;
    lock_for_writing(&file, path, id)?;
    Ok(file)
}

/// Opens an existing session file, for reading or (with `append`) for
/// reading and appending.
pub(crate) fn open_session_file(path: &Path, id: &str, append: bool) -> Result<File, LogError> {
    let file = owner_only::open_options()
        .read(true)
        .append(append)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            _ if err.kind() == ErrorKind::NotFound => LogError::NotFound(id.to_owned()),
            // ELOOP: a symlink; ENXIO: a FIFO without reader or a socket;
            // EISDIR: a directory opened for writing.
            Some(libc::ELOOP | libc::ENXIO | libc::EISDIR) => LogError::NotAFile {
                path: path.to_path_buf(),
            },
            _ => LogError::io(path, err),
        })?;
    let metadata = file.metadata().map_err(|err| LogError::io(path, err))?;
    if !metadata.is_file() {
        return Err(LogError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    Ok(file)
}

/// One writer per file, across processes too: the exclusive lock lives as
/// long as the writer holds the file open.
pub(crate) fn lock_for_writing(file: &File, path: &Path, id: &str) -> Result<(), LogError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(LogError::Busy(id.to_owned())),
        Err(TryLockError::Error(err)) => Err(LogError::io(path, err)),
    }
}

/// Whether a writer (of this or another process) holds `file`'s lock.
pub(crate) fn has_writer(file: &File) -> bool {
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(_)) => false,
    }
}
