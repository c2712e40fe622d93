//! `format` and `organize_imports`: run the command the user configured for
//! the file's extension (`[tools.formatters]`, `[tools.import_organizers]`)
//! on one file. The commands are user-chosen, so they skip shell analysis but
//! run like every other process: scrubbed environment, own process group,
//! timeout.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bridge_policy::{Access, WorkspaceRoot};
use bridge_protocol::ToolEffect;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::read::support::{open_regular, parse_args, run_blocking, sha256_of, writes_its_path};
use crate::shell::run_process;
use crate::{Tool, ToolContext, ToolError};

pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(FileCommandTool {
            kind: CommandKind::Format,
        }),
        Arc::new(FileCommandTool {
            kind: CommandKind::OrganizeImports,
        }),
    ]
}

#[derive(Debug, Clone, Copy)]
enum CommandKind {
    Format,
    OrganizeImports,
}

impl CommandKind {
    fn commands(self, ctx: &ToolContext) -> &BTreeMap<String, Vec<String>> {
        match self {
            Self::Format => &ctx.settings.formatters,
            Self::OrganizeImports => &ctx.settings.import_organizers,
        }
    }

    fn config_table(self) -> &'static str {
        match self {
            Self::Format => "tools.formatters",
            Self::OrganizeImports => "tools.import_organizers",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Self::Format => "formatter",
            Self::OrganizeImports => "import organizer",
        }
    }

    /// A plausible command for the config hint.
    fn example(self, extension: &str) -> &'static str {
        match (self, extension) {
            (Self::Format, "rs") => r#"["rustfmt", "--edition", "2021"]"#,
            (Self::Format, "go") => r#"["gofmt", "-w"]"#,
            (Self::Format, "py") => r#"["ruff", "format"]"#,
            (Self::Format, "ts" | "tsx" | "js" | "jsx" | "json" | "css" | "md") => {
                r#"["prettier", "--write"]"#
            }
            (Self::OrganizeImports, "py") => r#"["ruff", "check", "--select", "I", "--fix"]"#,
            (Self::OrganizeImports, "go") => r#"["goimports", "-w"]"#,
            _ => r#"["<command>", "{file}"]"#,
        }
    }
}

struct FileCommandTool {
    kind: CommandKind,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileArgs {
    path: String,
}

#[async_trait]
impl Tool for FileCommandTool {
    fn name(&self) -> &'static str {
        match self.kind {
            CommandKind::Format => "format",
            CommandKind::OrganizeImports => "organize_imports",
        }
    }

    fn description(&self) -> &'static str {
        match self.kind {
            CommandKind::Format => {
                "Format a file in place with the formatter configured for its extension. Reports whether the file changed."
            }
            CommandKind::OrganizeImports => {
                "Sort and clean the imports of a file in place with the import organizer configured for its extension. Reports whether the file changed."
            }
        }
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "Workspace-relative path of the file."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Write
    }

    fn accesses(&self, args: &Value) -> Result<Vec<Access>, ToolError> {
        writes_its_path(self.name(), args)
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let tool = self.name();
        let args: FileArgs = parse_args(tool, args)?;
        let path = ctx.resolve_write(&args.path)?;
        let relative = ctx.relative(&path);
        let argv = self.command_for(ctx, &path, &relative)?;
        let before = file_hash(ctx.guard.root(), &path, &relative).await?;

        let timeout_secs = ctx.settings.shell_timeout_secs;
        let (program, rest) = argv.split_first().ok_or_else(|| {
            ToolError::NotConfigured(format!("the {} command is empty", self.kind.what()))
        })?;
        let outcome = run_process(
            OsStr::new(program),
            rest,
            ctx.guard.root().path(),
            Duration::from_secs(timeout_secs),
            ctx.settings.shell_output_cap_bytes,
        )
        .await
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound => {
                ToolError::NotConfigured(format!("{program} is not installed or not on PATH"))
            }
            std::io::ErrorKind::PermissionDenied => {
                ToolError::NotConfigured(format!("{program} is not executable"))
            }
            _ => ToolError::io(format!("cannot start {program}"), err),
        })?;
        if outcome.timed_out {
            return Err(ToolError::Timeout(timeout_secs));
        }
        if !outcome.success() {
            let output = if outcome.stderr.trim().is_empty() {
                &outcome.stdout
            } else {
                &outcome.stderr
            };
            let status = outcome.exit_code.map_or_else(
                || {
                    format!(
                        "was killed by signal {}",
                        outcome.signal.unwrap_or_default()
                    )
                },
                |code| format!("exited with status {code}"),
            );
            return Err(ToolError::Failed(format!(
                "{program} {status} on {relative}: {}",
                output.trim()
            )));
        }
        let after = file_hash(ctx.guard.root(), &path, &relative).await?;
        // The command as run, with the file named as the caller knows it.
        let path_text = path.to_string_lossy();
        let shown: Vec<String> = argv
            .iter()
            .map(|arg| arg.replace(path_text.as_ref(), &relative))
            .collect();
        Ok(json!({"ok": true, "path": relative, "command": shown, "changed": before != after}))
    }
}

impl FileCommandTool {
    /// The configured argv with the file's absolute path substituted for
    /// `{file}`, or appended when no argument mentions it.
    fn command_for(
        &self,
        ctx: &ToolContext,
        path: &Path,
        relative: &str,
    ) -> Result<Vec<String>, ToolError> {
        let extension = path.extension().and_then(OsStr::to_str).ok_or_else(|| {
            ToolError::NotConfigured(format!(
                "{relative} has no file extension, so no {} applies",
                self.kind.what()
            ))
        })?;
        let commands = self.kind.commands(ctx);
        let configured = commands
            .get(extension)
            .or_else(|| commands.get(&extension.to_ascii_lowercase()))
            .ok_or_else(|| {
                ToolError::NotConfigured(format!(
                    "no {} for .{extension} files; configure one in config.toml: [{}] {extension} = {}",
                    self.kind.what(),
                    self.kind.config_table(),
                    self.kind.example(extension)
                ))
            })?;
        if configured.is_empty() {
            return Err(ToolError::NotConfigured(format!(
                "the {} for .{extension} files is an empty command ([{}] {extension})",
                self.kind.what(),
                self.kind.config_table()
            )));
        }
        let file = path.to_string_lossy();
        let mut argv: Vec<String> = configured
            .iter()
            .map(|arg| arg.replace("{file}", &file))
            .collect();
        if !configured.iter().any(|arg| arg.contains("{file}")) {
            argv.push(file.into_owned());
        }
        Ok(argv)
    }
}

/// The file's hash, read beneath the workspace root: before the formatter
/// runs, and after, which also refuses a file that a swapped symlink moved
/// out of the workspace meanwhile.
async fn file_hash(root: &WorkspaceRoot, path: &Path, relative: &str) -> Result<String, ToolError> {
    let path = path.to_path_buf();
    let relative = relative.to_owned();
    let root = root.clone();
    run_blocking("format", move || {
        let (handle, _) = open_regular("format", &root, &path, &relative)?;
        sha256_of("format", handle, &relative)
    })
    .await
}
