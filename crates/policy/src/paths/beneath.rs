//! File operations the kernel keeps beneath the workspace root.
//!
//! [`WorkspaceRoot::resolve`] judges a path by looking it up; a symlink
//! swapped in between that check and the open would take the open
//! elsewhere. So every open here starts from a directory handle of the root
//! taken once, and the kernel resolves the rest beneath it: `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` (Linux 5.6+), which refuses any
//! step out of the root (an absolute symlink, `..` past the root, a
//! `/proc` magic link) with `EXDEV`. Where `openat2` is missing or refused
//! (older kernels, some seccomp profiles) the path is walked one component
//! at a time from the root handle with `O_NOFOLLOW`: the paths given here
//! are already resolved, so any symlink met on the way appeared after the
//! check and the open is refused.
//!
//! Writes go through a held handle of the parent directory: the temp file
//! is created in it (`O_CREAT | O_EXCL | O_NOFOLLOW`) and renamed within
//! it, so the new content lands in the directory that was checked.
//!
//! Not covered: a hard link inside the workspace to a file outside it is
//! the same file (see docs/policy.md), and a directory already open here
//! that someone moves out of the workspace is still written to.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata, Permissions};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

/// The error of an open that the kernel kept from leaving the workspace:
/// a path that resolved inside when it was checked but not any more (a
/// symlink or directory was swapped meanwhile).
#[derive(Debug, thiserror::Error)]
#[error(
    "{path} left the workspace while it was being opened (a symlink changed under it); refused"
)]
pub struct EscapedWorkspace {
    pub path: String,
}

/// Whether `err` is an [`EscapedWorkspace`] refusal (a policy deny, not an
/// I/O failure).
pub fn is_escape(err: &io::Error) -> bool {
    err.get_ref()
        .is_some_and(|inner| inner.is::<EscapedWorkspace>())
}

fn escaped(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        EscapedWorkspace {
            path: path.display().to_string(),
        },
    )
}

/// How a file is opened beneath the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read, non-blocking (a FIFO put in a file's place fails the read
    /// instead of hanging it).
    Read,
    /// No access to the contents: enough to tell where a path leads and
    /// to read its metadata. The last component is not followed.
    Locate,
}

impl OpenMode {
    pub(super) fn flags(self) -> OFlags {
        match self {
            Self::Read => OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Self::Locate => OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        }
    }
}

/// The root's handle: an `O_PATH` descriptor of the canonical root.
pub(super) fn open_root(root: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// `openat2` works here: unknown until first tried, then remembered.
static OPENAT2: AtomicU8 = AtomicU8::new(OPENAT2_UNKNOWN);
const OPENAT2_UNKNOWN: u8 = 0;
const OPENAT2_WORKS: u8 = 1;
const OPENAT2_MISSING: u8 = 2;

/// Makes every later open take the component walk, as on a kernel without
/// `openat2` (tests of that path).
#[doc(hidden)]
pub fn pretend_openat2_is_missing() {
    OPENAT2.store(OPENAT2_MISSING, Ordering::Relaxed);
}

/// Opens `relative` (free of `.` and `..`, as [`WorkspaceRoot::resolve`]
/// returns paths) beneath `root` with `flags`. `shown` names the path in
/// errors.
///
/// [`WorkspaceRoot::resolve`]: super::WorkspaceRoot::resolve
pub(super) fn open_beneath(
    root: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
    shown: &Path,
) -> io::Result<OwnedFd> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if OPENAT2.load(Ordering::Relaxed) != OPENAT2_MISSING {
        use rustix::fs::ResolveFlags;
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(root, dot_if_empty(relative), flags, mode, resolve) {
            Ok(fd) => {
                OPENAT2.store(OPENAT2_WORKS, Ordering::Relaxed);
                return Ok(fd);
            }
            // The kernel refused a step out of the root.
            Err(Errno::XDEV) => return Err(escaped(shown)),
            // Missing (before 5.6), or filtered by a seccomp profile: only
            // believed before openat2 ever worked here.
            Err(Errno::NOSYS | Errno::PERM)
                if OPENAT2.load(Ordering::Relaxed) == OPENAT2_UNKNOWN =>
            {
                OPENAT2.store(OPENAT2_MISSING, Ordering::Relaxed);
            }
            Err(err) => return Err(err.into()),
        }
    }
    walk_beneath(root, relative, flags, mode, shown)
}

