//! What `install` wrote over what, so that `uninstall` gives a file back
//! byte for byte when it is still as `install` left it, and where the
//! backups go (the state directory's `backups/`: a repository's
//! `.claude/` is no place for them).
//!
//! The chain file keeps, per file (named as [`Layout::key_of`] names it),
//! `{"before": TEXT or null, "after": TEXT}`. A file edited since falls
//! back to taking our entries out and putting the user's hooks back as
//! JSON (other edits kept, formatting as the editor leaves it).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::Layout;
use crate::error::AgentsError;
use crate::json_edit::{back_up_into, write_atomically};

/// Notes that `file` goes from `before` to `after`; a file that is still
/// what an earlier install wrote keeps that install's `before`.
pub(super) fn record(
    chain: &mut Value,
    layout: &Layout,
    file: &Path,
    before: Option<&str>,
    after: &str,
) {
    let key = layout.key_of(file);
    let earlier = &chain["files"][key.as_str()];
    let before = match earlier["after"].as_str() {
        Some(wrote) if Some(wrote) == before => earlier["before"].clone(),
        _ => before.map_or(Value::Null, |text| json!(text)),
    };
    if !chain["files"].is_object() {
        chain["files"] = json!({});
    }
    chain["files"][key.as_str()] = json!({"before": before, "after": after});
}

/// What `file` was before install, when it is still exactly what install
/// wrote: `Some(None)` when it did not exist.
pub(super) fn original(
    chain: &Value,
    layout: &Layout,
    file: &Path,
    current: Option<&str>,
) -> Option<Option<String>> {
    let entry = &chain["files"][layout.key_of(file).as_str()];
    let wrote = entry["after"].as_str()?;
    if current != Some(wrote) {
        return None;
    }
    Some(entry["before"].as_str().map(str::to_owned))
}

/// The files the chain file has a record of.
pub(super) fn recorded(chain: &Value, layout: &Layout) -> Vec<PathBuf> {
    chain["files"]
        .as_object()
        .map(|files| files.keys().map(|key| layout.file_of(key)).collect())
        .unwrap_or_default()
}

/// Writes `text` to `file`, what was there (`old`) backed up into the
/// state directory `home` first: the backup's path.
pub(super) fn replace_file(
    home: &Path,
    file: &Path,
    old: Option<&str>,
    text: &str,
) -> Result<Option<PathBuf>, AgentsError> {
    let backup = match old {
        Some(old) => {
            bridge_util::owner_only::ensure_private_dir(home).map_err(|source| {
                AgentsError::CreateBackup {
                    path: home.to_owned(),
                    source,
                }
            })?;
            Some(back_up_into(&home.join("backups"), file, old)?)
        }
        None => None,
    };
    write_atomically(file, text)?;
    Ok(backup)
}
