//! A scan of git configuration files for the settings with which a git
//! command that only reads would run a program or read outside the
//! workspace. Not here: what the shell tool overrides in git's environment
//! for every command (`core.fsmonitor`, `core.pager`, `core.hooksPath`,
//! `core.sshCommand`, `credential.helper`), which wins over any file.

use std::io::Read;
use std::path::Path;

/// Larger configuration files are not scanned, and not trusted.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Why the configuration file at `path` makes reading git unsafe, if it does.
pub(super) fn reason(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    let read = file.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text);
    if read.is_err() || text.len() as u64 > MAX_CONFIG_BYTES {
        return Some(format!(
            "git configuration {} cannot be checked (too large or not text)",
            path.display()
        ));
    }
    let mut section = String::new();
    let mut shown_section = String::new();
    let mut continued = false;
    for raw_line in text.lines() {
        let line = raw_line.trim();
        let was_continued = continued;
        continued = line.ends_with('\\');
        if was_continued || line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        let mut entry = line;
        if let Some(header) = line.strip_prefix('[') {
            let Some((name, rest)) = header.split_once(']') else {
                continue;
            };
            // `[diff "x"]` and `[diff.x]`: the section is the first word,
            // the rest names a driver (kept for messages).
            let name = name.trim();
            let end = name
                .find(|c: char| c.is_whitespace() || c == '"' || c == '.')
                .unwrap_or(name.len());
            section = name[..end].to_ascii_lowercase();
            let subsection =
                name[end..].trim_matches(|c: char| c.is_whitespace() || c == '"' || c == '.');
            shown_section = if subsection.is_empty() {
                section.clone()
            } else {
                format!("{section}.{subsection}")
            };
            entry = rest.trim();
            if entry.is_empty() {
                continue;
            }
        }
        let (key, value) = match entry.split_once('=') {
            Some((key, value)) => (key.trim(), value.trim()),
            None => (entry, "true"),
        };
        let key = key.to_ascii_lowercase();
        if let Some(why) = dangerous_setting(&section, &key, value) {
            return Some(format!(
                "git configuration {} sets {shown_section}.{key}, which {why}",
                path.display()
            ));
        }
    }
    None
}

fn dangerous_setting(section: &str, key: &str, value: &str) -> Option<&'static str> {
    let disabled = matches!(
        value.trim_matches('"').to_ascii_lowercase().as_str(),
        "false" | "no" | "off" | "0" | ""
    );
    Some(match (section, key) {
        ("filter", "clean" | "smudge" | "process") => "runs a filter program on files",
        ("diff", "textconv" | "command" | "external") => "runs a diff program",
        ("core", "worktree") => "moves the work tree, possibly out of the workspace",
        ("log", "showsignature") if !disabled => "runs gpg",
        ("gpg", "program") => "names the program run to check signatures",
        ("include" | "includeif", "path") => "includes configuration from another file",
        ("blame", "ignorerevsfile") => "reads another file",
        ("mailmap", "file") => "reads another file",
        _ => return None,
    })
}
