//! git: which subcommands only read, and which pushes rewrite remote history.

use super::args;
use super::words::Word;

pub(crate) struct GitCommand<'w> {
    /// The subcommand, when it is a literal.
    pub subcommand: Option<String>,
    /// There is a subcommand word at all (`git --version` has none).
    pub has_subcommand: bool,
    pub args: &'w [Word],
    /// Values of `-C` (directories git runs in): they are read.
    pub directories: Vec<Word>,
    /// A global option that may change what git runs (`-c`, `--exec-path`, ...).
    pub unsafe_global: Option<String>,
}

/// Splits git's global options from the subcommand.
pub(crate) fn split(args: &[Word]) -> GitCommand<'_> {
    const WITH_VALUE: [&str; 7] = [
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--config-env",
        "--super-prefix",
    ];
    const HARMLESS: [&str; 10] = [
        "--no-pager",
        "-P",
        "--no-optional-locks",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-replace-objects",
        "--version",
        "--help",
    ];
    let mut directories = Vec::new();
    let mut unsafe_global = None;
    let mut index = 0;
    while let Some(word) = args.get(index) {
        let Some(text) = word.value().filter(|text| text.starts_with('-')) else {
            break;
        };
        index += 1;
        let name = text.split('=').next().unwrap_or_default().to_owned();
        if text == "-C" {
            if let Some(directory) = args.get(index) {
                directories.push(directory.clone());
            }
            index += 1;
            continue;
        }
        if WITH_VALUE.contains(&text.as_str()) {
            index += 1;
        }
        if !HARMLESS.contains(&name.as_str()) && unsafe_global.is_none() {
            unsafe_global = Some(name);
        }
    }
    let rest = args.get(index..).unwrap_or_default();
    let (subcommand, args) = match rest.split_first() {
        Some((first, args)) => (first.value(), args),
        None => (None, rest),
    };
    GitCommand {
        subcommand,
        has_subcommand: !rest.is_empty(),
        args,
        directories,
        unsafe_global,
    }
}

/// Why `git push ARGS` destroys remote history, if it does.
pub(crate) fn destructive_push(args: &[Word]) -> Option<String> {
    let parsed = args::parse(
        args,
        &["-o", "--push-option", "--repo", "--receive-pack", "--exec"],
    );
    for option in &parsed.options {
        let reason = match option.name.as_str() {
            "-f" | "--force" | "--force-with-lease" | "--force-if-includes" => {
                "git push --force rewrites remote history"
            }
            "--mirror" => "git push --mirror overwrites and deletes remote refs",
            "-d" | "--delete" | "--prune" => "git push --delete removes remote refs",
            _ => continue,
        };
        return Some(reason.to_owned());
    }
    // The first operand is the remote; the rest are refspecs.
    for refspec in parsed.operands.iter().skip(1) {
        let Some(text) = refspec.value() else {
            continue;
        };
        if text.starts_with('+') {
            return Some(format!("git push {text} force-updates a remote ref"));
        }
        if text.starts_with(':') {
            return Some(format!("git push {text} deletes a remote ref"));
        }
    }
    None
}

/// `Ok(reads)` when `git SUBCOMMAND ARGS` only reads (reads: paths outside
/// revisions that it reads), else why not.
pub(crate) fn read_only(command: &GitCommand<'_>) -> Result<Vec<Word>, String> {
    if let Some(option) = &command.unsafe_global {
        return Err(format!("git option {option} can change what git runs"));
    }
    let Some(subcommand) = command.subcommand.as_deref() else {
        return if command.has_subcommand {
            Err("git subcommand is not a literal".to_owned())
        } else {
            Ok(command.directories.clone())
        };
    };
    let values: Vec<String> = command.args.iter().map(Word::display).collect();
    let has = |names: &[&str]| {
        values.iter().any(|value| {
            names
                .iter()
                .any(|name| value == name || value.starts_with(&format!("{name}=")))
        })
    };
    // Options that run external programs or write files, whatever the subcommand.
    if has(&[
        "--output",
        "--ext-diff",
        "--open-files-in-pager",
        "-O",
        "--exec",
        "--upload-pack",
    ]) {
        return Err(format!(
            "git {subcommand} with an option that writes files or runs programs"
        ));
    }
    let positional = values.iter().any(|value| !value.starts_with('-'));
    let verdict = match subcommand {
        "status" | "log" | "show" | "diff" | "rev-parse" | "ls-files" | "ls-tree" | "blame"
        | "grep" | "shortlog" | "describe" | "cat-file" | "rev-list" | "whatchanged"
        | "annotate" | "merge-base" | "name-rev" | "count-objects" | "version" | "help" => Ok(()),
        "branch" => {
            let listing = has(&[
                "-l",
                "--list",
                "--contains",
                "--no-contains",
                "--merged",
                "--no-merged",
                "--points-at",
            ]);
            let mutating = has(&[
                "-d",
                "-D",
                "-m",
                "-M",
                "-c",
                "-C",
                "-f",
                "-u",
                "-t",
                "--delete",
                "--move",
                "--copy",
                "--force",
                "--set-upstream-to",
                "--unset-upstream",
                "--edit-description",
                "--track",
                "--no-track",
            ]);
            if mutating || (positional && !listing) {
                Err("git branch with these arguments changes branches".to_owned())
            } else {
                Ok(())
            }
        }
        "tag" => match values.first().map(String::as_str) {
            None | Some("-l" | "--list") => Ok(()),
            Some(_) => Err("git tag with these arguments changes tags".to_owned()),
        },
        "remote" => {
            let listing = values
                .iter()
                .all(|value| value == "-v" || value == "--verbose");
            let get_url = values.first().is_some_and(|value| value == "get-url");
            if listing || get_url {
                Ok(())
            } else {
                Err("git remote with these arguments changes remotes".to_owned())
            }
        }
        "stash" => match values.first().map(String::as_str) {
            Some("list" | "show") => Ok(()),
            _ => Err("git stash changes the working tree".to_owned()),
        },
        "reflog" => match values.first().map(String::as_str) {
            None | Some("show") => Ok(()),
            Some(first) if first.starts_with('-') => Ok(()),
            Some(_) => Err("git reflog with these arguments changes the reflog".to_owned()),
        },
        other => Err(format!("not a known read-only command: git {other}")),
    };
    verdict?;
    let mut reads = command.directories.clone();
    if subcommand == "diff" && has(&["--no-index"]) {
        reads.extend(
            command
                .args
                .iter()
                .filter(|word| !word.display().starts_with('-'))
                .cloned(),
        );
    }
    Ok(reads)
}
