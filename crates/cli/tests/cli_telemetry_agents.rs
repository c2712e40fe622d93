//! The agents' own telemetry sent through the hub by what `setup` prints
//! and what `launch` sets (docs/telemetry.md, "Claude Code", "Codex"):
//! only when the daemon exports, never a literal token in what a user
//! keeps, and never over the user's own settings. The real agents run with
//! them in crates/cli/tests/agents/{claude_code,codex}_telemetry.rs; here a
//! stand-in agent records what it was started with.

use std::path::{Path, PathBuf};

use bridge_testkit::otlp::OtlpReceiver;
use bridge_testkit::{MockLlm, TempWorkspace};

use crate::cli_serve::Served;
use crate::cli_telemetry::with_telemetry;

/// A daemon that exports to `receiver`, and one that exports nothing.
async fn daemons(receiver: &OtlpReceiver) -> (Served, Served) {
    let mock = MockLlm::start(vec![]).await;
    let endpoint = receiver.endpoint();
    let exporting =
        crate::agents::serve_with_env(&mock, TempWorkspace::new(), &with_telemetry(&endpoint, &[]));
    let quiet = crate::agents::serve_with(&mock, TempWorkspace::new());
    (exporting, quiet)
}

/// `copilot-bridge setup --agent AGENT` against `served`.
async fn setup(served: &Served, agent: &str) -> String {
    let output = served
        .cli()
        .args(["setup", "--agent", agent])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "setup: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
async fn setup_prints_codex_s_otel_block_only_when_the_daemon_exports() {
    let receiver = OtlpReceiver::start().await;
    let (exporting, quiet) = daemons(&receiver).await;

    let printed = setup(&quiet, "codex").await;
    for absent in ["[otel]", "OTEL_", "codex()"] {
        assert!(!printed.contains(absent), "{absent} in {printed}");
    }
    assert!(!setup(&quiet, "claude").await.contains("OTEL_"));

    let printed = setup(&exporting, "codex").await;
    // The config.toml part parses, with the hub's three endpoints.
    let (config, shell) = printed
        .split_once("# and in the shell")
        .expect("the config.toml lines, then the shell's");
    let config: toml::Table = config
        .parse()
        .unwrap_or_else(|err| panic!("{err}\n{config}"));
    for (key, path) in [
        ("exporter", "/v1/logs"),
        ("trace_exporter", "/v1/traces"),
        ("metrics_exporter", "/v1/metrics"),
    ] {
        let http = &config["otel"][key]["otlp-http"];
        assert_eq!(
            http["endpoint"].as_str(),
            Some(exporting.url(path).as_str())
        );
        assert_eq!(http["protocol"].as_str(), Some("binary"));
        assert!(http.get("headers").is_none(), "no header kept: {http}");
    }
    assert_eq!(
        config["shell_environment_policy"]["set"]["OTEL_EXPORTER_OTLP_HEADERS"].as_str(),
        Some("")
    );
    assert_eq!(
        config["model_providers"]["copilot-bridge"]["wire_api"].as_str(),
        Some("responses")
    );
    // The token appears once: the facade's key, as before; the telemetry
    // header is read from the state file when Codex starts.
    let with_token: Vec<&str> = printed
        .lines()
        .filter(|line| line.contains(&exporting.token))
        .collect();
    assert_eq!(
        with_token,
        [format!("export COPILOT_BRIDGE_API_KEY={}", exporting.token)],
        "{printed}"
    );
    // The function, as a shell runs it, gives the live token to `codex`
    // (here a stand-in on PATH that prints what it got) and to it alone.
    let bin = tempfile::tempdir().unwrap();
    write_script(
        &bin.path().join("codex"),
        "#!/bin/sh\necho \"codex got [$OTEL_EXPORTER_OTLP_HEADERS] $*\"\n",
    );
    let script =
        format!("{shell}\ncodex exec hi\necho \"shell has [$OTEL_EXPORTER_OTLP_HEADERS]\"\n");
    let output = std::process::Command::new("sh")
        .args(["-c", &script])
        .env("PATH", path_with(bin.path()))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        said,
        format!(
            "codex got [Authorization=Bearer {}] exec hi\nshell has []\n",
            exporting.token
        ),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `dir` first on PATH.
fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_owned()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// An agent that writes its environment to `record` and exits.
fn recording_agent(dir: &Path) -> (PathBuf, PathBuf) {
    let agent = dir.join("agent");
    let record = dir.join("env.txt");
    write_script(
        &agent,
        &format!("#!/bin/sh\nenv > '{}'\n", record.display()),
    );
    (agent, record)
}

/// `launch claude --agent <recording agent> -- -p hi` against `served`'s
/// state directory, with `env` added: the agent's environment as
/// `NAME=VALUE` lines, and launch's stderr.
async fn launch_claude(served: &Served, env: &[(&str, &str)]) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let (agent, record) = recording_agent(dir.path());
    let mut command = served.cli();
    command
        .env("CLAUDE_CONFIG_DIR", dir.path().join(".claude"))
        .args(["launch", "claude", "--agent"])
        .arg(&agent)
        .args(["--", "-p", "hi"]);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().await.unwrap();
    assert!(output.status.success(), "launch: {output:?}");
    let recorded = std::fs::read_to_string(&record).unwrap();
    (
        recorded.lines().map(str::to_owned).collect(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn telemetry_lines(env: &[String]) -> Vec<&str> {
    env.iter()
        .map(String::as_str)
        .filter(|line| line.starts_with("OTEL_") || line.starts_with("CLAUDE_CODE_ENABLE"))
        .collect()
}

#[tokio::test]
async fn launch_gives_claude_code_the_hub_for_its_telemetry_only_when_it_exports() {
    let receiver = OtlpReceiver::start().await;
    let (exporting, quiet) = daemons(&receiver).await;

    let (env, _) = launch_claude(&exporting, &[]).await;
    let mut lines = telemetry_lines(&env);
    lines.sort_unstable();
    let origin = exporting.url("");
    let header = format!(
        "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer {}",
        exporting.token
    );
    let endpoint = format!("OTEL_EXPORTER_OTLP_ENDPOINT={origin}");
    assert_eq!(
        lines,
        [
            "CLAUDE_CODE_ENABLE_TELEMETRY=1",
            endpoint.as_str(),
            header.as_str(),
            "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
            "OTEL_LOGS_EXPORTER=otlp",
            "OTEL_METRICS_EXPORTER=otlp",
        ]
    );

    let (env, _) = launch_claude(&quiet, &[]).await;
    assert!(telemetry_lines(&env).is_empty(), "{env:?}");

    // The user's own collector stays theirs, with nothing of the hub mixed
    // in (its token would go to that collector), and launch says so.
    let (env, stderr) = launch_claude(
        &exporting,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example")],
    )
    .await;
    assert_eq!(
        telemetry_lines(&env),
        ["OTEL_EXPORTER_OTLP_ENDPOINT=https://collector.example"]
    );
    assert!(
        stderr.contains(
            "Claude Code's own telemetry is left to your settings, not sent through the hub (OTEL_EXPORTER_OTLP_ENDPOINT is set)"
        ),
        "{stderr}"
    );
    // So does a user's "no".
    let (env, _) = launch_claude(&exporting, &[("CLAUDE_CODE_ENABLE_TELEMETRY", "0")]).await;
    assert_eq!(telemetry_lines(&env), ["CLAUDE_CODE_ENABLE_TELEMETRY=0"]);
}
