//! The memory index kept between processes: one file per memory root and
//! agent in the bridge's state directory, `memory-index/<hash>.idx` (the
//! hash of the layout kind, the canonical root and the agent), so the
//! first search of a fresh process reads only the notes that changed
//! instead of all of them (docs/mcp-servers.md, "The index file").
//!
//! The file is a cache and never trusted further than its checks: a note
//! is taken from it only when the walk finds the note with the same
//! stamp (size, inode, modification and change time) and it was read at
//! least two seconds after its last change; anything else about it
//! (another version, a bad checksum, a foreign owner, a symlink in its
//! place, a size over [`MAX_FILE_BYTES`]) and the notes are read again.
//! It is written beside its name and renamed over it through a held handle
//! of the directory (bridge-policy's `ContainedDir::stage`), mode 0600, in
//! a directory of mode 0700; never through a symlink planted in its place.

use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bridge_policy::WorkspaceRoot;
use bridge_policy::paths::ContainedDir;
use bridge_util::sync::lock;

use super::format::{Identity, checksum, decode, encode};
use super::index::{Cache, Doc, Index, Snapshot, Vocabulary};
use super::layout::{LayoutKind, MemoryLayout};

/// The directory of index files in the state directory.
pub const INDEX_DIR: &str = "memory-index";
/// Larger index files are neither read nor written (10,000 notes of a
/// kilobyte make about 12 MB).
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;
/// The background save runs at most this often: the file only spares the
/// next process some reads, it need not follow every edit.
const SAVE_INTERVAL: Duration = Duration::from_secs(5);
/// A temp file this old is no save in progress.
const STALE_TEMP: Duration = Duration::from_secs(600);

/// Where one memory's index is kept.
#[derive(Debug)]
pub struct IndexFile {
    dir: PathBuf,
    kind: u8,
    agent: String,
}

/// An index file's content, checked, and the snapshot of its notes.
#[derive(Debug)]
pub struct Loaded {
    pub vocabulary: Vocabulary,
    pub docs: Cache,
    pub snapshot: Snapshot,
}

/// What to write: taken from the index under its lock, written without it.
#[derive(Debug)]
pub struct SaveJob {
    pub file: Arc<IndexFile>,
    /// The canonical memory root.
    pub root: PathBuf,
    pub vocabulary: Vec<Arc<str>>,
    /// Sorted by name, every one settled.
    pub docs: Vec<Arc<Doc>>,
}

impl IndexFile {
    /// The index of `layout`'s memory in `state_dir`.
    pub fn new(state_dir: &Path, layout: &MemoryLayout) -> Self {
        Self {
            dir: state_dir.join(INDEX_DIR),
            kind: match layout.kind {
                LayoutKind::Workspace => 0,
                LayoutKind::MemoryDir => 1,
            },
            agent: layout.agent_id.clone().unwrap_or_default(),
        }
    }

    fn identity(&self, root: &Path) -> Identity {
        Identity {
            kind: self.kind,
            root: root.as_os_str().as_bytes().to_vec(),
            agent: self.agent.clone(),
        }
    }

    /// The file's name for the canonical `root`.
    fn name(&self, root: &Path) -> String {
        let identity = self.identity(root);
        let mut key = vec![identity.kind];
        key.extend_from_slice(&identity.root);
        key.push(0);
        key.extend_from_slice(identity.agent.as_bytes());
        format!("{:016x}{:016x}.idx", checksum(&key, 1), checksum(&key, 2))
    }

    /// Where the index of the memory rooted at `root` is (or would be).
    pub fn path_for(&self, root: &Path) -> io::Result<PathBuf> {
        Ok(self.dir.join(self.name(&std::fs::canonicalize(root)?)))
    }

