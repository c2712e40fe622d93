//! Allowlists of options: for each read-only command, every option it may
//! be given, how that option takes its value, and whether the value names a
//! file. An option that is not in a command's table makes the command need
//! approval, so a table only has to be right about what it lists.
//!
//! The parser follows GNU `getopt_long` (git's parse-options behaves the
//! same for what matters here; see `Syntax` for the commands that differ): options may follow operands,
//! `--` ends them, short flags combine (`-rn`), a short option's value is
//! the rest of its word or the next word, a long option's value follows `=`
//! or is the next word, an *optional* value is only ever attached, and a long
//! option may be abbreviated to any unique prefix of its name.

/// `spec! { NAME, "command", SYNTAX, [options...] }`: a command's table, with
/// `--help` and `--version` added (braces keep rustfmt from spreading the
/// table over four times the lines).
macro_rules! spec {
    ($name:ident, $command:literal, $syntax:expr, [$($option:expr),* $(,)?]) => {
        pub(crate) const $name: $crate::shell::options::Spec = $crate::shell::options::Spec {
            command: $command,
            groups: &[&[$($option),*], $crate::shell::options::INFO],
            syntax: $syntax,
        };
    };
}

mod files;
mod git;
mod git_revisions;
mod search;
mod text;

pub(crate) use files::*;
pub(crate) use git::*;
pub(crate) use git_revisions::*;
pub(crate) use search::*;
pub(crate) use text::*;

use super::args::OptionValue;
use super::words::Word;

/// What an option's value is to the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value {
    /// Not a path: a number, a pattern, a format.
    Text,
    /// A file the command reads: it is checked like a file operand.
    File,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arg {
    /// Takes no value.
    Flag,
    /// Takes a value: the rest of the word (`-n5`, `--lines=5`) or the next word.
    Required(Value),
    /// Takes a value only when it is attached (`-w8`, `--color=auto`): the
    /// next word is never its value.
    Attached(Value),
    /// An option of the real command that writes, runs programs or reads
    /// what cannot be checked: the reason why it is not allowed.
    Refused(&'static str),
}

#[derive(Debug)]
pub(crate) struct Opt {
    pub short: Option<char>,
    pub long: Option<&'static str>,
    pub arg: Arg,
}

impl Opt {
    /// Whether this is the option `name` (`-x` or `--long`).
    pub(crate) fn is(&self, name: &str) -> bool {
        match name.strip_prefix("--") {
            Some(long) => self.long == Some(long),
            None => {
                let mut chars = name.chars();
                chars.next() == Some('-')
                    && chars.next() == self.short
                    && self.short.is_some()
                    && chars.next().is_none()
            }
        }
    }

    /// The option's own name, for messages.
    fn canonical(&self) -> String {
        match (self.long, self.short) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => String::new(),
        }
    }
}

const fn short_char(short: &str) -> Option<char> {
    match short.as_bytes() {
        [byte] => Some(*byte as char),
        _ => None,
    }
}

const fn long_name(long: &'static str) -> Option<&'static str> {
    if long.is_empty() { None } else { Some(long) }
}

const fn opt(short: &'static str, long: &'static str, arg: Arg) -> Opt {
    Opt {
        short: short_char(short),
        long: long_name(long),
        arg,
    }
}

/// `-s` / `--long` without a value; either name may be `""`.
pub(crate) const fn flag(short: &'static str, long: &'static str) -> Opt {
    opt(short, long, Arg::Flag)
}

/// An option with a required value that is not a path.
pub(crate) const fn text(short: &'static str, long: &'static str) -> Opt {
    opt(short, long, Arg::Required(Value::Text))
}

/// An option with a required value that names a file the command reads.
pub(crate) const fn file(short: &'static str, long: &'static str) -> Opt {
    opt(short, long, Arg::Required(Value::File))
}

/// An option whose value is optional and, when given, attached.
pub(crate) const fn attached(short: &'static str, long: &'static str) -> Opt {
    opt(short, long, Arg::Attached(Value::Text))
}

/// An option of the command that is never allowed, with the reason.
pub(crate) const fn refused(short: &'static str, long: &'static str, reason: &'static str) -> Opt {
    opt(short, long, Arg::Refused(reason))
}

/// How a command parses its arguments, beyond the `getopt_long` basics.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Syntax {
    /// Long options may be abbreviated to a unique prefix.
    pub abbreviations: bool,
    /// `-NUM` is a count (`head -5`, `grep -3`, `git log -5`).
    pub numbers: bool,
    /// clap/lexopt rules (ripgrep): no abbreviations, `-m=5` means `-m 5`,
    /// and a separate value starting with `-` is refused rather than guessed.
    pub clap: bool,
    /// `@FILE` reads more arguments from FILE (binutils).
    pub response_files: bool,
}

