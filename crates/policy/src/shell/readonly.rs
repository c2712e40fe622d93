//! The allowlist of commands that only read: each entry knows which options
//! would make it write or run something, and which words are files it reads.

use super::args::{self, Parsed};
use super::sed;
use super::words::Word;

pub(crate) enum ReadOnly {
    /// Read-only; `reads` are the files (or directories) it reads.
    Safe {
        reads: Vec<Word>,
    },
    NotSafe(String),
}

fn safe(reads: Vec<Word>) -> ReadOnly {
    ReadOnly::Safe { reads }
}

fn not_safe(reason: impl Into<String>) -> ReadOnly {
    ReadOnly::NotSafe(reason.into())
}

fn operands(parsed: &Parsed<'_>) -> Vec<Word> {
    parsed.operands.iter().map(|word| (*word).clone()).collect()
}

/// Reads its operands, has no option that writes or runs anything; `value_options`
/// take a value, `read_options` take a file to read.
fn reads_operands(args: &[Word], value_options: &[&str], read_options: &[&str]) -> ReadOnly {
    let takes_value: Vec<&str> = value_options.iter().chain(read_options).copied().collect();
    let parsed = args::parse(args, &takes_value);
    let mut reads = operands(&parsed);
    reads.extend(parsed.values(read_options));
    safe(reads)
}

/// Judges `name args` (wrappers already removed, `name` without directory).
pub(crate) fn classify(name: &str, args: &[Word]) -> ReadOnly {
    let mut verdict = classify_explicit(name, args);
    // Without a path, these read the working directory.
    if let ReadOnly::Safe { reads } = &mut verdict
        && reads.is_empty()
        && matches!(name, "ls" | "dir" | "du" | "tree" | "rg")
    {
        reads.push(Word::known(".", true));
    }
    verdict
}

fn classify_explicit(name: &str, args: &[Word]) -> ReadOnly {
    match name {
        "ls" | "dir" => reads_operands(
            args,
            &[
                "-I",
                "--ignore",
                "-w",
                "--width",
                "-T",
                "--tabsize",
                "--hide",
                "--format",
                "--sort",
                "--time-style",
                "--quoting-style",
                "--block-size",
            ],
            &[],
        ),
        "cat" | "tac" | "rev" | "md5sum" | "sha1sum" | "sha256sum" | "sha512sum" | "cksum"
        | "b2sum" => reads_operands(args, &[], &[]),
        "head" | "tail" => reads_operands(
            args,
            &[
                "-n",
                "-c",
                "--lines",
                "--bytes",
                "-s",
                "--sleep-interval",
                "--pid",
                "--max-unchanged-stats",
            ],
            &[],
        ),
        "wc" => reads_operands(args, &[], &["--files0-from"]),
        "nl" => reads_operands(
            args,
            &["-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"],
            &[],
        ),
        "fold" => reads_operands(args, &["-w", "--width"], &[]),
        "paste" => reads_operands(args, &["-d", "--delimiters"], &[]),
        "comm" => reads_operands(args, &["--output-delimiter"], &[]),
        "column" => reads_operands(
            args,
            &["-s", "-c", "-o", "-N", "-R", "-H", "-W", "-E", "-J"],
            &[],
        ),
        "strings" => reads_operands(
            args,
            &["-n", "-t", "-e", "--bytes", "--radix", "--encoding"],
            &[],
        ),
        "od" => reads_operands(
            args,
            &[
                "-A",
                "-t",
                "-N",
                "-j",
                "-w",
                "--address-radix",
                "--format",
                "--read-bytes",
                "--skip-bytes",
            ],
            &[],
        ),
        "hexdump" => reads_operands(args, &["-n", "-s", "-e"], &["-f"]),
        "cut" => reads_operands(
            args,
            &[
                "-b",
                "-c",
                "-d",
                "-f",
                "--bytes",
                "--characters",
                "--delimiter",
                "--fields",
                "--output-delimiter",
            ],
            &[],
        ),
        "stat" => reads_operands(args, &["-c", "--format", "--printf"], &[]),
        "du" => reads_operands(
            args,
            &[
                "-d",
                "--max-depth",
                "-B",
                "--block-size",
                "-t",
                "--threshold",
                "--exclude",
                "--time-style",
            ],
            &["-X", "--exclude-from", "--files0-from"],
        ),
        "df" => reads_operands(
            args,
            &["-B", "--block-size", "-t", "--type", "-x", "--exclude-type"],
            &[],
        ),
        "cmp" => reads_operands(args, &["-i", "--ignore-initial", "-n", "--bytes"], &[]),
        "diff" => reads_operands(
            args,
            &[
                "-U",
                "-C",
                "--unified",
                "--context",
                "-I",
                "--ignore-matching-lines",
                "-x",
                "--exclude",
                "--label",
                "-L",
                "-F",
                "--show-function-line",
                "-W",
                "--width",
                "--tabsize",
                "--color",
                "--palette",
            ],
            &["-X", "--exclude-from", "--from-file", "--to-file"],
        ),
        "file" => classify_file(args),
        "tree" => classify_tree(args),
        "sort" => classify_sort(args),
        "uniq" => classify_uniq(args),
        "grep" | "egrep" | "fgrep" => classify_grep(args),
        "rg" => classify_rg(args),
        "sed" => classify_sed(args),
        "find" => classify_find(args),
        // Print their arguments or facts about the system; read no file.
        "echo" | "printf" | "pwd" | "basename" | "dirname" | "realpath" | "readlink" | "which"
        | "whoami" | "id" | "uname" | "true" | "false" | "seq" | "type" | "tr" | "nproc"
        | "arch" => safe(Vec::new()),
        "hostname" if args.is_empty() => safe(Vec::new()),
        "date" => {
            let parsed = args::parse(args, &["-d", "--date", "-r", "--reference", "-f", "--file"]);
            if parsed.has(&["-s", "--set"]) {
                not_safe("date --set changes the system clock")
            } else {
                safe(parsed.values(&["-r", "--reference", "-f", "--file"]))
            }
        }
        "env" | "printenv" => not_safe(format!(
            "{name} prints environment variables, which may hold secrets"
        )),
        _ => not_safe(format!("not a known read-only command: {name}")),
    }
}

