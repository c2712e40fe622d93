//! The notes, tokenized and cached, with postings for the search. When the
//! watcher ([`super::watch`]) saw a change since the last search (or cannot
//! tell), the memory root is walked again (directory reads and `stat`s) and
//! only notes whose size or modification time changed are re-read; so
//! results always reflect the files on disk without re-tokenizing thousands
//! of unchanged notes, and without even `stat`ing them when nothing moved.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::layout::MemoryLayout;
use super::search::tokenize;
use super::watch::Watcher;
use bridge_policy::WorkspaceRoot;
use bridge_policy::paths::OpenMode;

/// Notes larger than this are indexed by their first part only.
pub const MAX_INDEXED_BYTES: usize = 1024 * 1024;
/// How deep the walk goes below the root (a guard against odd trees).
const MAX_WALK_DEPTH: usize = 16;

/// One note, ready to score.
#[derive(Debug)]
pub struct Doc {
    /// Relative to the memory root, `/`-separated.
    pub name: String,
    pub text: Arc<str>,
    /// (term id, occurrences in the text), by term id.
    pub term_counts: Vec<(u32, u32)>,
    pub length: u32,
    /// Terms of the file name (without `.md`).
    pub name_terms: Vec<u32>,
    /// Terms of Markdown heading lines.
    pub heading_terms: Vec<u32>,
    /// Days since 1970-01-01 when the file name holds a `YYYY-MM-DD` date.
    pub day: Option<i64>,
    size: u64,
    modified: Option<SystemTime>,
}

/// The cache of tokenized notes, keyed by relative name, and the search
/// structures over them, rebuilt only when a note changed.
#[derive(Debug)]
pub struct Index {
    docs: HashMap<String, (Arc<Doc>, u64)>,
    /// Every term ever seen → its id (notes store ids: rebuilding the
    /// postings is then pushing integers, no hashing).
    terms: HashMap<Box<str>, u32>,
    generation: u64,
    snapshot: Option<Arc<Snapshot>>,
    watcher: Option<Watcher>,
    /// Every directory of the last walk is watched: no event means no change.
    fully_watched: bool,
}

impl Default for Index {
    fn default() -> Self {
        Self {
            docs: HashMap::new(),
            terms: HashMap::new(),
            generation: 0,
            snapshot: None,
            watcher: Watcher::new(),
            fully_watched: false,
        }
    }
}

/// Every note, with postings: what a query needs, immutable.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Sorted by name.
    pub docs: Vec<Arc<Doc>>,
    /// By term id: (index in `docs`, occurrences), in `docs` order.
    pub postings: Vec<Vec<(u32, u32)>>,
    /// By term id: indexes in `docs` of notes with the term in their name.
    pub name_postings: Vec<Vec<u32>>,
    pub average_length: f64,
    pub newest_day: Option<i64>,
}

struct Found {
    name: String,
    path: PathBuf,
    size: u64,
    modified: Option<SystemTime>,
}

impl Index {
    /// Brings the cache up to date with the disk. Unless the watcher saw
    /// nothing since the last walk, every note is `stat`ed and changed ones
    /// are read again.
    pub fn refresh(&mut self, layout: &MemoryLayout) -> Arc<Snapshot> {
        // Draining first: whatever happens from here on is seen next time.
        let quiet = self
            .watcher
            .as_mut()
            .is_some_and(|watcher| !watcher.changed());
        if let Some(snapshot) = self
            .snapshot
            .as_ref()
            .filter(|_| quiet && self.fully_watched)
        {
            return Arc::clone(snapshot);
        }
        self.generation = self.generation.wrapping_add(1);
        let generation = self.generation;
        let mut changed = false;
        let mut seen = 0usize;
        let (root, found, fully_watched) = walk_notes(layout, self.watcher.as_ref());
        self.fully_watched = fully_watched;
        for file in found {
            match self.docs.get_mut(&file.name) {
                Some((doc, mark)) if doc.size == file.size && doc.modified == file.modified => {
                    *mark = generation;
                    seen += 1;
                }
                _ => {
                    changed = true;
                    match root
                        .as_ref()
                        .and_then(|root| load(root, &file, &mut self.terms))
                    {
                        Some(doc) => {
                            self.docs.insert(file.name, (Arc::new(doc), generation));
                            seen += 1;
                        }
                        None => {
                            self.docs.remove(&file.name);
                        }
                    }
                }
            }
        }
        if seen != self.docs.len() {
            self.docs.retain(|_, (_, mark)| *mark == generation);
            changed = true;
        }
        match &self.snapshot {
            Some(snapshot) if !changed => Arc::clone(snapshot),
            _ => {
                let snapshot = Arc::new(Snapshot::build(
                    self.docs.values().map(|(doc, _)| Arc::clone(doc)),
                    self.terms.len(),
                ));
                self.snapshot = Some(Arc::clone(&snapshot));
                snapshot
            }
        }
    }
}

