//! Option tables of the commands that read files and print text made from
//! them (GNU coreutils, util-linux, binutils), and of those that read none.

use super::{GETOPT, GETOPT_NUMBERS, Syntax, attached, file, flag, refused, text};

/// binutils: getopt_long, `-NUM` counts, and `@FILE` response files.
const BINUTILS: Syntax = Syntax {
    numbers: true,
    response_files: true,
    ..GETOPT
};

const CHECKS_LISTED_FILES: &str = "reads the files named in a checksum list, which are not checked";

spec! { CAT, "cat", GETOPT, [
    flag("A", "show-all"),
    flag("b", "number-nonblank"),
    flag("e", ""),
    flag("E", "show-ends"),
    flag("n", "number"),
    flag("s", "squeeze-blank"),
    flag("t", ""),
    flag("T", "show-tabs"),
    flag("u", ""),
    flag("v", "show-nonprinting"),
] }

spec! { TAC, "tac", GETOPT, [
    flag("b", "before"),
    flag("r", "regex"),
    text("s", "separator"),
] }

spec! { REV, "rev", GETOPT, [flag("0", "zero"), flag("h", ""), flag("V", "")] }

spec! { CHECKSUM, "checksum", GETOPT, [
    flag("b", "binary"),
    flag("t", "text"),
    flag("z", "zero"),
    flag("", "tag"),
    refused("c", "check", CHECKS_LISTED_FILES),
    // Only meaningful with --check.
    flag("", "ignore-missing"),
    flag("", "quiet"),
    flag("", "status"),
    flag("", "strict"),
    flag("w", "warn"),
] }

spec! { B2SUM, "b2sum", GETOPT, [
    flag("b", "binary"),
    flag("t", "text"),
    flag("z", "zero"),
    flag("", "tag"),
    text("l", "length"),
    refused("c", "check", CHECKS_LISTED_FILES),
    flag("", "ignore-missing"),
    flag("", "quiet"),
    flag("", "status"),
    flag("", "strict"),
    flag("w", "warn"),
] }

spec! { CKSUM, "cksum", GETOPT, [
    text("a", "algorithm"),
    text("l", "length"),
    flag("", "tag"),
    flag("", "untagged"),
    flag("", "base64"),
    flag("", "raw"),
    flag("", "debug"),
    flag("z", "zero"),
    refused("c", "check", CHECKS_LISTED_FILES),
    flag("", "ignore-missing"),
    flag("", "quiet"),
    flag("", "status"),
    flag("", "strict"),
    flag("w", "warn"),
] }

spec! { HEAD, "head", GETOPT_NUMBERS, [
    text("c", "bytes"),
    text("n", "lines"),
    flag("q", "quiet"),
    flag("", "silent"),
    flag("v", "verbose"),
    flag("z", "zero-terminated"),
] }

spec! { TAIL, "tail", GETOPT_NUMBERS, [
    text("c", "bytes"),
    text("n", "lines"),
    flag("q", "quiet"),
    flag("", "silent"),
    flag("v", "verbose"),
    flag("z", "zero-terminated"),
    refused("f", "follow", "tail -f never ends"),
    refused("F", "", "tail -F never ends"),
    refused("", "retry", "tail --retry waits for files"),
    refused("", "pid", "only meaningful with tail -f"),
    refused("s", "sleep-interval", "only meaningful with tail -f"),
    refused("", "max-unchanged-stats", "only meaningful with tail -f"),
] }

spec! { WC, "wc", GETOPT, [
    flag("c", "bytes"),
    flag("m", "chars"),
    flag("l", "lines"),
    flag("w", "words"),
    flag("L", "max-line-length"),
    text("", "total"),
    refused(
        "",
        "files0-from",
        "reads the names of the files to count from a file"
    ),
] }

spec! { NL, "nl", GETOPT, [
    text("b", "body-numbering"),
    text("d", "section-delimiter"),
    text("f", "footer-numbering"),
    text("h", "header-numbering"),
    text("i", "line-increment"),
    text("l", "join-blank-lines"),
    text("n", "number-format"),
    flag("p", "no-renumber"),
    text("s", "number-separator"),
    text("v", "starting-line-number"),
    text("w", "number-width"),
] }