pub(crate) const GETOPT: Syntax = Syntax {
    abbreviations: true,
    numbers: false,
    clap: false,
    response_files: false,
};

pub(crate) const GETOPT_NUMBERS: Syntax = Syntax {
    numbers: true,
    ..GETOPT
};

/// A parser of its own: exact long names only.
pub(crate) const EXACT: Syntax = Syntax {
    abbreviations: false,
    ..GETOPT
};

pub(crate) const CLAP: Syntax = Syntax {
    abbreviations: false,
    numbers: false,
    clap: true,
    response_files: false,
};

/// Every GNU tool has these; they print and exit.
pub(crate) const INFO: &[Opt] = &[flag("", "help"), flag("", "version")];

/// A command's option table.
#[derive(Debug)]
pub(crate) struct Spec {
    /// For messages: `sort`, `git log`.
    pub command: &'static str,
    pub groups: &'static [&'static [Opt]],
    pub syntax: Syntax,
}

#[derive(Debug)]
pub(crate) struct Found<'w> {
    pub opt: &'static Opt,
    pub value: Option<OptionValue<'w>>,
}

#[derive(Debug, Default)]
pub(crate) struct Parsed<'w> {
    pub options: Vec<Found<'w>>,
    pub operands: Vec<&'w Word>,
    /// Separate values of text options that come after an operand: a
    /// command that does not permute its arguments (`POSIXLY_CORRECT`)
    /// reads them as files, so they are checked as files too.
    pub late_values: Vec<&'w Word>,
    /// A `-NUM` count was given.
    pub number: bool,
}

impl Parsed<'_> {
    /// Whether any of `names` (`-x`, `--long`) was given.
    pub(crate) fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|found| names.iter().any(|name| found.opt.is(name)))
    }

    /// The values given to any of `names`, in order.
    pub(crate) fn values(&self, names: &[&str]) -> Vec<Word> {
        self.options
            .iter()
            .filter(|found| names.iter().any(|name| found.opt.is(name)))
            .filter_map(|found| found.value.as_ref().map(OptionValue::to_word))
            .collect()
    }

    /// The values of options that name files, and the late values that a
    /// non-permuting command would take for files.
    pub(crate) fn files(&self) -> Vec<Word> {
        let mut files: Vec<Word> = self
            .options
            .iter()
            .filter(|found| {
                matches!(
                    found.opt.arg,
                    Arg::Required(Value::File) | Arg::Attached(Value::File)
                )
            })
            .filter_map(|found| found.value.as_ref().map(OptionValue::to_word))
            .collect();
        files.extend(self.late_values.iter().map(|word| (*word).clone()));
        files
    }

    pub(crate) fn operand_words(&self) -> Vec<Word> {
        self.operands.iter().map(|word| (*word).clone()).collect()
    }
}

