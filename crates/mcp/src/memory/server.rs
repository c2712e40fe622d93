//! The memory server: tool dispatch, file reads off the runtime threads,
//! and the index shared by every MCP session of one process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::contain::resolve_note;
use super::index::{Index, MAX_INDEXED_BYTES};
use super::layout::{AgentError, MemoryLayout};
use super::search::{MemoryHit, query_terms, rank};
use super::store::{IndexFile, Saver};
use super::tools::{self, Call, Rejected, Request};
use crate::depth;

/// Notes larger than this are not returned by `openclaw_memory_read`.
pub const MAX_READ_BYTES: u64 = MAX_INDEXED_BYTES as u64;
/// Other agents whose indexes are kept; one more starts the cache over.
const MAX_AGENT_INDEXES: usize = 16;

/// The memory MCP server. Cheap to clone; clones share the indexes.
#[derive(Clone)]
pub struct MemoryServer {
    default: Memory,
    /// Other agents' memories (`agentId`), by id.
    agents: Arc<Mutex<HashMap<String, Memory>>>,
    /// Where the daemon's `openclaw_*` session tools are, when it has an
    /// OpenClaw gateway: search asks the gateway first, and
    /// `openclaw_agent_ask` / `openclaw_sessions` are served, each call
    /// through `Session::call_tool` (rules, audit, redaction) of the
    /// session this names (crate::openclaw).
    sessions: Option<Arc<dyn crate::code::SessionSource>>,
    /// The bridge's state directory, where indexes are kept between
    /// processes (`None`: every process reads every note once).
    state_dir: Option<Arc<Path>>,
}

impl std::fmt::Debug for MemoryServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryServer")
            .field("default", &self.default)
            .field("session_tools", &self.sessions.is_some())
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

/// One agent's memory: where it is and its index.
#[derive(Debug, Clone)]
struct Memory {
    layout: Arc<MemoryLayout>,
    index: Arc<Mutex<Index>>,
    /// Saves the index to its file in the state directory, when there is one.
    saver: Option<Arc<Saver>>,
}

impl Memory {
    fn new(layout: MemoryLayout, state_dir: Option<&Path>) -> Self {
        let file = state_dir.map(|dir| Arc::new(IndexFile::new(dir, &layout)));
        Self {
            saver: file.is_some().then(Arc::default),
            layout: Arc::new(layout),
            index: Arc::new(Mutex::new(Index::new(file))),
        }
    }

    /// Brings the index up to date with the notes (what a first search
    /// would do), so the next search finds it warm.
    fn warm_up(&self) {
        let unsaved = {
            let mut index = bridge_util::sync::lock(&self.index);
            index.refresh(&self.layout);
            index.unsaved()
        };
        if let Some(saver) = self.saver.as_ref().filter(|_| unsaved) {
            saver.schedule(&self.index);
        }
    }

    fn search(&self, query: &str, limit: usize) -> SearchOutcome {
        let terms = query_terms(query);
        let (snapshot, ids, unsaved, notes_read) = match self.index.lock() {
            Ok(mut index) => (
                index.refresh(&self.layout),
                index.term_ids(&terms),
                index.unsaved(),
                index.last_reads(),
            ),
            // A panic while refreshing left a half-updated cache: start over.
            Err(poisoned) => {
                let mut index = poisoned.into_inner();
                *index = index.reset();
                (
                    index.refresh(&self.layout),
                    index.term_ids(&terms),
                    index.unsaved(),
                    index.last_reads(),
                )
            }
        };
        if let Some(saver) = self.saver.as_ref().filter(|_| unsaved) {
            saver.schedule(&self.index);
        }
        let (hits, matched) = rank(&snapshot, &terms, &ids, limit);
        SearchOutcome {
            hits,
            matched,
            searched: snapshot.docs.len(),
            notes_read,
        }
    }
}

/// A search's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOutcome {
    pub hits: Vec<MemoryHit>,
    /// How many notes matched at all.
    pub matched: usize,
    /// How many notes were searched.
    pub searched: usize,
    /// How many notes this search read from disk: those new or changed
    /// since the last search (or, for the first, since the index file was
    /// written; all of them without one).
    pub notes_read: usize,
}

/// One search of `layout`'s notes, with an index of its own (every note is
/// read: for repeated searches keep a [`MemoryServer`] and call
/// [`MemoryServer::search_agent`], whose indexes stay warm). The hits have
/// the shape of OpenClaw's `memory_search` results.
pub fn search_local(layout: &MemoryLayout, query: &str, limit: usize) -> Vec<MemoryHit> {
    Memory::new(layout.clone(), None).search(query, limit).hits
}

impl MemoryServer {
    pub fn new(layout: MemoryLayout) -> Self {
        Self {
            default: Memory::new(layout, None),
            agents: Arc::default(),
            sessions: None,
            state_dir: None,
        }
    }

