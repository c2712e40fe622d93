//! `copilot-bridge service install|uninstall|status` (docs/install.md): the
//! daemon as a user service, a systemd user unit on Linux
//! (`$XDG_CONFIG_HOME/systemd/user/copilot-bridge.service`) or a launchd
//! agent on macOS (`~/Library/LaunchAgents/io.github.copilot-bridge.plist`),
//! that runs `serve` in the user's home and starts it again when it fails.
//! The text of both is `unit`'s; here are the files, `systemctl` and
//! `launchctl`, and what `daemon start` asks before starting a second daemon.

mod unit;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use bridge_agents::AgentEnv;
use bridge_config::BridgeConfig;
use bridge_util::owner_only::{Replace, write_atomically};

use super::tool::write_stdout;
use crate::args::{GlobalArgs, ServiceCommand, ServiceInstallArgs};
use crate::exit::{self, Failure};
pub use unit::{LAUNCHD_LABEL, SYSTEMD_UNIT, Spec};

/// Which service manager this machine has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Manager {
    Systemd,
    Launchd,
}

impl Manager {
    fn here() -> Result<Self, Failure> {
        if cfg!(target_os = "macos") {
            Ok(Self::Launchd)
        } else if cfg!(target_os = "linux") {
            Ok(Self::Systemd)
        } else {
            Err(Failure::usage(
                "`service` knows systemd (Linux) and launchd (macOS) only; \
                 run `copilot-bridge daemon start` instead",
            ))
        }
    }

    /// The program that manages the service (`systemctl`, `launchctl`).
    fn tool(self) -> &'static str {
        match self {
            Self::Systemd => "systemctl",
            Self::Launchd => "launchctl",
        }
    }
}

/// Where the service's file is and what manages it.
struct Place {
    manager: Manager,
    file: PathBuf,
    user_home: PathBuf,
}

impl Place {
    fn here(env: &AgentEnv) -> Result<Self, Failure> {
        let manager = Manager::here()?;
        let user_home = env
            .home()
            .filter(|home| home.is_absolute())
            .ok_or_else(|| Failure::usage("HOME is not set to an absolute path: no user service"))?
            .to_path_buf();
        let file = match manager {
            Manager::Systemd => {
                // The XDG base directory rule: a relative value is ignored.
                let config = std::env::var_os("XDG_CONFIG_HOME")
                    .map(PathBuf::from)
                    .filter(|dir| dir.is_absolute())
                    .unwrap_or_else(|| user_home.join(".config"));
                config.join("systemd/user").join(SYSTEMD_UNIT)
            }
            Manager::Launchd => user_home
                .join("Library/LaunchAgents")
                .join(format!("{LAUNCHD_LABEL}.plist")),
        };
        Ok(Self {
            manager,
            file,
            user_home,
        })
    }

    /// The service's text for `spec`.
    fn text(&self, spec: &Spec) -> String {
        match self.manager {
            Manager::Systemd => unit::systemd_unit(spec),
            Manager::Launchd => unit::launchd_plist(spec),
        }
    }

    fn logs_hint(&self) -> String {
        match self.manager {
            Manager::Systemd => "journalctl --user -u copilot-bridge".to_owned(),
            Manager::Launchd => format!(
                "{} (Console: Log Reports)",
                self.user_home
                    .join("Library/Logs/copilot-bridge.log")
                    .display()
            ),
        }
    }
}

pub async fn run(
    global: &GlobalArgs,
    config: &BridgeConfig,
    command: ServiceCommand,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    let place = Place::here(env)?;
    match command {
        ServiceCommand::Install(args) => install(global, config, &args, env, &place).await,
        ServiceCommand::Uninstall => uninstall(env, &place),
        ServiceCommand::Status => status(global, config, env, &place),
    }
}

