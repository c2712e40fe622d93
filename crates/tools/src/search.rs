//! `search_code`: ripgrep's engine (ignore + grep-regex + grep-searcher) over
//! the workspace, in parallel, bounded in results, file size and line length.

mod sink;
mod snippet;

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bridge_policy::paths::OpenMode;
use bridge_protocol::ToolEffect;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::list::walk::{GlobFilter, WalkScope};
use crate::read::support::{parse_args, run_blocking};
use crate::{Tool, ToolContext, ToolError};
use sink::{Budget, Hit, HitSink};

/// A hit already in its JSON form, with the keys it is sorted by.
struct RenderedHit {
    file: Arc<str>,
    line: u64,
    json: Value,
}

const NAME: &str = "search_code";
const DEFAULT_MAX_RESULTS: usize = 200;
const MAX_CONTEXT_LINES: usize = 10;
/// Compiled-regex limits: a hostile pattern fails to compile instead of
/// eating memory.
const REGEX_SIZE_LIMIT: usize = 16 * 1024 * 1024;
const REGEX_DFA_SIZE_LIMIT: usize = 64 * 1024 * 1024;

pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(SearchCode)]
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SearchArgs {
    query: String,
    #[serde(default)]
    regex: bool,
    glob: Option<String>,
    max_results: Option<usize>,
    #[serde(default)]
    context_lines: usize,
    case_sensitive: Option<bool>,
    path: Option<String>,
    #[serde(default)]
    include_hidden: bool,
}

/// Searches the text of workspace files.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchCode;

#[async_trait]
impl Tool for SearchCode {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Search the text of workspace files for a literal string or a regular expression, \
         like ripgrep. Returns matching lines sorted by file and line, with 1-based line and \
         column numbers and optional context lines. Skips ignored, hidden, binary and \
         oversized files; long lines are cut."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Text to find: a literal string, or a regular expression (Rust regex syntax) when regex is true. Matches never span lines."
                },
                "regex": {
                    "type": "boolean",
                    "description": "Treat query as a regular expression (default false: literal text)."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob. Without a '/', it matches file names at any depth (\"*.ts\"); with one, the workspace-relative path (\"src/**/*.ts\")."
                },
                "maxResults": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Most matching lines to return (default 200, capped by the configured limit). When there are more, truncated is true and the search stops early, so which matches are returned is not specified (they are still sorted)."
                },
                "contextLines": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT_LINES,
                    "description": "Lines of context to return before and after each match (default 0)."
                },
                "caseSensitive": {
                    "type": "boolean",
                    "description": "Match case exactly (default true)."
                },
                "path": {
                    "type": "string",
                    "description": "File or directory to search, relative to the workspace root (default: the whole workspace)."
                },
                "includeHidden": {
                    "type": "boolean",
                    "description": "Also search files and directories whose name starts with '.' (default false; .git/ is always skipped)."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Read
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: SearchArgs = parse_args(NAME, args)?;
        let ctx = ctx.clone();
        let started = std::time::Instant::now();
        // Resolving the path touches the disk and compiling the regex can take
        // a while: both belong on the blocking pool with the search itself.
        let outcome =
            run_blocking(NAME, move || Ok(SearchRequest::new(&ctx, &args)?.run())).await?;
        tracing::debug!(
            hits = outcome.hits.len(),
            files_searched = outcome.files_searched,
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "search_code finished"
        );
        Ok(outcome.into_json())
    }
}

/// A validated search, ready to run on the blocking pool.
struct SearchRequest {
    scope: WalkScope,
    filter: Option<GlobFilter>,
    matcher: RegexMatcher,
    max_results: usize,
    context_lines: usize,
    max_file_bytes: u64,
    max_line_chars: usize,
}

