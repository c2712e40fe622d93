//! The notes, tokenized and cached, with postings for the search. When the
//! watcher ([`super::watch`]) saw a change since the last search (or cannot
//! tell), the memory root is walked again (directory reads and `stat`s) and
//! only notes whose [`Stamp`] changed are read again; so results always
//! reflect the files on disk without re-tokenizing thousands of unchanged
//! notes, and without even `stat`ing them when nothing moved.
//!
//! With a state directory, the tokenized notes are also kept in an index
//! file ([`super::store`]): a fresh process loads it while it walks the
//! root, and reads only the notes whose stamp differs from the file's.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::layout::MemoryLayout;
use super::search::tokenize;
use super::store::{IndexFile, Loaded, SaveJob};
use super::walk::{Found, Stamp, walk_notes};
use super::watch::Watcher;
use bridge_policy::WorkspaceRoot;
use bridge_policy::paths::OpenMode;

/// Notes larger than this are indexed by their first part only.
pub const MAX_INDEXED_BYTES: usize = 1024 * 1024;
/// A note read less than this long after its last change may have been
/// changed again since within the same timestamp granularity, its stamp
/// unchanged: it is read again rather than trusted (and not saved).
const SETTLE_NANOS: i128 = 2_000_000_000;

/// One note, ready to score.
#[derive(Debug)]
pub struct Doc {
    /// Relative to the memory root, `/`-separated.
    pub name: String,
    /// The text, for snippets: kept when the note was read; for a note
    /// taken from the index file (which holds no texts), read when it
    /// first ranks ([`Doc::text`]).
    pub text: OnceLock<Arc<str>>,
    /// (term id, occurrences in the text), by term id.
    pub term_counts: Vec<(u32, u32)>,
    pub length: u32,
    /// Terms of the file name (without `.md`).
    pub name_terms: Vec<u32>,
    /// Terms of Markdown heading lines.
    pub heading_terms: Vec<u32>,
    /// Days since 1970-01-01 when the file name holds a `YYYY-MM-DD` date.
    pub day: Option<i64>,
    /// What `stat` said before the note was read.
    pub stamp: Stamp,
    /// When it was read, in nanoseconds since the epoch (taken before).
    pub read_at: i128,
}

impl Doc {
    /// The note's text, read beneath `root` (the memory root of the walk
    /// that found it) if it is not kept yet. A note that cannot be read
    /// any more gives no text (its snippet is empty), and is tried again
    /// next time.
    pub fn text(&self, root: Option<&WorkspaceRoot>) -> Arc<str> {
        if let Some(text) = self.text.get() {
            return Arc::clone(text);
        }
        let read = root.and_then(|root| {
            let path = root.resolve(&self.name).ok()?;
            read_note(root, &path, &self.name).map(|bytes| note_text(&bytes))
        });
        match read {
            Some(text) => Arc::clone(self.text.get_or_init(|| Arc::from(text))),
            None => Arc::from(""),
        }
    }

    /// Whether the stamp can vouch for the text: the note was read long
    /// enough after its last change that a later change shows in the stamp.
    pub fn settled(&self) -> bool {
        self.read_at - self.stamp.latest_nanos() >= SETTLE_NANOS
    }
}

/// Every term seen → its id, and back (notes store ids: rebuilding the
/// postings is then pushing integers, no hashing).
#[derive(Debug, Default)]
pub struct Vocabulary {
    ids: HashMap<Arc<str>, u32>,
    terms: Vec<Arc<str>>,
}

