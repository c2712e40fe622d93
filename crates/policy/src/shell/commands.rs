//! Rules for one command (its words already evaluated): wrappers, deletion,
//! writes, git, network, and the read-only allowlist.

use std::path::Path;

use super::Context;

use super::access::{
    ReadCheck, check_move_source, check_not_directory, check_read, check_sensitive_reads,
    check_write,
};
use super::cd::change_directory;
use super::deletion::{check_find, check_rm};
use super::git;
use super::location;
use super::readonly::{self, ReadOnly};
use super::scripts::{run_joined_script, run_nested_shell};
use super::words::Word;
use super::writes;

/// What a command does with data, for rules about what feeds what.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Roles {
    /// Fetches data from the network onto its output.
    pub downloader: bool,
    /// Executes code it is given (on input or as an argument).
    pub interpreter: bool,
    /// Sends data to the network.
    pub network: bool,
    /// Prints the environment.
    pub env_dump: bool,
}

const SHELLS: [&str; 8] = ["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash"];
const OTHER_INTERPRETERS: [&str; 17] = [
    "fish",
    "csh",
    "tcsh",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php",
    "lua",
    "pwsh",
    "powershell",
    "osascript",
    "tclsh",
    "source",
    ".",
];
const DOWNLOADERS: [&str; 8] = [
    "curl",
    "wget",
    "fetch",
    "http",
    "https",
    "xh",
    "aria2c",
    "lwp-request",
];
const NETWORK: [&str; 12] = [
    "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "rsync", "ftp", "tftp",
    "openssl",
];
const SUPERUSER: [&str; 5] = ["sudo", "doas", "su", "pkexec", "run0"];
const DISK_TOOLS: [&str; 8] = [
    "mke2fs",
    "mkswap",
    "fdisk",
    "sfdisk",
    "gdisk",
    "parted",
    "wipefs",
    "blkdiscard",
];
const POWER: [&str; 5] = ["shutdown", "reboot", "halt", "poweroff", "init"];
/// Where a command given by absolute path is still the system's own.
const SYSTEM_BIN_DIRS: [&str; 5] = [
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/sbin/",
    "/usr/sbin/",
];

pub(crate) fn is_shell(name: &str) -> bool {
    SHELLS.contains(&basename(name))
}

fn basename(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

fn is_interpreter(name: &str) -> bool {
    is_shell(name)
        || OTHER_INTERPRETERS.contains(&name)
        || name.starts_with("python")
        || name.starts_with("pypy")
        || name == "eval"
}

/// A secret by its name: these are the variables worth exfiltrating.
pub(crate) fn is_secret_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "KEY",
        "PASS",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|part| upper.contains(part))
        || [
            "AWS_",
            "GITHUB_",
            "GH_",
            "OPENAI_",
            "ANTHROPIC_",
            "AZURE_",
            "GOOGLE_",
            "GCP_",
            "HF_",
        ]
        .iter()
        .any(|prefix| upper.starts_with(prefix))
        || upper == "DATABASE_URL"
}

enum Wrapped<'w> {
    /// Not a wrapper.
    No,
    /// Runs `inner`; `input_args` when it appends words read from input (xargs).
    Runs { inner: &'w [Word], input_args: bool },
    /// A wrapper with nothing to run (`env` alone prints the environment).
    Alone,
}

/// Index of the first operand, skipping options (and `NAME=value` for env).
fn first_operand(args: &[Word], with_value: &[&str], skip_assignments: bool) -> usize {
    let mut index = 0;
    while let Some(word) = args.get(index) {
        let Some(text) = word.value() else {
            return index;
        };
        if text == "--" {
            return index + 1;
        }
        let assignment = skip_assignments
            && text
                .split_once('=')
                .is_some_and(|(name, _)| !name.is_empty());
        let is_option = text.starts_with('-') && text.len() > 1;
        if !is_option && !assignment {
            return index;
        }
        index += if with_value.contains(&text.as_str()) {
            2
        } else {
            1
        };
    }
    index
}

