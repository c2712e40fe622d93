//! The symlink swap race, for tests of the filesystem boundary: inside a
//! workspace, `sub/` is a real directory and `swap` a symlink to a directory
//! outside it; a thread exchanges the two names (`renameat2` with
//! `RENAME_EXCHANGE`, atomic) as fast as it can, so `sub/f.md` leads
//! outside about half of the time. A door that checks a path and then opens
//! it by name reads, lists and writes outside the workspace under this race.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use rustix::fs::{Mode, OFlags, RenameFlags};
use tempfile::TempDir;

/// What the outside files hold: any result containing it leaked.
pub const OUTSIDE_MARKER: &str = "OUTSIDE-SECRET-7c1e";
/// Text both `f.md` files contain, so an edit of `INSIDE` would succeed on
/// either one.
pub const SHARED_TEXT: &str = "INSIDE";

/// A running swap race; stop it with [`SwapRace::stop`].
pub struct SwapRace {
    outside: TempDir,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
}

impl SwapRace {
    /// Lays out `sub/f.md` (inside: `INSIDE`), the outside directory
    /// (`f.md`: `INSIDE OUTSIDE-SECRET-…`, `outside-only.md`) and the
    /// `swap` symlink to it in `workspace`, and starts swapping.
    pub fn start(workspace: &Path) -> Self {
        let outside = tempfile::Builder::new()
            .prefix("bridge-outside-")
            .tempdir()
            .unwrap_or_else(|err| panic!("cannot create the outside directory: {err}"));
        fs::write(
            outside.path().join("f.md"),
            format!("{SHARED_TEXT} {OUTSIDE_MARKER}\n"),
        )
        .unwrap_or_else(|err| panic!("{err}"));
        fs::write(outside.path().join("outside-only.md"), OUTSIDE_MARKER)
            .unwrap_or_else(|err| panic!("{err}"));
        fs::create_dir_all(workspace.join("sub")).unwrap_or_else(|err| panic!("{err}"));
        fs::write(workspace.join("sub/f.md"), format!("{SHARED_TEXT}\n"))
            .unwrap_or_else(|err| panic!("{err}"));
        std::os::unix::fs::symlink(outside.path(), workspace.join("swap"))
            .unwrap_or_else(|err| panic!("{err}"));
        let dir: OwnedFd = rustix::fs::open(
            workspace,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap_or_else(|err| panic!("cannot open the workspace: {err}"));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let stop = stop.clone();
            move || {
                let mut swaps = 0_u64;
                while !stop.load(Ordering::Relaxed) {
                    if rustix::fs::renameat_with(&dir, "sub", &dir, "swap", RenameFlags::EXCHANGE)
                        .is_ok()
                    {
                        swaps += 1;
                    }
                }
                // Leave `sub` the real directory again.
                if swaps % 2 == 1 {
                    let _ =
                        rustix::fs::renameat_with(&dir, "sub", &dir, "swap", RenameFlags::EXCHANGE);
                }
                swaps
            }
        });
        Self {
            outside,
            stop,
            thread: Some(thread),
        }
    }

    /// The directory outside the workspace.
    pub fn outside(&self) -> &Path {
        self.outside.path()
    }

    /// Stops swapping; returns how many swaps were made.
    pub fn stop(&mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .map_or(0, |thread| thread.join().unwrap_or(0))
    }

    /// Panics unless the outside directory holds exactly what it started
    /// with: nothing written, created or changed there.
    pub fn assert_outside_untouched(&self) {
        let mut names: Vec<String> = fs::read_dir(self.outside.path())
            .unwrap_or_else(|err| panic!("{err}"))
            .map(|entry| {
                entry
                    .unwrap_or_else(|err| panic!("{err}"))
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["f.md", "outside-only.md"],
            "files appeared outside the workspace"
        );
        let text = fs::read_to_string(self.outside.path().join("f.md"))
            .unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(
            text,
            format!("{SHARED_TEXT} {OUTSIDE_MARKER}\n"),
            "a file outside the workspace was changed"
        );
    }
}

impl Drop for SwapRace {
    fn drop(&mut self) {
        self.stop();
    }
}