impl Vocabulary {
    /// The vocabulary of an index file, `None` when a term repeats.
    pub fn from_terms(terms: Vec<Arc<str>>) -> Option<Self> {
        let mut ids = HashMap::with_capacity(terms.len());
        for (id, term) in terms.iter().enumerate() {
            let id = u32::try_from(id).ok()?;
            if ids.insert(Arc::clone(term), id).is_some() {
                return None;
            }
        }
        Some(Self { ids, terms })
    }

    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = u32::try_from(self.terms.len()).unwrap_or(u32::MAX);
        let term: Arc<str> = Arc::from(term);
        self.terms.push(Arc::clone(&term));
        self.ids.insert(term, id);
        id
    }

    /// The terms, by id.
    pub fn terms(&self) -> &[Arc<str>] {
        &self.terms
    }

    pub fn len(&self) -> usize {
        self.terms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// The tokenized notes by relative name, each with the generation of the
/// last walk that found it.
pub type Cache = HashMap<String, (Arc<Doc>, u64)>;

/// What a walk gives a refresh: the root, the notes found, whether every
/// directory is watched, and a snapshot built from the index file.
type Walked = (Option<WorkspaceRoot>, Vec<Found>, bool, Option<Snapshot>);

/// The cache of tokenized notes, keyed by relative name, and the search
/// structures over them, rebuilt only when a note changed.
#[derive(Debug)]
pub struct Index {
    docs: Cache,
    vocabulary: Vocabulary,
    generation: u64,
    snapshot: Option<Arc<Snapshot>>,
    watcher: Option<Watcher>,
    /// Every directory of the last walk is watched: no event means no change.
    fully_watched: bool,
    /// Where the index is kept between processes (and saved to).
    file: Option<Arc<IndexFile>>,
    /// The file is still to be loaded, by the first refresh.
    unloaded: bool,
    /// The memory root as the last walk found it (canonical).
    root: Option<WorkspaceRoot>,
    /// Notes changed since the index file was loaded or saved.
    unsaved: bool,
    /// Notes the last refresh read from disk.
    last_reads: usize,
}

impl Default for Index {
    fn default() -> Self {
        Self::new(None)
    }
}

/// Every note, with postings: what a query needs, immutable.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The memory root the notes were found in, to read the texts not
    /// kept yet.
    pub root: Option<WorkspaceRoot>,
    /// Sorted by name.
    pub docs: Vec<Arc<Doc>>,
    /// By term id: (index in `docs`, occurrences), in `docs` order.
    pub postings: Vec<Vec<(u32, u32)>>,
    /// By term id: indexes in `docs` of notes with the term in their name.
    pub name_postings: Vec<Vec<u32>>,
    pub average_length: f64,
    pub newest_day: Option<i64>,
}

impl Index {
    /// An empty index; `file` (the state directory's copy) is loaded by
    /// the first refresh and kept up to date by [`Index::take_save`].
    pub fn new(file: Option<Arc<IndexFile>>) -> Self {
        Self {
            docs: HashMap::new(),
            vocabulary: Vocabulary::default(),
            generation: 0,
            snapshot: None,
            watcher: Watcher::new(),
            fully_watched: false,
            unloaded: file.is_some(),
            file,
            root: None,
            unsaved: false,
            last_reads: 0,
        }
    }

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
            self.last_reads = 0;
            return Arc::clone(snapshot);
        }
        self.generation = self.generation.wrapping_add(1);
        let generation = self.generation;
        let mut changed = false;
        let mut seen = 0usize;
        let mut reads = 0usize;
        let (root, found, fully_watched, prebuilt) = self.walk(layout);
        self.fully_watched = fully_watched;
        for file in found {
            match self.docs.get_mut(&file.name) {
                Some((doc, mark)) if doc.stamp == file.stamp && doc.settled() => {
                    *mark = generation;
                    seen += 1;
                }
                _ => {
                    changed = true;
                    reads += 1;
                    match root
                        .as_ref()
                        .and_then(|root| load(root, &file, &mut self.vocabulary))
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
        self.root = root;
        self.unsaved |= changed;
        self.last_reads = reads;
        if let Some(snapshot) = self.snapshot.as_ref().filter(|_| !changed) {
            return Arc::clone(snapshot);
        }
        let snapshot = match prebuilt {
            // Built from the index file while the walk ran, and the walk
            // found exactly its notes.
            Some(mut prebuilt) if !changed => {
                prebuilt.root = self.root.clone();
                prebuilt
            }
            _ => Snapshot::build(
                self.docs.values().map(|(doc, _)| Arc::clone(doc)).collect(),
                self.vocabulary.len(),
                self.root.clone(),
            ),
        };
        let snapshot = Arc::new(snapshot);
        self.snapshot = Some(Arc::clone(&snapshot));
        snapshot
    }

    /// The walk; on the first refresh with an index file, that file is
    /// loaded on another thread meanwhile (the walk takes longer) and its
    /// notes become the cache the walk's stamps are checked against; with
    /// the snapshot of those notes, built there too, for when they are
    /// exactly the notes the walk found.
    fn walk(&mut self, layout: &MemoryLayout) -> Walked {
        let file = match &self.file {
            Some(file) if self.unloaded => Arc::clone(file),
            _ => {
                let (root, found, fully_watched) = walk_notes(layout, self.watcher.as_ref());
                return (root, found, fully_watched, None);
            }
        };
        self.unloaded = false;
        let watcher = self.watcher.as_ref();
        let (walked, loaded) = std::thread::scope(|scope| {
            let loading = std::thread::Builder::new()
                .name("memory-index-load".to_owned())
                .spawn_scoped(scope, || file.load(layout));
            let walked = walk_notes(layout, watcher);
            let loaded = match loading {
                Ok(loading) => loading.join().ok().flatten(),
                // No thread to spare: load here.
                Err(_) => file.load(layout),
            };
            (walked, loaded)
        });
        let (root, found, fully_watched) = walked;
        match loaded {
            Some(Loaded {
                vocabulary,
                docs,
                snapshot,
            }) if self.docs.is_empty() => {
                self.vocabulary = vocabulary;
                self.docs = docs;
                (root, found, fully_watched, Some(snapshot))
            }
            _ => {
                // Nothing (usable) was kept: what is read now is to be saved.
                self.unsaved = true;
                (root, found, fully_watched, None)
            }
        }
    }

    /// What to write to the index file if anything changed since it was
    /// loaded or last saved (or `force`): every settled note, by name.
    pub fn take_save(&mut self, force: bool) -> Option<SaveJob> {
        let file = self.file.as_ref()?;
        let root = self.root.as_ref()?;
        if !self.unsaved && !force {
            return None;
        }
        self.unsaved = false;
        let mut docs: Vec<Arc<Doc>> = self
            .docs
            .values()
            .filter(|(doc, _)| doc.settled())
            .map(|(doc, _)| Arc::clone(doc))
            .collect();
        docs.sort_by(|a, b| a.name.cmp(&b.name));
        Some(SaveJob {
            file: Arc::clone(file),
            root: root.path().to_path_buf(),
            vocabulary: self.vocabulary.terms().to_vec(),
            docs,
        })
    }

    /// How many notes the last refresh read (the others were unchanged in
    /// the cache or the index file).
    pub fn last_reads(&self) -> usize {
        self.last_reads
    }

    /// Whether notes changed since the index file was loaded or saved.
    pub fn unsaved(&self) -> bool {
        self.unsaved && self.file.is_some()
    }

    /// This index emptied, keeping its file (which the next refresh loads).
    pub fn reset(&self) -> Self {
        Self::new(self.file.clone())
    }

    /// The ids of `terms` (`None`: no note ever held it).
    pub fn term_ids(&self, terms: &[String]) -> Vec<Option<u32>> {
        terms
            .iter()
            .map(|term| self.vocabulary.ids.get(term.as_str()).copied())
            .collect()
    }
}

impl Snapshot {
    /// The postings of `docs` (sorted here; quickly when they already are).
    pub fn build(mut docs: Vec<Arc<Doc>>, vocabulary: usize, root: Option<WorkspaceRoot>) -> Self {
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
            root,
            newest_day: docs.iter().filter_map(|doc| doc.day).max(),
            docs,
            postings,
            name_postings,
            average_length,
        }
    }
}

