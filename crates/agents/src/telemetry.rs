//! The agents' own telemetry sent through the hub, which forwards it to its
//! collector (docs/telemetry.md, "The agents' own telemetry"): the lines
//! `setup` prints and what `launch` sets, for Claude Code and Codex. Only
//! for a daemon that exports: the caller asks it (`bridge.status`).
//!
//! Claude Code reads the standard OpenTelemetry variables; `setup` gives it
//! the header through its `otelHeadersHelper`, a command run at each start.
//!
//! Codex (0.169.0, pinned in scripts/install-test-deps.sh) takes its
//! exporters from `[otel]` in config.toml — `exporter` (its log events),
//! `trace_exporter`, `metrics_exporter`, each `{ otlp-http = { endpoint,
//! headers, protocol, tls } }` (`OtelExporterKind` in Codex's
//! codex-rs/config/src/types.rs; those four fields and no other in the
//! 0.169.0 binary) — and `headers` there are literal strings: no variable,
//! no helper (Codex has `http_headers_helper` for MCP servers only). Its OTLP/HTTP exporters are built by
//! opentelemetry-otlp 0.31's `with_headers` (codex-rs/otel/src/provider.rs),
//! and that builder adds `OTEL_EXPORTER_OTLP_HEADERS` from the environment
//! when Codex starts, over the configured headers. So the endpoints go in
//! `[otel]` (or `-c otel.…` flags) and the token in that variable: `setup`
//! prints a shell function that reads it from gateway.json at each start
//! (the token changes when the daemon restarts), `launch` sets it from the
//! live token. Never in a `-c` flag: a process's arguments are visible to
//! every user of the machine (`ps`), its environment only to its owner.
//! Codex's commands inherit its environment, so `shell_environment_policy`
//! empties the variable for them: an OpenTelemetry SDK in a program the
//! agent runs would otherwise send the hub's token to that program's own
//! collector. All of this is tested with the real Codex
//! (crates/cli/tests/agents/codex_telemetry.rs).

use std::path::{Path, PathBuf};

use bridge_policy::agent_tools::Agent;

use crate::env::AgentEnv;

/// The variable both agents' OTLP exporters take their headers from.
pub const HEADERS_VARIABLE: &str = "OTEL_EXPORTER_OTLP_HEADERS";

/// Codex's exporters: the `[otel]` key and the hub's path for its signal.
const CODEX_EXPORTERS: [(&str, &str); 3] = [
    ("exporter", "/v1/logs"),
    ("trace_exporter", "/v1/traces"),
    ("metrics_exporter", "/v1/metrics"),
];

/// Claude Code's variables for telemetry through the hub at `origin`
/// (`http://127.0.0.1:PORT`), all but the header.
pub fn claude_variables(origin: &str) -> Vec<(&'static str, String)> {
    vec![
        ("CLAUDE_CODE_ENABLE_TELEMETRY", "1".to_owned()),
        ("OTEL_METRICS_EXPORTER", "otlp".to_owned()),
        ("OTEL_LOGS_EXPORTER", "otlp".to_owned()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".to_owned()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", origin.to_owned()),
    ]
}

/// One of Codex's exporters to the hub's `path`, as an inline TOML table.
fn codex_exporter(origin: &str, path: &str) -> String {
    let endpoint = serde_json::Value::String(format!("{origin}{path}"));
    format!("{{ otlp-http = {{ endpoint = {endpoint}, protocol = \"binary\" }} }}")
}

/// What keeps the header from the commands Codex runs: a `-c` key, also
/// printed as config.toml's table.
const CODEX_SHELL_KEEPS_OUT: &str = "shell_environment_policy.set";