    /// This server keeping each memory's index in `state_dir` (the
    /// bridge's state directory, `memory-index/`), so the first search of
    /// the next process reads only the notes that changed. Call before
    /// the first search.
    #[must_use]
    pub fn with_state_dir(mut self, state_dir: &Path) -> Self {
        self.default = Memory::new(MemoryLayout::clone(&self.default.layout), Some(state_dir));
        bridge_util::sync::lock(&self.agents).clear();
        self.state_dir = Some(Arc::from(state_dir));
        self
    }

    /// Writes the default agent's index to the state directory now, on the
    /// calling thread (searches save it in the background by themselves).
    /// `Ok(None)` when there is nothing to save yet (no state directory,
    /// no search so far); else the file written.
    pub fn save_index(&self) -> std::io::Result<Option<PathBuf>> {
        let Some(saver) = self.default.saver.as_ref() else {
            return Ok(None);
        };
        let Some((job, saved)) = saver.save_now(&self.default.index) else {
            return Ok(None);
        };
        saved?;
        job.file.path_for(&job.root).map(Some)
    }

    /// This server answering the OpenClaw gateway's tools through the
    /// sessions of `sessions` (the daemon's, which has the gateway).
    #[must_use]
    pub fn with_session_tools(mut self, sessions: Arc<dyn crate::code::SessionSource>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// The default agent's layout.
    pub fn layout(&self) -> &MemoryLayout {
        &self.default.layout
    }

    /// Brings the default agent's index up to date now, on the calling
    /// thread (it reads files): a host that offers the memory tools calls
    /// it as a session starts, so the model's first search finds the index
    /// warm instead of paying the first refresh.
    pub fn warm_up_blocking(&self) {
        self.default.warm_up();
    }

    /// Searches the default agent's memory now, on the calling thread (it
    /// reads files: call it from `spawn_blocking` or a plain thread).
    pub fn search_blocking(&self, query: &str, limit: usize) -> SearchOutcome {
        self.default.search(query, limit)
    }

    /// Searches `agent_id`'s memory (`None`: the default agent's), on the
    /// calling thread, with that agent's index kept for the next search.
    pub fn search_agent(
        &self,
        agent_id: Option<&str>,
        query: &str,
        limit: usize,
    ) -> Result<SearchOutcome, AgentError> {
        Ok(self.memory(agent_id)?.search(query, limit))
    }

    /// The memory of `agent_id` (looked up on disk: call off the runtime).
    fn memory(&self, agent_id: Option<&str>) -> Result<Memory, AgentError> {
        let Some(id) = agent_id else {
            return Ok(self.default.clone());
        };
        let layout = self.default.layout.for_agent(id)?;
        if layout == *self.default.layout {
            return Ok(self.default.clone());
        }
        // By the id as validated (lowercased): `Work` and `work` share one.
        let key = layout.agent_id.clone().unwrap_or_default();
        let mut agents = bridge_util::sync::lock(&self.agents);
        if let Some(memory) = agents.get(&key).filter(|memory| *memory.layout == layout) {
            return Ok(memory.clone());
        }
        if agents.len() >= MAX_AGENT_INDEXES {
            agents.clear();
        }
        let memory = Memory::new(layout, self.state_dir.as_deref());
        agents.insert(key, memory.clone());
        Ok(memory)
    }

    /// `file` of `agent_id`'s memory (`None`: the default agent's), whole,
    /// on the calling thread (it reads files: call it off the runtime).
    pub fn read_blocking(&self, agent_id: Option<&str>, file: &str) -> Result<String, String> {
        let memory = self.memory(agent_id).map_err(|err| err.to_string())?;
        read_note(&memory.layout, file)
    }

    /// `agent_id`'s `USER.md` (or a sentence saying there is none), on the
    /// calling thread.
    pub fn user_prefs_blocking(&self, agent_id: Option<&str>) -> Result<String, String> {
        let memory = self.memory(agent_id).map_err(|err| err.to_string())?;
        user_prefs(&memory.layout)
    }

    async fn run(&self, call: Call) -> Result<CallToolResult, ErrorData> {
        let server = self.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let memory = match server.memory(call.agent.as_deref()) {
                Ok(memory) => memory,
                Err(err) => {
                    return CallToolResult::error(vec![ContentBlock::text(err.to_string())]);
                }
            };
            match call.request {
                Request::Search { query, limit } => search_result(&memory, &query, limit),
                Request::Read { file } => read_result(&memory.layout, &file),
                Request::UserPrefs => user_prefs_result(&memory.layout),
            }
        })
        .await;
        joined.map_err(|err| {
            ErrorData::internal_error(format!("the memory tool failed: {err}"), None)
        })
    }
}

