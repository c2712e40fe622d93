//! Files and directories only their owner may read: the state directory
//! and everything the hub keeps in it (tokens, logs, kept conversations,
//! indexes), and the files it writes for agents that hold secrets.
//!
//! Every function here refuses to work through a symbolic link where a
//! file is opened or created (`O_NOFOLLOW`), opens nothing that blocks (a
//! FIFO planted at a log's path fails at once, `O_NONBLOCK`), and checks that
//! what it opened is a regular file of this user: a link or a foreign file
//! planted in the state directory must not take the hub's secrets, or its
//! writes, somewhere else.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of a private file.
pub const FILE_MODE: u32 = 0o600;
/// Mode of a private directory.
pub const DIR_MODE: u32 = 0o700;

/// Open options for a private file: mode 0600 when created, never through a
/// symlink, never blocking on a FIFO. The caller adds read, write, append,
/// create or create_new. Check what it opened with [`check_own_file`].
pub fn open_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    options
}

/// Whether the error is what [`open_options`] gives for a symlink (`ELOOP`)
/// or a FIFO or socket without a peer (`ENXIO`): something planted, not
/// a file of ours.
pub fn is_planted(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::ELOOP | libc::ENXIO))
}

/// Refuses `file` unless it is a regular file of this user.
pub fn check_own_file(file: &File) -> io::Result<fs::Metadata> {
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::other("not a regular file; remove it"));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(io::Error::other(format!(
            "owned by uid {}, not by this user (uid {me}); remove it",
            meta.uid()
        )));
    }
    Ok(meta)
}

/// A new private file at `path`, which must not exist (not even as a
/// symlink).
pub fn create_new(path: &Path) -> io::Result<File> {
    open_options().write(true).create_new(true).open(path)
}

/// Opens (creating it, mode 0600) a log file for appending: only a regular
/// file of this user, never through a symlink; a file with wider
/// permissions (made by hand, copied) is narrowed to 0600.
pub fn open_append(path: &Path) -> io::Result<File> {
    let file = open_options().create(true).append(true).open(path)?;
    let meta = check_own_file(&file)?;
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(fs::Permissions::from_mode(FILE_MODE))?;
    }
    Ok(file)
}

/// Reads `path`, a regular file of this user, refusing one over `max_bytes`.
pub fn read(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    let file = open_options().read(true).open(path)?;
    let meta = check_own_file(&file)?;
    if meta.len() > max_bytes {
        return Err(io::Error::other(format!(
            "{} bytes, more than the {max_bytes} such a file may have",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(max_bytes).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Creates `dir` and its missing parents with mode 0700. An existing
/// directory is left as it is: use [`ensure_private_dir`] for one the hub
/// owns outright.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
}

/// Creates `dir` (and parents) and makes it private to the user: the state
/// directory the user chose (which may be a symlink to a directory of
/// theirs).
///
/// An existing directory must belong to this user and must not be writable
/// by everyone: files planted there before it was tightened (a symlink
/// named `gateway.json`, say) would survive a `chmod`, and tightening `/tmp`
/// or another shared directory that a careless `--home` named would break it
/// for everyone else. Anything looser than 0700 short of that is tightened.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    ensure(dir, fs::metadata(dir))
}

/// [`ensure_private_dir`] for a directory the hub makes inside its state
/// directory (`sessions/`, `responses/`, …): a symlink there was planted,
/// and is refused rather than followed.
pub fn ensure_private_subdir(dir: &Path) -> io::Result<()> {
    ensure(dir, fs::symlink_metadata(dir))
}

/// What [`ensure_private_dir`] would refuse in the existing directory
/// `dir` (a symlink, not a directory, another user's, writable by every
/// user), changing nothing: `copilot-bridge doctor`'s check.
pub fn check_private_dir(dir: &Path) -> io::Result<()> {
    check_existing_dir(dir, &fs::metadata(dir)?)
}

fn ensure(dir: &Path, found: io::Result<fs::Metadata>) -> io::Result<()> {
    match found {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            create_dir(dir)?;
            // The umask may have narrowed the mode further; never wider.
            return fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE));
        }
        Err(err) => return Err(err),
        Ok(meta) => check_existing_dir(dir, &meta)?,
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))
}

fn check_existing_dir(dir: &Path, meta: &fs::Metadata) -> io::Result<()> {
    if meta.file_type().is_symlink() {
        return Err(io::Error::other(format!(
            "{} is a symbolic link; the hub keeps its state only in a directory of its own",
            dir.display()
        )));
    }
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(io::Error::other(format!(
            "{} belongs to uid {}, not to this user (uid {me}); choose a state directory of your own with --home or COPILOT_BRIDGE_HOME",
            dir.display(),
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode();
    if mode & 0o002 != 0 || mode & 0o1000 != 0 {
        return Err(io::Error::other(format!(
            "{} is writable by every user (mode {:o}); the state directory holds secrets, so choose a private one with --home or COPILOT_BRIDGE_HOME",
            dir.display(),
            mode & 0o7777
        )));
    }
    Ok(())
}

/// How [`write_atomically`] treats the file it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// The new file is private (0600) whatever the old one was, and a
    /// symlink at the path is replaced, never written through: the hub's
    /// own files, and files of secrets.
    Private,
    /// A symlink at the path is followed and its target replaced (a
    /// dotfiles repository keeps the agent's settings), with the mode the
    /// old file had (0600 for a new file): an agent's configuration.
    KeepingMode,
}

/// Replaces `path` with `bytes` atomically: a reader sees the old file or
/// the new one, never half of one, and never a moment with looser
/// permissions. The new text goes to a fresh temporary file beside it
/// (created 0600, refusing a symlink), synced, then renamed over the old.
/// The directory is created (0700) when missing.
pub fn write_atomically(path: &Path, bytes: &[u8], how: Replace) -> io::Result<()> {
    let target = match how {
        Replace::Private => path.to_path_buf(),
        Replace::KeepingMode => fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
    };
    let dir = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    create_dir(&dir)?;
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy());
    let temporary = dir.join(format!(".{name}.{}.tmp", crate::ids::random_hex(6)));
    let written = (|| {
        let mut file = create_new(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        if how == Replace::KeepingMode
            && let Ok(old) = fs::metadata(&target)
        {
            fs::set_permissions(&temporary, old.permissions())?;
        }
        // `rename` replaces whatever is at `target` (a symlink included)
        // instead of following it.
        fs::rename(&temporary, &target)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}
