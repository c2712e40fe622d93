//! The verdict table of option parsing: every option of a safe command must
//! be in its table, abbreviations are expanded as getopt_long expands them,
//! and values are taken the way each command takes them (see `read_cases`
//! for what the options make a command read).

use bridge_policy::shell::ShellVerdict::{self, Dangerous, NeedsApproval, Safe};

/// (command, expected verdict, a substring one of the reasons must contain).
pub const OPTION_CASES: &[(&str, ShellVerdict, &str)] = &[
    // Red-team C1: git grep -O runs a "pager" given attached or abbreviated.
    (
        "git grep -O'touch /tmp/pw' hello",
        NeedsApproval,
        "git grep -O: writes files or runs programs",
    ),
    (
        "git grep --open='touch /tmp/pw2' hello",
        NeedsApproval,
        "--open-files-in-pager",
    ),
    (
        "git grep --open-files-in-pager=vim hello",
        NeedsApproval,
        "writes files or runs programs",
    ),
    // C2: sort --compress-program, abbreviated.
    (
        "sort -S 1k --compress-prog=sh lines.txt",
        NeedsApproval,
        "--compress-program",
    ),
    (
        "sort --compress-program=gzip lines.txt",
        NeedsApproval,
        "runs a program",
    ),
    // C3: any unique prefix of a long option is that option.
    (
        "sort --out=/tmp/pw_sort README.md",
        NeedsApproval,
        "sort --out (--output): writes its output to a file",
    ),
    ("sort --o=x src/main.rs", NeedsApproval, "(--output)"),
    (
        "sed -n --expr='w /tmp/pw_sed' = README.md",
        NeedsApproval,
        "sed command `w`",
    ),
    (
        "sed --in-pl s/hello/PWNED/ README.md",
        NeedsApproval,
        "sed --in-pl (--in-place): edits files in place",
    ),
    ("sed --in=x s/a/b/ src/main.rs", NeedsApproval, "--in-place"),
    ("sed -n --e=p src/main.rs", Safe, ""),
    (
        "sed -n --e='1e id' src/main.rs",
        NeedsApproval,
        "sed command",
    ),
    (
        "sed -n --expression=p --expression='$p' src/main.rs",
        Safe,
        "",
    ),
    ("sed --f=script.sed src/main.rs", NeedsApproval, "--file"),
    (
        "grep --reg=root /etc/passwd",
        NeedsApproval,
        "reads outside the workspace: /etc/passwd",
    ),
    ("grep --regexp=root src/main.rs", Safe, ""),
    ("grep --max=2 fn src/main.rs", Safe, ""),
    (
        "grep --exclude-f=/outside/x -r fn src",
        NeedsApproval,
        "reads outside the workspace: /outside/x",
    ),
    (
        "grep --file=/outside/patterns src/main.rs",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "grep -f /outside/patterns src/main.rs",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("grep -f patterns.txt src/main.rs", Safe, ""),
    // Ambiguous and unknown prefixes.
    (
        "grep --fil=x fn src/main.rs",
        NeedsApproval,
        "ambiguous option --fil for grep",
    ),
    (
        "sort --c src/main.rs",
        NeedsApproval,
        "ambiguous option --c for sort",
    ),
    (
        "sed --s -n p src/main.rs",
        NeedsApproval,
        "ambiguous option --s for sed",
    ),
    ("ls --co", NeedsApproval, "ambiguous option --co for ls"),
    (
        "ls --deref src",
        NeedsApproval,
        "ambiguous option --deref for ls",
    ),
    ("ls --col", Safe, ""),
    ("sort --rev src/main.rs", Safe, ""),
    ("sort --check src/main.rs", Safe, ""),
    (
        "cat --frobnicate src/main.rs",
        NeedsApproval,
        "unknown option --frobnicate for cat",
    ),
    (
        "cat -X src/main.rs",
        NeedsApproval,
        "unknown option -X for cat",
    ),
    (
        "wc --files0-from=list.txt",
        NeedsApproval,
        "wc --files0-from",
    ),
    ("md5sum -c sums.txt", NeedsApproval, "checksum list"),
    ("tail -f src/main.rs", NeedsApproval, "never ends"),
    ("tail --fo src/main.rs", NeedsApproval, "never ends"),
    ("file -z src/main.rs", NeedsApproval, "decompression"),
    (
        "file --mag=/outside/magic src/main.rs",
        NeedsApproval,
        "magic",
    ),
    (
        "strings @/outside/args",
        NeedsApproval,
        "reads more arguments from a file",
    ),
    ("sort -T /tmp src/main.rs", NeedsApproval, "temporary"),
    ("diff -l src/main.rs src/lib.rs", NeedsApproval, "runs pr"),
    (
        "date --set=2020-01-01",
        NeedsApproval,
        "changes the system clock",
    ),
    (
        "date -f /outside/dates",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("date +%Y-%m-%d", Safe, ""),
    ("date 010100002030", NeedsApproval, "sets the system clock"),
    // Writes are found through abbreviations too.
    (
        "sed --in-pl s/a/b/ /etc/hosts",
        Dangerous,
        "sed writes outside the workspace",
    ),
    (
        "sed --expr=s/a/b/ --in-place=.bak /etc/hosts",
        Dangerous,
        "sed writes outside the workspace",
    ),
    (
        "rg --fol secret",
        NeedsApproval,
        "unknown option --fol for rg",
    ),
    (
        "git log --aut=me",
        NeedsApproval,
        "unknown option --aut for git log",
    ),
    ("git grep --max-d=1 fn", Safe, ""),
    // Red-team H1: optional values are only ever attached; flags take none.
    (
        "od -An -c -w /outside/secret.txt",
        NeedsApproval,
        "reads outside the workspace: /outside/secret.txt",
    ),
    ("od -An -c -w ~/.ssh/id_ed25519", Dangerous, "SSH"),
    ("od -w8 -c src/main.rs", Safe, ""),
    (
        "od --strings /outside/secret.txt",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("od -S 4 src/main.rs", Safe, ""),
    (
        "diff --color /outside/secret.txt src/main.rs",
        NeedsApproval,
        "reads outside the workspace: /outside/secret.txt",
    ),
    ("diff --color=always src/main.rs src/lib.rs", Safe, ""),
    (
        "diff --unified /outside/secret.txt src/main.rs",
        NeedsApproval,
        "reads outside",
    ),
    ("diff -U 3 src/main.rs src/lib.rs", Safe, ""),
    (
        "column -J /outside/secret.txt",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("column -t -s, src/main.rs", Safe, ""),
    (
        "grep --color always /outside/secret.txt",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("grep --color=always fn src/main.rs", Safe, ""),
    (
        "git log --format %h /outside/secret.txt",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("git log --format=%h -n 3", Safe, ""),
    (
        "ls --color /outside",
        NeedsApproval,
        "reads outside the workspace: /outside",
    ),
    // Attached and separate values, clusters, counts.
    ("head -n5 src/main.rs", Safe, ""),
    ("head -n 5 src/main.rs", Safe, ""),
    ("head --lines=5 src/main.rs", Safe, ""),
    ("head --lines 5 src/main.rs", Safe, ""),
    ("head -5 src/main.rs", Safe, ""),
    ("tail -20 src/main.rs", Safe, ""),
    ("grep -3 fn src/main.rs", Safe, ""),
    ("grep -rnC2 fn src", Safe, ""),
    ("grep -rnC 2 fn src", Safe, ""),
    ("cut -d: -f1 src/main.rs", Safe, ""),
    ("cut -d : -f 1 src/main.rs", Safe, ""),
    ("sort -k2,2 -t, -rn src/main.rs", Safe, ""),
    ("uniq -f 1 src/main.rs", Safe, ""),
    ("uniq src/main.rs out.txt", NeedsApproval, "two operands"),
    ("strings -n 8 src/main.rs", Safe, ""),
    ("rg -m=5 fn src", Safe, ""),
    (
        "rg -f=/outside/patterns src",
        NeedsApproval,
        "reads outside the workspace: /outside/patterns",
    ),
    (
        "rg --ignore-file /outside/ignore fn",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("rg -e -foo src", NeedsApproval, "starts with '-'"),
    ("git log -5 --oneline", Safe, ""),
    ("cat -n -- src/main.rs", Safe, ""),
    // A value given after an operand is a file where options are not
    // permuted (POSIXLY_CORRECT), so it is checked as one too.
    (
        "sort src/main.rs -t /outside/x",
        NeedsApproval,
        "reads outside the workspace",
    ),
    // `--` ends the options: what follows is an operand whatever it looks like.
    ("cat -- -n", Safe, ""),
    ("cat -- --output", Safe, ""),
    ("sort -- -o x", Safe, ""),
    ("grep -- -e src/main.rs", Safe, ""),
    (
        "grep -- -R /outside/secret.txt",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("ls -- -L", Safe, ""),
    (
        "git diff -- /outside/secret.txt",
        NeedsApproval,
        "reads outside the workspace",
    ),
];
