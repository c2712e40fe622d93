//! The per-file receiver of grep-searcher's results: turns matched lines into
//! hits, attaches context lines, and draws every hit from the shared budget so
//! all workers stop once `maxResults` is reached.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};
use serde_json::{Map, Value};

use super::snippet;

/// One matching line.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    pub file: Arc<str>,
    pub line: u64,
    pub column: usize,
    pub snippet: String,
    pub before: Vec<String>,
    pub after: Vec<String>,
}

impl Hit {
    /// The hit as it appears in the result. Built right after each file is
    /// searched, on the worker threads, so a search with many hits does not
    /// end with a long single-threaded conversion.
    pub(crate) fn into_json(self, with_context: bool) -> Value {
        let mut object = Map::new();
        object.insert("file".to_owned(), Value::String(self.file.to_string()));
        object.insert("line".to_owned(), Value::from(self.line));
        object.insert("column".to_owned(), Value::from(self.column));
        object.insert("snippet".to_owned(), Value::String(self.snippet));
        if with_context {
            object.insert("before".to_owned(), Value::from(self.before));
            object.insert("after".to_owned(), Value::from(self.after));
        }
        Value::Object(object)
    }
}

impl Hit {
    /// The hit with every line it shows that lies in a private key block
    /// (`blocks` of its file) replaced by the redaction mark: a hit on a key
    /// body line never shows the header the redactor would need.
    pub(crate) fn withhold_key_lines(&mut self, blocks: &[std::ops::RangeInclusive<u64>]) {
        use bridge_policy::redact::{REDACTED, in_key_block};
        if in_key_block(blocks, self.line) {
            REDACTED.clone_into(&mut self.snippet);
        }
        let first_before = self.line - self.before.len() as u64;
        for (offset, text) in self.before.iter_mut().enumerate() {
            if in_key_block(blocks, first_before + offset as u64) {
                REDACTED.clone_into(text);
            }
        }
        for (offset, text) in self.after.iter_mut().enumerate() {
            if in_key_block(blocks, self.line + 1 + offset as u64) {
                REDACTED.clone_into(text);
            }
        }
    }
}

/// How many hits may still be taken, shared by all search workers.
#[derive(Debug)]
pub(crate) struct Budget {
    max: usize,
    taken: AtomicUsize,
    overflowed: AtomicBool,
}

impl Budget {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            taken: AtomicUsize::new(0),
            overflowed: AtomicBool::new(false),
        }
    }

    /// Claims room for one hit. The first refusal proves there were more hits
    /// than allowed, which is exactly when the result is truncated.
    fn try_take(&self) -> bool {
        if self.taken.fetch_add(1, Ordering::Relaxed) < self.max {
            true
        } else {
            self.overflowed.store(true, Ordering::Relaxed);
            false
        }
    }

    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }
}

/// Collects the hits of one file into `hits`.
pub(crate) struct HitSink<'a> {
    relative: &'a Path,
    /// The workspace-relative name, made on the first hit: most files have none.
    file: Option<Arc<str>>,
    matcher: &'a RegexMatcher,
    budget: &'a Budget,
    hits: &'a mut Vec<Hit>,
    /// Index in `hits` of this file's first hit.
    first_hit: usize,
    max_chars: usize,
    context: usize,
    /// The last `context` lines reported (matched or context), contiguous.
    recent: VecDeque<(u64, String)>,
}

impl<'a> HitSink<'a> {
    pub(crate) fn new(
        relative: &'a Path,
        matcher: &'a RegexMatcher,
        budget: &'a Budget,
        hits: &'a mut Vec<Hit>,
        max_chars: usize,
        context: usize,
    ) -> Self {
        let first_hit = hits.len();
        Self {
            relative,
            file: None,
            matcher,
            budget,
            hits,
            first_hit,
            max_chars,
            context,
            recent: VecDeque::with_capacity(context),
        }
    }

    /// grep-searcher reports a line that lies in the context of two matches
    /// only once; give it to every hit of this file still missing after-context.
    fn note_line(&mut self, line_number: u64, text: &str) {
        let context = self.context as u64;
        for hit in self.hits[self.first_hit..].iter_mut().rev() {
            if hit.line + context < line_number {
                break;
            }
            if hit.line < line_number {
                hit.after.push(text.to_owned());
            }
        }
        if self.recent.len() == self.context {
            self.recent.pop_front();
        }
        self.recent.push_back((line_number, text.to_owned()));
    }
}

impl Sink for HitSink<'_> {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _searcher: &Searcher,
        found: &SinkMatch<'_>,
    ) -> Result<bool, Self::Error> {
        if !self.budget.try_take() {
            return Ok(false);
        }
        let line = snippet::strip_terminator(found.bytes());
        let line_number = found.line_number().unwrap_or(0);
        let match_start = match self.matcher.find(line) {
            Ok(Some(found)) => found.start(),
            _ => 0,
        };
        let (column, text) = snippet::matched_line(line, match_start, self.max_chars);
        let before = if self.context == 0 {
            Vec::new()
        } else {
            let context = self.context as u64;
            self.recent
                .iter()
                .filter(|(number, _)| number + context >= line_number)
                .map(|(_, text)| text.clone())
                .collect()
        };
        if self.context > 0 {
            let as_context = snippet::context_line(line, self.max_chars);
            self.note_line(line_number, &as_context);
        }
        let relative = self.relative;
        let file = self
            .file
            .get_or_insert_with(|| Arc::from(relative.to_string_lossy()));
        self.hits.push(Hit {
            file: Arc::clone(file),
            line: line_number,
            column,
            snippet: text,
            before,
            after: Vec::new(),
        });
        Ok(true)
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        if self.context == 0 {
            return Ok(true);
        }
        let text = snippet::context_line(context.bytes(), self.max_chars);
        self.note_line(context.line_number().unwrap_or(0), &text);
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        self.recent.clear();
        Ok(true)
    }
}