spec! { FOLD, "fold", GETOPT, [flag("b", "bytes"), flag("s", "spaces"), text("w", "width")] }

spec! { PASTE, "paste", GETOPT, [
    text("d", "delimiters"),
    flag("s", "serial"),
    flag("z", "zero-terminated"),
] }

spec! { COMM, "comm", GETOPT, [
    flag("1", ""),
    flag("2", ""),
    flag("3", ""),
    flag("", "check-order"),
    flag("", "nocheck-order"),
    text("", "output-delimiter"),
    flag("", "total"),
    flag("z", "zero-terminated"),
] }

spec! { CUT, "cut", GETOPT, [
    text("b", "bytes"),
    text("c", "characters"),
    text("d", "delimiter"),
    text("f", "fields"),
    flag("n", ""),
    flag("", "complement"),
    flag("s", "only-delimited"),
    text("", "output-delimiter"),
    flag("z", "zero-terminated"),
] }

spec! { COLUMN, "column", GETOPT, [
    flag("t", "table"),
    text("n", "table-name"),
    text("O", "table-order"),
    text("N", "table-columns"),
    text("l", "table-columns-limit"),
    text("E", "table-noextreme"),
    flag("d", "table-noheadings"),
    flag("e", "table-header-repeat"),
    text("H", "table-hide"),
    text("R", "table-right"),
    text("T", "table-truncate"),
    text("W", "table-wrap"),
    flag("L", "keep-empty-lines"),
    flag("J", "json"),
    text("r", "tree"),
    text("i", "tree-id"),
    text("p", "tree-parent"),
    text("c", "output-width"),
    text("o", "output-separator"),
    text("s", "separator"),
    flag("x", "fillrows"),
    flag("h", ""),
    flag("V", ""),
] }

spec! { STRINGS, "strings", BINUTILS, [
    flag("a", "all"),
    flag("d", "data"),
    flag("f", "print-file-name"),
    text("n", "bytes"),
    text("t", "radix"),
    flag("o", ""),
    flag("w", "include-all-whitespace"),
    text("e", "encoding"),
    text("s", "output-separator"),
    text("U", "unicode"),
    text("T", "target"),
    flag("h", ""),
    flag("v", ""),
    flag("V", ""),
] }

spec! { OD, "od", GETOPT, [
    text("A", "address-radix"),
    text("", "endian"),
    text("j", "skip-bytes"),
    text("N", "read-bytes"),
    // `-S BYTES` needs its value, `--strings[=BYTES]` does not.
    text("S", ""),
    attached("", "strings"),
    text("t", "format"),
    flag("v", "output-duplicates"),
    // `-w[BYTES]`: the value is optional, so only ever attached.
    attached("w", "width"),
    flag("", "traditional"),
    flag("a", ""),
    flag("b", ""),
    flag("c", ""),
    flag("d", ""),
    flag("f", ""),
    flag("i", ""),
    flag("l", ""),
    flag("o", ""),
    flag("s", ""),
    flag("x", ""),
] }

spec! { HEXDUMP, "hexdump", GETOPT, [
    flag("b", "one-byte-octal"),
    flag("c", "one-byte-char"),
    flag("C", "canonical"),
    flag("d", "two-bytes-decimal"),
    flag("o", "two-bytes-octal"),
    flag("x", "two-bytes-hex"),
    attached("L", "color"),
    text("e", "format"),
    file("f", "format-file"),
    text("n", "length"),
    text("s", "skip"),
    flag("v", "no-squeezing"),
    flag("h", ""),
    flag("V", ""),
] }

