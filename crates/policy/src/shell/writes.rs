//! Which arguments of file-changing commands are written to (or removed)
//! and which are read, so that writes outside the workspace are caught.

use super::args::{self, Parsed};
use super::options;
use super::words::Word;

pub(crate) enum Access {
    Write(Word),
    /// Written and taken away from where it was (`mv`'s sources).
    MoveAway(Word),
    Read(Word),
}

fn writes_all(parsed: &Parsed<'_>) -> Vec<Access> {
    parsed
        .operands
        .iter()
        .map(|word| Access::Write((*word).clone()))
        .collect()
}

/// The files `name args` writes and reads (`rm` has rules of its own).
pub(crate) fn accesses(name: &str, args: &[Word]) -> Vec<Access> {
    match name {
        "cp" | "mv" | "ln" | "install" => copy_like(name, args),
        "tee" | "mkdir" | "rmdir" | "unlink" | "shred" => {
            let parsed = args::parse(
                args,
                &["-m", "--mode", "-n", "-s", "--iterations", "--size"],
            );
            writes_all(&parsed)
        }
        "touch" | "truncate" => {
            let parsed = args::parse(
                args,
                &["-d", "-t", "-r", "-s", "--date", "--reference", "--size"],
            );
            let mut accesses = writes_all(&parsed);
            accesses.extend(
                parsed
                    .values(&["-r", "--reference"])
                    .into_iter()
                    .map(Access::Read),
            );
            accesses
        }
        "chmod" | "chown" | "chgrp" => {
            let parsed = args::parse(args, &[]);
            // The first operand is the mode or owner, unless --reference gives it.
            let skip = usize::from(!parsed.has(&["--reference"]));
            parsed
                .operands
                .iter()
                .skip(skip)
                .map(|word| Access::Write((*word).clone()))
                .collect()
        }
        "dd" => args
            .iter()
            .filter_map(|word| {
                let value = word.value()?;
                if let Some(path) = value.strip_prefix("of=") {
                    Some(Access::Write(Word::known(path, false)))
                } else {
                    value
                        .strip_prefix("if=")
                        .map(|path| Access::Read(Word::known(path, false)))
                }
            })
            .collect(),
        "sed" => sed_in_place(args),
        "curl" => {
            let parsed = args::parse(args, &CURL_VALUE_OPTIONS);
            let mut accesses: Vec<Access> = parsed
                .values(CURL_WRITE_OPTIONS)
                .into_iter()
                .map(Access::Write)
                .collect();
            accesses.extend(
                parsed
                    .values(CURL_READ_OPTIONS)
                    .into_iter()
                    .map(Access::Read),
            );
            accesses
        }
        "wget" => {
            let parsed = args::parse(
                args,
                &[
                    "-O",
                    "--output-document",
                    "-P",
                    "--directory-prefix",
                    "-o",
                    "--output-file",
                    "-a",
                    "--append-output",
                    "-i",
                    "--input-file",
                    "--post-file",
                    "--body-file",
                    "-U",
                    "--header",
                ],
            );
            let mut accesses: Vec<Access> = parsed
                .values(&[
                    "-O",
                    "--output-document",
                    "-P",
                    "--directory-prefix",
                    "-o",
                    "--output-file",
                    "-a",
                    "--append-output",
                ])
                .into_iter()
                .map(Access::Write)
                .collect();
            accesses.extend(
                parsed
                    .values(&["-i", "--input-file", "--post-file", "--body-file"])
                    .into_iter()
                    .map(Access::Read),
            );
            accesses
        }
        "tar" => tar(args),
        "unzip" => {
            let parsed = args::parse(args, &["-d", "-x", "-P"]);
            parsed
                .values(&["-d"])
                .into_iter()
                .map(Access::Write)
                .collect()
        }
        "rsync" | "scp" => {
            let parsed = args::parse(
                args,
                &[
                    "-e", "--rsh", "-i", "-P", "-o", "-F", "-c", "-l", "-S", "-J",
                ],
            );
            let local = |word: &Word| word.value().is_some_and(|value| !value.contains(':'));
            let mut accesses: Vec<Access> = Vec::new();
            if let Some((destination, sources)) = parsed.operands.split_last() {
                accesses.extend(
                    sources
                        .iter()
                        .filter(|word| local(word))
                        .map(|word| Access::Read((*word).clone())),
                );
                if local(destination) {
                    accesses.push(Access::Write((*destination).clone()));
                }
            }
            accesses
        }
        _ => Vec::new(),
    }
}