/// The lines of `~/.codex/config.toml` that send Codex's log events,
/// traces and metrics to the hub at `origin`, and keep the header out of
/// the commands it runs. No header: [`codex_shell`] gives it.
pub fn codex_config(origin: &str) -> String {
    let mut text = String::from("[otel]\n");
    for (key, path) in CODEX_EXPORTERS {
        text.push_str(&format!("{key} = {}\n", codex_exporter(origin, path)));
    }
    text.push_str(&format!(
        "\n# Not for the commands Codex runs (they inherit its environment):\n\
         [{CODEX_SHELL_KEEPS_OUT}]\n\
         {HEADERS_VARIABLE} = \"\"\n"
    ));
    text
}

/// The shell function that runs Codex with the header of the daemon whose
/// state file is `gateway_file`, read when Codex starts; for Codex alone,
/// so other programs of the shell keep their own OpenTelemetry settings.
pub fn codex_shell(gateway_file: &Path) -> String {
    format!(
        "codex() {{ {HEADERS_VARIABLE}=\"Authorization=Bearer {}\" command codex \"$@\"; }}\n",
        crate::setup::token_command(gateway_file)
    )
}

/// The daemon a launched agent sends its telemetry to.
#[derive(Clone, Copy)]
pub struct Hub<'a> {
    /// `http://127.0.0.1:PORT`.
    pub origin: &'a str,
    /// The daemon's token, live.
    pub token: &'a str,
}

/// What a launched agent is given for its telemetry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Arguments before the user's own (Codex's `-c` flags).
    pub args: Vec<String>,
    /// Variables to set.
    pub env: Vec<(&'static str, String)>,
}

/// Whether `launch` sends an agent's telemetry through the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForLaunch {
    /// Through the hub, with these settings.
    Through(Launch),
    /// The user's own settings already say where it goes (or that it does
    /// not): named here, and left alone.
    UsersOwn(String),
    /// Nothing known of this agent's telemetry (the Copilot CLI).
    Unknown,
}

/// What `launch` gives `agent`, running in `cwd`, for its telemetry to go
/// through `hub` — unless the user's environment or the agent's own
/// configuration already says where it goes: a mix would send the hub's
/// token to the user's collector, or the user's credentials to the hub,
/// so the user's settings win whole (docs/telemetry.md).
pub fn for_launch(agent: Agent, hub: Hub<'_>, env: &AgentEnv, cwd: &Path) -> ForLaunch {
    if agent == Agent::CopilotCli {
        return ForLaunch::Unknown;
    }
    if let Some(own) = users_own(agent, hub.origin, env, cwd) {
        return ForLaunch::UsersOwn(own);
    }
    let header = (
        HEADERS_VARIABLE,
        format!("Authorization=Bearer {}", hub.token),
    );
    if agent == Agent::ClaudeCode {
        let mut variables = claude_variables(hub.origin);
        variables.push(header);
        return ForLaunch::Through(Launch {
            args: Vec::new(),
            env: variables,
        });
    }
    let mut args = Vec::new();
    for (key, path) in CODEX_EXPORTERS {
        args.push("-c".to_owned());
        args.push(format!("otel.{key}={}", codex_exporter(hub.origin, path)));
    }
    args.push("-c".to_owned());
    args.push(format!("{CODEX_SHELL_KEEPS_OUT}.{HEADERS_VARIABLE}=\"\""));
    ForLaunch::Through(Launch {
        args,
        env: vec![header],
    })
}

/// The first of the user's own settings that says where `agent`'s
/// telemetry goes: a variable of the environment, or a setting of the
/// agent's user or project configuration.
fn users_own(agent: Agent, origin: &str, env: &AgentEnv, cwd: &Path) -> Option<String> {
    // Codex takes no endpoint or switch from the environment, only the
    // headers (over ours) — and `OTEL_SDK_DISABLED` is honoured for both.
    let matters = |name: &&String| match agent {
        Agent::Codex => name.ends_with("_HEADERS") || name.as_str() == "OTEL_SDK_DISABLED",
        _ => true,
    };
    if let Some(name) = env.telemetry_settings().iter().find(matters) {
        return Some(format!("{name} is set"));
    }
    match agent {
        Agent::ClaudeCode => claude_files(env, cwd)
            .iter()
            .find_map(|file| claude_file_says(file)),
        _ => codex_files(env, cwd)
            .iter()
            .find_map(|file| codex_file_says(file, origin)),
    }
}