fn classify_file(args: &[Word]) -> ReadOnly {
    let parsed = args::parse(
        args,
        &[
            "-m",
            "--magic-file",
            "-f",
            "--files-from",
            "-F",
            "--separator",
            "-P",
            "--parameter",
            "-e",
            "--exclude",
        ],
    );
    if parsed.has(&["-C", "--compile"]) {
        return not_safe("file --compile writes a magic file");
    }
    let mut reads = operands(&parsed);
    reads.extend(parsed.values(&["-m", "--magic-file", "-f", "--files-from"]));
    safe(reads)
}

fn classify_tree(args: &[Word]) -> ReadOnly {
    let parsed = args::parse(
        args,
        &[
            "-L",
            "-P",
            "-I",
            "-H",
            "-T",
            "-o",
            "--charset",
            "--filelimit",
            "--timefmt",
            "--sort",
        ],
    );
    if parsed.has(&["-o", "--fromfile"]) {
        return not_safe("tree -o writes its output to a file");
    }
    safe(operands(&parsed))
}

fn classify_sort(args: &[Word]) -> ReadOnly {
    let read_options = ["--files0-from", "--random-source"];
    let parsed = args::parse(
        args,
        &[
            "-k",
            "--key",
            "-t",
            "--field-separator",
            "-S",
            "--buffer-size",
            "-T",
            "--temporary-directory",
            "--parallel",
            "--batch-size",
            "-o",
            "--output",
            "--compress-program",
            "--files0-from",
            "--random-source",
        ],
    );
    if parsed.has(&["-o", "--output"]) {
        return not_safe("sort -o writes its output to a file");
    }
    if parsed.has(&["--compress-program"]) {
        return not_safe("sort --compress-program runs a program");
    }
    let mut reads = operands(&parsed);
    reads.extend(parsed.values(&read_options));
    safe(reads)
}

fn classify_uniq(args: &[Word]) -> ReadOnly {
    let parsed = args::parse(
        args,
        &[
            "-f",
            "-s",
            "-w",
            "--skip-fields",
            "--skip-chars",
            "--check-chars",
        ],
    );
    if parsed.operands.len() > 1 {
        // `uniq INPUT OUTPUT` writes OUTPUT.
        return not_safe("uniq with two operands writes its output to a file");
    }
    safe(operands(&parsed))
}