fn search_result(memory: &Memory, query: &str, limit: usize) -> CallToolResult {
    let layout = &memory.layout;
    let outcome = memory.search(query, limit);
    let mut text = if outcome.searched == 0 {
        format!(
            "No memory notes found in {} ({} layout).",
            layout.root.display(),
            layout.kind.as_str()
        )
    } else if outcome.hits.is_empty() {
        format!(
            "No note matches {query:?} ({} notes searched).",
            outcome.searched
        )
    } else {
        format!(
            "{} of {} matching notes for {query:?}:\n",
            outcome.hits.len(),
            outcome.matched
        )
    };
    for (rank, hit) in outcome.hits.iter().enumerate() {
        let under = hit
            .heading
            .as_deref()
            .map(|heading| format!(" (under \"{heading}\")"))
            .unwrap_or_default();
        let lines = if hit.end_line > hit.start_line {
            format!("{}-{}", hit.start_line, hit.end_line)
        } else {
            hit.start_line.to_string()
        };
        text.push_str(&format!(
            "\n{}. {}:{lines}{under}\n   {}",
            rank + 1,
            hit.path,
            hit.snippet
        ));
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({
        "query": query,
        "agentId": layout.agent_id,
        "results": outcome.hits.iter().map(structured_hit).collect::<Vec<_>>(),
        "matched": outcome.matched,
        "searched": outcome.searched,
    }));
    result
}

/// A hit as the structured result gives it: OpenClaw's fields, the heading,
/// and `file` and `line`, the names this tool used before (the same values
/// as `path` and `startLine`).
fn structured_hit(hit: &MemoryHit) -> Value {
    let mut value = serde_json::to_value(hit).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("file".to_owned(), json!(hit.path));
        map.insert("line".to_owned(), json!(hit.start_line));
        if let Some(heading) = &hit.heading {
            map.insert("heading".to_owned(), json!(heading));
        }
    }
    value
}

fn read_result(layout: &MemoryLayout, file: &str) -> CallToolResult {
    text_result(read_note(layout, file))
}

fn user_prefs_result(layout: &MemoryLayout) -> CallToolResult {
    text_result(user_prefs(layout))
}

fn text_result(outcome: Result<String, String>) -> CallToolResult {
    match outcome {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
    }
}

/// `file` of the memory, whole; or why not (outside the root, not a note,
/// missing, too large).
fn read_note(layout: &MemoryLayout, file: &str) -> Result<String, String> {
    resolve_note(layout, file)
        .and_then(|note| note.read(MAX_READ_BYTES))
        .map_err(|err| err.to_string())
}

/// `USER.md`, or a sentence saying there is none.
fn user_prefs(layout: &MemoryLayout) -> Result<String, String> {
    let path = &layout.user_prefs;
    match std::fs::symlink_metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(format!(
            "No user preferences recorded: {} does not exist.",
            path.display()
        )),
        _ => match layout.kind {
            super::LayoutKind::Workspace => read_note(layout, "USER.md"),
            // Beside the memory directory, not in it: its own containment
            // is "this one file, no symlink out of its directory".
            super::LayoutKind::MemoryDir => {
                let parent = layout.user_prefs.parent().unwrap_or(path);
                read_note(&MemoryLayout::memory_dir(parent, "USER.md"), "USER.md")
            }
        },
    }
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "copilot-bridge-memory",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Read-only access to OpenClaw's memory: search its notes with openclaw_memory_search, read one with openclaw_memory_read, and the user's preferences with openclaw_user_prefs.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut listed = tools::definitions();
        if let Some(sessions) = &self.sessions {
            // The gateway's tools the session has (its rules may block some).
            let session = sessions.session(None).await.ok();
            listed.extend(crate::openclaw::mcp_tools().into_iter().filter(|tool| {
                session
                    .as_ref()
                    .is_some_and(|session| session.tool(&tool.name).is_some())
            }));
        }
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(sessions) = &self.sessions
            && let Some(answer) = crate::openclaw::mcp_call(
                sessions.as_ref(),
                &request.name,
                request.arguments.clone(),
            )
            .await
        {
            return answer.map(CallToolResponse::from);
        }
        match tools::parse(&request.name, request.arguments) {
            Ok(call) => self.run(call).await.map(CallToolResponse::from),
            Err(Rejected::TooDeep(depth)) => Ok(depth::too_deep_result(depth).into()),
            Err(Rejected::Error(err)) => Err(err),
        }
    }
}

/// The memory server over streamable HTTP, for the daemon: every MCP
/// session gets a clone sharing the indexes.
pub fn http_service(
    layout: MemoryLayout,
) -> StreamableHttpService<MemoryServer, LocalSessionManager> {
    MemoryServer::new(layout).into_http_service()
}

impl MemoryServer {
    /// This server over streamable HTTP, sharing its indexes with every
    /// clone (so the daemon's other uses of it keep them warm too).
    pub fn into_http_service(self) -> StreamableHttpService<MemoryServer, LocalSessionManager> {
        crate::serve::http_service(move || Ok(self.clone()))
    }
}
