//! Rules for one command (its words already evaluated): wrappers, deletion,
//! writes, git, network, and the read-only allowlist.

use super::Context;

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

/// Applies every rule to one command; returns its roles.
pub(crate) fn check_argv(context: &mut Context, argv: &[Word], input_args: bool) -> Roles {
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
            writes::Access::Read(word) => check_read(context, &word, false),
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
        let command = git::split(args);
        match git::read_only(&command) {
            Ok(reads) => ReadOnly::Safe { reads },
            Err(reason) => ReadOnly::NotSafe(reason),
        }
    } else {
        readonly::classify(name, args)
    };
    match verdict {
        ReadOnly::Safe { reads } => {
            if runs_by_path {
                context.needs_approval(format!("runs a program by path: {program}"));
            }
            if let Some(word) = args.iter().find(|word| !word.is_plain()) {
                context.needs_approval(format!("argument is not a plain literal: {}", word.raw));
            }
            for read in &reads {
                check_read(context, read, true);
            }
        }
        ReadOnly::NotSafe(reason) => {
            context.needs_approval(reason);
            check_sensitive_reads(context, args);
        }
    }
}

/// For commands whose arguments are not known to be paths: any argument
/// that names credentials (also after `=` or `@`, as in `--file=` or `-d @`).
fn check_sensitive_reads(context: &mut Context, args: &[Word]) {
    for word in args {
        check_read(context, word, false);
        if let Some(value) = word.value() {
            let tail = value.rsplit_once('=').map(|(_, tail)| tail);
            for candidate in [tail, value.strip_prefix('@')].into_iter().flatten() {
                let candidate = candidate.trim_start_matches('@');
                if !candidate.is_empty() {
                    check_read(context, &Word::known(candidate, false), false);
                }
            }
        }
    }
}

/// A read of `word`: credentials are dangerous wherever they are; `.env`
/// files outside the workspace too; anything else outside the workspace
/// needs approval when `report_outside` (the command would otherwise be safe).
pub(crate) fn check_read(context: &mut Context, word: &Word, report_outside: bool) {
    let targets = context.resolver.resolve(word, &context.cwd.clone());
    // The word as written catches what resolution cannot see (`$HOME/.ssh`
    // without a home); the resolved path catches symlinks and `..`.
    let credential = location::credential_reason(&word.skeleton()).or_else(|| {
        targets
            .iter()
            .filter_map(|target| target.path.as_ref())
            .find_map(|path| location::credential_reason(&path.to_string_lossy()))
    });
    if let Some(reason) = credential {
        context.dangerous(format!("{reason}: {}", word.display()));
        return;
    }
    for target in targets {
        let Some(path) = target.path else {
            if report_outside {
                context.needs_approval(format!(
                    "reads a path that cannot be resolved: {}",
                    word.display()
                ));
            }
            continue;
        };
        let shown = path.display().to_string();
        if context.resolver.is_inside(&path) || location::is_harmless_device(&path) {
            continue;
        } else if location::is_env_file(&path) {
            context.dangerous(format!("reads a .env file outside the workspace: {shown}"));
        } else if report_outside {
            context.needs_approval(format!("reads outside the workspace: {shown}"));
        }
    }
}

/// A write to `word` by `what`: outside the workspace is dangerous, an
/// unknown target needs approval. Returns whether the write is harmless
/// (to /dev/null and the like).
pub(crate) fn check_write(context: &mut Context, word: &Word, what: &str) -> bool {
    let mut harmless = true;
    for target in context.resolver.resolve(word, &context.cwd.clone()) {
        let Some(path) = target.path else {
            harmless = false;
            if target.home_unknown {
                context.dangerous(format!(
                    "{what} writes outside the workspace: {}",
                    word.display()
                ));
            } else {
                context.needs_approval(format!(
                    "{what} writes to a path that cannot be resolved: {}",
                    word.display()
                ));
            }
            continue;
        };
        if location::is_harmless_device(&path) {
            continue;
        }
        harmless = false;
        if location::is_block_device(&path) {
            context.dangerous(format!(
                "{what} writes to a block device: {}",
                path.display()
            ));
        } else if !context.resolver.is_inside(&path) {
            context.dangerous(format!(
                "{what} writes outside the workspace: {}",
                path.display()
            ));
        }
    }
    harmless
}