fn classify_grep(args: &[Word]) -> ReadOnly {
    let pattern_options = ["-e", "--regexp", "-f", "--file"];
    let parsed = args::parse(
        args,
        &[
            "-e",
            "--regexp",
            "-f",
            "--file",
            "-m",
            "--max-count",
            "-A",
            "-B",
            "-C",
            "--after-context",
            "--before-context",
            "--context",
            "-d",
            "--directories",
            "-D",
            "--devices",
            "--include",
            "--exclude",
            "--exclude-dir",
            "--exclude-from",
            "--label",
            "--binary-files",
        ],
    );
    let mut files = operands(&parsed);
    if !parsed.has(&pattern_options) && !files.is_empty() {
        // Without -e/-f the first operand is the pattern.
        files.remove(0);
    }
    files.extend(parsed.values(&["-f", "--file", "--exclude-from"]));
    safe(files)
}

fn classify_rg(args: &[Word]) -> ReadOnly {
    let parsed = args::parse(
        args,
        &[
            "-e",
            "--regexp",
            "-f",
            "--file",
            "-g",
            "--glob",
            "--iglob",
            "-t",
            "--type",
            "-T",
            "--type-not",
            "--type-add",
            "--type-clear",
            "-m",
            "--max-count",
            "-A",
            "-B",
            "-C",
            "--after-context",
            "--before-context",
            "--context",
            "-j",
            "--threads",
            "-M",
            "--max-columns",
            "-E",
            "--encoding",
            "-r",
            "--replace",
            "--sort",
            "--sortr",
            "-d",
            "--max-depth",
            "--max-filesize",
            "--colors",
            "--color",
            "--path-separator",
            "--ignore-file",
            "--engine",
            "--pre",
            "--pre-glob",
            "--field-match-separator",
            "--field-context-separator",
            "--context-separator",
            "-V",
        ],
    );
    if parsed.has(&["--pre"]) {
        return not_safe("rg --pre runs a preprocessor command");
    }
    let mut files = operands(&parsed);
    if !parsed.has(&["-e", "--regexp", "-f", "--file", "--files", "--type-list"])
        && !files.is_empty()
    {
        files.remove(0);
    }
    files.extend(parsed.values(&["-f", "--file", "--ignore-file"]));
    safe(files)
}

fn classify_find(args: &[Word]) -> ReadOnly {
    const ACTIONS: [&str; 9] = [
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
    ];
    if let Some(action) = args
        .iter()
        .filter_map(Word::value)
        .find(|value| ACTIONS.contains(&value.as_str()))
    {
        return not_safe(format!("find {action} runs commands or writes files"));
    }
    safe(find_roots(args))
}

/// The starting points of `find`: the operands before the expression.
pub(crate) fn find_roots(args: &[Word]) -> Vec<Word> {
    let mut roots = Vec::new();
    for word in args {
        let starts_expression = word.value().is_some_and(|value| {
            value.starts_with('-') || matches!(value.as_str(), "(" | ")" | "!" | ",")
        });
        if starts_expression {
            break;
        }
        roots.push(word.clone());
    }
    if roots.is_empty() {
        roots.push(Word::known(".", true));
    }
    roots
}

fn classify_sed(args: &[Word]) -> ReadOnly {
    let parsed = args::parse(
        args,
        &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
    );
    let in_place = parsed
        .options
        .iter()
        .any(|option| option.name == "-i" || option.name.starts_with("--in-place"));
    if in_place {
        return not_safe("sed -i edits files in place");
    }
    let mut files = operands(&parsed);
    let mut scripts: Vec<String> = Vec::new();
    for script in parsed.values(&["-e", "--expression"]) {
        match script.value() {
            Some(value) => scripts.push(value),
            None => return not_safe("sed script is not a literal"),
        }
    }
    if !parsed.has(&["-e", "--expression", "-f", "--file"]) {
        if files.is_empty() {
            return not_safe("sed without a script");
        }
        match files.remove(0).value() {
            Some(value) => scripts.push(value),
            None => return not_safe("sed script is not a literal"),
        }
    }
    if parsed.has(&["-f", "--file"]) {
        // The script file could hold `w` or `e` commands: it is not read here.
        return not_safe("sed -f runs a script file");
    }
    if !parsed.has(&["--sandbox"]) {
        for script in &scripts {
            if let Err(command) = sed::script_is_read_only(script) {
                return not_safe(format!(
                    "sed command `{command}` writes files or runs commands"
                ));
            }
        }
    }
    safe(files)
}
