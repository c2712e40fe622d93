//! The tools coding agents run themselves (the Copilot CLI's `bash`,
//! `edit`, ..., Claude Code's `Bash`, `Write`, ..., Codex's shell and
//! `apply_patch`), described as
//! [`Access`]es so the one decision checks them
//! like our own tools: a command through the shell analysis, a write
//! through read-only mode and the write globs. Paths in their arguments are
//! contained by the guard's argument check like any other call's.

use serde_json::Value;

use crate::access::Access;

/// A coding agent whose own tools our decision answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    /// GitHub Copilot CLI (`copilot`).
    CopilotCli,
    /// Anthropic's Claude Code (`claude`).
    ClaudeCode,
    /// OpenAI's Codex (`codex`), whose hooks use Claude Code's payload.
    Codex,
}

impl Agent {
    /// How audit entries and logs name it.
    pub fn name(self) -> &'static str {
        match self {
            Self::CopilotCli => "copilot-cli",
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }

    /// The agent [`name`](Self::name) names.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::CopilotCli, Self::ClaudeCode, Self::Codex]
            .into_iter()
            .find(|agent| agent.name() == name)
    }

    /// How people call it.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::CopilotCli => "Copilot CLI",
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
        }
    }

    /// What the agent's own `tool` will do with `args` (see
    /// [`copilot_cli_accesses`]).
    pub fn accesses(self, tool: &str, args: &Value) -> Result<Vec<Access>, String> {
        match self {
            Self::CopilotCli => copilot_cli_accesses(tool, args),
            Self::ClaudeCode => claude_code_accesses(tool, args),
            Self::Codex => codex_accesses(tool, args),
        }
    }
}

/// The Copilot CLI's tools that run a shell command (`command`), or type
/// input into a running shell (`input`).
const COPILOT_SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "powershell",
    "write_bash",
    "write_powershell",
];
/// The Copilot CLI's tools that change files.
const COPILOT_WRITE_TOOLS: &[&str] = &[
    "write",
    "create",
    "edit",
    "str_replace",
    "str_replace_editor",
    "insert",
    "apply_patch",
];
/// Where those tools name the file they change.
const COPILOT_PATH_KEYS: &[&str] = &["path", "file_path", "fileName", "filename"];

/// What the Copilot CLI's `tool` will do with `args`; `Err` with the reason
/// when it cannot be told (a shell tool without a command is refused rather
/// than allowed unchecked). Tools not listed here (view, grep, glob, MCP
/// tools) declare nothing: the permission rules and path containment
/// decide them.
pub fn copilot_cli_accesses(tool: &str, args: &Value) -> Result<Vec<Access>, String> {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|key| args.get(*key).and_then(Value::as_str))
            .filter(|text| !text.trim().is_empty())
    };
    if COPILOT_SHELL_TOOLS.contains(&tool) {
        return match text(&["command", "input"]) {
            Some(command) => Ok(vec![Access::Run {
                command: command.to_owned(),
                cwd: None,
            }]),
            None => Err(format!(
                "{tool} without a command copilot-bridge can check is refused"
            )),
        };
    }
    let reads_only =
        tool == "str_replace_editor" && args.get("command").and_then(Value::as_str) == Some("view");
    if COPILOT_WRITE_TOOLS.contains(&tool) && !reads_only {
        if let Some(path) = text(COPILOT_PATH_KEYS) {
            return Ok(vec![Access::Write(path.to_owned())]);
        }
        // A patch names its files inside its text.
        return Ok(patch_writes(tool, text(PATCH_KEYS)));
    }
    Ok(Vec::new())
}

/// Where a patch tool carries its patch.
const PATCH_KEYS: &[&str] = &["input", "patch", "command"];

/// A patch tool's writes: each file `patch` names, else a write of files
/// it does not name (refused in read-only mode).
fn patch_writes(tool: &str, patch: Option<&str>) -> Vec<Access> {
    match patch.and_then(crate::patch_files::files) {
        Some(files) => files.into_iter().map(Access::Write).collect(),
        None => vec![Access::WriteUnnamed {
            tool: tool.to_owned(),
        }],
    }
}

/// What Codex's own `tool` will do with `args`. Its hooks speak Claude
/// Code's language (its shell arrives as `Bash` with `command`, MCP tools
/// as `mcp__server__tool`); a shell command that is exactly its
/// `apply_patch <<'EOF' … EOF` form is the patch's writes, since Codex
/// applies it itself rather than running it; an `apply_patch` tool call
/// likewise.
pub fn codex_accesses(tool: &str, args: &Value) -> Result<Vec<Access>, String> {
    let text = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty())
    };
    if tool == "apply_patch" {
        let patch = PATCH_KEYS.iter().find_map(|key| text(key));
        return Ok(patch_writes(tool, patch));
    }
    if tool == "Bash"
        && let Some(files) = text("command").and_then(crate::patch_files::shell_apply_patch)
    {
        return Ok(files.into_iter().map(Access::Write).collect());
    }
    claude_code_accesses(tool, args)
}

