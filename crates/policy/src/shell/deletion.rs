//! Deletion: `rm` and `find -delete` are dangerous outside the workspace,
//! on the workspace root itself, and on paths that may collapse to `/`.

use super::Context;
use super::args;
use super::commands::check_argv;
use super::find::find_roots;
use super::location::Target;
use super::words::Word;

pub(super) fn check_rm(context: &mut Context, args: &[Word], input_args: bool) {
    let parsed = args::parse(args, &[]);
    let recursive = parsed.has(&["-r", "-R", "--recursive"]);
    let rm = if recursive { "rm -r" } else { "rm" };
    if parsed.has(&["--no-preserve-root"]) {
        context.dangerous("rm --no-preserve-root may delete the whole filesystem");
    }
    if input_args && recursive {
        context.needs_approval("rm -r deletes paths read from its input");
    }
    for operand in &parsed.operands {
        for target in context.resolver.resolve(operand, &context.cwd.clone()) {
            check_rm_target(context, rm, recursive, operand, &target);
        }
    }
}

fn check_rm_target(
    context: &mut Context,
    rm: &str,
    recursive: bool,
    operand: &Word,
    target: &Target,
) {
    let shown = operand.display();
    let Some(path) = &target.path else {
        if target.home_unknown {
            context.dangerous(format!("{rm} targets a home directory: {shown}"));
        } else if target.empty_variable_risk && recursive {
            context.dangerous(format!(
                "{rm} target {shown} starts with a variable that may be empty, leaving an absolute path"
            ));
        } else {
            context.needs_approval(format!("{rm} target cannot be resolved: {shown}"));
        }
        return;
    };
    let resolver = &context.resolver;
    if recursive && resolver.is_root_or_home(path) {
        let what = if path.as_os_str() == "/" {
            "the filesystem root"
        } else {
            "the home directory"
        };
        context.dangerous(format!("{rm} targets {what}: {shown}"));
    } else if !resolver.is_inside(path) {
        context.dangerous(format!(
            "{rm} deletes outside the workspace: {}",
            path.display()
        ));
    } else if recursive
        && resolver.is_workspace_root(path)
        && (target.glob_everything || !target.glob)
    {
        context.dangerous(format!("{rm} deletes the whole workspace: {shown}"));
    } else if target.glob {
        let directory = path.clone();
        for matched in glob_matches(&directory, operand) {
            super::access::check_removal(context, &matched, rm);
        }
    } else {
        let path = path.clone();
        super::access::check_removal(context, &path, rm);
    }
}

/// Most entries of one directory a glob operand is matched against.
const MAX_GLOB_ENTRIES: usize = 10_000;

/// The entries of `directory` that the last component of the glob `word`
/// matches (`rm -rf .cl*` reaches `.claude`); hidden names match only a
/// pattern that starts with a dot, as in the shell.
fn glob_matches(directory: &std::path::Path, word: &Word) -> Vec<std::path::PathBuf> {
    let Some(value) = word.value() else {
        return Vec::new();
    };
    let pattern = value.rsplit('/').next().unwrap_or(&value);
    let Ok(glob) = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
    else {
        return Vec::new();
    };
    let matcher = glob.compile_matcher();
    let Ok(entries) = std::fs::read_dir(directory) else {
        return Vec::new();
    };
    entries
        .flatten()
        .take(MAX_GLOB_ENTRIES)
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            (pattern.starts_with('.') || !name.starts_with('.')) && matcher.is_match(name.as_ref())
        })
        .map(|entry| entry.path())
        .collect()
}

/// `find` primaries that do not narrow down what `-delete` deletes.
const NOT_SELECTING: [&str; 10] = [
    "-delete",
    "-depth",
    "-mindepth",
    "-maxdepth",
    "-xdev",
    "-mount",
    "-noleaf",
    "-print",
    "-print0",
    "-ignore_readdir_race",
];

/// Index of the first word after `find`'s starting points.
fn roots_end(args: &[Word]) -> usize {
    args.iter()
        .position(|word| {
            word.value().is_some_and(|value| {
                value.starts_with('-') || matches!(value.as_str(), "(" | ")" | "!" | ",")
            })
        })
        .unwrap_or(args.len())
}

/// `find -exec` runs a command on every match; `-delete` deletes them.
pub(super) fn check_find(context: &mut Context, args: &[Word]) {
    let roots = find_roots(args);
    // `{}` is some path under a starting point; the first stands for all.
    let placeholder = roots.first().map(Word::some_child).unwrap_or_default();
    let mut index = 0;
    while let Some(word) = args.get(index) {
        index += 1;
        let Some(text) = word.value() else {
            continue;
        };
        match text.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let start = index;
                while args
                    .get(index)
                    .and_then(Word::value)
                    .is_some_and(|end| end != ";" && end != "+")
                {
                    index += 1;
                }
                let inner: Vec<Word> = args[start..index.min(args.len())]
                    .iter()
                    .map(|word| {
                        if word.value().as_deref() == Some("{}") {
                            placeholder.clone()
                        } else {
                            word.clone()
                        }
                    })
                    .collect();
                context.needs_approval(format!("find {text} runs a command on every match"));
                check_argv(context, &inner, false);
            }
            "-delete" => {
                // Without a test to select matches, everything goes,
                // starting points included.
                let selects = args[roots_end(args)..].iter().any(|word| {
                    word.value().is_some_and(|value| {
                        value.starts_with('-') && !NOT_SELECTING.contains(&value.as_str())
                    })
                });
                for root in &roots {
                    let target = if selects {
                        root.some_child()
                    } else {
                        root.clone()
                    };
                    check_rm(context, &[Word::known("-r", true), target], false);
                }
            }
            _ => {}
        }
    }
}
