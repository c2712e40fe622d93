//! `cd`, `pushd`, `popd`: which directory later relative paths resolve in.

use super::Context;
use super::args;
use super::location::Target;
use super::words::Word;

pub(super) fn change_directory(context: &mut Context, name: &str, args: &[Word]) {
    if name == "popd" {
        context.cwd.unknown = true;
        return;
    }
    let parsed = args::parse(args, &[]);
    let targets = match parsed.operands.first() {
        None => match context.resolver.home() {
            Some(home) => vec![Target::at(home.to_path_buf())],
            None => vec![Target::unknown()],
        },
        Some(word) if word.value().as_deref() == Some("-") => vec![Target::unknown()],
        Some(word) => context.resolver.resolve(word, &context.cwd.clone()),
    };
    let mut next = Vec::new();
    for target in targets {
        match target.path {
            Some(path) => {
                if !context.resolver.is_inside(&path) {
                    context.needs_approval(format!(
                        "changes directory outside the workspace: {}",
                        path.display()
                    ));
                }
                // A failed `cd` leaves the directory unchanged, so the old one
                // stays a candidate unless the new one exists and `cd` is in
                // plain sequence.
                if !(context.cd_replaces_cwd && path.is_dir()) {
                    next.extend(context.cwd.candidates.iter().cloned());
                }
                next.push(path);
            }
            None => {
                context.needs_approval(format!("{name} to a directory that cannot be resolved"));
                context.cwd.unknown = true;
                if !context.cd_replaces_cwd {
                    next.extend(context.cwd.candidates.iter().cloned());
                }
            }
        }
    }
    next.dedup();
    let mut unique: Vec<_> = Vec::new();
    for path in next {
        if !unique.contains(&path) {
            unique.push(path);
        }
    }
    context.cwd.candidates = unique;
}