/// What Claude Code's own `tool` will do with `args`; `Err` with the reason
/// when it cannot be told. Its tools name their files in `file_path` (or
/// `notebook_path`), which is not one of the argument names path
/// containment looks at, so reads are declared here too. Tools not listed
/// (`WebFetch`, `Task`, `TodoWrite`, MCP tools, ...) declare nothing: the
/// permission rules decide them.
pub fn claude_code_accesses(tool: &str, args: &Value) -> Result<Vec<Access>, String> {
    let text = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty())
    };
    let named = |key: &str, access: fn(String) -> Access| match text(key) {
        Some(path) => Ok(vec![access(path.to_owned())]),
        None => Err(format!(
            "{tool} without a {key} copilot-bridge can check is refused"
        )),
    };
    match tool {
        "Bash" => match text("command") {
            Some(command) => Ok(vec![Access::Run {
                command: command.to_owned(),
                cwd: None,
            }]),
            None => Err("Bash without a command copilot-bridge can check is refused".to_owned()),
        },
        "Write" | "Edit" | "MultiEdit" => named("file_path", Access::Write),
        "NotebookEdit" => named("notebook_path", Access::Write),
        "Read" => named("file_path", Access::Read),
        // Their `path` is optional (the working directory) and contained by
        // the guard's argument check when given.
        _ => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shell_tools_run_their_command_and_refuse_without_one() {
        assert_eq!(
            copilot_cli_accesses("bash", &json!({"command": "ls"})),
            Ok(vec![Access::Run {
                command: "ls".to_owned(),
                cwd: None
            }])
        );
        assert!(copilot_cli_accesses("write_bash", &json!({"input": "  "})).is_err());
        assert!(copilot_cli_accesses("bash", &json!({})).is_err());
    }

    #[test]
    fn write_tools_write_their_path_and_views_read() {
        assert_eq!(
            copilot_cli_accesses("edit", &json!({"path": "a.rs"})),
            Ok(vec![Access::Write("a.rs".to_owned())])
        );
        assert_eq!(
            copilot_cli_accesses("apply_patch", &json!({"input": "*** Begin Patch"})),
            Ok(vec![Access::WriteUnnamed {
                tool: "apply_patch".to_owned()
            }])
        );
        assert_eq!(
            copilot_cli_accesses(
                "apply_patch",
                &json!({"input": "*** Begin Patch\n*** Add File: a.rs\n+x\n*** End Patch"})
            ),
            Ok(vec![Access::Write("a.rs".to_owned())])
        );
        assert_eq!(
            copilot_cli_accesses(
                "str_replace_editor",
                &json!({"command": "view", "path": "a"})
            ),
            Ok(Vec::new())
        );
        assert_eq!(
            copilot_cli_accesses("view", &json!({"path": "a"})),
            Ok(Vec::new())
        );
    }

    #[test]
    fn claude_code_tools_declare_their_commands_writes_and_reads() {
        assert_eq!(
            claude_code_accesses("Bash", &json!({"command": "ls", "description": "list"})),
            Ok(vec![Access::Run {
                command: "ls".to_owned(),
                cwd: None
            }])
        );
        assert!(claude_code_accesses("Bash", &json!({"command": " "})).is_err());
        for tool in ["Write", "Edit", "MultiEdit"] {
            assert_eq!(
                claude_code_accesses(tool, &json!({"file_path": "/w/a.rs"})),
                Ok(vec![Access::Write("/w/a.rs".to_owned())]),
                "{tool}"
            );
            assert!(claude_code_accesses(tool, &json!({})).is_err(), "{tool}");
        }
        assert_eq!(
            claude_code_accesses("NotebookEdit", &json!({"notebook_path": "n.ipynb"})),
            Ok(vec![Access::Write("n.ipynb".to_owned())])
        );
        assert_eq!(
            claude_code_accesses("Read", &json!({"file_path": "/etc/passwd"})),
            Ok(vec![Access::Read("/etc/passwd".to_owned())])
        );
        assert_eq!(
            claude_code_accesses("Grep", &json!({"pattern": "x"})),
            Ok(Vec::new())
        );
    }

    #[test]
    fn codex_patches_are_their_writes_and_other_commands_run() {
        let patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-a\n+b\n*** End Patch";
        assert_eq!(
            codex_accesses(
                "Bash",
                &json!({"command": format!("apply_patch <<'EOF'\n{patch}\nEOF")})
            ),
            Ok(vec![Access::Write("notes.txt".to_owned())])
        );
        assert_eq!(
            codex_accesses("apply_patch", &json!({"command": patch})),
            Ok(vec![Access::Write("notes.txt".to_owned())])
        );
        assert_eq!(
            codex_accesses("Bash", &json!({"command": "cat notes.txt"})),
            Ok(vec![Access::Run {
                command: "cat notes.txt".to_owned(),
                cwd: None
            }])
        );
        assert_eq!(Agent::from_name("codex"), Some(Agent::Codex));
    }
}