impl SearchRequest {
    fn new(ctx: &ToolContext, args: &SearchArgs) -> Result<Self, ToolError> {
        if args.query.is_empty() {
            return Err(ToolError::InvalidArguments(format!(
                "{NAME}: query must not be empty"
            )));
        }
        if args.context_lines > MAX_CONTEXT_LINES {
            return Err(ToolError::InvalidArguments(format!(
                "{NAME}: contextLines must be at most {MAX_CONTEXT_LINES}, got {}",
                args.context_lines
            )));
        }
        let limit = ctx.settings.search_max_results;
        let max_results = match args.max_results {
            Some(0) => {
                return Err(ToolError::InvalidArguments(format!(
                    "{NAME}: maxResults must be at least 1"
                )));
            }
            Some(requested) => requested.min(limit),
            None => DEFAULT_MAX_RESULTS.min(limit),
        };
        let matcher = build_matcher(args)?;
        let filter = args
            .glob
            .as_deref()
            .map(|glob| GlobFilter::new(NAME, glob))
            .transpose()?;
        let scope = WalkScope::new(NAME, ctx, args.path.as_deref(), args.include_hidden)?;
        Ok(Self {
            scope,
            filter,
            matcher,
            max_results,
            context_lines: args.context_lines,
            max_file_bytes: ctx.settings.search_max_file_bytes,
            max_line_chars: ctx.settings.search_max_line_chars,
        })
    }

    fn run(self) -> SearchOutcome {
        let shared = Shared {
            request: &self,
            budget: Budget::new(self.max_results),
            hits: Mutex::new(Vec::new()),
            files_searched: AtomicUsize::new(0),
            files_skipped: AtomicUsize::new(0),
            unreadable: AtomicUsize::new(0),
        };
        let mut workers = WorkerFactory { shared: &shared };
        self.scope.builder().build_parallel().visit(&mut workers);
        let mut hits = shared
            .hits
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        hits.sort_unstable_by(|a, b| a.file.cmp(&b.file).then(a.line.cmp(&b.line)));
        SearchOutcome {
            hits: hits.into_iter().map(|hit| hit.json).collect(),
            truncated: shared.budget.overflowed(),
            files_searched: shared.files_searched.into_inner(),
            files_skipped: shared.files_skipped.into_inner(),
            unreadable: shared.unreadable.into_inner(),
        }
    }
}

fn build_matcher(args: &SearchArgs) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        // Lets the matcher use line-oriented fast paths, as ripgrep does.
        .line_terminator(Some(b'\n'))
        .case_insensitive(!args.case_sensitive.unwrap_or(true))
        .fixed_strings(!args.regex)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .build(&args.query)
        .map_err(|err| {
            let kind = if args.regex {
                "regular expression"
            } else {
                "search string"
            };
            ToolError::InvalidArguments(format!("{NAME}: invalid {kind} {:?}: {err}", args.query))
        })
}

/// State all workers share for one search.
struct Shared<'r> {
    request: &'r SearchRequest,
    budget: Budget,
    hits: Mutex<Vec<RenderedHit>>,
    files_searched: AtomicUsize,
    files_skipped: AtomicUsize,
    /// Entries that could not be read (permissions, paths too long, races).
    unreadable: AtomicUsize,
}

struct WorkerFactory<'s, 'r> {
    shared: &'s Shared<'r>,
}

impl<'s> ParallelVisitorBuilder<'s> for WorkerFactory<'s, '_> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        let request = self.shared.request;
        let searcher = SearcherBuilder::new()
            .line_number(true)
            // Like ripgrep on files it was not asked for by name: stop at the
            // first NUL byte instead of printing binary garbage.
            .binary_detection(BinaryDetection::quit(b'\0'))
            .before_context(request.context_lines)
            .after_context(request.context_lines)
            .build();
        Box::new(Worker {
            shared: self.shared,
            searcher,
            matcher: request.matcher.clone(),
            file_hits: Vec::new(),
            rendered: Vec::new(),
            files_searched: 0,
            files_skipped: 0,
            unreadable: 0,
        })
    }
}

/// One walker thread: its own searcher and buffers; hands its hits over when
/// the walk ends (on drop), so threads never contend while searching.
struct Worker<'s, 'r> {
    shared: &'s Shared<'r>,
    searcher: Searcher,
    matcher: RegexMatcher,
    /// The hits of the file being searched (their after-context may still grow).
    file_hits: Vec<Hit>,
    rendered: Vec<RenderedHit>,
    files_searched: usize,
    files_skipped: usize,
    unreadable: usize,
}

impl ParallelVisitor for Worker<'_, '_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.budget.overflowed() {
            return WalkState::Quit;
        }
        match entry {
            Ok(entry) if entry.file_type().is_some_and(|kind| kind.is_file()) => {
                self.search_entry(&entry);
            }
            Ok(_) => {}
            Err(err) => {
                self.unreadable += 1;
                tracing::debug!(error = %err, "search_code: skipping unreadable entry");
            }
        }
        if self.shared.budget.overflowed() {
            WalkState::Quit
        } else {
            WalkState::Continue
        }
    }
}

