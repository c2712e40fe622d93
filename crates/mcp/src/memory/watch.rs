//! Change detection for the note cache: an inotify instance watching every
//! directory the last walk went through (and the targets of symlinked
//! notes). While nothing has happened there since, a search reuses the last
//! index without `stat`ing thousands of notes; any event (or a watch that
//! could not be added, or a full event queue) means "walk again".

use std::io::Read;
use std::path::Path;

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};

/// An inotify instance, read without blocking.
#[derive(Debug)]
pub struct Watcher {
    events: std::fs::File,
}

impl Watcher {
    /// `None` when inotify is unavailable: every search then walks.
    pub fn new() -> Option<Self> {
        inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)
            .ok()
            .map(|fd| Self {
                events: std::fs::File::from(fd),
            })
    }

    /// Watches `path` for changes to itself or its entries. Adding a watch
    /// that exists is a no-op for the kernel. `false` when it failed (the
    /// per-user watch limit, a vanished path): the caller must not trust
    /// the cache without a walk then.
    pub fn watch(&self, path: &Path) -> bool {
        let flags = WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO;
        inotify::add_watch(&self.events, path, flags).is_ok()
    }

    /// Whether anything changed since the last call (drains the queue).
    pub fn changed(&mut self) -> bool {
        let mut buffer = [0u8; 8192];
        let mut any = false;
        loop {
            match self.events.read(&mut buffer) {
                Ok(0) => return any,
                Ok(_) => any = true,
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return any,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return true,
            }
        }
    }
}
