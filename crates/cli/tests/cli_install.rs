//! copilot-bridge as an installed program (docs/install.md): the npm
//! package built from the binary just compiled (npm/build.mjs) and
//! installed from its tarballs with no registry, `version [--json]`, and
//! the shells' completion scripts loaded by the shells installed here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

use crate::cli_serve::{KillOnDrop, pid_alive, read_gateway_json, wait_until};
use crate::support::{Bridge, repo_root, stdout_json};

/// Packing ~40 MB of debug binary, and one offline install: generous, but
/// a stall (npm waiting on a registry for the other platforms' optional
/// packages) fails the test instead of hanging it.
const NPM_PATIENCE: Duration = Duration::from_secs(180);

/// The npm platform (`process.platform-process.arch`) of this machine, when
/// the package has one.
fn npm_platform() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("linux-x64"),
        ("linux", "aarch64") => Some("linux-arm64"),
        ("macos", "x86_64") => Some("darwin-x64"),
        ("macos", "aarch64") => Some("darwin-arm64"),
        _ => None,
    }
}

/// `program` with nothing of the developer's: PATH, a private HOME, a
/// private npm cache and user config, and a registry that refuses every
/// connection (port 9, discard), so any attempt to reach one fails at once.
fn npm_env(program: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("npm_config_cache", home.join("npm-cache"))
        .env("npm_config_userconfig", home.join("npmrc"))
        .env("npm_config_registry", "http://127.0.0.1:9/")
        .env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_audit", "false")
        .timeout(NPM_PATIENCE);
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `npm install -g --prefix PREFIX --offline TARBALLS`, bounded.
fn install_offline(npm: &Path, home: &Path, prefix: &Path, tarballs: &[PathBuf]) {
    let output = npm_env(npm, home)
        .args(["install", "--global", "--offline", "--prefix"])
        .arg(prefix)
        .args(tarballs)
        .output()
        .expect("npm install ran");
    assert!(
        output.status.success(),
        "npm install --offline failed ({}):\n{}\n{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
}

#[test]
fn the_npm_package_installs_offline_from_its_tarballs_and_runs_the_binary() {
    let Some(npm) = bridge_testkit::npm() else {
        return;
    };
    let Some(platform) = npm_platform() else {
        eprintln!("\n*** SKIPPED: no npm platform package for this machine ***\n");
        return;
    };
    let home = TempDir::new().unwrap();
    let binary = assert_cmd::cargo::cargo_bin("copilot-bridge");

    // The packages, built the way a release builds them.
    let dist = home.path().join("dist");
    let built = npm_env(Path::new("node"), home.path())
        .arg(repo_root().join("npm/build.mjs"))
        .arg("--out")
        .arg(&dist)
        .arg(format!("{platform}={}", binary.display()))
        .output()
        .expect("node npm/build.mjs ran");
    assert!(
        built.status.success(),
        "npm/build.mjs failed: {}",
        text(&built.stderr)
    );
    let tarballs: Vec<PathBuf> = text(&built.stdout).lines().map(PathBuf::from).collect();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        tarballs,
        [
            dist.join(format!("copilot-bridge-{version}.tgz")),
            dist.join(format!("copilot-bridge-{platform}-{version}.tgz")),
        ]
    );

    // Both tarballs, no registry: the four other platforms' optional
    // packages cannot be had and must not fail or stall the install.
    let prefix = home.path().join("prefix");
    install_offline(&npm, home.path(), &prefix, &tarballs);
    let installed = prefix.join("lib/node_modules/copilot-bridge");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(installed.join("package.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["version"], version);
    assert!(
        manifest.get("scripts").is_none(),
        "no install scripts: {manifest}"
    );
    let optional = manifest["optionalDependencies"].as_object().unwrap();
    for platform in [
        "linux-x64",
        "linux-arm64",
        "darwin-x64",
        "darwin-arm64",
        "win32-x64",
    ] {
        assert_eq!(
            optional[&format!("@copilot-bridge/{platform}")],
            version,
            "{manifest}"
        );
    }

    // The launcher on the prefix's PATH runs this very binary.
    let launcher = prefix.join("bin/copilot-bridge");
    let run = |args: &[&str]| {
        npm_env(&launcher, home.path())
            .env("COPILOT_BRIDGE_HOME", home.path().join("state"))
            .args(args)
            .output()
            .expect("the installed launcher ran")
    };
    let direct = Bridge::new();
    let output = run(&["--version"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), format!("copilot-bridge {version}\n"));
    let output = run(&["version", "--json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let expected = stdout_json(&direct.cmd().args(["version", "--json"]).output().unwrap());
    assert_eq!(stdout_json(&output), expected);
    // The binary's exit status comes through the launcher (2: usage).
    let output = run(&["no-such-command"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    // A signal to the launcher reaches the binary: `serve` through it stops
    // on the SIGTERM a service manager or `kill` sends the launcher.
    launcher_forwards_sigterm(&launcher, home.path());
    // `doctor` through the installed launcher: its checks as JSON, and an
    // exit code that says whether any failed (this private home has no
    // backend, so some may).
    let output = run(&["doctor", "--json"]);
    let report = stdout_json(&output);
    let checks = report["checks"].as_array().unwrap();
    assert!(!checks.is_empty(), "{report}");
    let failed = checks.iter().any(|check| check["status"] == "fail");
    assert_eq!(output.status.code(), Some(i32::from(failed)), "{report}");

    // Without the platform package the launcher says what is missing.
    let bare = home.path().join("bare");
    install_offline(&npm, home.path(), &bare, &tarballs[..1]);
    let output = npm_env(&bare.join("bin/copilot-bridge"), home.path())
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("@copilot-bridge/{platform}, is not installed"))
            && stderr.contains("cargo install --locked"),
        "{stderr}"
    );
}

/// Runs `serve` through `launcher`, sends the launcher SIGTERM, and waits
/// for both the daemon and the launcher to end.
fn launcher_forwards_sigterm(launcher: &Path, home: &Path) {
    use rustix::process::{Pid, Signal, kill_process};
    let state = home.join("served");
    let mut served = std::process::Command::new(launcher)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("COPILOT_BRIDGE_HOME", &state)
        .args(["--port", "0", "serve"])
        .current_dir(home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until(
        "the daemon behind the launcher publishes gateway.json",
        || read_gateway_json(&state).is_some(),
    );
    let daemon = read_gateway_json(&state).unwrap()["pid"].as_u64().unwrap() as u32;
    let _guard = KillOnDrop(daemon);
    assert_ne!(daemon, served.id(), "the launcher is not the daemon");
    let launcher_pid = Pid::from_raw(served.id() as i32).unwrap();
    kill_process(launcher_pid, Signal::TERM).unwrap();
    wait_until("the daemon exits after the launcher's SIGTERM", || {
        !pid_alive(daemon)
    });
    wait_until("the launcher exits", || {
        served.try_wait().unwrap().is_some()
    });
}

#[test]
fn version_json_names_this_build() {
    let bridge = Bridge::new();
    let output = bridge.cmd().args(["version", "--json"]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let version = stdout_json(&output);
    assert_eq!(version["version"], env!("CARGO_PKG_VERSION"));
    // Built from this checkout: its HEAD (the build script reruns when
    // HEAD moves), else "unknown".
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repo_root())
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map_or_else(|| "unknown".to_owned(), |output| text(&output.stdout));
    assert_eq!(version["commit"], head.trim());
    let date = version["buildDate"].as_str().unwrap();
    let parts: Vec<&str> = date.split('-').collect();
    assert!(
        parts.len() == 3
            && [4, 2, 2]
                .iter()
                .zip(&parts)
                .all(|(len, part)| part.len() == *len && part.bytes().all(|b| b.is_ascii_digit())),
        "{date}"
    );
    let target = version["target"].as_str().unwrap();
    assert!(target.starts_with(std::env::consts::ARCH), "{target}");

    let output = bridge.cmd().arg("version").output().unwrap();
    assert_eq!(
        text(&output.stdout),
        format!(
            "copilot-bridge {} (commit {}, built {date}, {target})\n",
            env!("CARGO_PKG_VERSION"),
            head.trim()
        )
    );
    let output = bridge.cmd().arg("--version").output().unwrap();
    assert_eq!(
        text(&output.stdout),
        format!("copilot-bridge {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// The completion script for `shell`, written to a file.
fn completion(bridge: &Bridge, shell: &str) -> PathBuf {
    let output = bridge.cmd().args(["completion", shell]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let script = text(&output.stdout);
    assert!(script.contains("copilot-bridge"), "{shell}: {script}");
    let file = bridge.state.path().join(format!("completion.{shell}"));
    std::fs::write(&file, script).unwrap();
    file
}

/// `shell` on PATH, or a loud skip. scripts/install-test-deps.sh installs
/// bash, zsh and fish (`in_ci`: missing in CI fails); PowerShell only where
/// someone installed it.
fn shell(name: &str, in_ci: bool) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        let message = format!("{name} is not installed: its completion script is not loaded");
        assert!(!in_ci || std::env::var_os("CI").is_none(), "{message}");
        eprintln!("\n*** SKIPPED: {message} ***\n");
    }
    found
}

/// Runs `shell ARGS` and returns its stdout; fails on any error output.
fn run_shell(shell: &Path, args: &[&str]) -> String {
    let output = Command::new(shell)
        .args(args)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert!(
        output.status.success() && stderr.trim().is_empty(),
        "{} {args:?} failed ({}): {stderr}",
        shell.display(),
        output.status
    );
    text(&output.stdout)
}

#[test]
fn completion_scripts_load_in_their_shells_and_complete_subcommands() {
    let bridge = Bridge::new();
    for name in ["bash", "zsh", "fish", "powershell", "elvish"] {
        completion(&bridge, name);
    }
    let output = bridge.cmd().args(["completion", "tcsh"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));

    // bash: loaded, then asked what follows `copilot-bridge ser` and
    // `copilot-bridge service `.
    let bash = shell("bash", true).expect("bash is installed");
    let script = completion(&bridge, "bash");
    let complete = |words: &str, cword: usize| {
        run_shell(
            &bash,
            &[
                "-c",
                &format!(
                    "source '{}' && COMP_WORDS=({words}) && COMP_CWORD={cword} && \
                     _copilot__bridge copilot-bridge \"${{COMP_WORDS[$COMP_CWORD]}}\" \
                     \"${{COMP_WORDS[$((COMP_CWORD-1))]}}\" && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                    script.display()
                ),
            ],
        )
    };
    let words = complete("copilot-bridge ser", 1);
    let words: Vec<&str> = words.lines().collect();
    assert!(
        words.contains(&"serve") && words.contains(&"service"),
        "{words:?}"
    );
    let words = complete("copilot-bridge service ''", 2);
    for sub in ["install", "uninstall", "status"] {
        assert!(words.lines().any(|word| word == sub), "{sub}: {words}");
    }

    // zsh: loaded into a bare completion system, its function registered
    // for the command.
    if let Some(zsh) = shell("zsh", true) {
        let script = completion(&bridge, "zsh");
        let registered = run_shell(
            &zsh,
            &[
                "-f",
                "-c",
                &format!(
                    "autoload -Uz compinit && compinit -u -D && source '{}' && \
                     print -r -- $_comps[copilot-bridge]",
                    script.display()
                ),
            ],
        );
        assert_eq!(registered.trim(), "_copilot-bridge");
    }
    // fish: loaded, then asked for the same completions as bash.
    if let Some(fish) = shell("fish", true) {
        let script = completion(&bridge, "fish");
        let complete = |line: &str| {
            run_shell(
                &fish,
                &[
                    "--no-config",
                    "-c",
                    &format!("source '{}'; complete -C '{line}'", script.display()),
                ],
            )
        };
        let words = complete("copilot-bridge ser");
        let first: Vec<&str> = words
            .lines()
            .filter_map(|line| line.split('\t').next())
            .collect();
        assert!(
            first.contains(&"serve") && first.contains(&"service"),
            "{words}"
        );
        let words = complete("copilot-bridge service ");
        for sub in ["install", "uninstall", "status"] {
            assert!(
                words
                    .lines()
                    .any(|line| line.starts_with(&format!("{sub}\t"))),
                "{sub}: {words}"
            );
        }
    }
    if let Some(pwsh) = shell("pwsh", false) {
        let script = completion(&bridge, "powershell");
        run_shell(
            &pwsh,
            &[
                "-NoProfile",
                "-NonInteractive",
                "-Command",
                &format!(". '{}'", script.display()),
            ],
        );
    }
}