fn dot_if_empty(relative: &Path) -> &Path {
    if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    }
}

/// The portable way: one component at a time from the root, never
/// following a symlink (there should be none left: see the module doc).
fn walk_beneath(
    root: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
    shown: &Path,
) -> io::Result<OwnedFd> {
    let mut names = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            // Resolved paths have neither; refuse rather than interpret.
            _ => return Err(escaped(shown)),
        }
    }
    let Some((last, parents)) = names.split_last() else {
        return Ok(rustix::fs::openat(root, ".", flags, mode)?);
    };
    let mut current: Option<OwnedFd> = None;
    for name in parents {
        let dir = current.as_ref().map_or(root, AsFd::as_fd);
        let next = rustix::fs::openat(
            dir,
            *name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|err| symlink_means_escape(dir, name, err, shown))?;
        current = Some(next);
    }
    let dir = current.as_ref().map_or(root, AsFd::as_fd);
    rustix::fs::openat(dir, *last, flags | OFlags::NOFOLLOW, mode)
        .map_err(|err| symlink_means_escape(dir, last, err, shown))
}

/// A component that turned out to be a symlink (`ELOOP` for the last one
/// with `O_NOFOLLOW`, `ENOTDIR` for a directory) is an escape attempt;
/// anything else is the error it is.
fn symlink_means_escape(dir: BorrowedFd<'_>, name: &OsStr, err: Errno, shown: &Path) -> io::Error {
    if matches!(err, Errno::LOOP | Errno::NOTDIR)
        && rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|stat| (stat.st_mode & libc::S_IFMT) == libc::S_IFLNK)
    {
        return escaped(shown);
    }
    err.into()
}

/// A directory of the workspace, held open: files are created, renamed and
/// removed relative to it, never by path.
#[derive(Debug)]
pub struct ContainedDir {
    fd: OwnedFd,
    /// The absolute path it was opened by, for messages.
    path: PathBuf,
}

