//! Tests of owner-only files: modes, symlinks planted where the hub writes,
//! FIFOs, atomic replacement.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use bridge_util::owner_only::{self, Replace};

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_log_is_created_private_appended_to_and_narrowed_when_made_wider() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("daemon.log");
    owner_only::open_append(&path)
        .unwrap()
        .write_all(b"one\n")
        .unwrap();
    assert_eq!(mode(&path), 0o600);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    owner_only::open_append(&path)
        .unwrap()
        .write_all(b"two\n")
        .unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "one\ntwo\n");
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn a_symlink_planted_at_a_log_is_refused_and_nothing_is_written_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "untouched").unwrap();
    let path = dir.path().join("requests.jsonl");
    symlink(&victim, &path).unwrap();
    let err = owner_only::open_append(&path).unwrap_err();
    assert!(owner_only::is_planted(&err), "{err}");
    let err = owner_only::read(&path, 1024).unwrap_err();
    assert!(owner_only::is_planted(&err), "{err}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
}

#[test]
fn a_fifo_planted_at_a_log_fails_at_once_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    mkfifo(&path);
    let err = owner_only::open_append(&path).unwrap_err();
    assert!(owner_only::is_planted(&err), "{err}");
    // Opened for reading a FIFO opens without a writer; it is still refused.
    let err = owner_only::read(&path, 1024).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

#[test]
fn reading_refuses_a_file_over_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.json");
    owner_only::write_atomically(&path, &[b'x'; 100], Replace::Private).unwrap();
    assert_eq!(owner_only::read(&path, 100).unwrap().len(), 100);
    let err = owner_only::read(&path, 99).unwrap_err();
    assert!(err.to_string().contains("100 bytes"), "{err}");
}

#[test]
fn create_new_never_reuses_a_path_not_even_a_dangling_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    symlink(dir.path().join("nowhere"), &path).unwrap();
    let err = owner_only::create_new(&path).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
    assert!(!dir.path().join("nowhere").exists());
    fs::remove_file(&path).unwrap();
    owner_only::create_new(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn a_private_write_replaces_a_planted_symlink_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("state");
    owner_only::ensure_private_dir(&home).unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "untouched").unwrap();
    let path = home.join("identity.json");
    symlink(&victim, &path).unwrap();
    owner_only::write_atomically(&path, b"{}", Replace::Private).unwrap();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
    assert!(
        !fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "{}");
    assert_eq!(mode(&path), 0o600);
    let names: Vec<_> = fs::read_dir(&home)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["identity.json"]);
}

#[test]
fn a_private_write_narrows_a_file_others_could_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    fs::write(&path, "OLD=1\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    owner_only::write_atomically(&path, b"TOKEN=x\n", Replace::Private).unwrap();
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn a_configuration_keeps_its_mode_and_its_link_and_a_new_one_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let dotfiles = dir.path().join("dotfiles");
    fs::create_dir(&dotfiles).unwrap();
    let real = dotfiles.join("settings.json");
    fs::write(&real, "{\"old\":true}").unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o644)).unwrap();
    let link = dir.path().join("settings.json");
    symlink(&real, &link).unwrap();
    owner_only::write_atomically(&link, b"{\"new\":true}", Replace::KeepingMode).unwrap();
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(&real).unwrap(), "{\"new\":true}");
    assert_eq!(mode(&real), 0o644);
    let fresh = dir.path().join("deeper/hooks.json");
    owner_only::write_atomically(&fresh, b"{}", Replace::KeepingMode).unwrap();
    assert_eq!(mode(&fresh), 0o600);
    assert_eq!(mode(&dir.path().join("deeper")), 0o700);
}

#[test]
fn the_state_directory_is_made_private_and_a_shared_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("a/b/state");
    owner_only::ensure_private_dir(&home).unwrap();
    assert_eq!(mode(&home), 0o700);
    fs::set_permissions(&home, fs::Permissions::from_mode(0o755)).unwrap();
    owner_only::ensure_private_dir(&home).unwrap();
    assert_eq!(mode(&home), 0o700, "looser than 0700 is tightened");
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let err = owner_only::ensure_private_dir(&shared).unwrap_err();
    assert!(err.to_string().contains("writable by every user"), "{err}");
    assert_eq!(mode(&shared), 0o1777, "a shared directory is left alone");
    let file = dir.path().join("file");
    fs::write(&file, "").unwrap();
    let err = owner_only::ensure_private_dir(&file).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[test]
fn the_state_directory_may_be_a_link_but_a_subdirectory_may_not() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real-state");
    fs::create_dir(&real).unwrap();
    let home = dir.path().join("state");
    symlink(&real, &home).unwrap();
    owner_only::ensure_private_dir(&home).unwrap();
    assert_eq!(mode(&real), 0o700);
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let responses = real.join("responses");
    symlink(&elsewhere, &responses).unwrap();
    let err = owner_only::ensure_private_subdir(&responses).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    owner_only::ensure_private_subdir(&real.join("sessions")).unwrap();
    assert_eq!(mode(&real.join("sessions")), 0o700);
}