impl Index {
    /// The ids of `terms` (`None`: no note ever held it).
    pub fn term_ids(&self, terms: &[String]) -> Vec<Option<u32>> {
        terms
            .iter()
            .map(|term| self.terms.get(term.as_str()).copied())
            .collect()
    }
}

impl Snapshot {
    fn build(docs: impl Iterator<Item = Arc<Doc>>, vocabulary: usize) -> Self {
        let mut docs: Vec<Arc<Doc>> = docs.collect();
        docs.sort_by(|a, b| a.name.cmp(&b.name));
        let mut postings: Vec<Vec<(u32, u32)>> = vec![Vec::new(); vocabulary];
        let mut name_postings: Vec<Vec<u32>> = vec![Vec::new(); vocabulary];
        let mut total_length = 0.0;
        for (index, doc) in docs.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            total_length += f64::from(doc.length);
            for &(term, count) in &doc.term_counts {
                if let Some(list) = postings.get_mut(term as usize) {
                    list.push((index, count));
                }
            }
            for &term in &doc.name_terms {
                if let Some(list) = name_postings.get_mut(term as usize) {
                    list.push(index);
                }
            }
        }
        let average_length = if docs.is_empty() {
            1.0
        } else {
            (total_length / docs.len() as f64).max(1.0)
        };
        Self {
            newest_day: docs.iter().filter_map(|doc| doc.day).max(),
            docs,
            postings,
            name_postings,
            average_length,
        }
    }
}

fn intern(terms: &mut HashMap<Box<str>, u32>, term: &str) -> u32 {
    if let Some(&id) = terms.get(term) {
        return id;
    }
    let id = u32::try_from(terms.len()).unwrap_or(u32::MAX);
    terms.insert(Box::from(term), id);
    id
}

/// Reads a note beneath the memory root (see `contain`) and indexes it.
fn load(root: &WorkspaceRoot, file: &Found, terms: &mut HashMap<Box<str>, u32>) -> Option<Doc> {
    let skipped = |err: std::io::Error| {
        tracing::debug!(note = %file.name, %err, "cannot read a memory note; skipped");
    };
    let mut bytes = Vec::new();
    root.open_file(&file.path, OpenMode::Read)
        .and_then(|mut handle| std::io::Read::read_to_end(&mut handle, &mut bytes))
        .map_err(skipped)
        .ok()?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if text.len() > MAX_INDEXED_BYTES {
        let mut cut = MAX_INDEXED_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    let mut counts: HashMap<u32, u32> = HashMap::new();
    let mut heading_terms = Vec::new();
    let mut length = 0u32;
    for line in text.lines() {
        let heading = line.trim_start().starts_with('#');
        for term in tokenize(line) {
            length = length.saturating_add(1);
            let id = intern(terms, &term);
            if heading {
                heading_terms.push(id);
            }
            *counts.entry(id).or_insert(0) += 1;
        }
    }
    let mut term_counts: Vec<(u32, u32)> = counts.into_iter().collect();
    term_counts.sort_unstable();
    heading_terms.sort_unstable();
    heading_terms.dedup();
    let stem = file
        .name
        .rsplit('/')
        .next()
        .unwrap_or(&file.name)
        .trim_end_matches(".md")
        .trim_end_matches(".MD");
    let mut name_terms: Vec<u32> = tokenize(stem)
        .iter()
        .map(|term| intern(terms, term))
        .collect();
    name_terms.sort_unstable();
    name_terms.dedup();
    Some(Doc {
        name: file.name.clone(),
        name_terms,
        day: date_in_name(stem),
        text: Arc::from(text),
        term_counts,
        length,
        heading_terms,
        size: file.size,
        modified: file.modified,
    })
}

/// Every note of the layout: symlinked files only when they resolve inside
/// the root; symlinked directories and hidden entries are not followed.
/// Also returns whether every directory walked (and every symlinked
/// note's target) is now watched.
fn walk_notes(
    layout: &MemoryLayout,
    watcher: Option<&Watcher>,
) -> (Option<WorkspaceRoot>, Vec<Found>, bool) {
    let Ok(workspace) = WorkspaceRoot::new(&layout.root) else {
        return (None, Vec::new(), false);
    };
    let mut walk = Walk {
        found: Vec::new(),
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
            walk.dir(&root, &start, &prefix, 0);
        }
    }
    (Some(workspace), walk.found, walk.fully_watched)
}

