//! `find`: leading options, starting points, then an expression whose every
//! primary must be known to only test or print.

use super::words::Word;

/// Primaries that take no argument and only test, print, or steer the walk.
const NO_ARGUMENT: &[&str] = &[
    "-true",
    "-false",
    "-empty",
    "-executable",
    "-readable",
    "-writable",
    "-nouser",
    "-nogroup",
    "-print",
    "-print0",
    "-ls",
    "-prune",
    "-quit",
    "-depth",
    "-d",
    "-xdev",
    "-mount",
    "-noleaf",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-daystart",
    "-warn",
    "-nowarn",
    "-help",
    "--help",
    "-version",
    "--version",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
];

/// Primaries that take one argument that is not a path.
const TEXT_ARGUMENT: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-regextype",
    "-type",
    "-xtype",
    "-size",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-used",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-lname",
    "-ilname",
    "-fstype",
    "-maxdepth",
    "-mindepth",
    "-printf",
    "-context",
];

/// Primaries whose argument is a file whose metadata is compared.
const FILE_ARGUMENT: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];

/// Why each refused primary is refused.
fn refusal(primary: &str) -> Option<&'static str> {
    Some(match primary {
        "-exec" | "-execdir" | "-ok" | "-okdir" => "runs commands",
        "-delete" => "deletes files",
        "-fprint" | "-fprint0" | "-fprintf" | "-fls" => "writes files",
        "-follow" | "-L" => "follows symbolic links, which may lead out of the workspace",
        "-files0-from" => "reads its starting points from a file",
        _ => return None,
    })
}

/// What a read-only `find` looks at.
pub(crate) struct FindReads {
    pub roots: Vec<Word>,
    /// Files whose metadata is compared (`-newer FILE`).
    pub references: Vec<Word>,
}

/// Index of the first starting point: after `-H`, `-L`, `-P`, `-D opts`, `-O3`.
fn leading_options_end(args: &[Word]) -> usize {
    let mut index = 0;
    while let Some(text) = args.get(index).and_then(Word::value) {
        match text.as_str() {
            "-H" | "-L" | "-P" => index += 1,
            "-D" => index += 2,
            _ if text.starts_with("-O") => index += 1,
            _ => break,
        }
    }
    index
}

fn starts_expression(word: &Word) -> bool {
    word.value().is_some_and(|value| {
        value.starts_with('-') || matches!(value.as_str(), "(" | ")" | "!" | ",")
    })
}

/// The starting points of `find`: the operands between its leading options
/// and the expression (`.` when there are none).
pub(crate) fn find_roots(args: &[Word]) -> Vec<Word> {
    let mut roots: Vec<Word> = args
        .iter()
        .skip(leading_options_end(args))
        .take_while(|word| !starts_expression(word))
        .cloned()
        .collect();
    if roots.is_empty() {
        roots.push(Word::known(".", true));
    }
    roots
}

/// `Ok` when `find ARGS` only tests and prints; else why not.
pub(crate) fn classify(args: &[Word]) -> Result<FindReads, String> {
    let start = leading_options_end(args);
    for word in &args[..start] {
        if let Some(text) = word.value()
            && let Some(reason) = refusal(&text)
        {
            return Err(format!("find {text} {reason}"));
        }
    }
    let roots = find_roots(args);
    let expression_start = start
        + args[start..]
            .iter()
            .take_while(|word| !starts_expression(word))
            .count();
    let mut references = Vec::new();
    let mut words = args[expression_start..].iter();
    while let Some(word) = words.next() {
        let Some(text) = word.value() else {
            return Err(format!(
                "find expression word is not a literal: {}",
                word.raw
            ));
        };
        let text = text.as_str();
        if let Some(reason) = refusal(text) {
            return Err(format!("find {text} {reason}"));
        }
        if matches!(text, "(" | ")" | "!" | ",") || NO_ARGUMENT.contains(&text) {
            continue;
        }
        let takes_file = FILE_ARGUMENT.contains(&text) || newer_than_file(text);
        if !(takes_file || TEXT_ARGUMENT.contains(&text) || newer_than_time(text)) {
            return Err(if text.starts_with('-') {
                format!("unknown find predicate {text}")
            } else {
                format!("find operand {text} after the expression")
            });
        }
        let Some(argument) = words.next() else {
            return Err(format!("find {text} needs an argument"));
        };
        if takes_file {
            references.push(argument.clone());
        }
    }
    Ok(FindReads { roots, references })
}

/// `-newerXY`: X and Y among a, B, c, m, t; Y = t compares with a time.
fn newer_kind(text: &str) -> Option<char> {
    let rest = text.strip_prefix("-newer")?;
    let mut chars = rest.chars();
    let (x, y) = (chars.next()?, chars.next()?);
    let known = |c: char| matches!(c, 'a' | 'B' | 'c' | 'm' | 't');
    (chars.next().is_none() && known(x) && known(y) && x != 't').then_some(y)
}

fn newer_than_file(text: &str) -> bool {
    newer_kind(text).is_some_and(|y| y != 't')
}

fn newer_than_time(text: &str) -> bool {
    newer_kind(text) == Some('t')
}
