//! The verdict table of what safe commands read: files named by options are
//! checked, symlink-following is refused, globs are expanded, git reads only
//! through its own tables, and files that usually hold secrets need approval.

use bridge_policy::shell::ShellVerdict::{self, Dangerous, NeedsApproval, Safe};

/// (command, expected verdict, a substring one of the reasons must contain).
pub const READ_CASES: &[(&str, ShellVerdict, &str)] = &[
    // Red-team H2: options of safe commands that name files to read.
    (
        "git blame --contents /outside/secret.txt README.md",
        NeedsApproval,
        "reads outside the workspace: /outside/secret.txt",
    ),
    (
        "git blame --cont=/outside/secret.txt README.md",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "git blame --ignore-revs-file /outside/revs README.md",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "git blame -S /outside/revs README.md",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "git grep -f /outside/patterns",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "git diff -O/outside/order HEAD",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "git ls-files -X /outside/excludes -o",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("git blame -L 1,5 README.md", Safe, ""),
    (
        "hexdump -f /outside/format src/main.rs",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "sort --random-source=/outside/random src/main.rs",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "du -X /outside/excludes .",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "diff --from-file=/outside/a src/main.rs",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "find . -newer /outside/secret.txt",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "find . -newerma /outside/secret.txt",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("find . -newermt 2024-01-01 -name '*.rs'", Safe, ""),
    // Red-team H4: following symbolic links (`escape` points outside).
    (
        "rg -L secret",
        NeedsApproval,
        "rg -L: follows symbolic links",
    ),
    (
        "rg --follow secret",
        NeedsApproval,
        "follows symbolic links",
    ),
    (
        "grep -R secret .",
        NeedsApproval,
        "grep -R: follows symbolic links",
    ),
    (
        "grep --deref secret .",
        NeedsApproval,
        "follows symbolic links",
    ),
    ("grep -rR secret .", NeedsApproval, "follows symbolic links"),
    ("grep -r secret .", Safe, ""),
    ("grep -r secret", Safe, ""),
    ("find -L .", NeedsApproval, "find -L follows symbolic links"),
    (
        "find . -follow -name x",
        NeedsApproval,
        "find -follow follows symbolic links",
    ),
    ("find -H . -type f", Safe, ""),
    ("du -L .", NeedsApproval, "du -L: follows symbolic links"),
    ("du --dereference", NeedsApproval, "follows symbolic links"),
    ("du -sh src", Safe, ""),
    ("ls -L", NeedsApproval, "ls -L: follows symbolic links"),
    ("ls -lL src", NeedsApproval, "follows symbolic links"),
    ("ls -R", Safe, ""),
    ("tree -l", NeedsApproval, "tree -l: follows symbolic links"),
    (
        "diff -r src build",
        NeedsApproval,
        "diff -r follows symbolic links",
    ),
    ("diff -r --no-dereference src build", Safe, ""),
    ("diff src build", NeedsApproval, "compares directories"),
    (
        "grep -r secret escape",
        NeedsApproval,
        "reads outside the workspace",
    ),
    // find: every primary must be known.
    (
        "find . -fprint out.txt",
        NeedsApproval,
        "find -fprint writes files",
    ),
    (
        "find . -files0-from list.txt",
        NeedsApproval,
        "find -files0-from",
    ),
    (
        "find . -frobnicate",
        NeedsApproval,
        "unknown find predicate -frobnicate",
    ),
    ("find . -name '*.rs' -printf '%p\\n'", Safe, ""),
    (
        "find src build -maxdepth 1 -type d -o -name '*.rs' -print",
        Safe,
        "",
    ),
    (
        "find -P ~ -name '*.log' -delete",
        Dangerous,
        "deletes outside the workspace",
    ),
    // git: global options and subcommands with their own tables.
    ("git -P log", NeedsApproval, "git option -P"),
    (
        "git --git-dir=/outside/.git log",
        NeedsApproval,
        "git option --git-dir",
    ),
    ("git --version", NeedsApproval, "git option --version"),
    ("git --no-pager --no-optional-locks -C src log -1", Safe, ""),
    (
        "git -C /outside log",
        NeedsApproval,
        "reads outside the workspace: /outside",
    ),
    ("git -C src -C .. status", Safe, ""),
    (
        "git -C src -C ../.. status",
        NeedsApproval,
        "reads outside the workspace",
    ),
    ("git help log", NeedsApproval, "manual"),
    ("git log --help", NeedsApproval, "manual"),
    (
        "git log --show-signature",
        NeedsApproval,
        "writes files or runs programs",
    ),
    (
        "git cat-file --filters HEAD:README.md",
        NeedsApproval,
        "writes files or runs programs",
    ),
    (
        "git diff --textconv",
        NeedsApproval,
        "writes files or runs programs",
    ),
    (
        "git diff --submodule=log",
        NeedsApproval,
        "writes files or runs programs",
    ),
    (
        "git log --alternate-refs",
        NeedsApproval,
        "writes files or runs programs",
    ),
    (
        "git branch --cop a b",
        NeedsApproval,
        "changes branches or tags",
    ),
    ("git branch --list 'feature/*'", Safe, ""),
    ("git branch --contains HEAD", Safe, ""),
    ("git tag -l 'v*'", Safe, ""),
    ("git tag v1.0", NeedsApproval, "changes branches or tags"),
    ("git tag -v v1.0", NeedsApproval, "runs programs"),
    ("git remote get-url origin", Safe, ""),
    (
        "git remote add evil https://x.example",
        NeedsApproval,
        "changes remotes",
    ),
    ("git stash list", Safe, ""),
    ("git stash show -p", Safe, ""),
    ("git stash pop", NeedsApproval, "git stash"),
    ("git show --stat HEAD~2", Safe, ""),
    ("git grep -n -e fn -- src", Safe, ""),
    ("git rev-parse --abbrev-ref HEAD", Safe, ""),
    ("git ls-files -z --others --exclude-standard", Safe, ""),
    // Red-team M3: files that usually hold secrets need approval even inside.
    (
        "cat .env",
        NeedsApproval,
        "reads a file that may hold secrets",
    ),
    ("rev .env", NeedsApproval, "may hold secrets"),
    ("fold -w5 .env", NeedsApproval, "may hold secrets"),
    ("od -c .env", NeedsApproval, "may hold secrets"),
    ("tr a-z n-za-m < .env", NeedsApproval, "may hold secrets"),
    ("grep TOKEN .env.local", NeedsApproval, "may hold secrets"),
    ("head config/server.pem", NeedsApproval, "may hold secrets"),
    ("cat config/app.key", NeedsApproval, "may hold secrets"),
    ("cat .npmrc", NeedsApproval, "may hold secrets"),
    ("cat .pypirc", NeedsApproval, "may hold secrets"),
    (
        "cat config/credentials.json",
        NeedsApproval,
        "may hold secrets",
    ),
    ("cat deploy/id_deploy", NeedsApproval, "may hold secrets"),
    (
        "cat src/id_rsa_parser.py",
        NeedsApproval,
        "may hold secrets",
    ),
    ("cat .git-credentials", Dangerous, "credentials file"),
    ("cat secrets/*", NeedsApproval, "may hold secrets"),
    ("cat .e*", NeedsApproval, "may hold secrets"),
    ("git diff .env", NeedsApproval, "may hold secrets"),
    (
        "git show HEAD:config/.env",
        NeedsApproval,
        "git shows a file that may hold secrets",
    ),
    (
        "git show HEAD~3:deploy/server.key",
        NeedsApproval,
        "may hold secrets",
    ),
    ("git show HEAD:src/main.rs", Safe, ""),
    ("ls -la .env", Safe, ""),
    ("stat .env", Safe, ""),
    // Globs are expanded: every match is checked where it leads.
    (
        "cat */file.txt",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "cat s*/../../../outside/file.txt",
        NeedsApproval,
        "reads outside the workspace",
    ),
    (
        "cat s*/../../.env",
        Dangerous,
        "reads a .env file outside the workspace",
    ),
    ("grep -r x e*", NeedsApproval, "reads outside the workspace"),
    ("cat src/*.rs", Safe, ""),
];