/// What the service runs for this command's configuration: `serve` with
/// the same state directory, config file, port and flags, paths absolute.
fn spec(
    global: &GlobalArgs,
    config: &BridgeConfig,
    trust_project_providers: bool,
    place: &Place,
) -> Result<Spec, Failure> {
    let program = std::env::current_exe()
        .map_err(|err| Failure::internal(format!("cannot find this program's own path: {err}")))?;
    let absolute = |path: &Path| {
        std::path::absolute(path).map_err(|err| {
            Failure::internal(format!("cannot make {} absolute: {err}", path.display()))
        })
    };
    let home = absolute(&config.home)?;
    let config_file = global.config.as_deref().map(absolute).transpose()?;
    // Kept running (not `--detached`): the service manager restarts it.
    let args = super::daemon::serve_arguments(
        global,
        &home,
        config_file.as_deref(),
        super::daemon::Serve::Kept,
        trust_project_providers,
    );
    let text = |word: OsString| {
        word.into_string().map_err(|word| {
            Failure::usage(format!(
                "{word:?} is not valid UTF-8: a service file cannot name it"
            ))
        })
    };
    Ok(Spec {
        program: text(program.into_os_string())?,
        args: args.into_iter().map(text).collect::<Result<_, _>>()?,
        user_home: text(place.user_home.clone().into_os_string())?,
    })
}

