//! `copilot-bridge service install|uninstall|status` on Linux (the systemd
//! user unit; docs/install.md), and `daemon start` beside a daemon the
//! service runs. The unit is verified by `systemd-analyze` where it is
//! installed; `systemctl` is a recording stand-in on PATH, since a test
//! machine (a container) has no systemd user manager to enable it in.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use bridge_testkit::TempWorkspace;

use crate::cli_daemon::daemon_start;
use crate::cli_serve::read_gateway_json;
use crate::support::Bridge;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Where `service install` writes the unit with HOME = the state directory
/// and no XDG_CONFIG_HOME.
fn unit_path(bridge: &Bridge) -> PathBuf {
    bridge
        .state
        .path()
        .join(".config/systemd/user/copilot-bridge.service")
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// A `systemctl` that records its arguments, one call a line, and answers
/// `show` with the file `show` (properties as systemd prints them).
struct FakeSystemctl {
    dir: tempfile::TempDir,
}

impl FakeSystemctl {
    fn new() -> Self {
        let dir = tempfile::TempDir::new().unwrap();
        let script = dir.path().join("systemctl");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{log}'\ncase \"$*\" in *show*) cat '{show}' ;; esac\n",
                log = dir.path().join("calls").display(),
                show = dir.path().join("show").display(),
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.path().join("show"), "").unwrap();
        Self { dir }
    }

    fn answer_show(&self, properties: &str) {
        std::fs::write(self.dir.path().join("show"), properties).unwrap();
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `copilot-bridge ARGS` with this `systemctl` first on PATH.
    fn cmd(&self, bridge: &Bridge, args: &[&str]) -> Command {
        let mut path = vec![self.dir.path().to_path_buf()];
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let mut cmd = bridge.cmd();
        cmd.env("PATH", std::env::join_paths(path).unwrap())
            .args(args)
            .timeout(std::time::Duration::from_secs(30));
        cmd
    }
}

#[test]
fn the_unit_runs_serve_from_the_home_restarts_on_failure_and_passes_systemd_analyze() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let bridge = Bridge::new();
    let config_home = tempfile::TempDir::new().unwrap();
    let output = bridge
        .cmd()
        .env("XDG_CONFIG_HOME", config_home.path())
        .args(["--port", "9555", "service", "install", "--no-start"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let unit = config_home
        .path()
        .join("systemd/user/copilot-bridge.service");
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(&format!("wrote {}", unit.display()))
            && stdout.contains("systemctl --user enable --now copilot-bridge.service"),
        "{stdout}"
    );
    let content = std::fs::read_to_string(&unit).unwrap();
    let exec = format!(
        "ExecStart=\"{}\" \"--home\" \"{}\" \"--port\" \"9555\" \"serve\"",
        assert_cmd::cargo::cargo_bin("copilot-bridge").display(),
        bridge.state.path().display()
    );
    for line in [
        exec.as_str(),
        "WorkingDirectory=%h",
        "Restart=on-failure",
        "StandardOutput=journal",
        "StandardError=journal",
        "WantedBy=default.target",
    ] {
        assert!(
            content.lines().any(|l| l == line),
            "{line} not in\n{content}"
        );
    }

    let Some(analyze) = on_path("systemd-analyze") else {
        eprintln!(
            "\n*** SKIPPED: systemd-analyze is not installed: the unit is not verified ***\n"
        );
        return;
    };
    let runtime = tempfile::TempDir::new().unwrap();
    let verify = |unit: &Path| {
        Command::new(&analyze)
            .env("XDG_RUNTIME_DIR", runtime.path())
            .env("HOME", bridge.state.path())
            .args(["verify", "--user"])
            .arg(unit)
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .unwrap()
    };
    let output = verify(&unit);
    let stderr = text(&output.stderr);
    assert!(
        output.status.success() && !stderr.contains("copilot-bridge"),
        "systemd-analyze verify: {stderr}"
    );
    // And it does check: a unit whose program is not there fails.
    let broken = runtime.path().join("broken.service");
    std::fs::write(&broken, content.replace(&exec, "ExecStart=not/absolute")).unwrap();
    assert!(!verify(&broken).status.success());
}

#[test]
fn without_systemctl_install_writes_the_unit_and_says_it_is_not_started() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let bridge = Bridge::new();
    let empty = tempfile::TempDir::new().unwrap();
    let output = bridge
        .cmd()
        .env("PATH", empty.path())
        .args(["service", "install"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("systemctl is not on PATH, so the service is not started")
            && stderr.contains("copilot-bridge daemon start"),
        "{stderr}"
    );
    assert!(unit_path(&bridge).is_file());
    let output = bridge
        .cmd()
        .env("PATH", empty.path())
        .args(["service", "status"])
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("state: unknown (systemctl is not on PATH)"),
        "{stdout}"
    );
}