fn unwrap<'w>(name: &str, args: &'w [Word]) -> Wrapped<'w> {
    let (with_value, skip_assignments, input_args): (&[&str], bool, bool) = match name {
        "sudo" => (
            &[
                "-u", "-g", "-C", "-D", "-h", "-p", "-R", "-r", "-t", "-T", "-U", "--user",
                "--group", "--chdir", "--prompt", "--host", "--role", "--type",
            ],
            false,
            false,
        ),
        "doas" => (&["-u", "-C"], false, false),
        "env" => (
            &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
            true,
            false,
        ),
        "nice" => (&["-n", "--adjustment"], false, false),
        "ionice" => (
            &["-c", "-n", "-p", "-t", "--class", "--classdata"],
            false,
            false,
        ),
        "timeout" => (&["-s", "--signal", "-k", "--kill-after"], false, false),
        "stdbuf" => (
            &["-i", "-o", "-e", "--input", "--output", "--error"],
            false,
            false,
        ),
        "exec" => (&["-a"], false, false),
        "xargs" => (
            &[
                "-I",
                "-n",
                "-L",
                "-P",
                "-d",
                "-E",
                "-s",
                "-a",
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-lines",
                "--max-procs",
                "--replace",
                "--eof",
            ],
            false,
            true,
        ),
        "nohup" | "setsid" | "time" | "builtin" | "unbuffer" | "chronic" | "caffeinate"
        | "busybox" => (&[], false, false),
        "command" => {
            if args
                .first()
                .and_then(Word::value)
                .is_some_and(|flag| flag == "-v" || flag == "-V")
            {
                return Wrapped::Alone;
            }
            (&[], false, false)
        }
        _ => return Wrapped::No,
    };
    let mut start = first_operand(args, with_value, skip_assignments);
    if name == "timeout" {
        // The duration comes before the command.
        start += 1;
    }
    match args.get(start..) {
        Some(inner) if !inner.is_empty() => Wrapped::Runs { inner, input_args },
        _ => Wrapped::Alone,
    }
}

/// What the command does with data; wrappers (`sudo sh`) are seen through.
pub(crate) fn roles(argv: &[Word]) -> Roles {
    let Some(name) = argv.first().and_then(Word::value) else {
        return Roles::default();
    };
    let name = basename(&name).to_owned();
    let args = &argv[1..];
    if let Wrapped::Runs { inner, .. } = unwrap(&name, args) {
        return roles(inner);
    }
    Roles {
        downloader: DOWNLOADERS.contains(&name.as_str()),
        interpreter: is_interpreter(&name),
        network: DOWNLOADERS.contains(&name.as_str()) || NETWORK.contains(&name.as_str()),
        env_dump: name == "printenv" || name == "env" || (name == "set" && args.is_empty()),
    }
}

/// Applies every rule to one command; returns its roles. What it finds is
/// filed under the command's grant key ([`grant_key`]).
pub(crate) fn check_argv(context: &mut Context, argv: &[Word], input_args: bool) -> Roles {
    let outer = std::mem::replace(&mut context.command_key, grant_key(argv));
    let roles = check_command(context, argv, input_args);
    context.command_key = outer;
    roles
}

/// Subcommands that name what they run in the next word (`npm run build`,
/// `uv run pytest`, `docker exec web`): that word is part of the key.
const RUNNER_SUBCOMMANDS: &[&str] = &["run", "exec", "run-script", "x", "dlx"];

/// Most option words read before a command's subcommand.
const KEY_OPTION_WORDS: usize = 6;

