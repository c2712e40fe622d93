//! The system prompt: the native runner's base sections, rendered through
//! the session's transforms ([`Session::render_prompt`] puts the protected
//! `safety` and `identity` sections last, so they have the last word).

use crate::session::Session;

/// The section providers most often append to.
pub const SECTION_INSTRUCTIONS: &str = "instructions";

const IDENTITY: &str = "You are the coding agent of copilot-bridge. You work in one \
workspace through the tools you are given, and you answer in Markdown.";

const INSTRUCTIONS: &str = "Work step by step: look before you change (read files, \
search the code), make the smallest change that does the task, then check it (run the \
tests or the task the project defines). Prefer apply_patch or edit_file over rewriting \
whole files. When a tool fails or is denied, read the error: do not repeat a denied call; \
find another way or explain what is needed. When the task is done, answer with a short \
summary of what you changed and how you checked it, without calling a tool.";

const SAFETY: &str = "Every tool call passes the user's security policy. Never try to \
get around a denial, never reveal secrets (tokens, keys, passwords) you come across, and \
never act outside the workspace.";

/// The sections the native runner starts from, before transforms.
pub fn base_sections(session: &Session) -> Vec<(String, String)> {
    let startup: Vec<String> = session
        .startup_context()
        .into_iter()
        .filter(|(_, text)| !text.trim().is_empty())
        .map(|(owner, text)| format!("[{owner}] {}", text.trim()))
        .collect();
    vec![
        ("identity".to_owned(), IDENTITY.to_owned()),
        (SECTION_INSTRUCTIONS.to_owned(), INSTRUCTIONS.to_owned()),
        (
            "environment".to_owned(),
            format!(
                "Workspace root: {}. Paths in tool arguments are relative to it. \
                 Operating system: {}.",
                session.cwd().display(),
                std::env::consts::OS
            ),
        ),
        ("custom_instructions".to_owned(), String::new()),
        ("startup_context".to_owned(), startup.join("\n")),
        ("safety".to_owned(), SAFETY.to_owned()),
    ]
}

/// The whole system prompt: every non-empty rendered section, in order,
/// redacted (provider context may quote a secret).
pub(super) async fn system_prompt(session: &Session) -> String {
    let rendered = session.render_prompt(&base_sections(session)).await;
    let text = rendered
        .into_iter()
        .map(|(_, text)| text)
        .filter(|text| !text.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    bridge_policy::redact(&text).into_owned()
}
