//! Writing an agent's configuration safely: a backup before any change,
//! and the new text renamed over the old, never half written.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::exit::Failure;

/// The text of `file`, `None` when it does not exist.
pub fn read_if_present(file: &Path) -> Result<Option<String>, Failure> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(Failure::internal(format!(
            "cannot read {}: {err}",
            file.display()
        ))),
    }
}

/// Copies `old` to `<file>.bak-<UTC timestamp>` (a fresh name, never
/// overwriting an earlier backup).
pub fn back_up(file: &Path, old: &str) -> Result<PathBuf, Failure> {
    let stamp: String = bridge_policy::audit::now_timestamp()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let base = format!("{}.bak-{stamp}", file.display());
    let mut candidate = PathBuf::from(&base);
    let mut n = 1;
    loop {
        // Owner-only until it has the original's mode: it holds the same
        // secrets (a gateway token, say).
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&candidate);
        match created {
            Ok(mut backup) => {
                copy_permissions(file, &candidate);
                backup.write_all(old.as_bytes()).map_err(|err| {
                    Failure::internal(format!(
                        "cannot write the backup {}: {err}",
                        candidate.display()
                    ))
                })?;
                return Ok(candidate);
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                candidate = PathBuf::from(format!("{base}-{n}"));
                n += 1;
            }
            Err(err) => {
                return Err(Failure::internal(format!(
                    "cannot create the backup {}: {err}; nothing was changed",
                    candidate.display()
                )));
            }
        }
    }
}

/// Writes a temporary file beside `file` and renames it over `file` (the
/// target of `file` when it is a symlink, so the link stays), with the
/// mode `file` had (0600 for a new file).
pub fn write_atomically(file: &Path, contents: &str) -> Result<(), Failure> {
    replace(file, contents, None)
}

/// [`write_atomically`] for a file of secrets: mode 0600 whatever it had.
pub fn write_private(file: &Path, contents: &str) -> Result<(), Failure> {
    replace(file, contents, Some(0o600))
}

fn replace(file: &Path, contents: &str, mode: Option<u32>) -> Result<(), Failure> {
    let target = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let dir = target
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir)
        .map_err(|err| Failure::internal(format!("cannot create {}: {err}", dir.display())))?;
    let file_name = target.file_name().map_or_else(
        || "config.json".to_owned(),
        |name| name.to_string_lossy().into_owned(),
    );
    let temporary = dir.join(format!(".{file_name}.tmp-{}", std::process::id()));
    let failed = |what: &str, err: std::io::Error| {
        let _ = std::fs::remove_file(&temporary);
        Failure::internal(format!("cannot {what} {}: {err}", target.display()))
    };
    {
        // A leftover of a crashed run goes; the new one is made, never
        // followed (a planted symlink is not written through), owner-only
        // from the start.
        let _ = std::fs::remove_file(&temporary);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(|err| failed("write", err))?;
        out.write_all(contents.as_bytes())
            .map_err(|err| failed("write", err))?;
        out.sync_all().map_err(|err| failed("write", err))?;
    }
    match mode {
        Some(mode) => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(mode))
                .map_err(|err| failed("write", err))?;
        }
        // The configuration keeps its mode; a new one stays owner-only.
        None if target.exists() => copy_permissions(&target, &temporary),
        None => {}
    }
    std::fs::rename(&temporary, &target).map_err(|err| failed("replace", err))
}

fn copy_permissions(from: &Path, to: &Path) {
    if let Ok(metadata) = std::fs::metadata(from) {
        let _ = std::fs::set_permissions(to, metadata.permissions());
    }
}