spec! { SORT, "sort", GETOPT, [
    flag("b", "ignore-leading-blanks"),
    flag("d", "dictionary-order"),
    flag("f", "ignore-case"),
    flag("g", "general-numeric-sort"),
    flag("i", "ignore-nonprinting"),
    flag("M", "month-sort"),
    flag("h", "human-numeric-sort"),
    flag("n", "numeric-sort"),
    flag("R", "random-sort"),
    file("", "random-source"),
    flag("r", "reverse"),
    text("", "sort"),
    flag("V", "version-sort"),
    text("", "batch-size"),
    flag("c", ""),
    attached("", "check"),
    flag("C", ""),
    flag("", "debug"),
    text("k", "key"),
    flag("m", "merge"),
    flag("s", "stable"),
    text("S", "buffer-size"),
    text("t", "field-separator"),
    text("", "parallel"),
    flag("u", "unique"),
    flag("z", "zero-terminated"),
    refused("o", "output", "writes its output to a file"),
    refused("", "compress-program", "runs a program on temporary files"),
    refused(
        "",
        "files0-from",
        "reads the names of the files to sort from a file"
    ),
    refused(
        "T",
        "temporary-directory",
        "writes temporary files to a directory"
    ),
] }

spec! { UNIQ, "uniq", GETOPT, [
    flag("c", "count"),
    flag("d", "repeated"),
    flag("D", ""),
    attached("", "all-repeated"),
    text("f", "skip-fields"),
    attached("", "group"),
    flag("i", "ignore-case"),
    text("s", "skip-chars"),
    flag("u", "unique"),
    flag("z", "zero-terminated"),
    text("w", "check-chars"),
] }

spec! { TR, "tr", GETOPT, [
    flag("c", "complement"),
    flag("C", ""),
    flag("d", "delete"),
    flag("s", "squeeze-repeats"),
    flag("t", "truncate-set1"),
] }

spec! { DATE, "date", GETOPT, [
    text("d", "date"),
    flag("", "debug"),
    file("f", "file"),
    attached("I", "iso-8601"),
    flag("", "resolution"),
    flag("R", "rfc-email"),
    text("", "rfc-3339"),
    file("r", "reference"),
    flag("u", "utc"),
    flag("", "universal"),
    refused("s", "set", "changes the system clock"),
] }

spec! { BASENAME, "basename", GETOPT, [
    flag("a", "multiple"),
    text("s", "suffix"),
    flag("z", "zero"),
] }

spec! { DIRNAME, "dirname", GETOPT, [flag("z", "zero")] }

spec! { PWD, "pwd", GETOPT, [flag("L", "logical"), flag("P", "physical")] }

spec! { REALPATH, "realpath", GETOPT, [
    flag("e", "canonicalize-existing"),
    flag("m", "canonicalize-missing"),
    flag("L", "logical"),
    flag("P", "physical"),
    flag("q", "quiet"),
    text("", "relative-to"),
    text("", "relative-base"),
    flag("s", "strip"),
    flag("", "no-symlinks"),
    flag("z", "zero"),
] }

spec! { READLINK, "readlink", GETOPT, [
    flag("f", "canonicalize"),
    flag("e", "canonicalize-existing"),
    flag("m", "canonicalize-missing"),
    flag("n", "no-newline"),
    flag("q", "quiet"),
    flag("s", "silent"),
    flag("v", "verbose"),
    flag("z", "zero"),
] }

spec! { UNAME, "uname", GETOPT, [
    flag("a", "all"),
    flag("s", "kernel-name"),
    flag("n", "nodename"),
    flag("r", "kernel-release"),
    flag("v", "kernel-version"),
    flag("m", "machine"),
    flag("p", "processor"),
    flag("i", "hardware-platform"),
    flag("o", "operating-system"),
] }

spec! { ID, "id", GETOPT, [
    flag("a", ""),
    flag("Z", "context"),
    flag("g", "group"),
    flag("G", "groups"),
    flag("n", "name"),
    flag("r", "real"),
    flag("u", "user"),
    flag("z", "zero"),
] }

spec! { NPROC, "nproc", GETOPT, [flag("", "all"), text("", "ignore")] }

spec! { NO_OPTIONS, "command", GETOPT, [] }

spec! { WHICH, "which", GETOPT, [flag("a", ""), flag("s", "")] }