#[test]
fn install_status_and_uninstall_drive_systemctl() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let bridge = Bridge::new();
    let systemctl = FakeSystemctl::new();
    let output = systemctl
        .cmd(&bridge, &["service", "install"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("the service is enabled and started"),
        "{}",
        text(&output.stdout)
    );
    assert_eq!(
        systemctl.calls(),
        [
            "--user daemon-reload",
            "--user enable copilot-bridge.service",
            "--user restart copilot-bridge.service"
        ]
    );

    systemctl.answer_show("ActiveState=active\nSubState=running\nMainPID=4242\n");
    let output = systemctl
        .cmd(&bridge, &["service", "status"])
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("state: active (running), pid 4242")
            && !stdout.contains("differs")
            && stdout.contains("journalctl --user -u copilot-bridge"),
        "{stdout}"
    );
    // Installed for another state directory: out of date.
    let output = systemctl
        .cmd(&bridge, &["--home", "/elsewhere", "service", "status"])
        .output()
        .unwrap();
    assert!(text(&output.stdout).contains("differs"));

    systemctl.answer_show("ActiveState=failed\nSubState=failed\nMainPID=0\n");
    let output = systemctl
        .cmd(&bridge, &["service", "status"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stdout).contains("state: failed (failed)\n"));

    let output = systemctl
        .cmd(&bridge, &["service", "uninstall"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(!unit_path(&bridge).exists());
    let calls = systemctl.calls();
    assert_eq!(
        calls[calls.len() - 2..],
        [
            "--user disable --now copilot-bridge.service",
            "--user daemon-reload"
        ]
    );
    let output = systemctl
        .cmd(&bridge, &["service", "uninstall"])
        .output()
        .unwrap();
    assert!(text(&output.stdout).starts_with("not installed"));
}

#[test]
fn daemon_start_notices_the_daemon_the_service_runs() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let systemctl = FakeSystemctl::new();
    let output = bridge
        .cmd()
        .args(["service", "install", "--no-start"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));

    // The service is between a failure and its restart: no second daemon.
    systemctl.answer_show("ActiveState=activating\nSubState=auto-restart\nMainPID=0\n");
    let output = systemctl
        .cmd(&bridge, &["--port", "0", "daemon", "start"])
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        stdout.contains("the user service runs the daemon of")
            && stdout.contains("activating (auto-restart)")
            && stdout.contains("not starting a second one")
            && stdout.contains("systemctl --user restart copilot-bridge.service"),
        "{stdout}"
    );
    assert!(read_gateway_json(bridge.state.path()).is_none());

    // A daemon runs; when the service's main pid is its, `start` says so.
    let (pid, _port, _guard) = daemon_start(&bridge, &ws, &[]);
    systemctl.answer_show(&format!(
        "ActiveState=active\nSubState=running\nMainPID={pid}\n"
    ));
    let output = systemctl
        .cmd(&bridge, &["daemon", "start"])
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(&format!("(pid {pid}), run by the user service"))
            && stdout.contains("systemctl --user restart copilot-bridge.service"),
        "{stdout}"
    );
    // Another pid: a daemon of its own, not the service's.
    systemctl.answer_show("ActiveState=active\nSubState=running\nMainPID=1\n");
    let output = systemctl
        .cmd(&bridge, &["daemon", "start"])
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("already running on 127.0.0.1:") && !stdout.contains("user service"),
        "{stdout}"
    );
    // And `service install` will not start a service beside it.
    let output = systemctl
        .cmd(&bridge, &["service", "install"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr)
            .contains("not as the service: stop it with `copilot-bridge daemon stop`"),
        "{}",
        text(&output.stderr)
    );
    assert!(!systemctl.calls().iter().any(|call| call.contains("enable")));
    let output = bridge.cmd().args(["daemon", "stop"]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
}
