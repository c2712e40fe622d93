//! `copilot-bridge chat`'s flags.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Workspace root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Model to use (a model, BACKEND/MODEL or a [models] route; default: the backend's).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Who does the work: native (our agent loop; the default) or copilot (the GitHub Copilot CLI); a resumed conversation keeps its own unless told.
    #[arg(long, value_name = "RUNNER", value_parser = ["native", "copilot"])]
    pub runner: Option<String>,
    /// Continue a conversation: its id (see `copilot-bridge sessions`), or the latest one.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Ask this, print the answer and exit (a prompt piped on stdin does the same).
    #[arg(long, short = 'p', value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Draw inline, leaving the terminal's scrollback as it is (for terminals and multiplexers that need it).
    #[arg(long)]
    pub no_alt_screen: bool,
}
