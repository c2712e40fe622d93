//! The allowlist of commands that only read. Each command is parsed by its
//! table of allowed options (see `options`): any other option makes it need
//! approval, and every word that names a file it reads — operands and
//! option values alike — is returned to be checked.

use super::find;
use super::options::{self, Parsed, Spec};
use super::sed;
use super::words::Word;

pub(crate) enum ReadOnly {
    /// Read-only; what it reads.
    Safe(Reads),
    NotSafe(String),
}

#[derive(Default)]
pub(crate) struct Reads {
    /// Files whose contents it reads (and may print).
    pub contents: Vec<Word>,
    /// Files or directories of which it only reads names, sizes, types.
    pub metadata: Vec<Word>,
    /// Operands that must not be directories: in a directory the command
    /// would follow symbolic links (`diff` without `--no-dereference`).
    pub not_directories: Vec<Word>,
}

fn not_safe(reason: impl Into<String>) -> ReadOnly {
    ReadOnly::NotSafe(reason.into())
}

fn contents(mut files: Vec<Word>, parsed: &Parsed<'_>) -> ReadOnly {
    files.extend(parsed.files());
    ReadOnly::Safe(Reads {
        contents: files,
        ..Reads::default()
    })
}

/// Reads its operands (and the files its options name).
fn reads_operands(spec: &Spec, args: &[Word]) -> ReadOnly {
    match options::parse(spec, args) {
        Ok(parsed) => contents(parsed.operand_words(), &parsed),
        Err(reason) => ReadOnly::NotSafe(reason),
    }
}

/// Looks at its operands' metadata only; `.` without operands when `default_here`.
fn lists_operands(spec: &Spec, args: &[Word], default_here: bool) -> ReadOnly {
    let parsed = match options::parse(spec, args) {
        Ok(parsed) => parsed,
        Err(reason) => return ReadOnly::NotSafe(reason),
    };
    let mut metadata = parsed.operand_words();
    if metadata.is_empty() && default_here {
        metadata.push(Word::known(".", true));
    }
    ReadOnly::Safe(Reads {
        contents: parsed.files(),
        metadata,
        ..Reads::default()
    })
}

/// Takes only text: its operands are not files.
fn reads_nothing(spec: &Spec, args: &[Word]) -> ReadOnly {
    match options::parse(spec, args) {
        Ok(parsed) => contents(Vec::new(), &parsed),
        Err(reason) => ReadOnly::NotSafe(reason),
    }
}

/// Judges `name args` (wrappers already removed, `name` without directory).
pub(crate) fn classify(name: &str, args: &[Word]) -> ReadOnly {
    match name {
        "cat" => reads_operands(&options::CAT, args),
        "tac" => reads_operands(&options::TAC, args),
        "rev" => reads_operands(&options::REV, args),
        "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" => {
            reads_operands(&options::CHECKSUM, args)
        }
        "b2sum" => reads_operands(&options::B2SUM, args),
        "cksum" => reads_operands(&options::CKSUM, args),
        "head" => reads_operands(&options::HEAD, args),
        "tail" => reads_operands(&options::TAIL, args),
        "wc" => reads_operands(&options::WC, args),
        "nl" => reads_operands(&options::NL, args),
        "fold" => reads_operands(&options::FOLD, args),
        "paste" => reads_operands(&options::PASTE, args),
        "comm" => reads_operands(&options::COMM, args),
        "cut" => reads_operands(&options::CUT, args),
        "column" => reads_operands(&options::COLUMN, args),
        "strings" => reads_operands(&options::STRINGS, args),
        "od" => reads_operands(&options::OD, args),
        "hexdump" => reads_operands(&options::HEXDUMP, args),
        "sort" => reads_operands(&options::SORT, args),
        "cmp" => reads_operands(&options::CMP, args),
        "uniq" => classify_uniq(args),
        "ls" | "dir" => lists_operands(&options::LS, args, true),
        "du" => lists_operands(&options::DU, args, true),
        "tree" => lists_operands(&options::TREE, args, true),
        "df" | "stat" | "file" => {
            let spec = match name {
                "df" => &options::DF,
                "stat" => &options::STAT,
                _ => &options::FILE,
            };
            lists_operands(spec, args, false)
        }
        "realpath" => lists_operands(&options::REALPATH, args, false),
        "readlink" => lists_operands(&options::READLINK, args, false),
        "diff" => classify_diff(args),
        "grep" | "egrep" | "fgrep" => classify_grep(args),
        "rg" => classify_rg(args),
        "sed" => classify_sed(args),
        "find" => match find::classify(args) {
            Ok(reads) => {
                let mut metadata = reads.roots;
                metadata.extend(reads.references);
                ReadOnly::Safe(Reads {
                    metadata,
                    ..Reads::default()
                })
            }
            Err(reason) => ReadOnly::NotSafe(reason),
        },
        "tr" => reads_nothing(&options::TR, args),
        "date" => classify_date(args),
        "basename" => reads_nothing(&options::BASENAME, args),
        "dirname" => reads_nothing(&options::DIRNAME, args),
        "pwd" => reads_nothing(&options::PWD, args),
        "uname" => reads_nothing(&options::UNAME, args),
        "id" => reads_nothing(&options::ID, args),
        "nproc" => reads_nothing(&options::NPROC, args),
        "which" => reads_nothing(&options::WHICH, args),
        "whoami" | "arch" => reads_nothing(&options::NO_OPTIONS, args),
        // Their arguments are only ever text to print or count with; none of
        // their options reads, writes or runs anything.
        "echo" | "printf" | "true" | "false" | "seq" | "type" => ReadOnly::Safe(Reads::default()),
        "hostname" if args.is_empty() => ReadOnly::Safe(Reads::default()),
        "env" | "printenv" => not_safe(format!(
            "{name} prints environment variables, which may hold secrets"
        )),
        _ => not_safe(format!("not a known read-only command: {name}")),
    }
}