/// The key a person grants a command by: its program as written and the
/// words up to its subcommand (`cargo test`, `cargo +nightly test`,
/// `python3 -m pytest`, `make -C sub build`, `npm run build`). A word after
/// an option may be that option's value, so the subcommand is the first
/// plain word that does not follow one. `None` (the command can only be
/// allowed once) when one of these words is not a plain literal, or no
/// subcommand shows within [`KEY_OPTION_WORDS`] options.
pub(crate) fn grant_key(argv: &[Word]) -> Option<String> {
    let plain = |word: &Word| word.is_plain().then(|| word.value()).flatten();
    let mut words = argv.iter();
    let mut key = vec![plain(words.next()?)?];
    let mut options = 0;
    let mut after_option = false;
    while let Some(word) = words.next() {
        let value = plain(word)?;
        if value.starts_with('-') || value.starts_with('+') {
            options += 1;
            if options > KEY_OPTION_WORDS {
                return None;
            }
            after_option = !value.contains('=') && value != "--";
            key.push(value);
            continue;
        }
        key.push(value.clone());
        if after_option {
            after_option = false;
            continue;
        }
        if RUNNER_SUBCOMMANDS.contains(&value.as_str())
            && let Some(target) = words.next().and_then(plain)
            && !target.starts_with('-')
        {
            key.push(target);
        }
        break;
    }
    Some(key.join(" "))
}

fn check_command(context: &mut Context, argv: &[Word], input_args: bool) -> Roles {
    let Some(first) = argv.first() else {
        return Roles::default();
    };
    let args = &argv[1..];
    let Some(program) = first.value() else {
        context.needs_approval(format!(
            "command name is computed at run time: {}",
            first.raw
        ));
        check_sensitive_reads(context, args);
        return Roles::default();
    };
    if !first.is_plain() {
        context.needs_approval(format!(
            "command name comes from an expansion: {}",
            first.raw
        ));
    }
    let name = basename(&program).to_owned();
    if SUPERUSER.contains(&name.as_str()) {
        context.dangerous(format!("{name} runs commands with superuser privileges"));
    }
    match unwrap(&name, args) {
        Wrapped::Runs { inner, input_args } => {
            if name != "command" && name != "builtin" {
                context.needs_approval(format!("runs a command through {name}"));
            }
            return check_argv(context, inner, input_args);
        }
        Wrapped::Alone if name == "command" => return Roles::default(),
        Wrapped::Alone | Wrapped::No => {}
    }
    let roles = roles(argv);
    if input_args {
        context.needs_approval(format!("{name} gets arguments from its input"));
    }
    check_dangerous(context, &name, args, input_args);
    if name == "cd" || name == "pushd" || name == "popd" {
        change_directory(context, &name, args);
        return roles;
    }
    check_allowlist(context, &program, &name, args);
    roles
}

/// The rules that can make a command dangerous.
fn check_dangerous(context: &mut Context, name: &str, args: &[Word], input_args: bool) {
    match name {
        "rm" => check_rm(context, args, input_args),
        _ if is_shell(name) || name == "su" => run_nested_shell(context, name, args),
        "eval" => run_joined_script(context, "eval", args),
        "watch" => {
            let start = first_operand(args, &["-n", "--interval", "-d"], false);
            run_joined_script(context, "watch", args.get(start..).unwrap_or_default());
        }
        "find" => check_find(context, args),
        "git" => {
            let command = git::split(args);
            if command.subcommand.as_deref() == Some("push")
                && let Some(reason) = git::destructive_push(command.args)
            {
                context.dangerous(reason);
            }
        }
        "kill"
            if args
                .iter()
                .any(|word| word.value().as_deref() == Some("-1")) =>
        {
            context.dangerous("kill -1 signals every process of the user");
        }
        _ if name.starts_with("mkfs") || DISK_TOOLS.contains(&name) => {
            context.dangerous(format!("{name} formats or repartitions a disk"));
        }
        _ if POWER.contains(&name) => {
            context.dangerous(format!("{name} stops or restarts the machine"))
        }
        _ => {}
    }
    for access in writes::accesses(name, args) {
        match access {
            writes::Access::Write(word) => {
                check_write(context, &word, name);
            }
            writes::Access::MoveAway(word) => check_move_source(context, &word, name),
            writes::Access::Read(word) => check_read(context, &word, ReadCheck::DangersOnly),
        }
    }
}

