//! git: which subcommands only read (each parsed by its own option table),
//! and which pushes rewrite remote history.

use super::args;
use super::options::{self, Spec};
use super::words::Word;

pub(crate) struct GitCommand<'w> {
    /// The subcommand, when it is a literal.
    pub subcommand: Option<String>,
    /// There is a subcommand word at all (`git --version` has none).
    pub has_subcommand: bool,
    pub args: &'w [Word],
    /// Values of `-C` (directories git changes to, each relative to the last).
    pub directories: Vec<Word>,
    /// The first global option other than `-C`, `--no-pager` and
    /// `--no-optional-locks`: anything else may change what git runs or reads.
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
    const ALLOWED: [&str; 2] = ["--no-pager", "--no-optional-locks"];
    let mut directories = Vec::new();
    let mut unsafe_global = None;
    let mut index = 0;
    while let Some(word) = args.get(index) {
        let Some(text) = word.value().filter(|text| text.starts_with('-')) else {
            break;
        };
        index += 1;
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
        if !ALLOWED.contains(&text.as_str()) && unsafe_global.is_none() {
            unsafe_global = Some(text.split('=').next().unwrap_or_default().to_owned());
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

/// What the operands of a subcommand are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Operands {
    /// Revisions and paths: checked as paths (a revision is harmless as one).
    Paths,
    /// A pattern first (unless given by `-e`/`-f`), then revisions and paths.
    PatternThenPaths,
    /// Names of refs or remotes, never files.
    Names,
}

/// What a read-only git command reads, besides its repository.
pub(crate) struct GitReads {
    /// Words that may name files, relative to the directory git runs in
    /// (after its `-C` options).
    pub paths: Vec<Word>,
}

/// `Ok(reads)` when `git SUBCOMMAND ARGS` only reads, else why not.
pub(crate) fn read_only(command: &GitCommand<'_>) -> Result<GitReads, String> {
    if let Some(option) = &command.unsafe_global {
        return Err(format!(
            "git option {option} is not one of -C, --no-pager, --no-optional-locks, which are the only ones allowed before a read-only subcommand"
        ));
    }
    let Some(subcommand) = command.subcommand.as_deref() else {
        return Err(if command.has_subcommand {
            "git subcommand is not a literal".to_owned()
        } else {
            "git without a subcommand".to_owned()
        });
    };
    let args = command.args;
    let first = args.first().and_then(Word::value);
    let (spec, args, operands): (&Spec, &[Word], Operands) = match subcommand {
        "status" => (&options::GIT_STATUS, args, Operands::Paths),
        "log" | "show" | "whatchanged" => (&options::GIT_LOG, args, Operands::Paths),
        "diff" => (&options::GIT_DIFF, args, Operands::Paths),
        "rev-list" => (&options::GIT_REV_LIST, args, Operands::Paths),
        "shortlog" => (&options::GIT_SHORTLOG, args, Operands::Paths),
        "blame" | "annotate" => (&options::GIT_BLAME, args, Operands::Paths),
        "grep" => (&options::GIT_GREP, args, Operands::PatternThenPaths),
        "ls-files" => (&options::GIT_LS_FILES, args, Operands::Paths),
        "ls-tree" => (&options::GIT_LS_TREE, args, Operands::Paths),
        "rev-parse" => (&options::GIT_REV_PARSE, args, Operands::Paths),
        "describe" => (&options::GIT_DESCRIBE, args, Operands::Paths),
        "cat-file" => (&options::GIT_CAT_FILE, args, Operands::Paths),
        "merge-base" => (&options::GIT_MERGE_BASE, args, Operands::Paths),
        "name-rev" => (&options::GIT_NAME_REV, args, Operands::Paths),
        "count-objects" => (&options::GIT_COUNT_OBJECTS, args, Operands::Paths),
        "version" => (&options::GIT_VERSION, args, Operands::Paths),
        "branch" => (&options::GIT_BRANCH, args, Operands::Names),
        "tag" => (&options::GIT_TAG, args, Operands::Names),
        "remote" => match first.as_deref() {
            Some("get-url") => (&options::GIT_REMOTE_GET_URL, &args[1..], Operands::Names),
            None => (&options::GIT_REMOTE, args, Operands::Names),
            Some(option) if option.starts_with('-') => {
                (&options::GIT_REMOTE, args, Operands::Names)
            }
            Some(_) => return Err("git remote with these arguments changes remotes".to_owned()),
        },
        "stash" => match first.as_deref() {
            Some("list") => (&options::GIT_LOG, &args[1..], Operands::Paths),
            Some("show") => (&options::GIT_STASH_SHOW, &args[1..], Operands::Paths),
            _ => return Err("git stash changes the working tree".to_owned()),
        },
        "reflog" => match first.as_deref() {
            Some("show") => (&options::GIT_LOG, &args[1..], Operands::Paths),
            None => (&options::GIT_LOG, args, Operands::Paths),
            Some(option) if option.starts_with('-') => (&options::GIT_LOG, args, Operands::Paths),
            Some(_) => {
                return Err("git reflog with these arguments changes the reflog".to_owned());
            }
        },
        "help" => return Err("git help opens the manual in a viewer".to_owned()),
        other => return Err(format!("not a known read-only command: git {other}")),
    };
    let parsed = options::parse(spec, args)?;
    match subcommand {
        "branch" | "tag" => {
            let listing = parsed.has(&[
                "-l",
                "--list",
                "--contains",
                "--no-contains",
                "--merged",
                "--no-merged",
                "--points-at",
            ]);
            if !parsed.operands.is_empty() && !listing {
                return Err(format!(
                    "git {subcommand} with these arguments changes branches or tags"
                ));
            }
        }
        "remote" if first.as_deref() != Some("get-url") && !parsed.operands.is_empty() => {
            return Err("git remote with these arguments changes remotes".to_owned());
        }
        _ => {}
    }
    let mut paths = match operands {
        Operands::Names => Vec::new(),
        Operands::Paths | Operands::PatternThenPaths => parsed.operand_words(),
    };
    if operands == Operands::PatternThenPaths && !parsed.has(&["-e", "-f"]) && !paths.is_empty() {
        paths.remove(0);
    }
    paths.extend(parsed.files());
    Ok(GitReads { paths })
}

/// The directory git runs in after `-C A -C B`: each one relative to the
/// last. `None` without `-C`; an error when a glob or an unknown word
/// makes it impossible to say.
pub(crate) fn run_directory(directories: &[Word]) -> Result<Option<String>, String> {
    let mut combined: Option<String> = None;
    for directory in directories {
        let Some(text) = directory
            .value()
            .filter(|_| directory.glob_offset().is_none())
        else {
            return Err(format!(
                "git -C directory cannot be known: {}",
                directory.raw
            ));
        };
        let absolute = text.starts_with('/') || directory.has_tilde();
        combined = Some(match combined {
            Some(base) if !absolute => format!("{base}/{text}"),
            _ => text,
        });
    }
    Ok(combined)
}