impl ContainedDir {
    pub(super) fn new(fd: OwnedFd, path: PathBuf) -> Self {
        Self { fd, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Metadata of the entry `name`, not following a symlink; `None` when
    /// there is none.
    pub fn entry_metadata(&self, name: &OsStr) -> io::Result<Option<Metadata>> {
        match rustix::fs::openat(
            &self.fd,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => File::from(fd).metadata().map(Some),
            Err(Errno::NOENT) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// Opens the entry `name` for reading, refusing a symlink.
    pub fn open_entry(&self, name: &OsStr) -> io::Result<File> {
        rustix::fs::openat(
            &self.fd,
            name,
            OpenMode::Read.flags() | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .map(File::from)
        .map_err(|err| match err {
            Errno::LOOP => escaped(&self.path.join(name)),
            other => other.into(),
        })
    }

    /// Writes `contents` to a new temp file in this directory and syncs
    /// it; it becomes `target` (an entry of this directory) on
    /// [`StagedFile::commit`] and disappears if dropped uncommitted. The
    /// temp file takes `permissions`, or 0644 for a new file.
    pub fn stage(
        self: &Arc<Self>,
        target: &OsStr,
        contents: &[u8],
        permissions: Option<Permissions>,
    ) -> io::Result<StagedFile> {
        let mode = permissions.map_or(0o644, |p| p.mode() & 0o7777);
        let (temp, mut file) = self.create_temp()?;
        let staged = StagedFile {
            dir: self.clone(),
            temp,
            target: target.to_owned(),
            committed: false,
        };
        file.write_all(contents)?;
        // The mode given at creation is masked by the umask; set it whole.
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
        file.sync_all()?;
        Ok(staged)
    }

    fn create_temp(&self) -> io::Result<(OsString, File)> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        loop {
            let name = format!(
                ".bridge-write-{}-{}-{:x}.tmp",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |elapsed| elapsed.subsec_nanos())
            );
            match rustix::fs::openat(
                &self.fd,
                name.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => return Ok((name.into(), File::from(fd))),
                Err(Errno::EXIST) => continue,
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Removes the entry `name` (a file or a symlink, never followed).
    pub fn remove_entry(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Removes the empty directory `name`.
    pub fn remove_empty_dir(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?)
    }

    /// Creates the directory `name`; `false` when it already existed.
    pub fn make_dir(&self, name: &OsStr) -> io::Result<bool> {
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o777)) {
            Ok(()) => Ok(true),
            Err(Errno::EXIST) => Ok(false),
            Err(err) => Err(err.into()),
        }
    }

    /// Makes renames and removals in this directory durable. Best effort:
    /// some filesystems refuse to sync a directory, and the data is already
    /// safe in either name.
    pub fn sync(&self) {
        let _ = rustix::fs::fsync(&self.fd);
    }
}

/// New content written and synced in its directory under a temp name, not
/// yet visible under its own.
#[derive(Debug)]
pub struct StagedFile {
    dir: Arc<ContainedDir>,
    temp: OsString,
    target: OsString,
    committed: bool,
}

impl StagedFile {
    /// Renames the staged content over the target and syncs the directory.
    pub fn commit(self) -> io::Result<()> {
        let dir = self.dir.clone();
        self.commit_unsynced()?;
        dir.sync();
        Ok(())
    }

    /// Renames without syncing the directory: for callers that rename
    /// several files into one directory and sync it once.
    pub fn commit_unsynced(mut self) -> io::Result<()> {
        rustix::fs::renameat(&self.dir.fd, &self.temp, &self.dir.fd, &self.target)?;
        self.committed = true;
        Ok(())
    }

    /// Like [`commit`](Self::commit), but fails with `AlreadyExists`
    /// instead of replacing a file that appeared at the target meanwhile.
    pub fn commit_new(mut self) -> io::Result<()> {
        rustix::fs::renameat_with(
            &self.dir.fd,
            &self.temp,
            &self.dir.fd,
            &self.target,
            RenameFlags::NOREPLACE,
        )?;
        self.committed = true;
        self.dir.sync();
        Ok(())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = rustix::fs::unlinkat(&self.dir.fd, &self.temp, AtFlags::empty());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Read;
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::WorkspaceRoot;

    /// The component walk (kernels without `openat2`) refuses a symlink
    /// swapped into a directory or into the last component, and opens what
    /// did not change. This test binary takes the walk from here on; the
    /// `openat2` path is tested by the integration tests (tests/beneath.rs).
    #[test]
    fn the_component_walk_refuses_symlinks_that_appeared_after_the_check() {
        pretend_openat2_is_missing();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("f"), "OUTSIDE").unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("a/b")).unwrap();
        std::fs::write(ws.path().join("a/b/f"), "inside").unwrap();
        let root = WorkspaceRoot::new(ws.path()).unwrap();
        let checked = root.resolve("a/b/f").unwrap();
        let mut text = String::new();
        root.open_file(&checked, OpenMode::Read)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "inside");

        std::fs::rename(ws.path().join("a/b"), ws.path().join("a/b.real")).unwrap();
        symlink(outside.path(), ws.path().join("a/b")).unwrap();
        let err = root.open_file(&checked, OpenMode::Read).unwrap_err();
        assert!(is_escape(&err), "{err}");

        std::fs::remove_file(ws.path().join("a/b")).unwrap();
        std::fs::rename(ws.path().join("a/b.real"), ws.path().join("a/b")).unwrap();
        std::fs::remove_file(ws.path().join("a/b/f")).unwrap();
        symlink(outside.path().join("f"), ws.path().join("a/b/f")).unwrap();
        let err = root.open_file(&checked, OpenMode::Read).unwrap_err();
        assert!(is_escape(&err), "{err}");

        // A missing file is just missing.
        let missing = root.resolve("a/nope").unwrap();
        let err = root.open_file(&missing, OpenMode::Read).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
