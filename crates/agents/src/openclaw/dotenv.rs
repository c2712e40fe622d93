//! One `KEY=value` line in OpenClaw's `<state>/.env` (which OpenClaw loads
//! into its environment at start, never over a variable already set): set,
//! or taken out, the other lines left as they were. The file holds a
//! secret, so it is written atomically and left mode 0600.

use std::path::Path;

use crate::error::AgentsError;
use crate::json_edit::{read_if_present, write_private};

/// Sets `key` to `value` (one line, where the first assignment was; any
/// other assignment of it goes, since the last one would win): whether
/// the file changed.
pub fn set(file: &Path, key: &str, value: &str) -> Result<bool, AgentsError> {
    let old = read_if_present(file)?.unwrap_or_default();
    let wanted = format!("{key}={value}");
    let mut lines: Vec<&str> = Vec::new();
    let mut placed = false;
    for line in old.lines() {
        if !assigns(line, key) {
            lines.push(line);
        } else if !placed {
            lines.push(&wanted);
            placed = true;
        }
    }
    if !placed {
        lines.push(&wanted);
    }
    let mut text = lines.join("\n");
    text.push('\n');
    if text == old {
        return Ok(false);
    }
    write(file, &lines)?;
    Ok(true)
}

/// Takes every assignment of `key` out: whether the file changed. A file
/// left with nothing in it is removed.
pub fn remove(file: &Path, key: &str) -> Result<bool, AgentsError> {
    let Some(old) = read_if_present(file)? else {
        return Ok(false);
    };
    let lines: Vec<&str> = old.lines().filter(|line| !assigns(line, key)).collect();
    if lines.len() == old.lines().count() {
        return Ok(false);
    }
    if lines.iter().all(|line| line.trim().is_empty()) {
        std::fs::remove_file(file).map_err(|source| AgentsError::Remove {
            path: file.to_owned(),
            source,
        })?;
        return Ok(true);
    }
    write(file, &lines)?;
    Ok(true)
}

/// Whether the `.env` text `text` sets `key` to exactly `value` (its last
/// assignment, the one that counts).
pub fn holds(text: &str, key: &str, value: &str) -> bool {
    let wanted = format!("{key}={value}");
    text.lines()
        .rfind(|line| assigns(line, key))
        .is_some_and(|line| line.trim() == wanted)
}

/// Whether `line` assigns `key` (`KEY=…` or `export KEY=…`).
fn assigns(line: &str, key: &str) -> bool {
    let line = line.trim_start();
    let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
    line.strip_prefix(key)
        .is_some_and(|rest| rest.trim_start().starts_with('='))
}

fn write(file: &Path, lines: &[&str]) -> Result<(), AgentsError> {
    let mut text = lines.join("\n");
    text.push('\n');
    write_private(file, &text)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn sets_replaces_and_removes_one_line_keeping_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".env");
        std::fs::write(&file, "# mine\nOTHER=1\nexport TOKEN_X=old\n").unwrap();
        assert!(set(&file, "TOKEN_X", "new").unwrap());
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "# mine\nOTHER=1\nTOKEN_X=new\n"
        );
        assert!(!set(&file, "TOKEN_X", "new").unwrap(), "nothing to change");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A longer name sharing the prefix is another variable.
        assert!(set(&file, "TOKEN", "t").unwrap());
        assert!(remove(&file, "TOKEN_X").unwrap());
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "# mine\nOTHER=1\nTOKEN=t\n"
        );
        assert!(!remove(&file, "TOKEN_X").unwrap());
    }

    #[test]
    fn a_key_assigned_twice_ends_up_assigned_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".env");
        std::fs::write(&file, "TOKEN_X=a\nOTHER=1\nTOKEN_X=b\n").unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(holds(&text, "TOKEN_X", "b") && !holds(&text, "TOKEN_X", "a"));
        assert!(set(&file, "TOKEN_X", "c").unwrap());
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "TOKEN_X=c\nOTHER=1\n"
        );
        assert!(!set(&file, "TOKEN_X", "c").unwrap());
    }

    #[test]
    fn a_file_left_empty_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".env");
        assert!(set(&file, "TOKEN_X", "v").unwrap());
        assert!(remove(&file, "TOKEN_X").unwrap());
        assert!(!file.exists());
    }
}
