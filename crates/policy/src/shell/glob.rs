//! Expansion of glob words the way bash expands them, so that every file a
//! glob hands to a read-only command is checked, not only the directory the
//! glob starts in (`*/file.txt` goes through symlinked directories, and
//! `s*/../../x` climbs out).

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::location::Cwd;
use super::words::{Segment, Word};

/// Directory entries examined per word before giving up.
const MAX_ENTRIES: usize = 10_000;

const GLOB_CHARS: [char; 4] = ['*', '?', '[', '{'];

/// The paths `word` expands to (as found, symlinks not yet followed); an
/// error says why the expansion cannot be known.
pub(crate) fn expand(word: &Word, cwd: &Cwd, home: Option<&Path>) -> Result<Vec<PathBuf>, String> {
    let pattern = pattern_of(word, home)?;
    let mut current: Vec<PathBuf> = if pattern.starts_with('/') {
        vec![PathBuf::from("/")]
    } else if cwd.unknown {
        return Err(format!(
            "glob in a directory that cannot be known: {}",
            word.display()
        ));
    } else {
        cwd.candidates.clone()
    };
    let mut scanned = 0;
    for component in pattern.split('/').filter(|part| !part.is_empty()) {
        if !has_glob(component) {
            let literal = unescape(component);
            current = current
                .into_iter()
                .map(|path| path.join(&literal))
                .collect();
            continue;
        }
        let matcher = compile(component)
            .map_err(|reason| format!("glob cannot be expanded: {}: {reason}", word.display()))?;
        let dotted = component.starts_with('.');
        let mut next = Vec::new();
        for directory in &current {
            // Older bash lets `.*` match `.` and `..`.
            for special in [".", ".."] {
                if dotted && matcher.is_match(special) {
                    next.push(directory.join(special));
                }
            }
            let Ok(entries) = std::fs::read_dir(directory) else {
                continue;
            };
            for entry in entries.flatten() {
                scanned += 1;
                if scanned > MAX_ENTRIES {
                    return Err(format!(
                        "glob matches too many files to check: {}",
                        word.display()
                    ));
                }
                let name = entry.file_name();
                let Some(text) = name.to_str() else {
                    // Not UTF-8: cannot be matched here, so counted in.
                    next.push(directory.join(&name));
                    continue;
                };
                if (dotted || !text.starts_with('.')) && matcher.is_match(text) {
                    next.push(directory.join(text));
                }
            }
        }
        current = next;
    }
    current.retain(|path| std::fs::symlink_metadata(path).is_ok());
    Ok(current)
}

/// The word as a glob pattern: quoted text has its glob characters escaped.
fn pattern_of(word: &Word, home: Option<&Path>) -> Result<String, String> {
    let mut pattern = String::new();
    for segment in &word.segments {
        match segment {
            Segment::Known { text, quoted: true } => pattern.push_str(&escape(text)),
            Segment::Known {
                text,
                quoted: false,
            } => pattern.push_str(text),
            Segment::Unknown => {
                return Err(format!("glob with an unknown part: {}", word.raw));
            }
        }
    }
    if word.has_tilde() {
        let rest = pattern.strip_prefix('~').unwrap_or(&pattern);
        let home = home
            .and_then(Path::to_str)
            .filter(|_| rest.is_empty() || rest.starts_with('/'))
            .ok_or_else(|| format!("glob under an unknown home directory: {}", word.raw))?;
        pattern = format!("{}{rest}", escape(home));
    }
    Ok(pattern)
}

fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for ch in text.chars() {
        if GLOB_CHARS.contains(&ch) || matches!(ch, ']' | '}' | '\\') {
            escaped.push('\\');
        }
        escaped.push(ch);
    }
    escaped
}

fn unescape(component: &str) -> String {
    let mut text = String::with_capacity(component.len());
    let mut chars = component.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => text.extend(chars.next()),
            _ => text.push(ch),
        }
    }
    text
}

fn has_glob(component: &str) -> bool {
    let mut chars = component.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => {
                chars.next();
            }
            _ if GLOB_CHARS.contains(&ch) => return true,
            _ => {}
        }
    }
    false
}

fn compile(component: &str) -> Result<GlobMatcher, globset::Error> {
    Ok(GlobBuilder::new(component)
        .literal_separator(true)
        .backslash_escape(true)
        .build()?
        .compile_matcher())
}
