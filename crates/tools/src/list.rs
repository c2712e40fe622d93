//! `list_files`: the files of the workspace (or of a subdirectory) matching a
//! glob, sorted, with ignore files honoured.

pub(crate) mod walk;

use std::collections::BinaryHeap;
use std::sync::Arc;

use async_trait::async_trait;
use bridge_protocol::ToolEffect;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::read::support::{parse_args, run_blocking};
use crate::{Tool, ToolContext, ToolError};
use walk::{FilesBeneath, GlobFilter, WalkScope};

const NAME: &str = "list_files";

pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(ListFiles)]
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ListArgs {
    glob: Option<String>,
    path: Option<String>,
    limit: Option<usize>,
    #[serde(default)]
    include_hidden: bool,
}

/// Lists workspace files.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListFiles;

#[async_trait]
impl Tool for ListFiles {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "List files of the workspace matching a glob, as sorted workspace-relative paths. \
         Files ignored by .gitignore / .ignore, hidden files (unless includeHidden) and .git/ \
         are skipped; symlinks are not followed."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "glob": {
                    "type": "string",
                    "description": "Glob the files must match (default \"**/*\"). Without a '/', it matches file names at any depth (\"*.rs\"); with one, the workspace-relative path (\"src/**/*.ts\"), where '*' does not cross '/'."
                },
                "path": {
                    "type": "string",
                    "description": "Directory to list, relative to the workspace root (default: the whole workspace)."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Most paths to return (default and maximum: the configured list limit). The first ones in sorted order are kept."
                },
                "includeHidden": {
                    "type": "boolean",
                    "description": "Also list files and directories whose name starts with '.' (default false; .git/ is always skipped)."
                }
            },
            "required": [],
            "additionalProperties": false
        })
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Read
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: ListArgs = parse_args(NAME, args)?;
        let max = ctx.settings.list_max_results;
        let limit = match args.limit {
            Some(0) => {
                return Err(ToolError::InvalidArguments(format!(
                    "{NAME}: limit must be at least 1"
                )));
            }
            Some(limit) => limit.min(max),
            None => max,
        };
        let filter = args
            .glob
            .as_deref()
            .map(|glob| GlobFilter::new(NAME, glob))
            .transpose()?;
        let ctx = ctx.clone();
        let listing = run_blocking(NAME, move || {
            let scope = WalkScope::new(NAME, &ctx, args.path.as_deref(), args.include_hidden)?;
            Ok(list(&scope, filter.as_ref(), limit))
        })
        .await?;
        let mut result = json!({"files": listing.files, "truncated": listing.truncated});
        if !listing.non_utf8.is_empty() {
            result["nonUtf8"] = json!(listing.non_utf8);
        }
        // Only when it happened: a listing that could not read everything
        // must not look complete.
        if listing.unreadable > 0 {
            result["unreadable"] = json!(listing.unreadable);
        }
        Ok(result)
    }
}

struct Listing {
    files: Vec<String>,
    truncated: bool,
    /// Paths whose names are not UTF-8, in the lossy form used in `files`.
    non_utf8: Vec<String>,
    /// Entries that could not be read (permissions, paths too long, races).
    unreadable: usize,
}

fn list(scope: &WalkScope, filter: Option<&GlobFilter>, limit: usize) -> Listing {
    // A bounded max-heap keeps the `limit` smallest paths, so the result is the
    // true sorted prefix without holding the whole tree in memory.
    let mut kept: BinaryHeap<String> =
        BinaryHeap::with_capacity(limit.saturating_add(1).min(65_536));
    let mut truncated = false;
    let mut non_utf8 = Vec::new();
    let mut unreadable = 0;
    let mut beneath = FilesBeneath::new(scope.workspace());
    for entry in scope.builder().build() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                unreadable += 1;
                tracing::debug!(error = %err, "list_files: skipping unreadable entry");
                continue;
            }
        };
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(scope.root()) else {
            continue;
        };
        if filter.is_some_and(|filter| !filter.matches(relative)) {
            continue;
        }
        // Read by path: only a name still reachable beneath the root now is
        // a name of the workspace (see the walk module).
        if !beneath.has(entry.path()) {
            unreadable += 1;
            continue;
        }
        let display = relative.to_string_lossy().into_owned();
        if relative.to_str().is_none() {
            non_utf8.push(display.clone());
        }
        kept.push(display);
        if kept.len() > limit {
            kept.pop();
            truncated = true;
        }
    }
    let files = kept.into_sorted_vec();
    non_utf8.retain(|path| files.binary_search(path).is_ok());
    non_utf8.sort();
    Listing {
        files,
        truncated,
        non_utf8,
        unreadable,
    }
}
