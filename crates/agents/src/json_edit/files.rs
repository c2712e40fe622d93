//! Writing an agent's configuration safely: a backup before any change,
//! and the new text renamed over the old, never half written.

use std::io::Write;
use std::path::{Path, PathBuf};

use bridge_util::owner_only::{self, Replace};

use crate::error::AgentsError;

/// The text of `file`, `None` when it does not exist.
pub fn read_if_present(file: &Path) -> Result<Option<String>, AgentsError> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(AgentsError::Read {
            path: file.to_owned(),
            source,
        }),
    }
}

/// Copies `old` to `<file>.bak-<UTC timestamp>` (a fresh name, never
/// overwriting an earlier backup).
pub fn back_up(file: &Path, old: &str) -> Result<PathBuf, AgentsError> {
    back_up_as(file, &file.display().to_string(), old)
}

/// Copies `old` into `dir`, a directory of the state directory (created
/// owner-only if missing; the state directory must exist), named after
/// `file`'s whole path and the time: for files in a repository, whose
/// backups do not belong beside them.
pub fn back_up_into(dir: &Path, file: &Path, old: &str) -> Result<PathBuf, AgentsError> {
    owner_only::ensure_private_subdir(dir).map_err(|source| AgentsError::CreateBackup {
        path: dir.to_owned(),
        source,
    })?;
    let flat: String = file
        .display()
        .to_string()
        .trim_start_matches('/')
        .chars()
        .map(|c| if c == '/' { '%' } else { c })
        .collect();
    back_up_as(file, &dir.join(flat).display().to_string(), old)
}

/// Writes `old` to `<base>.bak-<UTC timestamp>`, a fresh name.
fn back_up_as(file: &Path, base: &str, old: &str) -> Result<PathBuf, AgentsError> {
    let stamp: String = bridge_util::time::now_timestamp()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let base = format!("{base}.bak-{stamp}");
    let mut candidate = PathBuf::from(&base);
    let mut n = 1;
    loop {
        // Owner-only until it has the original's mode: it holds the same
        // secrets (a gateway token, say).
        let created = owner_only::create_new(&candidate);
        match created {
            Ok(mut backup) => {
                copy_permissions(file, &candidate);
                backup
                    .write_all(old.as_bytes())
                    .map_err(|source| AgentsError::WriteBackup {
                        path: candidate.clone(),
                        source,
                    })?;
                return Ok(candidate);
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                candidate = PathBuf::from(format!("{base}-{n}"));
                n += 1;
            }
            Err(source) => {
                return Err(AgentsError::CreateBackup {
                    path: candidate,
                    source,
                });
            }
        }
    }
}

/// Replaces `file` atomically (the target of `file` when it is a symlink,
/// so the link stays), with the mode `file` had (0600 for a new file).
pub fn write_atomically(file: &Path, contents: &str) -> Result<(), AgentsError> {
    replace(file, contents, Replace::KeepingMode)
}

/// [`write_atomically`] for a file of secrets: mode 0600 whatever it had.
pub fn write_private(file: &Path, contents: &str) -> Result<(), AgentsError> {
    replace(file, contents, Replace::Private)
}

fn replace(file: &Path, contents: &str, how: Replace) -> Result<(), AgentsError> {
    owner_only::write_atomically(file, contents.as_bytes(), how).map_err(|source| {
        AgentsError::Write {
            path: file.to_owned(),
            source,
        }
    })
}

fn copy_permissions(from: &Path, to: &Path) {
    if let Ok(metadata) = std::fs::metadata(from) {
        let _ = std::fs::set_permissions(to, metadata.permissions());
    }
}
