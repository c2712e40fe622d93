//! The memory server: tool dispatch, file reads off the runtime threads,
//! and the index shared by every MCP session of one process.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

use super::contain::resolve_note;
use super::index::{Index, MAX_INDEXED_BYTES};
use super::layout::MemoryLayout;
use super::search::{Hit, query_terms, rank};
use super::tools::{self, Call, Rejected};
use crate::depth;

/// Notes larger than this are not returned by `openclaw_memory_read`.
pub const MAX_READ_BYTES: u64 = MAX_INDEXED_BYTES as u64;

/// The memory MCP server. Cheap to clone; clones share the index.
#[derive(Debug, Clone)]
pub struct MemoryServer {
    layout: Arc<MemoryLayout>,
    index: Arc<Mutex<Index>>,
}

/// A search's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOutcome {
    pub hits: Vec<Hit>,
    /// How many notes matched at all.
    pub matched: usize,
    /// How many notes were searched.
    pub searched: usize,
}

impl MemoryServer {
    pub fn new(layout: MemoryLayout) -> Self {
        Self {
            layout: Arc::new(layout),
            index: Arc::new(Mutex::new(Index::default())),
        }
    }

    pub fn layout(&self) -> &MemoryLayout {
        &self.layout
    }

    /// Searches now, on the calling thread (it reads files: call it from
    /// `spawn_blocking` or a plain thread).
    pub fn search_blocking(&self, query: &str, limit: usize) -> SearchOutcome {
        let terms = query_terms(query);
        let (snapshot, ids) = match self.index.lock() {
            Ok(mut index) => (index.refresh(&self.layout), index.term_ids(&terms)),
            // A panic while refreshing left a half-updated cache: start over.
            Err(poisoned) => {
                let mut index = poisoned.into_inner();
                *index = Index::default();
                (index.refresh(&self.layout), index.term_ids(&terms))
            }
        };
        let (hits, matched) = rank(&snapshot, &terms, &ids, limit);
        SearchOutcome {
            hits,
            matched,
            searched: snapshot.docs.len(),
        }
    }

    async fn run(&self, call: Call) -> Result<CallToolResult, ErrorData> {
        let server = self.clone();
        let joined = tokio::task::spawn_blocking(move || match call {
            Call::Search { query, limit } => server.search_result(&query, limit),
            Call::Read { file } => server.read_result(&file),
            Call::UserPrefs => server.user_prefs_result(),
        })
        .await;
        joined.map_err(|err| {
            ErrorData::internal_error(format!("the memory tool failed: {err}"), None)
        })
    }

    fn search_result(&self, query: &str, limit: usize) -> CallToolResult {
        let outcome = self.search_blocking(query, limit);
        let mut text = if outcome.searched == 0 {
            format!(
                "No memory notes found in {} ({} layout).",
                self.layout.root.display(),
                self.layout.kind.as_str()
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
            text.push_str(&format!(
                "\n{}. {}:{}{under}\n   {}",
                rank + 1,
                hit.file,
                hit.line,
                hit.snippet
            ));
        }
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(json!({
            "query": query,
            "results": outcome.hits,
            "matched": outcome.matched,
            "searched": outcome.searched,
        }));
        result
    }

    fn read_result(&self, file: &str) -> CallToolResult {
        match resolve_note(&self.layout, file).and_then(|note| note.read(MAX_READ_BYTES)) {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(err) => CallToolResult::error(vec![ContentBlock::text(err.to_string())]),
        }
    }

    fn user_prefs_result(&self) -> CallToolResult {
        let path = &self.layout.user_prefs;
        match std::fs::symlink_metadata(path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                CallToolResult::success(vec![ContentBlock::text(format!(
                    "No user preferences recorded: {} does not exist.",
                    path.display()
                ))])
            }
            _ => {
                let outcome = match self.layout.kind {
                    super::LayoutKind::Workspace => resolve_note(&self.layout, "USER.md")
                        .and_then(|note| note.read(MAX_READ_BYTES)),
                    // Beside the memory directory, not in it: its own
                    // containment is "this one file, no symlink out of its
                    // directory".
                    super::LayoutKind::MemoryDir => {
                        let parent = self.layout.user_prefs.parent().unwrap_or(path);
                        let parent_layout = MemoryLayout::memory_dir(parent, "USER.md");
                        resolve_note(&parent_layout, "USER.md")
                            .and_then(|note| note.read(MAX_READ_BYTES))
                    }
                };
                match outcome {
                    Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
                    Err(err) => CallToolResult::error(vec![ContentBlock::text(err.to_string())]),
                }
            }
        }
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
        Ok(ListToolsResult::with_all_items(tools::definitions()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match tools::parse(&request.name, request.arguments) {
            Ok(call) => self.run(call).await.map(CallToolResponse::from),
            Err(Rejected::TooDeep(depth)) => Ok(depth::too_deep_result(depth).into()),
            Err(Rejected::Error(err)) => Err(err),
        }
    }
}

/// The memory server over streamable HTTP, for the daemon: every MCP
/// session gets a clone sharing one index.
pub fn http_service(
    layout: MemoryLayout,
) -> StreamableHttpService<MemoryServer, LocalSessionManager> {
    let server = MemoryServer::new(layout);
    crate::serve::http_service(move || Ok(server.clone()))
}
