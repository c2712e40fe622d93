//! `copilot-bridge config show`.

use std::io::Write;
use std::process::ExitCode;

use bridge_config::BridgeConfig;

use crate::args::ConfigCommand;
use crate::exit::Failure;

pub fn run(config: &BridgeConfig, command: ConfigCommand) -> Result<ExitCode, Failure> {
    match command {
        ConfigCommand::Show { json } => {
            let text = if json {
                format!("{:#}\n", config.to_redacted_json())
            } else {
                table(config)
            };
            std::io::stdout()
                .lock()
                .write_all(text.as_bytes())
                .map_err(|err| Failure::internal(format!("cannot write to stdout: {err}")))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn table(config: &BridgeConfig) -> String {
    let rows = config.show();
    let key_width = rows.iter().map(|r| r.key.len()).max().unwrap_or(0);
    let value_width = rows
        .iter()
        .map(|r| r.value.as_deref().map_or(1, |v| v.chars().count().min(48)))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    let file = config
        .config_file
        .as_ref()
        .map_or_else(|| "(none)".to_owned(), |p| p.display().to_string());
    out.push_str(&format!("# config file: {file}\n"));
    for row in rows {
        let value = row.value.as_deref().unwrap_or("-");
        out.push_str(&format!(
            "{:key_width$}  {:value_width$}  {} ({})\n",
            row.key, value, row.source, row.env
        ));
    }
    let permissions = &config.permissions;
    out.push_str(&format!(
        "permissions      allowed_tools={:?} blocked_tools={:?} ask_tools={:?} blocked_patterns={}\n",
        permissions.allowed_tools,
        permissions.blocked_tools,
        permissions.ask_tools,
        permissions.blocked_patterns.len()
    ));
    let tools = &config.tools;
    out.push_str(&format!(
        "tools            formatters={:?} import_organizers={:?} tasks={:?}\n",
        tools.formatters.keys().collect::<Vec<_>>(),
        tools.import_organizers.keys().collect::<Vec<_>>(),
        tools.tasks.keys().collect::<Vec<_>>()
    ));
    for backend in &config.backends {
        let key = match (&backend.api_key_env, &backend.api_key) {
            (Some(var), Some(_)) => format!(" key=${var}"),
            (Some(var), None) => format!(" key=${var} (unset)"),
            (None, _) => String::new(),
        };
        out.push_str(&format!(
            "backends.{}  provider={} base_url={} model={} style={}{key}\n",
            backend.name,
            backend.provider.as_str(),
            backend.base_url.as_deref().unwrap_or("(default)"),
            backend.model.as_deref().unwrap_or("(default)"),
            backend.style.as_str(),
        ));
    }
    let routes = &config.models;
    for (key, target) in routes.targets() {
        out.push_str(&format!("{key}  → {target}\n"));
    }
    if routes.long_context.is_some() {
        out.push_str(&format!(
            "models.long_context_tokens  {}\n",
            routes.long_context_tokens
        ));
    }
    bridge_policy::redact(&out).into_owned()
}
