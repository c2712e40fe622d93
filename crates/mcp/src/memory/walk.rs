//! Which notes exist and what their `stat` says: the walk of a memory root
//! that every index refresh starts from. Symlinked files are taken only
//! when they resolve inside the root; symlinked directories and hidden
//! entries are not followed.

use std::fs::Metadata;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawMode};

use super::layout::MemoryLayout;
use super::watch::Watcher;
use bridge_policy::WorkspaceRoot;

/// How deep the walk goes below the root (a guard against odd trees).
const MAX_WALK_DEPTH: usize = 16;

/// What one `stat` of a note says; a note whose stamp is unchanged is not
/// read again. The inode catches a file replaced by one of the same size
/// and modification time (`cp -p`, `rsync`), the change time a
/// modification time set back (`touch -d`): neither can be set by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub inode: u64,
    /// Modification time: seconds and nanoseconds since the Unix epoch.
    pub modified: (i64, u32),
    /// Status change time, the same way.
    pub changed: (i64, u32),
}

impl Stamp {
    pub fn of(metadata: &Metadata) -> Self {
        let nanos = |n: i64| u32::try_from(n).unwrap_or(0);
        Self {
            size: metadata.len(),
            inode: metadata.ino(),
            modified: (metadata.mtime(), nanos(metadata.mtime_nsec())),
            changed: (metadata.ctime(), nanos(metadata.ctime_nsec())),
        }
    }

    /// The same from a `stat` the walk made itself.
    // The fields' types differ between architectures: casts that are
    // no-ops on one are needed on another.
    #[allow(clippy::unnecessary_cast)]
    pub fn of_stat(stat: &rustix::fs::Stat) -> Self {
        Self {
            size: stat.st_size as u64,
            inode: stat.st_ino as u64,
            modified: (stat.st_mtime as i64, stat.st_mtime_nsec as u32),
            changed: (stat.st_ctime as i64, stat.st_ctime_nsec as u32),
        }
    }

    /// The later of the two times, in nanoseconds since the epoch.
    pub fn latest_nanos(&self) -> i128 {
        let nanos =
            |(secs, nanos): (i64, u32)| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        nanos(self.modified).max(nanos(self.changed))
    }
}

/// A note the walk found.
#[derive(Debug)]
pub struct Found {
    /// Relative to the memory root, `/`-separated.
    pub name: String,
    /// Where a symlinked note is read: its target, inside the root
    /// (`None`: the note is a file at its name).
    pub target: Option<PathBuf>,
    pub stamp: Stamp,
}

/// Below this many notes the `stat`s are not worth a second thread.
const PARALLEL_STATS: usize = 512;

/// Every note of the layout, and the root's handle to read them through.
/// Also returns whether every directory walked (and every symlinked note's
/// target) is now watched.
pub fn walk_notes(
    layout: &MemoryLayout,
    watcher: Option<&Watcher>,
) -> (Option<WorkspaceRoot>, Vec<Found>, bool) {
    let Ok(workspace) = WorkspaceRoot::new(&layout.root) else {
        return (None, Vec::new(), false);
    };
    let mut walk = Walk {
        found: Vec::new(),
        dirs: Vec::new(),
        pending: Vec::new(),
        watcher,
        fully_watched: watcher.is_some(),
        workspace: workspace.clone(),
    };
    let root = workspace.path().to_path_buf();
    walk.watch(&root);
    let scopes = layout.note_scopes();
    for name in scopes.top_files {
        walk.consider(&root, &root.join(name), name.to_owned());
    }
    if let Some(directory) = scopes.directory {
        let start = if directory.is_empty() {
            root.clone()
        } else {
            root.join(directory)
        };
        let prefix = if directory.is_empty() {
            String::new()
        } else {
            format!("{directory}/")
        };
        if start.is_dir() && !start.is_symlink() {
            let opened = rustix::fs::open(
                &start,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            );
            if let Ok(fd) = opened {
                walk.dir(&root, fd, start, &prefix, 0);
            }
        }
    }
    walk.stat_pending();
    (Some(workspace), walk.found, walk.fully_watched)
}

/// A file of a directory the walk read, to `stat` relative to it.
struct Pending {
    /// Index in `Walk::dirs`.
    dir: usize,
    /// The note's name; its last `file_name_len` bytes are the entry's.
    name: String,
    file_name_len: usize,
}

struct Walk<'a> {
    found: Vec<Found>,
    /// Every directory read, held open: its files are `stat`ed relative
    /// to it, with no path walk from the root for each.
    dirs: Vec<OwnedFd>,
    pending: Vec<Pending>,
    watcher: Option<&'a Watcher>,
    fully_watched: bool,
    /// Symlinked notes are followed only to targets inside it.
    workspace: WorkspaceRoot,
}