    /// The kept index of `layout`'s memory, when there is a usable one.
    pub fn load(&self, layout: &MemoryLayout) -> Option<Loaded> {
        let root = std::fs::canonicalize(&layout.root).ok()?;
        let name = self.name(&root);
        let bytes = match self.read(&name) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(err) => {
                tracing::debug!(dir = %self.dir.display(), %name, %err, "memory index not read; reading the notes");
                return None;
            }
        };
        match decode(&bytes, &self.identity(&root)) {
            Ok((vocabulary, docs, by_name)) => Some(Loaded {
                snapshot: Snapshot::build(by_name, vocabulary.len(), None),
                vocabulary,
                docs,
            }),
            Err(err) => {
                tracing::debug!(dir = %self.dir.display(), %name, %err, "memory index not used; reading the notes");
                None
            }
        }
    }

    /// The file's bytes; `None` when there is none (or no directory).
    fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let dir = match self.open_dir() {
            Ok(dir) => dir,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        // Not followed if a symlink, and a FIFO does not block the read.
        let file = match dir.open_entry(name.as_ref()) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        let meta = file.metadata()?;
        if !meta.is_file() || meta.uid() != rustix::process::geteuid().as_raw() {
            return Err(io::Error::other("not a regular file of this user"));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(io::Error::other(format!(
                "{} bytes, over the {MAX_FILE_BYTES} an index may have",
                meta.len()
            )));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(io::Error::other("grew past the size an index may have"));
        }
        Ok(Some(bytes))
    }

    /// The directory, held open; only when it is this user's and nobody
    /// else may write in it (who can, can forge an index).
    fn open_dir(&self) -> io::Result<Arc<ContainedDir>> {
        let root = WorkspaceRoot::new(&self.dir).map_err(|err| match self.dir.exists() {
            true => io::Error::other(err.to_string()),
            false => io::Error::new(io::ErrorKind::NotFound, err.to_string()),
        })?;
        let dir = root.open_dir(root.path())?;
        let meta = dir
            .entry_metadata(".".as_ref())?
            .ok_or_else(|| io::Error::other("the directory vanished"))?;
        if meta.uid() != rustix::process::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
            return Err(io::Error::other(format!(
                "{} is not a private directory of this user",
                self.dir.display()
            )));
        }
        Ok(dir)
    }

    /// Writes `job` atomically, mode 0600 (the directory created 0700).
    pub fn save(&self, job: &SaveJob) -> io::Result<()> {
        // Never through a symlink planted at the index's directory.
        bridge_util::owner_only::ensure_private_subdir(&self.dir)?;
        let dir = self.open_dir()?;
        let bytes = encode(&self.identity(&job.root), &job.vocabulary, &job.docs);
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(io::Error::other(format!(
                "{} bytes, over the {MAX_FILE_BYTES} an index may have",
                bytes.len()
            )));
        }
        let name = self.name(&job.root);
        dir.stage(
            name.as_ref(),
            &bytes,
            Some(std::fs::Permissions::from_mode(
                bridge_util::owner_only::FILE_MODE,
            )),
        )?
        .commit()?;
        self.sweep(&dir);
        Ok(())
    }

    /// Removes temp files a process killed while saving left behind
    /// (`ContainedDir::stage` names them `.bridge-write-….tmp`); old ones
    /// only, as another process may be writing one now.
    fn sweep(&self, dir: &ContainedDir) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let temp = name
                .to_str()
                .is_some_and(|name| name.starts_with(".bridge-write-") && name.ends_with(".tmp"));
            let stale = |meta: std::fs::Metadata| {
                meta.modified()
                    .ok()
                    .and_then(|modified| modified.elapsed().ok())
                    .is_some_and(|age| age > STALE_TEMP)
            };
            if temp && dir.entry_metadata(&name).ok().flatten().is_some_and(stale) {
                let _ = dir.remove_entry(&name);
            }
        }
    }
}

impl SaveJob {
    /// Saves, logging a failure (the index is only a cache).
    pub fn run(&self) -> io::Result<()> {
        let saved = self.file.save(self);
        if let Err(err) = &saved {
            tracing::debug!(dir = %self.file.dir.display(), %err, "memory index not saved");
        }
        saved
    }
}

/// Saves an index on a thread of its own, at most every [`SAVE_INTERVAL`],
/// so a search never waits for the write.
#[derive(Debug, Default)]
pub struct Saver {
    state: Mutex<SaverState>,
    /// Held from taking a save job to the end of its write, so a forced
    /// save ([`Saver::save_now`]) and the thread's never write out of order.
    writing: Mutex<()>,
}

#[derive(Debug, Default)]
struct SaverState {
    running: bool,
    last: Option<Instant>,
}

impl Saver {
    /// Makes sure `index`'s unsaved changes get saved. Call without
    /// holding the index's lock.
    pub fn schedule(self: &Arc<Self>, index: &Arc<Mutex<Index>>) {
        let mut state = lock(&self.state);
        // The running thread looks for more before it stops.
        if state.running {
            return;
        }
        let wait = state.last.map_or(Duration::ZERO, |last| {
            SAVE_INTERVAL.saturating_sub(last.elapsed())
        });
        // The index is held until saved, even when its server is dropped
        // meanwhile: the next process still gains from the file.
        let (saver, index) = (Arc::clone(self), Arc::clone(index));
        let spawned = std::thread::Builder::new()
            .name("memory-index-save".to_owned())
            .spawn(move || saver.run(&index, wait));
        state.running = spawned.is_ok();
    }

    /// Saves `index` now, changed or not, on the calling thread; `None`
    /// when it has no file or nothing searched yet.
    pub fn save_now(&self, index: &Mutex<Index>) -> Option<(SaveJob, io::Result<()>)> {
        let _writing = lock(&self.writing);
        let job = lock(index).take_save(true)?;
        let saved = job.run();
        Some((job, saved))
    }

    fn run(&self, index: &Mutex<Index>, mut wait: Duration) {
        loop {
            std::thread::sleep(wait);
            {
                let _writing = lock(&self.writing);
                let job = lock(index).take_save(false);
                if let Some(job) = job {
                    let _ = job.run();
                    lock(&self.state).last = Some(Instant::now());
                }
            }
            // The state's lock first, as `schedule` takes it: a change
            // noted after this look schedules a thread of its own.
            let mut state = lock(&self.state);
            if !lock(index).unsaved() {
                state.running = false;
                return;
            }
            wait = SAVE_INTERVAL;
        }
    }
}
