//! Verdicts that depend on the filesystem: symbolic links out of the
//! workspace (checked against the real commands where they are installed),
//! the git repository a workspace belongs to, and glob expansion.

use std::path::{Path, PathBuf};
use std::process::Command;

use bridge_policy::shell::ShellVerdict::{self, NeedsApproval, Safe};
use bridge_policy::shell::{self, ShellAnalysis};

use super::{OUTSIDE_MARKER, fixture};

/// What would show that a command reached the outside directory.
#[derive(Clone, Copy)]
enum Evidence {
    /// The contents of the outside file.
    Contents,
    /// The name of the outside file.
    Name,
}

fn installed(program: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program} >/dev/null"))
        .status()
        .is_ok_and(|status| status.success())
}

/// Runs `command` in `directory` with `sh`, returning stdout and stderr.
fn run(directory: &Path, command: &str) -> String {
    let output = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(directory)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn safe_recursive_reads_do_not_follow_symlinks_out_and_refused_ones_would() {
    let fixture = fixture();
    let workspace = &fixture.workspace;
    let outside = fixture.home.parent().unwrap().join("outside");
    // Two directories whose same-named links lead to different outside files.
    for (directory, target) in [("left", "marker.txt"), ("right", "file.txt")] {
        std::fs::create_dir_all(workspace.join(directory)).unwrap();
        std::os::unix::fs::symlink(outside.join(target), workspace.join(directory).join("link"))
            .unwrap();
    }
    let cases: [(&str, ShellVerdict, Evidence); 12] = [
        ("grep -r OUTSIDE-MARKER .", Safe, Evidence::Contents),
        (
            "grep -R OUTSIDE-MARKER .",
            NeedsApproval,
            Evidence::Contents,
        ),
        ("rg --no-config OUTSIDE-MARKER .", Safe, Evidence::Contents),
        (
            "rg --no-config -L OUTSIDE-MARKER .",
            NeedsApproval,
            Evidence::Contents,
        ),
        ("find . -name marker.txt", Safe, Evidence::Name),
        ("find -L . -name marker.txt", NeedsApproval, Evidence::Name),
        (
            "find . -follow -name marker.txt",
            NeedsApproval,
            Evidence::Name,
        ),
        ("ls -R", Safe, Evidence::Name),
        ("ls -RL", NeedsApproval, Evidence::Name),
        ("du -a", Safe, Evidence::Name),
        (
            "diff -r --no-dereference left right",
            Safe,
            Evidence::Contents,
        ),
        ("diff -r left right", NeedsApproval, Evidence::Contents),
    ];
    let mut failures = Vec::new();
    for (command, expected, evidence) in cases {
        let analysis = fixture.analyze(command);
        if analysis.verdict != expected {
            failures.push(format!(
                "{command:?}: expected {expected:?}, got {analysis:?}"
            ));
            continue;
        }
        let program = command.split(' ').next().unwrap_or_default();
        if !installed(program) {
            eprintln!("{program} is not installed: {command:?} only analysed");
            continue;
        }
        let output = run(workspace, command);
        let reached = match evidence {
            Evidence::Contents => output.contains(OUTSIDE_MARKER),
            Evidence::Name => output.contains("marker.txt"),
        };
        // A safe command must not reach outside; a refused one really would,
        // which is why it is refused.
        if reached != (expected != Safe) {
            failures.push(format!(
                "{command:?} ({expected:?}) reached outside: {reached}; output:\n{output}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn recursive_search_without_paths_reads_the_working_directory() {
    let fixture = fixture();
    let analyze_in = |command: &str, cwd: &Path| {
        shell::analyze_in(command, &fixture.workspace, cwd, Some(&fixture.home))
    };
    assert_eq!(analyze_in("grep -r secret", Path::new("src")).verdict, Safe);
    assert_eq!(analyze_in("rg secret", Path::new("src")).verdict, Safe);
    for command in ["grep -r secret", "rg secret", "grep -d recurse secret"] {
        let analysis = analyze_in(command, &fixture.home);
        assert_eq!(analysis.verdict, NeedsApproval, "{command}: {analysis:?}");
        assert!(
            analysis.reasons[0].contains("reads outside the workspace"),
            "{command}: {analysis:?}"
        );
    }
}

/// A directory shaped like a git directory (what git looks for).
fn make_git_dir(path: &Path) {
    std::fs::create_dir_all(path.join("objects/info")).unwrap();
    std::fs::create_dir_all(path.join("refs/heads")).unwrap();
    std::fs::write(path.join("HEAD"), "ref: refs/heads/main\n").unwrap();
}

struct Repositories {
    _root: tempfile::TempDir,
    root: PathBuf,
}

impl Repositories {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().to_path_buf();
        Self {
            _root: root,
            root: path,
        }
    }

    fn workspace(&self, name: &str) -> PathBuf {
        let workspace = self.root.join(name);
        std::fs::create_dir_all(workspace.join("src")).unwrap();
        workspace
    }
}

fn analyze(command: &str, workspace: &Path) -> ShellAnalysis {
    shell::analyze(command, workspace, None)
}

#[test]
fn git_only_reads_a_repository_that_is_inside_the_workspace() {
    let repositories = Repositories::new();

    let own = repositories.workspace("own");
    make_git_dir(&own.join(".git"));
    for command in ["git log -p", "git status", "git -C src diff"] {
        assert_eq!(analyze(command, &own).verdict, Safe, "{command}");
    }

    // A workspace inside a larger repository: git would read all of it.
    let outer = repositories.root.join("outer");
    make_git_dir(&outer.join(".git"));
    let nested = outer.join("proj");
    std::fs::create_dir_all(&nested).unwrap();
    let analysis = analyze("git log -p", &nested);
    assert_eq!(analysis.verdict, NeedsApproval, "{analysis:?}");
    assert!(
        analysis.reasons[0].contains("outside the workspace"),
        "{analysis:?}"
    );
    assert_eq!(analyze("cat README.md", &nested).verdict, Safe);
    if installed("git") {
        // The premise: git really does find the outer repository.
        let top = run(&nested, "git rev-parse --git-dir");
        assert!(
            top.contains("outer/.git") || top.contains("not a git repository"),
            "{top}"
        );
    }

    // A `.git` file (worktree, submodule) naming a git directory elsewhere.
    let pointed = repositories.workspace("pointed");
    make_git_dir(&repositories.root.join("elsewhere.git"));
    std::fs::write(pointed.join(".git"), "gitdir: ../elsewhere.git\n").unwrap();
    let analysis = analyze("git show HEAD", &pointed);
    assert_eq!(analysis.verdict, NeedsApproval, "{analysis:?}");
    assert!(
        analysis.reasons[0].contains("elsewhere.git"),
        "{analysis:?}"
    );

    // ... or inside, as a submodule's is.
    let inner = repositories.workspace("inner");
    make_git_dir(&inner.join(".git/modules/sub"));
    std::fs::create_dir_all(inner.join("sub")).unwrap();
    std::fs::write(inner.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
    assert_eq!(analyze("git -C sub log", &inner).verdict, Safe);

    // A linked worktree sharing a repository outside.
    let worktree = repositories.workspace("worktree");
    make_git_dir(&worktree.join(".git"));
    std::fs::write(worktree.join(".git/commondir"), "../../outer/.git\n").unwrap();
    let analysis = analyze("git log", &worktree);
    assert_eq!(analysis.verdict, NeedsApproval, "{analysis:?}");
    assert!(
        analysis.reasons[0].contains("shares the repository"),
        "{analysis:?}"
    );

    // Objects borrowed from another repository.
    let borrowing = repositories.workspace("borrowing");
    make_git_dir(&borrowing.join(".git"));
    std::fs::write(
        borrowing.join(".git/objects/info/alternates"),
        format!("{}\n", outer.join(".git/objects").display()),
    )
    .unwrap();
    let analysis = analyze("git cat-file -p HEAD", &borrowing);
    assert_eq!(analysis.verdict, NeedsApproval, "{analysis:?}");
    assert!(
        analysis.reasons[0].contains("borrows objects"),
        "{analysis:?}"
    );

    // A `.git` symlink out of the workspace.
    let linked = repositories.workspace("linked");
    std::os::unix::fs::symlink(outer.join(".git"), linked.join(".git")).unwrap();
    assert_eq!(analyze("git log", &linked).verdict, NeedsApproval);
}

#[test]
fn globs_are_expanded_and_every_match_is_checked() {
    let repositories = Repositories::new();
    let workspace = repositories.workspace("globs");
    let outside = repositories.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("notes.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, workspace.join("src/link")).unwrap();
    std::fs::write(workspace.join("src/a.rs"), "").unwrap();
    std::fs::write(workspace.join("src/.env"), "KEY=1\n").unwrap();

    assert_eq!(analyze("cat src/*.rs", &workspace).verdict, Safe);
    // `*` skips dotfiles as bash does; `.*` does not.
    assert_eq!(analyze("head src/*s", &workspace).verdict, Safe);
    assert_eq!(analyze("head src/.*", &workspace).verdict, NeedsApproval);
    let analysis = analyze("cat src/*/notes.txt", &workspace);
    assert_eq!(analysis.verdict, NeedsApproval, "{analysis:?}");
    assert!(analysis.reasons[0].contains("notes.txt"), "{analysis:?}");
    // Quoted glob characters are literal: `'*'` is a file named `*`.
    assert_eq!(analyze("cat src/'*'/notes.txt", &workspace).verdict, Safe);

    // Too many entries to check is a refusal, not a guess.
    let many = workspace.join("many");
    std::fs::create_dir_all(&many).unwrap();
    for index in 0..10_050 {
        std::fs::write(many.join(format!("f{index}")), "").unwrap();
    }
    let analysis = analyze("cat many/*", &workspace);
    assert_eq!(analysis.verdict, NeedsApproval, "{analysis:?}");
    assert!(analysis.reasons[0].contains("too many"), "{analysis:?}");
}

#[test]
fn git_configuration_that_makes_reading_git_run_programs_needs_approval() {
    let repositories = Repositories::new();
    let workspace = repositories.workspace("configured");
    let git_dir = workspace.join(".git");
    make_git_dir(&git_dir);
    let config = git_dir.join("config");
    let cases = [
        ("[core]\n\tbare = false\n\tfsmonitor = false\n", None),
        (
            "[diff \"secret\"]\n\ttextconv = sh -c 'id' -\n",
            Some("diff.secret.textconv"),
        ),
        ("[diff]\n  external = /tmp/x\n", Some("diff.external")),
        (
            "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n",
            Some("filter.lfs.clean"),
        ),
        // Overridden in git's environment by the shell tool, for every command.
        ("[core]\n\tfsMonitor = .git/hooks/fsmonitor\n", None),
        ("[core]\n\tworktree = /\n", Some("core.worktree")),
        ("[log]\n\tshowSignature\n", Some("log.showsignature")),
        (
            "[include]\n\tpath = ../elsewhere.cfg\n",
            Some("include.path"),
        ),
        (
            "[blame] ignoreRevsFile = /etc/passwd\n",
            Some("blame.ignorerevsfile"),
        ),
        // Comments and continuation lines are not settings.
        (
            "# [diff \"x\"] textconv = evil\n[alias]\n\tl = log \\\n  textconv = x\n",
            None,
        ),
    ];
    for (text, expected) in cases {
        std::fs::write(&config, text).unwrap();
        let analysis = analyze("git diff", &workspace);
        match expected {
            None => assert_eq!(analysis.verdict, Safe, "{text:?}: {analysis:?}"),
            Some(setting) => {
                assert_eq!(analysis.verdict, NeedsApproval, "{text:?}: {analysis:?}");
                assert!(
                    analysis.reasons[0].contains(setting),
                    "{text:?}: {analysis:?}"
                );
            }
        }
    }

    // A submodule's configuration counts too: git runs in submodules.
    std::fs::write(&config, "[core]\n\tbare = false\n").unwrap();
    let module = git_dir.join("modules/libs/sub");
    make_git_dir(&module);
    std::fs::write(module.join("config"), "[filter \"x\"]\n\tsmudge = evil\n").unwrap();
    let analysis = analyze("git status", &workspace);
    assert_eq!(analysis.verdict, NeedsApproval, "{analysis:?}");
    assert!(
        analysis.reasons[0].contains("modules/libs/sub"),
        "{analysis:?}"
    );
}

#[test]
fn the_textconv_premise_holds_with_the_real_git() {
    if !installed("git") {
        eprintln!("git is not installed: premise not checked");
        return;
    }
    let repositories = Repositories::new();
    let workspace = repositories.workspace("real");
    let ran = repositories.root.join("textconv-ran");
    let setup = format!(
        "git init -q . && git config user.email a@b.c && git config user.name n \
         && printf 'a\\n' > f.txt && git add f.txt && git commit -qm one \
         && printf 'b\\n' > f.txt && printf 'f.txt diff=x\\n' > .gitattributes \
         && git config diff.x.textconv \"sh -c 'touch {}; cat \\\"\\$1\\\"' -\"",
        ran.display()
    );
    let output = run(&workspace, &setup);
    assert!(workspace.join(".git/config").exists(), "{output}");
    let analysis = analyze("git diff", &workspace);
    assert_eq!(analysis.verdict, NeedsApproval, "{analysis:?}");
    // What the verdict protects from: git really runs the configured program.
    run(&workspace, "git diff");
    assert!(ran.exists(), "git did not run the textconv program");
}
