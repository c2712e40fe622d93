//! Tests of shell command analysis, on a real directory tree: a home
//! directory with credentials, a workspace inside it, and a symlink from the
//! workspace to the outside.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bridge_policy::shell::ShellVerdict::{self, Dangerous, NeedsApproval, Safe};
use bridge_policy::shell::{self, ShellAnalysis};

mod cases;
mod dangerous_cases;
mod filesystem;
mod option_cases;
mod read_cases;

use cases::CASES;
use dangerous_cases::DANGEROUS_CASES;
use option_cases::OPTION_CASES;
use read_cases::READ_CASES;

/// Text only found outside the workspace, to tell whether a command reached it.
const OUTSIDE_MARKER: &str = "OUTSIDE-MARKER-7f3a";

struct Fixture {
    _root: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
}

fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let workspace = home.join("proj");
    let outside = root.path().join("outside");
    for dir in [
        workspace.join("src"),
        workspace.join("build"),
        workspace.join("secrets"),
        home.join(".ssh"),
        home.join(".aws"),
        outside.clone(),
    ] {
        std::fs::create_dir_all(dir).unwrap();
    }
    for (path, content) in [
        (workspace.join("src/main.rs"), "fn main() {}\n"),
        (workspace.join("src/lib.rs"), "pub fn lib() {}\n"),
        (workspace.join(".env"), "LOCAL=1\n"),
        (home.join(".ssh/id_rsa"), "not a real key\n"),
        (home.join(".aws/credentials"), "[default]\n"),
        (home.join(".env"), "SECRET=1\n"),
        (outside.join("file.txt"), "outside\n"),
        (workspace.join("secrets/server.pem"), "not a real key\n"),
        (outside.join("marker.txt"), OUTSIDE_MARKER),
    ] {
        std::fs::write(path, content).unwrap();
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, workspace.join("escape")).unwrap();
        // Writing through a dangling link creates its target, outside.
        std::os::unix::fs::symlink(outside.join("created-by-write"), workspace.join("dangling"))
            .unwrap();
    }
    Fixture {
        _root: root,
        home,
        workspace,
    }
}

impl Fixture {
    fn analyze(&self, command: &str) -> ShellAnalysis {
        shell::analyze(command, &self.workspace, Some(&self.home))
    }
}

fn all_cases() -> impl Iterator<Item = &'static (&'static str, ShellVerdict, &'static str)> {
    CASES
        .iter()
        .chain(DANGEROUS_CASES)
        .chain(OPTION_CASES)
        .chain(READ_CASES)
}