impl Worker<'_, '_> {
    fn search_entry(&mut self, entry: &DirEntry) {
        let request = self.shared.request;
        let relative = entry
            .path()
            .strip_prefix(request.scope.root())
            .unwrap_or(entry.path());
        if request
            .filter
            .as_ref()
            .is_some_and(|filter| !filter.matches(relative))
        {
            return;
        }
        let file = match request
            .scope
            .workspace()
            .open_file(entry.path(), OpenMode::Read)
        {
            Ok(file) => file,
            Err(err) => {
                self.unreadable += 1;
                tracing::debug!(path = %entry.path().display(), error = %err, "search_code: cannot open");
                return;
            }
        };
        // fstat on the open handle: one syscall, no second path lookup.
        match file.metadata() {
            Ok(metadata) if metadata.len() > request.max_file_bytes => {
                self.files_skipped += 1;
                return;
            }
            Ok(_) => {}
            Err(err) => {
                self.unreadable += 1;
                tracing::debug!(path = %entry.path().display(), error = %err, "search_code: cannot stat");
                return;
            }
        }
        self.files_searched += 1;
        self.search_file(relative, &file);
    }

    fn search_file(&mut self, relative: &Path, file: &File) {
        let request = self.shared.request;
        let sink = HitSink::new(
            relative,
            &self.matcher,
            &self.shared.budget,
            &mut self.file_hits,
            request.max_line_chars,
            request.context_lines,
        );
        if let Err(err) = self.searcher.search_file(&self.matcher, file, sink) {
            self.unreadable += 1;
            tracing::debug!(path = %relative.display(), error = %err, "search_code: read failed");
        }
        if !self.file_hits.is_empty() {
            withhold_key_lines(relative, file, &mut self.file_hits);
        }
        let with_context = request.context_lines > 0;
        self.rendered
            .extend(self.file_hits.drain(..).map(|hit| RenderedHit {
                file: Arc::clone(&hit.file),
                line: hit.line,
                json: hit.into_json(with_context),
            }));
    }
}

/// The hits of `file` with the lines inside its private key blocks
/// withheld (the file is read once more, only when it has hits). A file
/// that cannot be read again keeps no hit: they cannot be judged.
fn withhold_key_lines(relative: &Path, file: &File, hits: &mut Vec<Hit>) {
    use std::io::{Seek, SeekFrom};
    let mut reader = file;
    let blocks = reader
        .seek(SeekFrom::Start(0))
        .and_then(|_| bridge_policy::redact::KeyBlocks::of_reader(reader));
    match blocks {
        Ok(blocks) if blocks.is_empty() => {}
        Ok(blocks) => hits
            .iter_mut()
            .for_each(|hit| hit.withhold_key_lines(&blocks)),
        Err(err) => {
            tracing::debug!(path = %relative.display(), error = %err, "search_code: cannot reread for keys");
            hits.clear();
        }
    }
}

impl Drop for Worker<'_, '_> {
    fn drop(&mut self) {
        let mut hits = bridge_util::sync::lock(&self.shared.hits);
        hits.append(&mut self.rendered);
        self.shared
            .files_searched
            .fetch_add(self.files_searched, Ordering::Relaxed);
        self.shared
            .files_skipped
            .fetch_add(self.files_skipped, Ordering::Relaxed);
        self.shared
            .unreadable
            .fetch_add(self.unreadable, Ordering::Relaxed);
    }
}

struct SearchOutcome {
    hits: Vec<Value>,
    truncated: bool,
    files_searched: usize,
    files_skipped: usize,
    unreadable: usize,
}

impl SearchOutcome {
    fn into_json(self) -> Value {
        // Built by hand: `json!` would deep-copy the hits through `to_value`.
        let mut object = Map::new();
        object.insert("hits".to_owned(), Value::Array(self.hits));
        object.insert("truncated".to_owned(), Value::Bool(self.truncated));
        object.insert("filesSearched".to_owned(), Value::from(self.files_searched));
        object.insert("filesSkipped".to_owned(), Value::from(self.files_skipped));
        // Only when it happened: a search that could not read everything must
        // not look complete.
        if self.unreadable > 0 {
            object.insert("unreadable".to_owned(), Value::from(self.unreadable));
        }
        Value::Object(object)
    }
}
