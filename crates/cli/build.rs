//! What `copilot-bridge version --json` reports about this build: the git
//! commit (`unknown` when not built from a git checkout or without git),
//! the build date (UTC, or `SOURCE_DATE_EPOCH` for a reproducible build)
//! and the target triple.
//!
//! The script reruns only when the commit can have changed: the checkout's
//! `HEAD`, the branch file it points to and `packed-refs` (a linked
//! worktree keeps `HEAD` in its own git directory and the branches in the
//! common one). Outside git it reruns only when this file changes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());

    let commit = git(&manifest_dir, &["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    for file in git_files(&manifest_dir) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|secs| secs.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs())
        });

    println!("cargo:rustc-env=COPILOT_BRIDGE_COMMIT={commit}");
    println!("cargo:rustc-env=COPILOT_BRIDGE_BUILD_DATE={}", date(epoch));
    println!("cargo:rustc-env=COPILOT_BRIDGE_TARGET={target}");
}

/// `git ARGS` in `dir`: its trimmed output, `None` when git is missing,
/// this is no checkout, or the answer is empty.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (output.status.success() && !text.is_empty()).then(|| text.to_owned())
}

/// The files whose change means a new commit: `HEAD`, the ref it names and
/// `packed-refs`, those that exist (cargo reruns a script every build for a
/// path that does not exist).
fn git_files(dir: &Path) -> Vec<PathBuf> {
    let absolute = |path: String| {
        let path = PathBuf::from(path);
        if path.is_absolute() {
            path
        } else {
            dir.join(path)
        }
    };
    let Some(git_dir) = git(dir, &["rev-parse", "--git-dir"]).map(absolute) else {
        return Vec::new();
    };
    let common = git(dir, &["rev-parse", "--git-common-dir"])
        .map(absolute)
        .unwrap_or_else(|| git_dir.clone());
    let mut files = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    // Detached HEAD: no ref, HEAD itself holds the commit.
    if let Some(reference) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        let loose = [git_dir.join(&reference), common.join(&reference)];
        match loose.iter().find(|file| file.is_file()) {
            Some(file) => files.push(file.clone()),
            // A branch only in packed-refs gets its loose file at its next
            // commit: watch the directory it will appear in.
            None => files.extend(common.join(&reference).parent().map(Path::to_path_buf)),
        }
    }
    files.retain(|file| file.exists());
    files
}

/// `secs` since the epoch as a UTC date, `YYYY-MM-DD` (Howard Hinnant's
/// civil-from-days).
fn date(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
