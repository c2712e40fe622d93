//! What the chat screen shows besides the conversation: the models
//! `/model` offers, `/status`, `/policy` and `/diff`, and the workspace's
//! files for `@` completion.

use bridge_chat::ModelChoice;
use serde_json::Value;

use super::Conversation;

/// Workspace paths offered to `@` completion.
const MAX_PATHS: usize = 5_000;

/// The models `/model` offers: each backend's, and the `[models]` routes.
pub(super) fn models_of(status: &Value) -> Vec<ModelChoice> {
    let mut choices = Vec::new();
    for backend in status["backends"].as_array().into_iter().flatten() {
        let name = backend["name"].as_str().unwrap_or_default();
        let default = backend["defaultModel"].as_str();
        let models: Vec<&str> = backend["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .chain(default)
            .collect();
        for model in models {
            let id = format!("{name}/{model}");
            if choices.iter().any(|c: &ModelChoice| c.id == id) {
                continue;
            }
            choices.push(ModelChoice {
                id,
                backend: name.to_owned(),
                note: if Some(model) == default {
                    "default".to_owned()
                } else {
                    String::new()
                },
            });
        }
    }
    for route in status["modelRoutes"].as_array().into_iter().flatten() {
        if let (Some(rule), Some(target)) = (route["rule"].as_str(), route["target"].as_str()) {
            choices.push(ModelChoice {
                id: rule.to_owned(),
                backend: target.to_owned(),
                note: "[models] route".to_owned(),
            });
        }
    }
    choices
}

pub(super) fn status_lines(
    status: &Value,
    conversation: &Conversation,
    model: Option<&str>,
) -> (&'static str, Vec<String>) {
    let text = |value: &Value| value.as_str().unwrap_or("—").to_owned();
    (
        "Status",
        vec![
            format!(
                "daemon: copilot-bridge {} (pid {})",
                text(&status["version"]),
                status["pid"]
            ),
            format!("session: {}", conversation.session),
            format!("model: {}", model.unwrap_or("the backend's default")),
            format!("default backend: {}", text(&status["defaultBackend"])),
            format!("state directory: {}", text(&status["stateDir"])),
        ],
    )
}

pub(super) fn policy_lines(status: &Value, cwd: &std::path::Path) -> (&'static str, Vec<String>) {
    let policy = &status["policy"];
    let mut lines = vec![
        format!("workspace: {}", cwd.display()),
        match policy["readOnly"].as_bool() {
            Some(true) => "read-only: tools may read, not write".to_owned(),
            Some(false) => "writable: tools may write inside the workspace".to_owned(),
            None => "read-only: unknown".to_owned(),
        },
    ];
    if let Some(file) = policy["workspacePolicy"].as_str() {
        lines.push(format!(".agent-policy.yaml: {file}"));
    }
    if let Some(allow) = policy["writesAllow"].as_array() {
        let globs: Vec<&str> = allow.iter().filter_map(Value::as_str).collect();
        lines.push(format!("writes allowed to: {}", globs.join(", ")));
    }
    lines.push("asks go to the approval queue: answered here, by `copilot-bridge approvals` or the dashboard".to_owned());
    ("Policy", lines)
}

/// `git diff` of the workspace (what this and other sessions changed).
pub(super) async fn git_diff(cwd: &std::path::Path) -> Vec<String> {
    let output = tokio::process::Command::new("git")
        .args(["diff", "--no-color", "--no-ext-diff"])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::null())
        .output()
        .await;
    match output {
        Ok(output) if output.status.success() => {
            let text = String::from_utf8_lossy(&output.stdout);
            if text.trim().is_empty() {
                vec!["no changes (git diff is empty)".to_owned()]
            } else {
                text.lines().take(2_000).map(str::to_owned).collect()
            }
        }
        Ok(output) => vec![format!(
            "git diff failed: {}",
            bridge_policy::redact::printable(&String::from_utf8_lossy(&output.stderr), 300)
        )],
        Err(err) => vec![format!("cannot run git: {err}")],
    }
}

/// The workspace's files for `@` completion (ignored files left out).
pub(super) fn workspace_paths(cwd: &std::path::Path) -> Vec<String> {
    ignore::WalkBuilder::new(cwd)
        .max_depth(Some(8))
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .filter_map(|entry| {
            entry
                .path()
                .strip_prefix(cwd)
                .ok()
                .map(|path| path.display().to_string())
        })
        .take(MAX_PATHS)
        .collect()
}
