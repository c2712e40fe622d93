//! The command line of a hook call, read without building every other
//! subcommand's parser (see [`Cli::from_process`]).

use clap::{Parser, Subcommand};

use super::{Cli, Command, GlobalArgs, HookArgs};

impl Cli {
    /// The command line of this process. An agent starts
    /// `copilot-bridge hook` for every tool call, and building the parser
    /// of every subcommand was ~5 % of such a call's CPU time
    /// (docs/benchmarks.md, "Agent hooks"): a command line that parses as a
    /// hook alone is read by a parser that knows only `hook`. Anything else
    /// (another command, `--help`, a usage error) goes to the whole parser,
    /// which answers exactly as before.
    pub fn from_process() -> Self {
        Self::from_args(std::env::args_os().collect())
    }

    fn from_args(args: Vec<std::ffi::OsString>) -> Self {
        let named_hook = args.iter().skip(1).any(|arg| arg == "hook");
        if named_hook && let Ok(HookOnly { global, command }) = HookOnly::try_parse_from(&args) {
            let HookOnlyCommand::Hook(args) = command;
            return Self {
                global,
                command: Command::Hook(args),
            };
        }
        Self::parse_from(args)
    }
}

/// [`Cli`] with its one subcommand `hook`: see [`Cli::from_process`].
#[derive(Debug, Parser)]
#[command(name = "copilot-bridge")]
struct HookOnly {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: HookOnlyCommand,
}

#[derive(Debug, Subcommand)]
enum HookOnlyCommand {
    Hook(HookArgs),
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Cli;

    #[test]
    fn a_hook_command_line_reads_as_the_whole_parser_reads_it() {
        let lines: [&[&str]; 4] = [
            &["copilot-bridge", "hook"],
            &["copilot-bridge", "hook", "PreToolUse", "--agent", "codex"],
            &[
                "copilot-bridge",
                "--home",
                "/h",
                "hook",
                "--agent",
                "claude",
                "--chain",
                "/c.json",
            ],
            &[
                "copilot-bridge",
                "hook",
                "PostToolUse",
                "--writable",
                "--log-level",
                "debug",
            ],
        ];
        for line in lines {
            let args: Vec<std::ffi::OsString> = line.iter().map(Into::into).collect();
            let whole = Cli::try_parse_from(&args).expect("the whole parser reads it");
            assert_eq!(
                format!("{:?}", Cli::from_args(args)),
                format!("{whole:?}"),
                "{line:?}"
            );
        }
    }
}