/// Claude Code's settings files whose `env` it applies: the user's, the
/// project's and the project's local ones.
fn claude_files(env: &AgentEnv, cwd: &Path) -> Vec<PathBuf> {
    let project = cwd.join(".claude");
    env.claude_config_dir()
        .map(|dir| dir.join("settings.json"))
        .into_iter()
        .chain([
            project.join("settings.json"),
            project.join("settings.local.json"),
        ])
        .collect()
}

/// A telemetry setting of Claude Code's settings `file`: a variable of its
/// `env`, or an `otelHeadersHelper`. A file that is missing or not JSON
/// says nothing (Claude Code would not read it either).
fn claude_file_says(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let settings: serde_json::Value = serde_json::from_str(&text).ok()?;
    if settings.get("otelHeadersHelper").is_some() {
        return Some(format!("otelHeadersHelper is set in {}", file.display()));
    }
    settings
        .get("env")?
        .as_object()?
        .iter()
        .find(|(name, value)| {
            crate::env::is_telemetry_setting(name) && value.as_str().is_some_and(|v| !v.is_empty())
        })
        .map(|(name, _)| format!("{name} is set in {}", file.display()))
}

/// Codex's config.toml of the user (`CODEX_HOME`) and of the project.
fn codex_files(env: &AgentEnv, cwd: &Path) -> Vec<PathBuf> {
    env.codex_home()
        .map(|home| home.join("config.toml"))
        .into_iter()
        .chain([cwd.join(".codex/config.toml")])
        .collect()
}

