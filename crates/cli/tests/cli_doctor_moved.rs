//! `doctor` after things moved or were replaced under it (docs/cli.md,
//! "doctor"): hooks and add-ons installed by a binary since deleted warn
//! and their printed fixes install them again; a daemon whose binary was
//! replaced by another version is stale, said by `doctor`, `daemon start`,
//! `daemon status` and `status`, and the printed restart fixes it.

use std::os::unix::fs::PermissionsExt;

use bridge_testkit::TempWorkspace;

use crate::cli_doctor::{closed_address, copied_binary, doctor, named, run_fix};
use crate::cli_serve::{KillOnDrop, read_gateway_json, wait_until};
use crate::support::Bridge;

#[tokio::test]
async fn hooks_installed_by_a_binary_since_moved_warn_with_the_reinstall_that_fixes_them() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let elsewhere = tempfile::TempDir::new().unwrap();
    let moved = copied_binary(elsewhere.path());
    let installed = std::process::Command::new(&moved)
        .args(["hooks", "install", "--agent", "claude", "--scope", "user"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", bridge.state.path())
        .env("COPILOT_BRIDGE_HOME", bridge.state.path())
        .output()
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    let env = vec![
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OLLAMA_HOST", format!("http://{}", closed_address())),
    ];
    let (_, checks) = doctor(bridge.state.path(), ws.path(), &env).await;
    let claude = named(&checks, "agent claude");
    assert_eq!(claude["status"], "ok", "{claude}");
    assert!(
        claude["message"]
            .as_str()
            .unwrap()
            .contains(&format!("hooks (user) ({})", moved.display())),
        "{claude}"
    );

    std::fs::remove_file(&moved).unwrap();
    let (output, checks) = doctor(bridge.state.path(), ws.path(), &env).await;
    let claude = named(&checks, "agent claude");
    assert_eq!(claude["status"], "warn", "{claude}");
    let settings = bridge.state.path().join(".claude/settings.json");
    assert!(
        claude["message"].as_str().unwrap().ends_with(&format!(
            "hooks (user) in {} run {}, which no longer exists",
            settings.display(),
            moved.display()
        )),
        "{claude}"
    );
    let fix = claude["fix"].as_str().unwrap();
    let program = format!(
        "copilot-bridge --home {} --port 0",
        bridge.state.path().display()
    );
    assert_eq!(
        fix,
        format!(
            "{program} hooks uninstall --agent claude --scope user && {program} hooks install --agent claude --scope user"
        )
    );
    // A warning is no failure.
    let failed = checks.iter().any(|c| c["status"] == "fail");
    assert_eq!(output.status.code(), Some(if failed { 1 } else { 0 }));

    // The fix, pasted as it is, puts hooks of this binary in their place.
    run_fix(bridge.state.path(), fix);
    let (_, checks) = doctor(bridge.state.path(), ws.path(), &env).await;
    let claude = named(&checks, "agent claude");
    assert_eq!(claude["status"], "ok", "{claude}");
    let built = assert_cmd::cargo::cargo_bin("copilot-bridge");
    let hooks = std::fs::read_to_string(&settings).unwrap();
    assert!(!hooks.contains(&moved.display().to_string()), "{hooks}");
    assert!(hooks.contains(&built.display().to_string()), "{hooks}");
}

#[tokio::test]
async fn a_daemon_whose_binary_was_replaced_by_another_version_is_stale_and_the_fix_restarts_it() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let elsewhere = tempfile::TempDir::new().unwrap();
    let installed = copied_binary(elsewhere.path());
    let state = bridge.state.path();
    // The daemon runs the copy, started as an installed binary starts it.
    let started = std::process::Command::new(&installed)
        .args(["--port", "0", "daemon", "start"])
        .current_dir(ws.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", state)
        .env("COPILOT_BRIDGE_HOME", state)
        .output()
        .unwrap();
    let first = read_gateway_json(state).expect("gateway.json");
    let old_pid = first["pid"].as_u64().unwrap() as u32;
    let _old = KillOnDrop(old_pid);
    assert!(started.status.success(), "{started:?}");
    let env = vec![
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OLLAMA_HOST", format!("http://{}", closed_address())),
    ];
    let (_, checks) = doctor(state, ws.path(), &env).await;
    assert_eq!(named(&checks, "daemon")["status"], "ok", "{checks:#?}");

    // An upgrade: the file at that path replaced by another version.
    std::fs::remove_file(&installed).unwrap();
    std::fs::write(&installed, "#!/bin/sh\necho 'copilot-bridge 99.0.0'\n").unwrap();
    std::fs::set_permissions(&installed, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Until no forked child holds it open for writing (ETXTBSY).
    wait_until("the new binary runs", || {
        std::process::Command::new(&installed)
            .arg("--version")
            .output()
            .is_ok_and(|output| output.status.success())
    });

    let (output, checks) = doctor(state, ws.path(), &env).await;
    let daemon = named(&checks, "daemon");
    assert_eq!(daemon["status"], "warn", "{daemon}");
    assert_eq!(
        daemon["message"],
        format!(
            "the daemon (pid {old_pid}, version {}) runs a binary replaced since it started: {} is copilot-bridge 99.0.0 now",
            env!("CARGO_PKG_VERSION"),
            installed.display()
        )
    );
    let program = format!("copilot-bridge --home {} --port 0", state.display());
    let restart = format!("{program} daemon stop && {program} daemon start");
    assert_eq!(daemon["fix"], restart.as_str());
    assert!(checks.iter().all(|c| c["status"] != "fail") == (output.status.code() == Some(0)));

    // `daemon start`, `daemon status` and `status` say so too.
    for args in [&["daemon", "start"][..], &["daemon", "status"], &["status"]] {
        let output = bridge
            .cmd()
            .args(["--port", "0"])
            .args(args)
            .current_dir(ws.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains(&format!(
                "note: the daemon (pid {old_pid}, version {}) runs a binary replaced since it started: {} is copilot-bridge 99.0.0 now; restart it: {restart}\n",
                env!("CARGO_PKG_VERSION"),
                installed.display()
            )),
            "{args:?}: {stdout}"
        );
    }

    // The fix restarts it with the binary on PATH.
    run_fix(state, &restart);
    let second = read_gateway_json(state).expect("gateway.json after the restart");
    let new_pid = second["pid"].as_u64().unwrap() as u32;
    let _new = KillOnDrop(new_pid);
    assert_ne!(new_pid, old_pid);
    let (_, checks) = doctor(state, ws.path(), &env).await;
    assert_eq!(named(&checks, "daemon")["status"], "ok", "{checks:#?}");
    let stopped = bridge.cmd().args(["daemon", "stop"]).output().unwrap();
    assert!(stopped.status.success());
}

#[tokio::test]
async fn add_ons_of_a_binary_since_moved_warn_and_their_fixes_install_them_again() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let state = bridge.state.path();
    let elsewhere = tempfile::TempDir::new().unwrap();
    let moved = copied_binary(elsewhere.path());
    for args in [&["vscode", "install"][..], &["openclaw", "register"]] {
        let output = std::process::Command::new(&moved)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", state)
            .env("COPILOT_BRIDGE_HOME", state)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
    }
    let env = vec![
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OLLAMA_HOST", format!("http://{}", closed_address())),
    ];
    let (_, checks) = doctor(state, ws.path(), &env).await;
    for name in ["vscode extension (code)", "openclaw"] {
        assert_eq!(named(&checks, name)["status"], "ok", "{checks:#?}");
    }

    std::fs::remove_file(&moved).unwrap();
    let (_, checks) = doctor(state, ws.path(), &env).await;
    let program = format!("copilot-bridge --home {} --port 0", state.display());
    let vscode = named(&checks, "vscode extension (code)");
    assert_eq!(vscode["status"], "warn", "{vscode}");
    assert!(
        vscode["message"]
            .as_str()
            .unwrap()
            .ends_with(&format!("runs {}, which no longer exists", moved.display())),
        "{vscode}"
    );
    assert_eq!(
        vscode["fix"],
        format!("{program} vscode install --editor code")
    );
    let openclaw = named(&checks, "openclaw");
    assert_eq!(openclaw["status"], "warn", "{openclaw}");
    assert_eq!(
        openclaw["message"],
        format!(
            "the plugin registered in {} runs {}, which no longer exists",
            state.join(".openclaw/openclaw.json").display(),
            moved.display()
        )
    );
    assert_eq!(openclaw["fix"], format!("{program} openclaw register"));

    for name in ["vscode extension (code)", "openclaw"] {
        run_fix(state, named(&checks, name)["fix"].as_str().unwrap());
    }
    let (_, checks) = doctor(state, ws.path(), &env).await;
    for name in ["vscode extension (code)", "openclaw"] {
        assert_eq!(named(&checks, name)["status"], "ok", "{checks:#?}");
    }
}
