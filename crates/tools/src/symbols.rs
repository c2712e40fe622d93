//! `symbols`: an outline of one source file (functions, methods, types and
//! their containers), parsed with tree-sitter.

mod extract;
mod languages;
mod tangle;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bridge_protocol::ToolEffect;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::read::support::{
    looks_binary, parse_args, read_bounded, resolve_regular_file, run_blocking,
};
use crate::{Tool, ToolContext, ToolError};
use extract::ExtractError;
use languages::{Lang, SUPPORTED_EXTENSIONS};

const NAME: &str = "symbols";

/// Wall-clock budget for parsing and querying one file. Real source files of
/// up to `symbols_max_bytes` take well under a second; only hostile or badly
/// broken input (deep runs of unclosed brackets) gets near it, and for that
/// input tree-sitter's time grows quadratically, so waiting longer rarely helps.
const TIME_BUDGET: Duration = Duration::from_secs(2);

pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(Symbols)]
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SymbolsArgs {
    path: String,
}

/// Outlines a source file.
#[derive(Debug, Clone, Copy, Default)]
pub struct Symbols;

#[async_trait]
impl Tool for Symbols {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "List the definitions in one source file (Rust, Python, TypeScript/TSX, JavaScript/JSX, Go): \
         name, kind (function, method, struct, enum, trait, class, interface, type, impl, const, \
         module, ...), 1-based start and end line, and the containing type or scope."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": format!(
                        "Source file relative to the workspace root; its extension selects the language ({}).",
                        SUPPORTED_EXTENSIONS.join(", ")
                    )
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
        let args: SymbolsArgs = parse_args(NAME, args)?;
        let ctx = ctx.clone();
        run_blocking(NAME, move || outline(&ctx, &args.path)).await
    }
}

fn outline(ctx: &ToolContext, path: &str) -> Result<Value, ToolError> {
    let file = resolve_regular_file(NAME, ctx, path)?;
    let extension = std::path::Path::new(&file.relative)
        .extension()
        .and_then(|extension| extension.to_str())
        .unwrap_or_default();
    let lang = Lang::from_extension(extension).ok_or_else(|| {
        ToolError::InvalidArguments(format!(
            "{NAME}: unsupported file type {:?} for {path}; supported extensions: {}",
            extension,
            SUPPORTED_EXTENSIONS.join(", ")
        ))
    })?;
    let limit = ctx.settings.symbols_max_bytes;
    let size = file.metadata.len();
    if size > limit {
        return Err(ToolError::TooLarge {
            path: file.relative,
            size,
            limit,
        });
    }
    let source = read_bounded(NAME, file.handle, &file.relative, limit)?;
    if looks_binary(&source) {
        return Err(ToolError::Binary(file.relative));
    }
    let symbols =
        extract::extract(lang, &source, Instant::now() + TIME_BUDGET).map_err(|err| match err {
            ExtractError::OutOfTime => ToolError::Timeout(TIME_BUDGET.as_secs()),
            ExtractError::Tangled(run) => ToolError::Failed(format!(
                "{NAME}: {}: symbol extraction gave up: the file is too deeply nested or \
                 malformed (at least {run} unmatched brackets or other bare tokens in a row)",
                file.relative
            )),
            ExtractError::Broken(reason) => {
                ToolError::Failed(format!("{NAME}: {}: {reason}", file.relative))
            }
        })?;
    let symbols: Vec<Value> = symbols
        .into_iter()
        .map(|symbol| {
            let mut value = json!({
                "name": symbol.name,
                "kind": symbol.kind,
                "line": symbol.line,
                "endLine": symbol.end_line,
            });
            if let Some(container) = symbol.container {
                value["container"] = Value::String(container);
            }
            value
        })
        .collect();
    Ok(json!({
        "path": file.relative,
        "language": lang.id(),
        "symbols": symbols,
    }))
}

#[cfg(test)]
mod tests {
    use super::languages::Lang;

    #[test]
    fn every_query_compiles() {
        for lang in [
            Lang::Rust,
            Lang::Python,
            Lang::TypeScript,
            Lang::Tsx,
            Lang::JavaScript,
            Lang::Go,
        ] {
            if let Err(err) = lang.query() {
                panic!("{err}");
            }
        }
    }
}