struct Walk<'a> {
    found: Vec<Found>,
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

    fn dir(&mut self, root: &Path, dir: &Path, prefix: &str, depth: usize) {
        // Watched before it is read: a change during the walk is an event.
        self.watch(dir);
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(file_name) = file_name.to_str() else {
                continue;
            };
            if file_name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = format!("{prefix}{file_name}");
            if kind.is_dir() {
                if depth < MAX_WALK_DEPTH {
                    self.dir(root, &entry.path(), &format!("{name}/"), depth + 1);
                }
            } else if kind.is_file() && is_markdown(file_name) {
                // Relative to the open directory: no path walk from the root.
                if let Ok(metadata) = entry.metadata() {
                    self.found.push(Found {
                        name,
                        path: entry.path(),
                        size: metadata.len(),
                        modified: metadata.modified().ok(),
                    });
                }
            } else if kind.is_symlink() && is_markdown(file_name) {
                self.consider(root, &entry.path(), name);
            }
        }
    }

    fn consider(&mut self, root: &Path, path: &Path, name: String) {
        let Ok(link) = std::fs::symlink_metadata(path) else {
            return;
        };
        // A symlinked note is read at its target, which must lie inside.
        let (path, metadata) = if link.file_type().is_symlink() {
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
                Ok(metadata) => (target, metadata),
                Err(_) => return,
            }
        } else {
            (path.to_path_buf(), link)
        };
        if metadata.is_file() {
            self.found.push(Found {
                name,
                path,
                size: metadata.len(),
                modified: metadata.modified().ok(),
            });
        }
    }
}

fn is_markdown(file_name: &str) -> bool {
    Path::new(file_name)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("md"))
}

/// `YYYY-MM-DD` anywhere in a file name, as days since the Unix epoch.
pub fn date_in_name(stem: &str) -> Option<i64> {
    let bytes = stem.as_bytes();
    (0..bytes.len().checked_sub(9)?).find_map(|start| {
        let window = stem.get(start..start + 10)?;
        let mut parts = window.split('-');
        let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
        if y.len() != 4 || m.len() != 2 || d.len() != 2 {
            return None;
        }
        let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
        ((1..=12).contains(&m) && (1..=31).contains(&d)).then(|| days_from_civil(y, m, d))
    })
}

/// Howard Hinnant's days-from-civil: the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_names() {
        assert_eq!(date_in_name("1970-01-01"), Some(0));
        assert_eq!(
            date_in_name("2026-03-02"),
            Some(date_in_name("2026-03-01").map_or(0, |d| d + 1))
        );
        assert_eq!(date_in_name("notes-2024-02-29-standup"), Some(19_782));
        assert_eq!(date_in_name("project-ideas"), None);
        assert_eq!(date_in_name("2024-13-01"), None);
    }
}
