//! Which directories a client may name as a workspace, on real
//! directories: the root, the system's trees, the state directory, an
//! ancestor of home, another user's directory; and `[workspaces] roots`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use std::path::{Path, PathBuf};

use bridge_policy::WorkspaceChoice;

struct Machine {
    _dir: tempfile::TempDir,
    home: PathBuf,
    state: PathBuf,
    project: PathBuf,
}

fn machine() -> Machine {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home/me");
    let state = home.join(".copilot-bridge");
    let project = home.join("src/app");
    for made in [&state, &project] {
        std::fs::create_dir_all(made).unwrap();
    }
    Machine {
        home: home.canonicalize().unwrap(),
        state: state.canonicalize().unwrap(),
        project: project.canonicalize().unwrap(),
        _dir: dir,
    }
}

fn refused(rule: &WorkspaceChoice, dir: &Path, why: &str) {
    let reason = rule.check(dir).expect_err(&dir.display().to_string());
    assert!(reason.contains(why), "{}: {reason}", dir.display());
    assert!(reason.contains("cannot be a workspace"), "{reason}");
}

#[test]
fn a_directory_of_the_user_is_a_workspace_and_the_system_is_not() {
    let m = machine();
    let rule = WorkspaceChoice::new(&[], &m.state, Some(&m.home));
    assert_eq!(rule.check(&m.project).unwrap(), m.project);
    assert_eq!(rule.check(&m.home).unwrap(), m.home, "home itself is fine");
    let temporary = tempfile::tempdir().unwrap();
    assert!(
        rule.check(temporary.path()).is_ok(),
        "a temporary directory is fine"
    );
    refused(&rule, Path::new("/"), "the filesystem root");
    for system in [
        "/etc",
        "/usr",
        "/usr/share",
        "/bin",
        "/proc",
        "/var",
        "/dev",
    ] {
        if Path::new(system).is_dir() {
            refused(&rule, Path::new(system), "system's");
        }
    }
    refused(&rule, &m.state, "state directory");
    std::fs::create_dir_all(m.state.join("sessions")).unwrap();
    refused(&rule, &m.state.join("sessions"), "state directory");
    refused(&rule, m.home.parent().unwrap(), "holds the home directory");
    // Named through a symlink: judged where it lands.
    let link = m.project.join("to-etc");
    std::os::unix::fs::symlink("/etc", &link).unwrap();
    refused(&rule, &link, "system's /etc");
    let err = rule.check(Path::new("relative/dir")).unwrap_err();
    assert!(err.contains("not an absolute path"), "{err}");
    let err = rule.check(&m.project.join("missing")).unwrap_err();
    assert!(err.contains("cannot open the workspace"), "{err}");
}

#[test]
fn another_users_directory_is_refused() {
    if rustix::process::geteuid().as_raw() != 0 {
        // Only root can make a directory another user owns; CI runs as root.
        eprintln!("skipped: needs root to chown");
        return;
    }
    let m = machine();
    let theirs = m.home.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let rule = WorkspaceChoice::new(&[], &m.state, Some(&m.home));
    refused(&rule, &theirs, "belongs to uid 65534");
    // A configured root widens: the team's checkout is fine.
    let rule = WorkspaceChoice::new(std::slice::from_ref(&m.home), &m.state, Some(&m.home));
    assert!(rule.check(&theirs).is_ok());
}

#[test]
fn configured_roots_narrow_and_widen_but_never_allow_the_root_or_the_state() {
    let m = machine();
    let var_tmp = tempfile::tempdir_in("/var/tmp").unwrap();
    let default = WorkspaceChoice::new(&[], &m.state, Some(&m.home));
    refused(&default, var_tmp.path(), "system's /var");
    let rule = WorkspaceChoice::new(
        &[m.home.join("src"), PathBuf::from("/var/tmp")],
        &m.state,
        Some(&m.home),
    );
    assert!(rule.check(&m.project).is_ok());
    assert!(rule.check(var_tmp.path()).is_ok(), "widened to /var/tmp");
    let elsewhere = tempfile::tempdir().unwrap();
    refused(
        &rule,
        elsewhere.path(),
        "not under a configured workspace root",
    );
    let everything = WorkspaceChoice::new(&[PathBuf::from("/")], &m.state, Some(&m.home));
    refused(&everything, Path::new("/"), "the filesystem root");
    refused(&everything, &m.state, "state directory");
}