async fn install(
    global: &GlobalArgs,
    config: &BridgeConfig,
    args: &ServiceInstallArgs,
    env: &AgentEnv,
    place: &Place,
) -> Result<ExitCode, Failure> {
    let spec = spec(global, config, args.trust_project_providers, place)?;
    write_atomically(&place.file, place.text(&spec).as_bytes(), Replace::Private).map_err(
        |err| Failure::internal(format!("cannot write {}: {err}", place.file.display())),
    )?;
    let mut out = format!("wrote {}\n", place.file.display());
    let start_commands = match place.manager {
        Manager::Systemd => format!(
            "systemctl --user daemon-reload && systemctl --user enable --now {SYSTEMD_UNIT}"
        ),
        Manager::Launchd => format!("launchctl bootstrap gui/$(id -u) {}", place.file.display()),
    };
    if args.no_start {
        out.push_str(&format!("start it with: {start_commands}\n"));
        write_stdout(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    // The service's daemon would find the port taken and fail over and over.
    if let Some(client) = bridge_server::find_running(&config.home).await
        && managed(env).and_then(|state| state.main_pid) != Some(client.file().pid)
    {
        return Err(Failure::internal(format!(
            "{out}a daemon is already running on {} (pid {}), not as the service: \
             stop it with `copilot-bridge daemon stop`, then run `copilot-bridge service install` again",
            client.address(),
            client.file().pid
        )));
    }
    let tool = find_tool(env, place.manager).ok_or_else(|| {
        Failure::internal(format!(
            "{out}{} is not on PATH, so the service is not started (no {} here, as in most containers); \
             run `copilot-bridge daemon start` instead, or on a machine with it: {start_commands}",
            place.manager.tool(),
            match place.manager {
                Manager::Systemd => "systemd",
                Manager::Launchd => "launchd",
            }
        ))
    })?;
    match place.manager {
        Manager::Systemd => {
            manage(&tool, &["--user", "daemon-reload"], &out)?;
            manage(&tool, &["--user", "enable", SYSTEMD_UNIT], &out)?;
            // Started, or started again: an install over an older unit
            // runs the new one.
            manage(&tool, &["--user", "restart", SYSTEMD_UNIT], &out)?;
        }
        Manager::Launchd => {
            let domain = launchd_domain()?;
            // A loaded agent is replaced: out first (it may not be loaded).
            let _ = run_tool(&tool, &["bootout", &format!("{domain}/{LAUNCHD_LABEL}")]);
            let file = place.file.display().to_string();
            manage(&tool, &["bootstrap", &domain, &file], &out)?;
        }
    }
    out.push_str(&format!(
        "the service is enabled and started; status: copilot-bridge service status; logs: {}\n",
        place.logs_hint()
    ));
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

fn uninstall(env: &AgentEnv, place: &Place) -> Result<ExitCode, Failure> {
    if !place.file.exists() {
        write_stdout(&format!(
            "not installed ({} does not exist)\n",
            place.file.display()
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    let tool = find_tool(env, place.manager);
    if let Some(tool) = &tool {
        let stopped = match place.manager {
            Manager::Systemd => run_tool(tool, &["--user", "disable", "--now", SYSTEMD_UNIT]),
            Manager::Launchd => launchd_domain().and_then(|domain| {
                run_tool(tool, &["bootout", &format!("{domain}/{LAUNCHD_LABEL}")])
            }),
        };
        match stopped {
            Ok(()) => out.push_str("stopped and disabled the service\n"),
            Err(failure) => out.push_str(&format!(
                "could not stop the service (removing its file anyway): {}\n",
                failure.message
            )),
        }
    }
    std::fs::remove_file(&place.file).map_err(|err| {
        Failure::internal(format!(
            "{out}cannot remove {}: {err}",
            place.file.display()
        ))
    })?;
    out.push_str(&format!("removed {}\n", place.file.display()));
    if let Some(tool) = &tool
        && place.manager == Manager::Systemd
        && let Err(failure) = run_tool(tool, &["--user", "daemon-reload"])
    {
        out.push_str(&format!("{}\n", failure.message));
    }
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

fn status(
    global: &GlobalArgs,
    config: &BridgeConfig,
    env: &AgentEnv,
    place: &Place,
) -> Result<ExitCode, Failure> {
    let Ok(installed) = std::fs::read_to_string(&place.file) else {
        write_stdout(&format!(
            "not installed ({} does not exist); install it with: copilot-bridge service install\n",
            place.file.display()
        ))?;
        return Ok(ExitCode::from(exit::FAILED));
    };
    let mut out = format!("installed: {}\n", place.file.display());
    let current = place.text(&spec(global, config, false, place)?);
    let with_trust = place.text(&spec(global, config, true, place)?);
    if installed != current && installed != with_trust {
        out.push_str(
            "  it differs from what `service install` writes now (another program path, \
             state directory or flags): run `copilot-bridge service install` again to update it\n",
        );
    }
    let state = managed(env);
    let running = match (&state, find_tool(env, place.manager)) {
        (_, None) => {
            out.push_str(&format!(
                "state: unknown ({} is not on PATH)\n",
                place.manager.tool()
            ));
            false
        }
        (None, Some(_)) => {
            out.push_str("state: unknown (the service manager did not answer)\n");
            false
        }
        (Some(state), Some(_)) => {
            out.push_str(&format!("state: {}\n", state.describe()));
            state.is_up()
        }
    };
    out.push_str(&format!("logs: {}\n", place.logs_hint()));
    write_stdout(&out)?;
    Ok(if running {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::FAILED)
    })
}

/// What the service manager says about the installed service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceState {
    /// systemd's ActiveState (`active`, `activating`, `failed`, …) or
    /// launchd's state (`running`, `not running`, …).
    pub state: String,
    pub sub_state: Option<String>,
    /// The daemon's pid while it runs.
    pub main_pid: Option<u32>,
    /// The state directory the installed service serves.
    pub home: Option<PathBuf>,
}

impl ServiceState {
    /// Running or on its way (starting, or waiting to restart after a failure).
    pub fn is_up(&self) -> bool {
        matches!(
            self.state.as_str(),
            "active" | "activating" | "reloading" | "running"
        )
    }

    pub fn describe(&self) -> String {
        let mut text = self.state.clone();
        if let Some(sub) = &self.sub_state {
            text.push_str(&format!(" ({sub})"));
        }
        if let Some(pid) = self.main_pid {
            text.push_str(&format!(", pid {pid}"));
        }
        text
    }

    /// How the user restarts it.
    pub fn restart_hint() -> String {
        if cfg!(target_os = "macos") {
            format!("launchctl kickstart -k gui/$(id -u)/{LAUNCHD_LABEL}")
        } else {
            format!("systemctl --user restart {SYSTEMD_UNIT}")
        }
    }
}

/// The installed service's state, when it is installed and its manager
/// answers; `None` otherwise (no unit, no systemctl, no user manager).
pub fn managed(env: &AgentEnv) -> Option<ServiceState> {
    let place = Place::here(env).ok()?;
    let text = std::fs::read_to_string(&place.file).ok()?;
    let tool = find_tool(env, place.manager)?;
    let mut state = match place.manager {
        Manager::Systemd => systemd_state(&tool)?,
        Manager::Launchd => launchd_state(&tool)?,
    };
    state.home = match place.manager {
        Manager::Systemd => unit::exec_start_words(&text),
        Manager::Launchd => None,
    }
    .and_then(|words| {
        let at = words.iter().position(|word| word == "--home")?;
        words.get(at + 1).map(PathBuf::from)
    });
    Some(state)
}

fn systemd_state(systemctl: &Path) -> Option<ServiceState> {
    let output = Command::new(systemctl)
        .args([
            "--user",
            "show",
            "--property=ActiveState,SubState,MainPID",
            SYSTEMD_UNIT,
        ])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let value = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_owned)
    };
    Some(ServiceState {
        state: value("ActiveState")?,
        sub_state: value("SubState"),
        main_pid: value("MainPID")
            .and_then(|pid| pid.parse().ok())
            .filter(|pid| *pid != 0),
        home: None,
    })
}

fn launchd_state(launchctl: &Path) -> Option<ServiceState> {
    let domain = launchd_domain().ok()?;
    let output = Command::new(launchctl)
        .args(["print", &format!("{domain}/{LAUNCHD_LABEL}")])
        .output()
        .ok()?;
    if !output.status.success() {
        return Some(ServiceState {
            state: "not loaded".into(),
            sub_state: None,
            main_pid: None,
            home: None,
        });
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let value = |key: &str| {
        text.lines()
            .find_map(|line| line.trim().strip_prefix(key)?.strip_prefix(" = "))
            .map(str::to_owned)
    };
    Some(ServiceState {
        state: value("state")?,
        sub_state: None,
        main_pid: value("pid").and_then(|pid| pid.parse().ok()),
        home: None,
    })
}

/// `gui/UID`, the domain of the user's launchd agents.
fn launchd_domain() -> Result<String, Failure> {
    let output = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|err| Failure::internal(format!("cannot run `id -u`: {err}")))?;
    let uid = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || uid.is_empty() {
        return Err(Failure::internal("`id -u` did not print this user's id"));
    }
    Ok(format!("gui/{uid}"))
}

/// The manager's program as PATH finds it.
fn find_tool(env: &AgentEnv, manager: Manager) -> Option<PathBuf> {
    std::env::split_paths(env.search_path()?)
        .map(|dir| dir.join(manager.tool()))
        .find(|candidate| candidate.is_file())
}

/// Runs the manager's program; its stderr in the failure.
fn run_tool(tool: &Path, args: &[&str]) -> Result<(), Failure> {
    let shown = format!("{} {}", tool.display(), args.join(" "));
    let output = Command::new(tool)
        .args(args)
        .output()
        .map_err(|err| Failure::internal(format!("cannot run `{shown}`: {err}")))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Failure::internal(format!(
        "`{shown}` failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

/// [`run_tool`] for `install`: what was done so far (`done`) and a hint
/// on the usual cause in the failure.
fn manage(tool: &Path, args: &[&str], done: &str) -> Result<(), Failure> {
    run_tool(tool, args).map_err(|failure| {
        Failure::internal(format!(
            "{done}{}\nthe service is written but not started: a user service manager must be \
             running for this user (not in most containers; on a server without a login \
             session: `loginctl enable-linger $USER`); meanwhile `copilot-bridge daemon start` \
             runs the daemon without it",
            failure.message
        ))
    })
}