fn classify_date(args: &[Word]) -> ReadOnly {
    let parsed = match options::parse(&options::DATE, args) {
        Ok(parsed) => parsed,
        Err(reason) => return ReadOnly::NotSafe(reason),
    };
    // `+FORMAT` prints; any other operand is a date to set the clock to.
    if let Some(operand) = parsed
        .operands
        .iter()
        .find(|word| !word.value().is_some_and(|value| value.starts_with('+')))
    {
        return not_safe(format!("date {}: sets the system clock", operand.display()));
    }
    contents(Vec::new(), &parsed)
}

fn classify_uniq(args: &[Word]) -> ReadOnly {
    let parsed = match options::parse(&options::UNIQ, args) {
        Ok(parsed) => parsed,
        Err(reason) => return ReadOnly::NotSafe(reason),
    };
    if parsed.operands.len() > 1 {
        // `uniq INPUT OUTPUT` writes OUTPUT.
        return not_safe("uniq with two operands writes its output to a file");
    }
    contents(parsed.operand_words(), &parsed)
}

fn classify_diff(args: &[Word]) -> ReadOnly {
    let parsed = match options::parse(&options::DIFF, args) {
        Ok(parsed) => parsed,
        Err(reason) => return ReadOnly::NotSafe(reason),
    };
    let dereferences = !parsed.has(&["--no-dereference"]);
    if dereferences && parsed.has(&["-r", "--recursive"]) {
        return not_safe(
            "diff -r follows symbolic links, which may lead out of the workspace (add --no-dereference)",
        );
    }
    let mut files = parsed.operand_words();
    files.extend(parsed.values(&["--from-file", "--to-file"]));
    let not_directories = if dereferences {
        files.clone()
    } else {
        Vec::new()
    };
    let mut contents = files;
    contents.extend(parsed.files());
    ReadOnly::Safe(Reads {
        contents,
        not_directories,
        ..Reads::default()
    })
}

fn classify_grep(args: &[Word]) -> ReadOnly {
    let parsed = match options::parse(&options::GREP, args) {
        Ok(parsed) => parsed,
        Err(reason) => return ReadOnly::NotSafe(reason),
    };
    let mut files = parsed.operand_words();
    if !parsed.has(&["-e", "--regexp", "-f", "--file"]) && !files.is_empty() {
        // Without -e/-f the first operand is the pattern.
        files.remove(0);
    }
    // `-d ACTION` takes abbreviations of read, skip, recurse: anything but
    // the two that do not recurse counts as recursion.
    let recursive = parsed.has(&["-r", "--recursive"])
        || parsed
            .values(&["-d", "--directories"])
            .iter()
            .any(|action| !matches!(action.value().as_deref(), Some("read" | "skip")));
    if recursive && files.is_empty() {
        // A recursive grep without files searches the working directory.
        files.push(Word::known(".", true));
    }
    contents(files, &parsed)
}

fn classify_rg(args: &[Word]) -> ReadOnly {
    let parsed = match options::parse(&options::RG, args) {
        Ok(parsed) => parsed,
        Err(reason) => return ReadOnly::NotSafe(reason),
    };
    let mut files = parsed.operand_words();
    let pattern_elsewhere =
        parsed.has(&["-e", "--regexp", "-f", "--file", "--files", "--type-list"]);
    if !pattern_elsewhere && !files.is_empty() {
        files.remove(0);
    }
    if files.is_empty() {
        // Without paths, ripgrep searches the working directory.
        files.push(Word::known(".", true));
    }
    contents(files, &parsed)
}

fn classify_sed(args: &[Word]) -> ReadOnly {
    let parsed = match options::parse(&options::SED, args) {
        Ok(parsed) => parsed,
        Err(reason) => return ReadOnly::NotSafe(reason),
    };
    let mut files = parsed.operand_words();
    let mut scripts: Vec<String> = Vec::new();
    for script in parsed.values(&["-e", "--expression"]) {
        match script.value() {
            Some(value) => scripts.push(value),
            None => return not_safe("sed script is not a literal"),
        }
    }
    if !parsed.has(&["-e", "--expression"]) {
        if files.is_empty() {
            return not_safe("sed without a script");
        }
        match files.remove(0).value() {
            Some(value) => scripts.push(value),
            None => return not_safe("sed script is not a literal"),
        }
    }
    // With --sandbox, sed itself refuses the commands that write or run.
    if !parsed.has(&["--sandbox"]) {
        for script in &scripts {
            if let Err(command) = sed::script_is_read_only(script) {
                return not_safe(format!(
                    "sed command `{command}` writes files or runs commands"
                ));
            }
        }
    }
    contents(files, &parsed)
}