/// Nanoseconds since the Unix epoch now.
pub fn now_nanos() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i128::try_from(elapsed.as_nanos()).unwrap_or(i128::MAX)
        })
}

/// Reads a note beneath the memory root (see `contain`) and indexes it.
fn load(root: &WorkspaceRoot, file: &Found, vocabulary: &mut Vocabulary) -> Option<Doc> {
    let read_at = now_nanos();
    let path = match &file.target {
        Some(target) => target.clone(),
        None => root.path().join(&file.name),
    };
    let text = note_text(&read_note(root, &path, &file.name)?);
    let mut counts: HashMap<u32, u32> = HashMap::new();
    let mut heading_terms = Vec::new();
    let mut length = 0u32;
    for line in text.lines() {
        let heading = line.trim_start().starts_with('#');
        for term in tokenize(line) {
            length = length.saturating_add(1);
            let id = vocabulary.intern(&term);
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
    let stem = note_stem(&file.name);
    let mut name_terms: Vec<u32> = tokenize(stem)
        .iter()
        .map(|term| vocabulary.intern(term))
        .collect();
    name_terms.sort_unstable();
    name_terms.dedup();
    Some(Doc {
        name: file.name.clone(),
        name_terms,
        day: date_in_name(stem),
        text: OnceLock::from(Arc::from(text)),
        term_counts,
        length,
        heading_terms,
        stamp: file.stamp,
        read_at,
    })
}

/// The bytes of the note at `path` (resolved beneath `root`).
fn read_note(root: &WorkspaceRoot, path: &Path, name: &str) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    root.open_file(path, OpenMode::Read)
        .and_then(|mut handle| std::io::Read::read_to_end(&mut handle, &mut bytes))
        .map_err(|err| {
            tracing::debug!(note = %name, %err, "cannot read a memory note; skipped");
        })
        .ok()?;
    Some(bytes)
}

/// What is indexed of a note: its text (lossy UTF-8), cut to its first
/// [`MAX_INDEXED_BYTES`].
fn note_text(bytes: &[u8]) -> String {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    if text.len() > MAX_INDEXED_BYTES {
        let mut cut = MAX_INDEXED_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

/// A note's file name without its directories and `.md` (every trailing
/// `.md`, then every trailing `.MD`).
pub fn note_stem(name: &str) -> &str {
    let mut stem = name.rsplit('/').next().unwrap_or(name);
    while let Some(shorter) = stem.strip_suffix(".md") {
        stem = shorter;
    }
    while let Some(shorter) = stem.strip_suffix(".MD") {
        stem = shorter;
    }
    stem
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
