//! Path containment: every path a tool touches must resolve inside the
//! workspace root.
//!
//! Resolution is lexical first (so `a/../../x` is judged by what it spells),
//! then physical: every existing component is looked up with `lstat`, and a
//! symlink is replaced by its target, exactly as the kernel would follow it.
//! Components that do not exist yet are appended as they are, so a file about
//! to be created is judged by the real directory it will land in. The
//! returned path is the physical one; tools must open that path, never the
//! candidate they were given, and only through the root's own methods
//! ([`WorkspaceRoot::open_file`], [`WorkspaceRoot::parent_dir`], ...), which
//! let the kernel keep the open beneath the root ([`beneath`]): a symlink
//! swapped in after the check cannot take it outside.

mod beneath;

#[doc(hidden)]
pub use beneath::pretend_openat2_is_missing;
pub use beneath::{ContainedDir, EscapedWorkspace, OpenMode, StagedFile, is_escape};

use std::collections::{HashSet, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, Metadata};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use serde_json::Value;

/// Argument names treated as paths, at any depth of the arguments object.
pub const PATH_KEYS: &[&str] = &[
    "path",
    "file",
    "filePath",
    "directory",
    "dir",
    "destination",
    "target",
    "outputPath",
    "inputPath",
];

/// Same bound as Linux's `MAXSYMLINKS`: beyond it a chain is a loop or an attack.
const MAX_SYMLINK_HOPS: usize = 40;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path {path:?} contains a null byte")]
    NullByte { path: String },
    #[error("path {path:?} is outside the workspace {root}")]
    OutsideWorkspace { path: String, root: String },
    #[error("path {path:?} leads through a symlink to {resolved}, outside the workspace {root}")]
    SymlinkEscape {
        path: String,
        resolved: String,
        root: String,
    },
    #[error("path {path:?} is empty or not valid")]
    Invalid { path: String },
    #[error("path {path:?} goes through more than {MAX_SYMLINK_HOPS} symlinks (a symlink loop?)")]
    SymlinkLoop { path: String },
    #[error("workspace root {root} cannot be used: {reason}")]
    BadRoot { root: String, reason: String },
}

/// A canonical workspace root, and a handle of it that every open starts
/// from.
#[derive(Debug, Clone)]
pub struct WorkspaceRoot {
    root: PathBuf,
    handle: Arc<OwnedFd>,
}

impl PartialEq for WorkspaceRoot {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl Eq for WorkspaceRoot {}

impl WorkspaceRoot {
    /// Canonicalizes `root`, which must be an existing directory.
    pub fn new(root: &Path) -> Result<Self, PathError> {
        let bad_root = |reason: String| PathError::BadRoot {
            root: root.display().to_string(),
            reason,
        };
        let canonical = fs::canonicalize(root).map_err(|err| bad_root(err.to_string()))?;
        if !canonical.is_dir() {
            return Err(bad_root("not a directory".to_owned()));
        }
        let handle = beneath::open_root(&canonical).map_err(|err| bad_root(err.to_string()))?;
        Ok(Self {
            root: canonical,
            handle: Arc::new(handle),
        })
    }