impl Spec {
    fn options(&self) -> impl Iterator<Item = &'static Opt> + Clone {
        self.groups.iter().flat_map(|group| group.iter())
    }

    fn short(&self, flag: char) -> Result<&'static Opt, String> {
        self.options()
            .find(|option| option.short == Some(flag))
            .ok_or_else(|| format!("unknown option -{flag} for {}", self.command))
    }

    /// The option `--name` stands for: an exact name, else (where the
    /// command allows it) the one option the name is a prefix of.
    fn long(&self, name: &str) -> Result<&'static Opt, String> {
        if let Some(exact) = self.options().find(|option| option.long == Some(name)) {
            return Ok(exact);
        }
        let unknown = || format!("unknown option --{name} for {}", self.command);
        if !self.syntax.abbreviations || name.is_empty() {
            return Err(unknown());
        }
        let mut candidates: Vec<&'static Opt> = Vec::new();
        for option in self.options() {
            let Some(long) = option.long else { continue };
            if long.starts_with(name) && !candidates.iter().any(|seen| seen.long == Some(long)) {
                candidates.push(option);
            }
        }
        match candidates.as_slice() {
            [] => Err(unknown()),
            [only] => Ok(only),
            several => Err(format!(
                "ambiguous option --{name} for {}: {}",
                self.command,
                several
                    .iter()
                    .map(|option| option.canonical())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn refusal(&self, written: &str, option: &Opt, reason: &str) -> String {
        let canonical = option.canonical();
        if written == canonical || option.short.is_some_and(|s| written == format!("-{s}")) {
            format!("{} {written}: {reason}", self.command)
        } else {
            format!("{} {written} ({canonical}): {reason}", self.command)
        }
    }
}

/// Splits `args` by `spec`; an option the table does not allow is an error
/// that says why.
pub(crate) fn parse<'w>(spec: &Spec, args: &'w [Word]) -> Result<Parsed<'w>, String> {
    let mut parsed = Parsed::default();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        // A word whose value is unknown cannot be told apart; the command
        // needs approval for it anyway (it is not a plain literal).
        let Some(text) = word.value() else {
            parsed.operands.push(word);
            continue;
        };
        if text == "--" {
            parsed.operands.extend(words.by_ref());
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None => (long, None),
            };
            let option = spec.long(name)?;
            let written = format!("--{name}");
            let value = take_value(spec, option, &written, attached, &mut words, &mut parsed)?;
            parsed.options.push(Found { opt: option, value });
            continue;
        }
        match text.strip_prefix('-') {
            Some(cluster) if !cluster.is_empty() => {
                parse_cluster(spec, cluster, &mut words, &mut parsed)?;
            }
            _ => {
                if spec.syntax.response_files && text.starts_with('@') {
                    return Err(format!(
                        "{} {text}: reads more arguments from a file",
                        spec.command
                    ));
                }
                parsed.operands.push(word);
            }
        }
    }
    Ok(parsed)
}

fn parse_cluster<'w>(
    spec: &Spec,
    cluster: &str,
    words: &mut std::slice::Iter<'w, Word>,
    parsed: &mut Parsed<'w>,
) -> Result<(), String> {
    if spec.syntax.numbers && cluster.bytes().all(|byte| byte.is_ascii_digit()) {
        parsed.number = true;
        return Ok(());
    }
    for (index, flag) in cluster.char_indices() {
        let option = spec.short(flag)?;
        let rest = &cluster[index + flag.len_utf8()..];
        let written = format!("-{flag}");
        if option.arg == Arg::Flag {
            parsed.options.push(Found {
                opt: option,
                value: None,
            });
            continue;
        }
        let mut attached = (!rest.is_empty()).then(|| rest.to_owned());
        if spec.syntax.clap
            && let Some(value) = attached.as_deref().and_then(|rest| rest.strip_prefix('='))
        {
            attached = Some(value.to_owned());
        }
        let value = take_value(spec, option, &written, attached, words, parsed)?;
        parsed.options.push(Found { opt: option, value });
        // A value-taking option ends the cluster: the rest was its value.
        break;
    }
    Ok(())
}

fn take_value<'w>(
    spec: &Spec,
    option: &'static Opt,
    written: &str,
    attached: Option<String>,
    words: &mut std::slice::Iter<'w, Word>,
    parsed: &mut Parsed<'w>,
) -> Result<Option<OptionValue<'w>>, String> {
    match option.arg {
        Arg::Refused(reason) => Err(spec.refusal(written, option, reason)),
        Arg::Flag => match attached {
            Some(_) => Err(format!(
                "option {written} of {} takes no value",
                spec.command
            )),
            None => Ok(None),
        },
        Arg::Attached(_) => Ok(attached.map(OptionValue::Attached)),
        Arg::Required(kind) => {
            if let Some(value) = attached {
                return Ok(Some(OptionValue::Attached(value)));
            }
            let Some(next) = words.next() else {
                return Err(format!(
                    "option {written} of {} needs a value",
                    spec.command
                ));
            };
            let hyphenated = next
                .value()
                .is_some_and(|value| value.starts_with('-') && value != "-");
            if spec.syntax.clap && hyphenated {
                return Err(format!(
                    "the value of {written} for {} starts with '-': attach it with '='",
                    spec.command
                ));
            }
            if kind == Value::Text && !parsed.operands.is_empty() {
                parsed.late_values.push(next);
            }
            Ok(Some(OptionValue::Word(next)))
        }
    }
}