/// An `[otel]` exporter of Codex's config.toml `file` that does not send to
/// the hub at `origin` (`"none"` included: the user said no). Exporters
/// that already point at the hub — `setup`'s block — are the hub's to set.
fn codex_file_says(file: &Path, origin: &str) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let config: toml::Table = text.parse().ok()?;
    let otel = config.get("otel")?.as_table()?;
    CODEX_EXPORTERS.iter().find_map(|(key, path)| {
        let exporter = otel.get(*key)?;
        let endpoint = exporter
            .get("otlp-http")
            .and_then(|http| http.get("endpoint"))
            .and_then(toml::Value::as_str);
        (endpoint != Some(format!("{origin}{path}").as_str()))
            .then(|| format!("otel.{key} is set in {}", file.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HUB: Hub<'static> = Hub {
        origin: "http://127.0.0.1:9400",
        token: "btk-live",
    };

    fn env_with(home: &Path, vars: &[(&str, &str)]) -> AgentEnv {
        let home = home.display().to_string();
        AgentEnv::from_vars(
            [("HOME", home.as_str())]
                .into_iter()
                .chain(vars.iter().copied()),
        )
    }

    #[test]
    fn claude_gets_the_hub_and_the_live_token_in_its_environment() {
        let home = tempfile::tempdir().unwrap();
        let ForLaunch::Through(launch) = for_launch(
            Agent::ClaudeCode,
            HUB,
            &env_with(home.path(), &[]),
            home.path(),
        ) else {
            panic!("through the hub")
        };
        assert!(launch.args.is_empty());
        assert!(launch.env.contains(&(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:9400".to_owned()
        )));
        assert!(launch.env.contains(&(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "Authorization=Bearer btk-live".to_owned()
        )));
    }

    #[test]
    fn codex_gets_endpoints_in_flags_and_the_token_only_in_its_environment() {
        let home = tempfile::tempdir().unwrap();
        let ForLaunch::Through(launch) =
            for_launch(Agent::Codex, HUB, &env_with(home.path(), &[]), home.path())
        else {
            panic!("through the hub")
        };
        assert!(launch.args.contains(
            &"otel.exporter={ otlp-http = { endpoint = \"http://127.0.0.1:9400/v1/logs\", protocol = \"binary\" } }"
                .to_owned()
        ));
        assert!(
            launch.args.contains(
                &"shell_environment_policy.set.OTEL_EXPORTER_OTLP_HEADERS=\"\"".to_owned()
            )
        );
        assert!(!launch.args.iter().any(|arg| arg.contains("btk-live")));
        assert_eq!(
            launch.env,
            [(
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer btk-live".to_owned()
            )]
        );
    }

    #[test]
    fn the_users_own_settings_win_whole() {
        let home = tempfile::tempdir().unwrap();
        let own = |agent, vars: &[(&str, &str)]| {
            for_launch(agent, HUB, &env_with(home.path(), vars), home.path())
        };
        assert_eq!(
            own(
                Agent::ClaudeCode,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector")]
            ),
            ForLaunch::UsersOwn("OTEL_EXPORTER_OTLP_ENDPOINT is set".to_owned())
        );
        // Codex reads no endpoint from the environment: only headers matter.
        assert!(matches!(
            own(
                Agent::Codex,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector")]
            ),
            ForLaunch::Through(_)
        ));
        assert!(matches!(
            own(
                Agent::Codex,
                &[("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-key=1")]
            ),
            ForLaunch::UsersOwn(_)
        ));
        assert_eq!(own(Agent::CopilotCli, &[]), ForLaunch::Unknown);

        // Claude Code's settings.json env, and its headers helper.
        let claude = home.path().join(".claude");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::write(
            claude.join("settings.json"),
            r#"{"env": {"OTEL_LOGS_EXPORTER": "console"}}"#,
        )
        .unwrap();
        let ForLaunch::UsersOwn(why) = own(Agent::ClaudeCode, &[]) else {
            panic!("settings.json's env is the user's")
        };
        assert!(why.starts_with("OTEL_LOGS_EXPORTER is set in "), "{why}");
        std::fs::write(
            claude.join("settings.json"),
            r#"{"otelHeadersHelper": "x"}"#,
        )
        .unwrap();
        assert!(matches!(
            own(Agent::ClaudeCode, &[]),
            ForLaunch::UsersOwn(_)
        ));
    }

    #[test]
    fn codex_s_own_exporters_win_but_setup_s_block_is_the_hub_s() {
        let home = tempfile::tempdir().unwrap();
        let codex = home.path().join(".codex");
        std::fs::create_dir_all(&codex).unwrap();
        let own = || for_launch(Agent::Codex, HUB, &env_with(home.path(), &[]), home.path());
        std::fs::write(
            codex.join("config.toml"),
            format!("model = \"m\"\n\n{}", codex_config(HUB.origin)),
        )
        .unwrap();
        assert!(matches!(own(), ForLaunch::Through(_)));
        std::fs::write(
            codex.join("config.toml"),
            "[otel]\nmetrics_exporter = \"none\"\n",
        )
        .unwrap();
        let ForLaunch::UsersOwn(why) = own() else {
            panic!("the user's \"none\" stands")
        };
        assert!(why.starts_with("otel.metrics_exporter is set in "), "{why}");
    }

    #[test]
    fn setup_s_codex_block_is_toml_with_the_hub_s_endpoints() {
        let config: toml::Table = codex_config(HUB.origin).parse().unwrap();
        assert_eq!(
            config["otel"]["trace_exporter"]["otlp-http"]["endpoint"].as_str(),
            Some("http://127.0.0.1:9400/v1/traces")
        );
        assert_eq!(
            config["shell_environment_policy"]["set"][HEADERS_VARIABLE].as_str(),
            Some("")
        );
        let shell = codex_shell(Path::new("/home/me/.copilot-bridge/gateway.json"));
        assert_eq!(
            shell,
            "codex() { OTEL_EXPORTER_OTLP_HEADERS=\"Authorization=Bearer $(jq -r .token /home/me/.copilot-bridge/gateway.json)\" command codex \"$@\"; }\n"
        );
    }
}