    /// `path` (as [`resolve`](Self::resolve) returned it) relative to the
    /// root; an absolute path outside the root is refused as an escape.
    fn inside<'a>(&self, path: &'a Path) -> io::Result<&'a Path> {
        path.strip_prefix(&self.root).map_err(|_| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                EscapedWorkspace {
                    path: path.display().to_string(),
                },
            )
        })
    }

    fn open_beneath(&self, path: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let relative = self.inside(path)?;
        beneath::open_beneath(self.handle.as_fd(), relative, flags, Mode::empty(), path)
    }

    /// Opens a resolved path, beneath the root in the kernel.
    pub fn open_file(&self, path: &Path, mode: OpenMode) -> io::Result<File> {
        self.open_beneath(path, mode.flags()).map(File::from)
    }

    /// The metadata of a resolved path, not following a final symlink.
    pub fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.open_file(path, OpenMode::Locate)?.metadata()
    }

    /// The metadata of what a resolved path designates (a final symlink
    /// followed, beneath the root).
    pub fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.open_beneath(path, OFlags::PATH | OFlags::CLOEXEC)
            .map(File::from)?
            .metadata()
    }

    /// Whether a resolved path still leads somewhere beneath the root.
    pub fn reaches(&self, path: &Path) -> bool {
        self.open_file(path, OpenMode::Locate).is_ok()
    }

    /// The names of the regular files (not symlinks) in the directory
    /// `dir` beneath the root: one open and a few `getdents` for a whole
    /// directory, to check the many names a walk by path yielded
    /// (`list_files`) without one system call per name.
    pub fn regular_files_in(&self, dir: &Path) -> io::Result<HashSet<OsString>> {
        let fd = self.open_beneath(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC)?;
        let mut entries = rustix::fs::Dir::new(fd)?;
        let mut names = HashSet::new();
        while let Some(entry) = entries.read() {
            let entry = entry?;
            let is_file = match entry.file_type() {
                FileType::RegularFile => true,
                // A file system that does not say in the listing.
                FileType::Unknown => {
                    rustix::fs::statat(entries.fd()?, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|stat| {
                            FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
                        })
                }
                _ => false,
            };
            if is_file {
                names.insert(OsStr::from_bytes(entry.file_name().to_bytes()).to_owned());
            }
        }
        Ok(names)
    }

    /// Opens a directory of the workspace to create, rename and remove its
    /// entries.
    pub fn open_dir(&self, path: &Path) -> io::Result<Arc<ContainedDir>> {
        let fd = self.open_beneath(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC)?;
        Ok(Arc::new(ContainedDir::new(fd, path.to_path_buf())))
    }

    /// The directory a resolved path is an entry of, open, and the entry's
    /// name: where a write of that path happens.
    pub fn parent_dir(&self, path: &Path) -> io::Result<(Arc<ContainedDir>, OsString)> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} has no parent directory", path.display()),
            ));
        };
        Ok((self.open_dir(parent)?, name.to_owned()))
    }

    /// Creates `dir` (a resolved path) and its missing parents beneath the
    /// root; returns the directories it created, outermost first.
    pub fn create_dir_all(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let relative = self.inside(dir)?;
        let mut created = Vec::new();
        let mut current = self.root.clone();
        let mut parent = self.open_dir(&self.root)?;
        for component in relative.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            current.push(name);
            if parent.make_dir(name)? {
                created.push(current.clone());
            }
            parent = self.open_dir(&current)?;
        }
        Ok(created)
    }

    /// Removes the empty directory `dir` (a resolved path) beneath the root.
    pub fn remove_empty_dir(&self, dir: &Path) -> io::Result<()> {
        let (parent, name) = self.parent_dir(dir)?;
        parent.remove_empty_dir(&name)
    }

    /// Removes the file `path` (a resolved path) beneath the root.
    pub fn remove_file(&self, path: &Path) -> io::Result<()> {
        let (parent, name) = self.parent_dir(path)?;
        parent.remove_entry(&name)
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The physical path `candidate` designates, if it lies inside the root.
    /// Relative candidates are taken from the root; absolute ones as they are.
    pub fn resolve(&self, candidate: &str) -> Result<PathBuf, PathError> {
        if candidate.contains('\0') {
            return Err(PathError::NullByte {
                path: candidate.to_owned(),
            });
        }
        if candidate.trim().is_empty() {
            return Err(PathError::Invalid {
                path: candidate.to_owned(),
            });
        }
        let joined = self.root.join(candidate);
        let lexical = normalize_lexically(&joined);
        let physical = resolve_physically(&lexical).map_err(|failure| match failure {
            Unresolvable::Loop => PathError::SymlinkLoop {
                path: candidate.to_owned(),
            },
            Unresolvable::Unreadable => PathError::Invalid {
                path: candidate.to_owned(),
            },
        })?;
        if physical.starts_with(&self.root) {
            return Ok(physical);
        }
        // Which error tells the user what to fix: the path as written already
        // pointed outside, or a symlink on the way took it there.
        if lexical.starts_with(&self.root) {
            Err(PathError::SymlinkEscape {
                path: candidate.to_owned(),
                resolved: physical.display().to_string(),
                root: self.root.display().to_string(),
            })
        } else {
            Err(PathError::OutsideWorkspace {
                path: candidate.to_owned(),
                root: self.root.display().to_string(),
            })
        }
    }

    /// `absolute` relative to the root, with `/` separators; `.` for the root
    /// itself. A path outside the root is returned whole (lossily as UTF-8).
    pub fn relative(&self, absolute: &Path) -> String {
        match absolute.strip_prefix(&self.root) {
            Ok(inside) => {
                let parts: Vec<String> = inside
                    .components()
                    .map(|part| part.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if parts.is_empty() {
                    ".".to_owned()
                } else {
                    parts.join("/")
                }
            }
            Err(_) => absolute.to_string_lossy().into_owned(),
        }
    }

    /// Resolves every path-like argument (see
    /// [`path_arguments`](crate::access::path_arguments)); the first failure
    /// is returned.
    pub fn check_arguments(&self, args: &Value) -> Result<(), PathError> {
        crate::access::path_arguments(args)
            .into_iter()
            .try_for_each(|path| self.resolve(path).map(drop))
    }
}

/// Removes `.` and folds `..` into its parent without touching the disk.
/// `..` at the filesystem root stays at the root, as the kernel does.
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut normalized = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normalized.pop();
            }
            other => normalized.push(other.as_os_str()),
        }
    }
    normalized
}

enum Unresolvable {
    Loop,
    Unreadable,
}

/// Follows every symlink on `absolute` (which must be absolute), including a
/// dangling last component, whose target is where a write would land.
fn resolve_physically(absolute: &Path) -> Result<PathBuf, Unresolvable> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let mut resolved = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => resolved.push(component.as_os_str()),
            other => pending.push_back(other.as_os_str().to_owned()),
        }
    }
    let mut hops = 0;
    while let Some(name) = pending.pop_front() {
        if name == "." {
            continue;
        }
        if name == ".." {
            // `resolved` never ends in a symlink, so its parent is the real one.
            resolved.pop();
            continue;
        }
        let next = resolved.join(&name);
        let Ok(metadata) = fs::symlink_metadata(&next) else {
            // Missing (or unreadable, which the tool cannot open either): from
            // here on nothing exists, so the rest is appended as written.
            resolved = next;
            continue;
        };
        if !metadata.file_type().is_symlink() {
            resolved = next;
            continue;
        }
        hops += 1;
        if hops > MAX_SYMLINK_HOPS {
            return Err(Unresolvable::Loop);
        }
        // lstat said symlink but it cannot be read: replaced under our feet.
        let target = fs::read_link(&next).map_err(|_| Unresolvable::Unreadable)?;
        if target.has_root() {
            resolved = PathBuf::new();
        }
        let mut target_parts: Vec<OsString> = Vec::new();
        for component in target.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => resolved.push(component.as_os_str()),
                other => target_parts.push(other.as_os_str().to_owned()),
            }
        }
        for part in target_parts.into_iter().rev() {
            pending.push_front(part);
        }
    }
    Ok(resolved)
}