/// Safe only if the command is on the read-only allowlist, its words are
/// plain literals, and what it reads is inside the workspace.
fn check_allowlist(context: &mut Context, program: &str, name: &str, args: &[Word]) {
    let runs_by_path = program.contains('/')
        && !SYSTEM_BIN_DIRS
            .iter()
            .any(|dir| program.starts_with(dir) && !program[dir.len()..].contains('/'));
    let verdict = if name == "git" {
        git_reads(context, args)
    } else {
        readonly::classify(name, args)
    };
    match verdict {
        ReadOnly::Safe(reads) => {
            if runs_by_path {
                context.needs_approval(format!("runs a program by path: {program}"));
            }
            if let Some(word) = args.iter().find(|word| !word.is_plain()) {
                context.needs_approval(format!("argument is not a plain literal: {}", word.raw));
            }
            for read in &reads.contents {
                check_read(context, read, ReadCheck::Contents);
            }
            for read in &reads.metadata {
                check_read(context, read, ReadCheck::Metadata);
            }
            for word in &reads.not_directories {
                check_not_directory(context, word, name);
            }
        }
        ReadOnly::NotSafe(reason) => {
            context.needs_approval(reason);
            check_sensitive_reads(context, args);
        }
    }
}

/// A git subcommand that only reads: what it reads, with its operands
/// taken from the directory `-C` moves it to, and its repository checked.
fn git_reads(context: &mut Context, args: &[Word]) -> ReadOnly {
    let command = git::split(args);
    let reads = match git::read_only(&command) {
        Ok(reads) => reads,
        Err(reason) => return ReadOnly::NotSafe(reason),
    };
    let run_directory = match git::run_directory(&command.directories) {
        Ok(directory) => directory.map(|text| Word::known(&text, false)),
        Err(reason) => return ReadOnly::NotSafe(reason),
    };
    let mut contents = Vec::new();
    let mut starts = Vec::new();
    match &run_directory {
        Some(directory) => {
            for target in context.resolver.resolve(directory, &context.cwd.clone()) {
                match target.path {
                    Some(path) => starts.push(path),
                    None => {
                        return ReadOnly::NotSafe(format!(
                            "git -C directory cannot be resolved: {}",
                            directory.display()
                        ));
                    }
                }
            }
            contents.push(directory.clone());
        }
        None if context.cwd.unknown => {
            return ReadOnly::NotSafe(
                "git runs in a directory that cannot be known, so its repository cannot be checked"
                    .to_owned(),
            );
        }
        None => starts.extend(context.cwd.candidates.iter().cloned()),
    }
    for start in starts {
        if let Some(reason) = context
            .repositories
            .outside_reason(&mut context.resolver, &start)
        {
            return ReadOnly::NotSafe(reason);
        }
    }
    for path in reads.paths {
        // `REV:PATH` shows a file from history: its name is what can be told.
        if let Some(shown) = path
            .value()
            .and_then(|text| text.split_once(':').map(|(_, file)| file.to_owned()))
            .filter(|file| location::is_secret_bearing(Path::new(file)))
        {
            return ReadOnly::NotSafe(format!("git shows a file that may hold secrets: {shown}"));
        }
        let relative = path.value().is_some_and(|text| !text.starts_with('/')) && !path.has_tilde();
        match (&run_directory, relative) {
            (Some(directory), true) => {
                if path.glob_offset().is_some() {
                    return ReadOnly::NotSafe(format!(
                        "glob operand with git -C is expanded in another directory: {}",
                        path.display()
                    ));
                }
                let joined = format!("{}/{}", directory.display(), path.display());
                contents.push(Word::known(&joined, false));
            }
            _ => contents.push(path),
        }
    }
    ReadOnly::Safe(readonly::Reads {
        contents,
        ..readonly::Reads::default()
    })
}