fn copy_like(name: &str, args: &[Word]) -> Vec<Access> {
    let parsed = args::parse(
        args,
        &[
            "-t",
            "--target-directory",
            "-S",
            "--suffix",
            "-m",
            "--mode",
            "-o",
            "--owner",
            "-g",
            "--group",
        ],
    );
    let mut accesses = Vec::new();
    if name == "install" && parsed.has(&["-d", "--directory"]) {
        return writes_all(&parsed);
    }
    let target_directory = parsed.values(&["-t", "--target-directory"]);
    let (sources, destination): (Vec<&Word>, Option<Word>) =
        match target_directory.into_iter().next() {
            Some(directory) => (parsed.operands.clone(), Some(directory)),
            None => match parsed.operands.split_last() {
                Some((last, rest)) if !rest.is_empty() => (rest.to_vec(), Some((*last).clone())),
                // `ln -s TARGET` links into the current directory; `cp X` fails.
                _ => (Vec::new(), None),
            },
        };
    if let Some(destination) = destination {
        accesses.push(Access::Write(destination));
    }
    for source in sources {
        match name {
            // mv removes its sources.
            "mv" => accesses.push(Access::MoveAway(source.clone())),
            // A link's target is not opened.
            "ln" => {}
            _ => accesses.push(Access::Read(source.clone())),
        }
    }
    accesses
}

fn sed_in_place(args: &[Word]) -> Vec<Access> {
    // By sed's own option rules (`--in-pl` is `--in-place`, `--expr=` is
    // `--expression=`); if they do not parse, by the plain splitting.
    if let Ok(parsed) = options::parse(&options::SED_EDITS, args) {
        if !parsed.has(&["-i", "--in-place"]) {
            return Vec::new();
        }
        let skip = usize::from(!parsed.has(&["-e", "--expression", "-f", "--file"]));
        return parsed
            .operands
            .iter()
            .skip(skip)
            .map(|word| Access::Write((*word).clone()))
            .collect();
    }
    let parsed = args::parse(
        args,
        &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
    );
    let in_place = parsed
        .options
        .iter()
        .any(|option| option.name == "-i" || option.name.starts_with("--in-place"));
    if !in_place {
        return Vec::new();
    }
    let skip = usize::from(!parsed.has(&["-e", "--expression", "-f", "--file"]));
    parsed
        .operands
        .iter()
        .skip(skip)
        .map(|word| Access::Write((*word).clone()))
        .collect()
}

fn tar(args: &[Word]) -> Vec<Access> {
    // Old-style `tar xzf archive`: the first word is a cluster without a dash.
    let mut normalized: Vec<Word> = args.to_vec();
    if let Some(first) = normalized.first_mut()
        && let Some(value) = first.value()
        && !value.starts_with('-')
    {
        *first = Word::known(&format!("-{value}"), true);
    }
    let parsed = args::parse(
        &normalized,
        &[
            "-f",
            "--file",
            "-C",
            "--directory",
            "-T",
            "--files-from",
            "-X",
            "--exclude-from",
        ],
    );
    let creates = parsed.has(&["-c", "--create", "-r", "--append", "-u", "--update"]);
    let mut accesses: Vec<Access> = Vec::new();
    for archive in parsed.values(&["-f", "--file"]) {
        accesses.push(if creates {
            Access::Write(archive)
        } else {
            Access::Read(archive)
        });
    }
    if parsed.has(&["-x", "--extract", "--get"]) {
        accesses.extend(
            parsed
                .values(&["-C", "--directory"])
                .into_iter()
                .map(Access::Write),
        );
    }
    accesses
}

/// curl options that name a file it writes.
const CURL_WRITE_OPTIONS: &[&str] = &[
    "-o",
    "--output",
    "--output-dir",
    "-D",
    "--dump-header",
    "-c",
    "--cookie-jar",
    "--trace",
    "--trace-ascii",
    "--stderr",
];

/// curl options that name a file it reads.
const CURL_READ_OPTIONS: &[&str] = &["-K", "--config", "-T", "--upload-file"];

/// curl options whose value is not a file.
const CURL_OTHER_VALUE_OPTIONS: &[&str] = &[
    "-d",
    "--data",
    "--data-binary",
    "-F",
    "--form",
    "-H",
    "--header",
    "-X",
    "-u",
    "--user",
    "-A",
    "-e",
    "-b",
    "-m",
    "-w",
];

/// Every curl option that takes a separate value, so that value is not taken
/// for a URL or a file.
static CURL_VALUE_OPTIONS: std::sync::LazyLock<Vec<&'static str>> =
    std::sync::LazyLock::new(|| {
        [
            CURL_WRITE_OPTIONS,
            CURL_READ_OPTIONS,
            CURL_OTHER_VALUE_OPTIONS,
        ]
        .concat()
    });
