//! Slash commands: the list, the popup's filter, and what a typed command
//! line means.

/// A command of the composer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    Model,
    Runner,
    Sessions,
    Resume,
    New,
    Approvals,
    Policy,
    Diff,
    Status,
    Clear,
    Help,
    Quit,
}

/// Every command, in the popup's order, with its one-line description.
pub(crate) const COMMANDS: &[(Command, &str, &str)] = &[
    (Command::Model, "/model", "pick the model (across backends)"),
    (Command::Runner, "/runner", "native or copilot"),
    (Command::Sessions, "/sessions", "list conversations"),
    (Command::Resume, "/resume", "continue a conversation"),
    (Command::New, "/new", "start a new conversation"),
    (Command::Approvals, "/approvals", "pending asks of the hub"),
    (Command::Policy, "/policy", "the policy in force"),
    (Command::Diff, "/diff", "the workspace's changes"),
    (Command::Status, "/status", "the hub's status"),
    (Command::Clear, "/clear", "clear the screen (history stays)"),
    (Command::Help, "/help", "keys and commands"),
    (Command::Quit, "/quit", "leave the chat"),
];

/// The commands whose name starts with what was typed (the '/' included).
pub(crate) fn filter(typed: &str) -> Vec<(Command, &'static str, &'static str)> {
    COMMANDS
        .iter()
        .filter(|(_, name, _)| name.starts_with(typed))
        .copied()
        .collect()
}

/// Whether the composer's text is a command being typed: '/' and a word,
/// no space or line yet (the popup shows then).
pub(crate) fn typing_command(text: &str) -> bool {
    text.starts_with('/') && !text.contains(char::is_whitespace)
}

/// A submitted command line: the command and its argument.
pub(crate) fn parse(line: &str) -> Option<(Command, &str)> {
    let line = line.trim();
    let (name, arg) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    COMMANDS
        .iter()
        .find(|(_, n, _)| *n == name)
        .map(|(command, _, _)| (*command, arg.trim()))
}

/// The `/help` text.
pub(crate) fn help_lines() -> Vec<String> {
    let mut lines = vec![
        "Keys".to_owned(),
        "  Enter            send the prompt".to_owned(),
        "  Shift/Alt+Enter  new line (also Ctrl-J); a paste never sends".to_owned(),
        "  ↑ / ↓            earlier prompts (on the first / last line)".to_owned(),
        "  Tab              complete @path or /command".to_owned(),
        "  PageUp/PageDown  scroll the transcript (Esc: back to the end)".to_owned(),
        "  Ctrl-C           stop the turn; when idle, quit".to_owned(),
        "  Ctrl-D           quit (on an empty composer)".to_owned(),
        "  Esc              close a popup; put an ask aside (/approvals)".to_owned(),
        String::new(),
        "Commands".to_owned(),
    ];
    lines.extend(
        COMMANDS
            .iter()
            .map(|(_, name, what)| format!("  {name:<12} {what}")),
    );
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_popup_filters_by_prefix() {
        let names: Vec<_> = filter("/s").iter().map(|c| c.1).collect();
        assert_eq!(names, ["/sessions", "/status"]);
        assert_eq!(filter("/").len(), COMMANDS.len());
        assert!(filter("/x").is_empty());
        assert!(typing_command("/mo"));
        assert!(!typing_command("/model gpt"));
        assert!(!typing_command("hello"));
    }

    #[test]
    fn a_command_line_parses_with_its_argument() {
        assert_eq!(parse("/model gpt-4o"), Some((Command::Model, "gpt-4o")));
        assert_eq!(parse("/new"), Some((Command::New, "")));
        assert_eq!(parse("/nope"), None);
    }
}
