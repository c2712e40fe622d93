//! `read_file`: a workspace file's text, whole or a line range, with the
//! SHA-256 of the whole file so an edit can later prove it saw this version.

mod excerpt;
pub(crate) mod support;

use std::fs::File;
use std::io::Read;
use std::sync::Arc;

use async_trait::async_trait;
use bridge_protocol::ToolEffect;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Tool, ToolContext, ToolError};
use excerpt::collect_lines;
use support::{BINARY_SNIFF_BYTES, looks_binary, parse_args, resolve_regular_file, run_blocking};

const NAME: &str = "read_file";

pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(ReadFile)]
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ReadArgs {
    path: String,
    start_line: Option<u64>,
    end_line: Option<u64>,
}

impl ReadArgs {
    fn validate(&self) -> Result<(), ToolError> {
        for (name, value) in [("startLine", self.start_line), ("endLine", self.end_line)] {
            if value == Some(0) {
                return Err(ToolError::InvalidArguments(format!(
                    "{NAME}: {name} is 1-based and must be at least 1"
                )));
            }
        }
        if let (Some(start), Some(end)) = (self.start_line, self.end_line)
            && start > end
        {
            return Err(ToolError::InvalidArguments(format!(
                "{NAME}: startLine {start} is after endLine {end}"
            )));
        }
        Ok(())
    }

    fn has_range(&self) -> bool {
        self.start_line.is_some() || self.end_line.is_some()
    }
}

/// Reads a file of the workspace.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFile;

#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Read a text file of the workspace, whole or a 1-based inclusive line range. \
         Returns the content, the SHA-256 of the whole file, and the total line count. \
         Files larger than the configured limit can only be read by line range; \
         binary files are refused."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path relative to the workspace root."
                },
                "startLine": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "First line to return, 1-based (default 1)."
                },
                "endLine": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Last line to return, 1-based and inclusive (default: the last line)."
                }
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Read
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: ReadArgs = parse_args(NAME, args)?;
        args.validate()?;
        let ctx = ctx.clone();
        run_blocking(NAME, move || read_file(&ctx, &args)).await
    }
}

fn read_file(ctx: &ToolContext, args: &ReadArgs) -> Result<Value, ToolError> {
    let file = resolve_regular_file(NAME, ctx, &args.path)?;
    let limit = ctx.settings.read_max_bytes;
    let size = file.metadata.len();
    if !args.has_range() && size > limit {
        return Err(ToolError::TooLarge {
            path: file.relative,
            size,
            limit,
        });
    }
    let io_context = || format!("{NAME}: cannot read {}", file.relative);
    let mut handle = file.handle;
    let prefix = read_prefix(&mut handle, BINARY_SNIFF_BYTES)
        .map_err(|err| ToolError::io(io_context(), err))?;
    if looks_binary(&prefix) {
        return Err(ToolError::Binary(file.relative));
    }
    let reader = std::io::Cursor::new(prefix).chain(handle);
    let first_line = args.start_line.unwrap_or(1);
    let last_line = args.end_line.unwrap_or(u64::MAX);
    let cap = usize::try_from(limit).unwrap_or(usize::MAX);
    let excerpt = collect_lines(reader, first_line, last_line, cap)
        .map_err(|err| ToolError::io(io_context(), err))?;

    if first_line > excerpt.total_lines.max(1) {
        return Err(ToolError::InvalidArguments(format!(
            "{NAME}: startLine {first_line} is past the end of {} ({} lines)",
            file.relative, excerpt.total_lines
        )));
    }
    let mut result = json!({
        "path": file.relative,
        "content": excerpt.content,
        "sha256": excerpt.sha256,
        "totalLines": excerpt.total_lines,
        "startLine": excerpt.first_line,
        "endLine": excerpt.last_included,
    });
    if excerpt.truncated {
        result["truncated"] = Value::Bool(true);
    }
    if excerpt.lossy {
        result["lossy"] = Value::Bool(true);
    }
    Ok(result)
}

/// Reads up to `len` bytes (fewer only at end of file).
fn read_prefix(file: &mut File, len: usize) -> std::io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(len);
    file.by_ref().take(len as u64).read_to_end(&mut prefix)?;
    Ok(prefix)
}
