//! Checks of what a command reads and writes: credentials anywhere are
//! dangerous, writes outside the workspace are dangerous, and a read-only
//! command is only safe while everything it reads is inside the workspace
//! and is not a file that usually holds secrets.

use super::Context;
use super::glob;
use super::location;
use super::words::Word;

/// How much of a read to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadCheck {
    /// The command needs approval anyway: only dangers are reported.
    DangersOnly,
    /// A command that would otherwise be safe reads names, sizes, types.
    Metadata,
    /// A command that would otherwise be safe reads (and may print) contents.
    Contents,
}

/// A read of `word`: credentials are dangerous wherever they are; `.env`
/// files outside the workspace too; for an otherwise safe command, anything
/// outside the workspace needs approval, and so do contents of files that
/// usually hold secrets.
pub(crate) fn check_read(context: &mut Context, word: &Word, check: ReadCheck) {
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
    let report = check != ReadCheck::DangersOnly;
    let mut paths = Vec::new();
    for target in targets {
        match target.path {
            Some(path) => paths.push(path),
            None if report => context.needs_approval(format!(
                "reads a path that cannot be resolved: {}",
                word.display()
            )),
            None => {}
        }
    }
    if report && word.glob_offset().is_some() {
        match glob::expand(word, &context.cwd, context.resolver.home()) {
            Ok(matches) => {
                for found in matches {
                    let path = context.resolver.canonical(&found);
                    // Listing a directory of credentials shows only names;
                    // reading them is what is dangerous.
                    let credential = location::credential_reason(&path.to_string_lossy());
                    if let Some(reason) = credential.filter(|_| check == ReadCheck::Contents) {
                        context.dangerous(format!("{reason}: {}", path.display()));
                        return;
                    }
                    paths.push(path);
                }
            }
            Err(reason) => context.needs_approval(reason),
        }
    }
    for path in paths {
        let shown = path.display().to_string();
        if location::is_harmless_device(&path) {
            continue;
        }
        if context.resolver.is_inside(&path) {
            if check == ReadCheck::Contents && location::is_secret_bearing(&path) {
                context.needs_approval(format!("reads a file that may hold secrets: {shown}"));
            }
        } else if location::is_env_file(&path) {
            context.dangerous(format!("reads a .env file outside the workspace: {shown}"));
        } else if report {
            context.needs_approval(format!("reads outside the workspace: {shown}"));
        }
    }
}

/// For commands whose arguments are not known to be paths: any argument
/// that names credentials (also after `=` or `@`, as in `--file=` or `-d @`).
pub(crate) fn check_sensitive_reads(context: &mut Context, args: &[Word]) {
    for word in args {
        check_read(context, word, ReadCheck::DangersOnly);
        if let Some(value) = word.value() {
            let tail = value.rsplit_once('=').map(|(_, tail)| tail);
            for candidate in [tail, value.strip_prefix('@')].into_iter().flatten() {
                let candidate = candidate.trim_start_matches('@');
                if !candidate.is_empty() {
                    check_read(
                        context,
                        &Word::known(candidate, false),
                        ReadCheck::DangersOnly,
                    );
                }
            }
        }
    }
}

/// Operands that must not be directories (see `readonly::Reads`).
pub(crate) fn check_not_directory(context: &mut Context, word: &Word, command: &str) {
    let targets = context.resolver.resolve(word, &context.cwd.clone());
    let maybe_directory = word.glob_offset().is_some()
        || targets
            .iter()
            .any(|target| target.path.as_ref().is_none_or(|path| path.is_dir()));
    if maybe_directory {
        context.needs_approval(format!(
            "{command} compares directories following symbolic links, which may lead out of the workspace (add --no-dereference): {}",
            word.display()
        ));
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
        } else if let Some(reason) = context
            .resolver
            .relative(&path)
            .and_then(|relative| context.protected.reason(&relative))
        {
            context.dangerous(format!("{what}: {reason}"));
        }
    }
    harmless
}

/// A path `what` removes (deletes, or moves away), inside the workspace:
/// dangerous when it is, or holds, a protected file.
pub(crate) fn check_removal(context: &mut Context, path: &std::path::Path, what: &str) {
    if let Some(reason) = context
        .resolver
        .relative(path)
        .and_then(|relative| context.protected.reason_for_tree(&relative))
    {
        context.dangerous(format!("{what}: {reason}"));
    }
}

/// A path `what` moves away: written where it was, and removed.
pub(crate) fn check_move_source(context: &mut Context, word: &Word, what: &str) {
    check_write(context, word, what);
    for target in context.resolver.resolve(word, &context.cwd.clone()) {
        if let Some(path) = target.path {
            check_removal(context, &path, what);
        }
    }
}