impl Walk<'_> {
    fn watch(&mut self, path: &Path) {
        if let Some(watcher) = self.watcher {
            self.fully_watched &= watcher.watch(path);
        }
    }

    /// Reads the directory `fd` (at `path`); its regular notes wait in
    /// `pending` for their `stat`, subdirectories are read in turn.
    fn dir(&mut self, root: &Path, fd: OwnedFd, path: PathBuf, prefix: &str, depth: usize) {
        // Watched before it is read: a change during the walk is an event.
        self.watch(&path);
        let Ok(entries) = rustix::fs::Dir::read_from(&fd) else {
            return;
        };
        let index = self.dirs.len();
        self.dirs.push(fd);
        for entry in entries.flatten() {
            let Ok(file_name) = entry.file_name().to_str() else {
                continue;
            };
            if file_name.starts_with('.') {
                continue;
            }
            let kind = match entry.file_type() {
                // A file system that does not say in the listing.
                FileType::Unknown => match rustix::fs::statat(
                    &self.dirs[index],
                    file_name,
                    AtFlags::SYMLINK_NOFOLLOW,
                ) {
                    Ok(stat) => FileType::from_raw_mode(stat.st_mode as RawMode),
                    Err(_) => continue,
                },
                kind => kind,
            };
            let name = format!("{prefix}{file_name}");
            match kind {
                FileType::Directory if depth < MAX_WALK_DEPTH => {
                    let opened = rustix::fs::openat(
                        &self.dirs[index],
                        file_name,
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                    );
                    if let Ok(sub) = opened {
                        let sub_path = path.join(file_name);
                        self.dir(root, sub, sub_path, &format!("{name}/"), depth + 1);
                    }
                }
                FileType::RegularFile if is_markdown(file_name) => {
                    self.pending.push(Pending {
                        dir: index,
                        file_name_len: file_name.len(),
                        name,
                    });
                }
                FileType::Symlink if is_markdown(file_name) => {
                    self.consider(root, &path.join(file_name), name);
                }
                _ => {}
            }
        }
    }

    /// The `stat` of every pending note, split over two threads when there
    /// are many: on a large memory they are most of a walk's time.
    fn stat_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let dirs = &self.dirs;
        let stat_all = |part: &[Pending]| -> Vec<Option<Stamp>> {
            part.iter()
                .map(|note| {
                    let file_name = &note.name[note.name.len() - note.file_name_len..];
                    let stat =
                        rustix::fs::statat(&dirs[note.dir], file_name, AtFlags::SYMLINK_NOFOLLOW)
                            .ok()?;
                    // Replaced by something else since the listing: not a note.
                    (FileType::from_raw_mode(stat.st_mode as RawMode) == FileType::RegularFile)
                        .then(|| Stamp::of_stat(&stat))
                })
                .collect()
        };
        let stamps = if pending.len() < PARALLEL_STATS {
            stat_all(&pending)
        } else {
            let (first, second) = pending.split_at(pending.len() / 2);
            std::thread::scope(|scope| {
                let helper = std::thread::Builder::new()
                    .name("memory-walk".to_owned())
                    .spawn_scoped(scope, || stat_all(second));
                let mut stamps = stat_all(first);
                match helper.map(|helper| helper.join()) {
                    Ok(Ok(rest)) => stamps.extend(rest),
                    // No thread to spare (or it died): here, then.
                    _ => stamps.extend(stat_all(second)),
                }
                stamps
            })
        };
        for (note, stamp) in pending.into_iter().zip(stamps) {
            if let Some(stamp) = stamp {
                self.found.push(Found {
                    name: note.name,
                    target: None,
                    stamp,
                });
            }
        }
    }

    fn consider(&mut self, root: &Path, path: &Path, name: String) {
        let Ok(link) = std::fs::symlink_metadata(path) else {
            return;
        };
        // A symlinked note is read at its target, which must lie inside.
        let (target, metadata) = if link.file_type().is_symlink() {
            let Some(target) = path
                .strip_prefix(root)
                .ok()
                .and_then(Path::to_str)
                .and_then(|relative| self.workspace.resolve(relative).ok())
            else {
                return;
            };
            // Edits to the target do not touch the link's directory.
            self.watch(&target);
            match self.workspace.metadata(&target) {
                Ok(metadata) => (Some(target), metadata),
                Err(_) => return,
            }
        } else {
            (None, link)
        };
        if metadata.is_file() {
            self.found.push(Found {
                name,
                target,
                stamp: Stamp::of(&metadata),
            });
        }
    }
}

fn is_markdown(file_name: &str) -> bool {
    Path::new(file_name)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("md"))
}
