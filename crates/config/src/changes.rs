//! What differs between two loads of the configuration: a daemon that
//! reloads config.toml applies some settings live and must say which of
//! the others wait for a restart (docs/configuration.md, "Changes while
//! the daemon runs").

use crate::{BridgeConfig, keys};

impl BridgeConfig {
    /// The keys (or tables, as config.toml names them) whose effective
    /// value differs in `other`, in the order of [`BridgeConfig`]'s
    /// fields. Where a value came from is not a change; nor are the
    /// warnings of a load.
    pub fn changed_keys(&self, other: &Self) -> Vec<&'static str> {
        // Every field named, none skipped with `..`: a new setting does
        // not compile until it is compared here.
        let Self {
            home,
            port,
            bind_address,
            read_only,
            github_token,
            byok,
            cli_path,
            log_level,
            openclaw,
            audit_log_dir,
            project_context,
            max_retries,
            transient_retries,
            idle_exit_secs,
            agent_session_idle_secs,
            approval_timeout_secs,
            trust_project_providers,
            permissions,
            tools,
            copilot,
            mcp,
            workspace_roots,
            user_home,
            backends,
            request_log,
            keep_transcripts,
            telemetry,
            connections,
            default_backend,
            models,
            token,
            allowed_hosts,
            openai_api_key,
            anthropic_api_key,
            ollama_base_url,
            no_gh,
            // Where values came from, which file was read (the same path
            // at every load of one loader) and a load's warnings are no
            // settings.
            sources: _,
            config_file: _,
            warnings: _,
        } = self;
        let mut changed = Vec::new();
        let mut compare = |key: &'static str, differs: bool| {
            if differs {
                changed.push(key);
            }
        };
        compare("home", *home != other.home);
        compare("port", *port != other.port);
        compare("bind_address", *bind_address != other.bind_address);
        compare("read_only", *read_only != other.read_only);
        compare("github_token", *github_token != other.github_token);
        compare("byok", *byok != other.byok);
        compare("cli_path", *cli_path != other.cli_path);
        compare("log_level", *log_level != other.log_level);
        compare("openclaw", *openclaw != other.openclaw);
        compare("audit_log_dir", *audit_log_dir != other.audit_log_dir);
        compare("project_context", *project_context != other.project_context);
        compare("max_retries", *max_retries != other.max_retries);
        compare(
            "transient_retries",
            *transient_retries != other.transient_retries,
        );
        compare("idle_exit_secs", *idle_exit_secs != other.idle_exit_secs);
        compare(
            "agent_session_idle_secs",
            *agent_session_idle_secs != other.agent_session_idle_secs,
        );
        compare(
            keys::APPROVAL_TIMEOUT_SECS,
            *approval_timeout_secs != other.approval_timeout_secs,
        );
        compare(
            "trust_project_providers",
            *trust_project_providers != other.trust_project_providers,
        );
        compare("permissions", *permissions != other.permissions);
        compare("tools", *tools != other.tools);
        compare("copilot", *copilot != other.copilot);
        compare("mcp", *mcp != other.mcp);
        compare("workspaces", *workspace_roots != other.workspace_roots);
        compare("user_home", *user_home != other.user_home);
        compare("backends", *backends != other.backends);
        compare("request_log", *request_log != other.request_log);
        compare(
            keys::KEEP_TRANSCRIPTS,
            *keep_transcripts != other.keep_transcripts,
        );
        compare("telemetry", *telemetry != other.telemetry);
        compare(
            keys::MAX_CONNECTIONS,
            connections.max_connections != other.connections.max_connections,
        );
        compare(
            keys::HEADER_TIMEOUT_MS,
            connections.header_timeout_ms != other.connections.header_timeout_ms,
        );
        compare(
            keys::BODY_TIMEOUT_MS,
            connections.body_timeout_ms != other.connections.body_timeout_ms,
        );
        compare("default_backend", *default_backend != other.default_backend);
        compare("models", *models != other.models);
        compare("token", *token != other.token);
        compare("allowed_hosts", *allowed_hosts != other.allowed_hosts);
        compare("openai_api_key", *openai_api_key != other.openai_api_key);
        compare(
            "anthropic_api_key",
            *anthropic_api_key != other.anthropic_api_key,
        );
        compare(keys::OLLAMA_HOST, *ollama_base_url != other.ollama_base_url);
        compare("no_gh", *no_gh != other.no_gh);
        changed
    }
}

#[cfg(test)]
mod tests {
    use crate::ConfigLoader;

    fn load(dir: &tempfile::TempDir, toml: &str) -> crate::BridgeConfig {
        let file = dir.path().join("config.toml");
        std::fs::write(&file, toml).unwrap();
        ConfigLoader::with_env([("COPILOT_BRIDGE_HOME", dir.path().display().to_string())])
            .config_file(&file)
            .skip_dotenv()
            .load()
            .unwrap()
    }

    #[test]
    fn names_each_changed_key_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let before = load(
            &dir,
            "port = 9400\n[permissions]\nblocked_tools = [\"a\"]\n",
        );
        assert_eq!(before.changed_keys(&before.clone()), Vec::<&str>::new());
        let after = load(
            &dir,
            "port = 9500\nmax_connections = 10\n[permissions]\nblocked_tools = [\"b\"]\n",
        );
        assert_eq!(
            before.changed_keys(&after),
            ["port", "permissions", "max_connections"]
        );
    }
}