#[test]
fn verdict_table() {
    let fixture = fixture();
    let mut failures = Vec::new();
    for (command, expected, reason) in all_cases() {
        let analysis = fixture.analyze(command);
        let reason_found =
            reason.is_empty() || analysis.reasons.iter().any(|found| found.contains(reason));
        if analysis.verdict != *expected || !reason_found {
            failures.push(format!(
                "{command:?}: expected {expected:?} with reason containing {reason:?}, got {:?} {:?}",
                analysis.verdict, analysis.reasons
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        all_cases().count(),
        failures.join("\n")
    );
}

#[test]
fn table_covers_each_verdict_generously() {
    for verdict in [Safe, NeedsApproval, Dangerous] {
        let count = all_cases()
            .filter(|(_, expected, _)| *expected == verdict)
            .count();
        assert!(count >= 25, "only {count} cases for {verdict:?}");
    }
}

#[test]
fn safe_verdict_has_no_reasons_and_dangerous_names_the_rule() {
    let fixture = fixture();
    assert_eq!(fixture.analyze("ls -la").reasons, Vec::<String>::new());
    let analysis = fixture.analyze("cargo build && rm -rf /");
    assert_eq!(analysis.verdict, Dangerous);
    // Only reasons at the verdict's level: the approval reason for cargo is not noise here.
    assert!(
        analysis
            .reasons
            .iter()
            .all(|reason| !reason.contains("cargo")),
        "{analysis:?}"
    );
}

#[test]
fn worst_verdict_over_all_commands_wins() {
    let fixture = fixture();
    assert_eq!(fixture.analyze("ls; cargo test").verdict, NeedsApproval);
    assert_eq!(
        fixture.analyze("ls; cargo test; git push -f").verdict,
        Dangerous
    );
    assert_eq!(fixture.analyze("ls | grep x | wc -l").verdict, Safe);
}

#[test]
fn without_a_home_directory_tilde_is_outside_the_workspace() {
    let fixture = fixture();
    let analyze = |command: &str| shell::analyze(command, &fixture.workspace, None);
    assert_eq!(analyze("rm -rf ~").verdict, Dangerous);
    assert_eq!(analyze("rm -rf $HOME").verdict, Dangerous);
    assert_eq!(analyze("cat ~/.ssh/id_rsa").verdict, Dangerous);
    assert_eq!(analyze("cat ~/notes.txt").verdict, NeedsApproval);
    assert_eq!(analyze("ls -la").verdict, Safe);
}

#[test]
fn a_workspace_that_does_not_exist_is_still_contained() {
    let workspace = Path::new("/nonexistent-bridge-workspace/proj");
    assert_eq!(
        shell::analyze("cat src/main.rs", workspace, None).verdict,
        Safe
    );
    assert_eq!(
        shell::analyze("rm -rf ../", workspace, None).verdict,
        Dangerous
    );
    assert_eq!(
        shell::analyze("cat /etc/hostname", workspace, None).verdict,
        NeedsApproval
    );
}

#[test]
fn verdicts_are_ordered_from_safe_to_dangerous() {
    assert!(Safe < NeedsApproval && NeedsApproval < Dangerous);
    assert_eq!(
        serde_json::to_string(&NeedsApproval).unwrap(),
        "\"needs_approval\""
    );
}

fn assert_fast(started: Instant, what: &str) {
    // Generous for debug builds on a shared 2-core machine; release is ~100x faster.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{what} took {:?}",
        started.elapsed()
    );
}

#[test]
fn long_chain_of_safe_commands_is_analysed_quickly() {
    let fixture = fixture();
    let command = "cat src/main.rs && ".repeat(100 * 1024 / 19 + 1) + "ls";
    assert!(command.len() >= 100 * 1024);
    let started = Instant::now();
    let analysis = fixture.analyze(&command);
    assert_fast(started, "100 KB && chain");
    assert_eq!(analysis.verdict, Safe, "{:?}", analysis.reasons);
}

#[test]
fn long_pipeline_with_a_danger_at_the_end_is_found() {
    let fixture = fixture();
    let command = "grep x src/main.rs | ".repeat(5000) + "tee /etc/motd";
    let started = Instant::now();
    let analysis = fixture.analyze(&command);
    assert_fast(started, "long pipeline");
    assert_eq!(analysis.verdict, Dangerous);
}

#[test]
fn hostile_inputs_do_not_panic_and_are_never_safe() {
    let fixture = fixture();
    let hostile = [
        "$(".repeat(20_000),
        "$(ls ".repeat(20_000) + &")".repeat(20_000),
        "(".repeat(50_000),
        "'".repeat(100_000),
        "\"$(".repeat(10_000),
        "{ ".repeat(30_000),
        "ls \0 /".to_owned(),
        "é\u{202e}ls ∞ 🙂".to_owned(),
        "<<<<<<<<<<>>>>>>>>>&&&&&&||||;;;;".repeat(3000),
    ];
    for command in &hostile {
        let started = Instant::now();
        let analysis = fixture.analyze(command);
        assert_fast(
            started,
            &format!(
                "hostile input starting {:?}",
                &command.chars().take(10).collect::<String>()
            ),
        );
        assert_ne!(
            analysis.verdict,
            Safe,
            "{:?}",
            command.chars().take(40).collect::<String>()
        );
    }
}

#[test]
fn deeply_nested_substitutions_are_refused() {
    let fixture = fixture();
    let command = "echo \"$(".repeat(200) + "ls" + &")\"".repeat(200);
    let analysis = fixture.analyze(&command);
    assert_eq!(analysis.verdict, Dangerous);
    assert!(
        analysis.reasons[0].contains("nested"),
        "{:?}",
        analysis.reasons
    );
}

#[test]
fn oversized_input_is_refused_without_analysis() {
    let fixture = fixture();
    let command = "ls ".repeat(shell::MAX_COMMAND_BYTES / 3 + 1);
    let analysis = fixture.analyze(&command);
    assert_eq!(analysis.verdict, Dangerous);
    assert!(
        analysis.reasons[0].contains("bytes long"),
        "{:?}",
        analysis.reasons
    );
}

#[test]
fn nested_shells_are_followed_but_not_forever() {
    let fixture = fixture();
    let mut command = "rm -rf /".to_owned();
    for _ in 0..3 {
        command = format!("bash -c {}", shell_quote(&command));
    }
    let analysis = fixture.analyze(&command);
    assert_eq!(analysis.verdict, Dangerous);
    assert!(
        analysis
            .reasons
            .iter()
            .any(|reason| reason.contains("filesystem root")),
        "{analysis:?}"
    );
    for _ in 0..10 {
        command = format!("bash -c {}", shell_quote(&command));
    }
    assert_eq!(fixture.analyze(&command).verdict, Dangerous);
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[test]
fn analysis_from_a_subdirectory_resolves_against_it() {
    let fixture = fixture();
    let src = fixture.workspace.join("src");
    let analyze = |command: &str, cwd: &Path| {
        shell::analyze_in(command, &fixture.workspace, cwd, Some(&fixture.home))
    };
    assert_eq!(analyze("cat main.rs lib.rs", &src).verdict, Safe);
    assert_eq!(analyze("cat main.rs", Path::new("src")).verdict, Safe);
    assert_eq!(analyze("ls ../build", &src).verdict, Safe);
    assert_eq!(analyze("rm -rf ..", &src).verdict, Dangerous);
    assert_eq!(analyze("cat ../../notes.txt", &src).verdict, NeedsApproval);
    let outside = fixture.home.clone();
    let analysis = analyze("ls", &outside);
    assert_eq!(analysis.verdict, NeedsApproval);
    assert!(
        analysis.reasons[0].contains("reads outside the workspace"),
        "{analysis:?}"
    );
    assert_eq!(analyze("rm -rf proj", &outside).verdict, Dangerous);
}
