//! A real VS Code for extension tests: code-server 4.139.1 (VS Code
//! 1.139.1, pinned in scripts/install-test-deps.sh under `.peers/`) on a
//! free port of 127.0.0.1 without auth, and a headless Chromium showing it,
//! which is what starts the extension host. Extensions are installed by
//! copying their folders; HOME, TMPDIR, the XDG directories, the user data
//! and the extensions directory are private to the run directory, and no
//! marketplace, telemetry or update check is contacted. Both processes lead
//! their own process groups, killed on [`CodeServer::stop`] and on drop.
//!
//! Settings: code-server reads the user settings when the window loads but
//! misses later changes of the file (its user-data URIs have no authority,
//! the watcher's events do), so [`CodeServer::write_settings`] takes effect
//! on [`CodeServer::reload_window`]; workspace settings
//! ([`CodeServer::write_workspace_settings`]) apply live, in about 0.3 s.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use futures::{SinkExt, StreamExt};
use rustix::process::{Pid, Signal};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::browser::{CHROMIUM_FLAGS, chromium_program, spawn_in_group};
use crate::openclaw::free_port;
use crate::peers::repo_root;

/// How long code-server may take to answer `/healthz` (about 0.7 s).
const HEALTH_PATIENCE: Duration = Duration::from_secs(60);
/// How long a stop may take before the groups are killed.
const STOP_PATIENCE: Duration = Duration::from_secs(10);
const INSTALL_HINT: &str = "run scripts/install-test-deps.sh (as root on Debian it installs \
     chromium and libkrb5-dev, then code-server@4.139.1 under .peers/code-server)";
const CODE_SERVER_FLAGS: &str =
    "--auth none --disable-telemetry --disable-update-check --disable-workspace-trust";
/// The private XDG directories (variable, directory under the run dir).
const XDG: [(&str, &str); 5] = [
    ("XDG_CONFIG_HOME", "xdg/config"),
    ("XDG_DATA_HOME", "xdg/data"),
    ("XDG_CACHE_HOME", "xdg/cache"),
    ("XDG_STATE_HOME", "xdg/state"),
    ("XDG_RUNTIME_DIR", "xdg/runtime"),
];

/// What to run VS Code with.
#[derive(Debug, Clone, Default)]
pub struct CodeServerOptions {
    /// The folder the window opens.
    pub workspace: PathBuf,
    /// Extension folders (with a package.json), each installed as
    /// `<publisher>.<name>-<version>`.
    pub extensions: Vec<PathBuf>,
    /// User settings, merged over [`default_settings`].
    pub settings: Value,
    /// Added to code-server's environment, so the extension host's too.
    pub env: Vec<(String, String)>,
    /// Extension ids given `--enable-proposed-api`.
    pub proposed_api: Vec<String>,
}

/// A running code-server and the headless Chromium window on it.
#[derive(Debug)]
pub struct CodeServer {
    run_dir: PathBuf,
    port: u16,
    workspace: PathBuf,
    code_server: Option<(tokio::process::Child, Pid)>,
    chromium: Option<(tokio::process::Child, Pid)>,
}

/// The settings every run starts from: no workspace trust (it would
/// disable extensions), no welcome page, no telemetry from extensions.
pub fn default_settings() -> Value {
    json!({
        "security.workspace.trust.enabled": false,
        "workbench.startupEditor": "none",
        "telemetry.telemetryLevel": "off",
    })
}

impl CodeServer {
    /// Whether code-server and Chromium are installed (diagnostics only:
    /// [`Self::start`] fails with the way to install them).
    pub fn available() -> bool {
        code_server_program().exists() && node24_bin().exists() && chromium_program().is_some()
    }

    /// Installs the extensions, starts code-server under `run_dir` (created
    /// if missing) and waits for `/healthz`, then opens the workspace in
    /// headless Chromium. `onStartupFinished` extensions activate about
    /// 10 s later: wait with [`Self::wait_for_exthost_log`].
    pub async fn start(run_dir: &Path, options: CodeServerOptions) -> anyhow::Result<Self> {
        let program = code_server_program();
        if !program.exists() || !node24_bin().exists() {
            bail!(
                "code-server is not installed ({}): {INSTALL_HINT}",
                program.display()
            );
        }
        let Some(chromium) = chromium_program() else {
            bail!("chromium is not on PATH: {INSTALL_HINT}");
        };
        std::fs::create_dir_all(run_dir)?;
        let run_dir = std::fs::canonicalize(run_dir)?;
        for dir in ["home", "tmp", "udd/User", "ext", "chrome"]
            .into_iter()
            .chain(XDG.map(|(_, dir)| dir))
        {
            std::fs::create_dir_all(run_dir.join(dir))?;
        }
        let private = std::os::unix::fs::PermissionsExt::from_mode(0o700);
        std::fs::set_permissions(run_dir.join("xdg/runtime"), private)?;
        for extension in &options.extensions {
            install_extension(extension, &run_dir.join("ext"))?;
        }
        let port = free_port();
        let config = format!("bind-addr: 127.0.0.1:{port}\nauth: none\ncert: false\n");
        std::fs::write(run_dir.join("cs.yaml"), config)?;
        let mut server = CodeServer {
            run_dir: run_dir.clone(),
            port,
            workspace: options.workspace.clone(),
            code_server: None,
            chromium: None,
        };
        server.write_settings(options.settings.clone())?;

        let started = Instant::now();
        let mut command = server.command(&program, "code-server.log")?;
        command.args(CODE_SERVER_FLAGS.split(' '));
        command.arg("--bind-addr").arg(format!("127.0.0.1:{port}"));
        for (flag, dir) in [
            ("--config", "cs.yaml"),
            ("--user-data-dir", "udd"),
            ("--extensions-dir", "ext"),
        ] {
            command.arg(flag).arg(run_dir.join(dir));
        }
        for id in &options.proposed_api {
            command.args(["--enable-proposed-api", id]);
        }
        command
            .arg(&options.workspace)
            .env("EXTENSIONS_GALLERY", "{}")
            .envs(options.env.iter().map(|(key, value)| (key, value)));
        server.code_server = Some(spawn_in_group(command, "code-server")?);
        loop {
            let health = http()?
                .get(format!("{}/healthz", server.url()))
                .send()
                .await;
            if health.is_ok_and(|response| response.status().is_success()) {
                break;
            }
            let exited = server
                .code_server
                .as_mut()
                .and_then(|(child, _)| child.try_wait().ok());
            if let Some(Some(status)) = exited {
                bail!(
                    "code-server exited ({status}):\n{}",
                    server.output("code-server.log")
                );
            }
            if started.elapsed() > HEALTH_PATIENCE {
                let output = server.output("code-server.log");
                bail!("code-server did not answer /healthz within {HEALTH_PATIENCE:?}:\n{output}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut command = server.command(&chromium, "chromium.log")?;
        command
            .args(CHROMIUM_FLAGS.split_whitespace())
            .arg(format!(
                "--user-data-dir={}",
                run_dir.join("chrome").display()
            ))
            .arg(server.window_url()?.as_str());
        server.chromium = Some(spawn_in_group(command, "chromium")?);
        eprintln!(
            "code-server on port {port} healthy after {:.1} s; chromium started (run dir {})",
            started.elapsed().as_secs_f64(),
            run_dir.display()
        );
        Ok(server)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The run directory (`code-server.log`, `chromium.log` with the
    /// window's console, `udd/logs/`).
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// The extension host's log (`udd/logs/*/exthostN/remoteexthost.log`;
    /// every window load starts another), all of them concatenated.
    pub fn exthost_log(&self) -> String {
        self.logs(|path, name| {
            name == "remoteexthost.log"
                && path
                    .parent()
                    .and_then(Path::file_name)
                    .is_some_and(|dir| dir.to_string_lossy().starts_with("exthost"))
        })
    }

    /// What extensions wrote to the output channel `name`: a log channel
    /// (`createOutputChannel(name, {log: true})`: `exthostN/<extension
    /// id>/<name>.log`) or a plain one (`…/output_logging_*/N-<name>.log`).
    pub fn output_channel(&self, name: &str) -> String {
        let (exact, numbered) = (format!("{name}.log"), format!("-{name}.log"));
        self.logs(|_, file| file == exact || file.ends_with(&numbered))
    }

    /// Waits until the extension host's log contains `needle`; the error
    /// carries the log's tail.
    pub async fn wait_for_exthost_log(
        &self,
        needle: &str,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            let log = self.exthost_log();
            if log.contains(needle) {
                return Ok(());
            }
            if started.elapsed() > timeout {
                bail!(
                    "the extension host did not log {needle:?} within {timeout:?} ({}); its log \
                     ends:\n{}\ncode-server's output ends:\n{}",
                    self.run_dir.display(),
                    tail(&log, 6000),
                    tail(&self.output("code-server.log"), 2000)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Replaces the user settings with `settings` merged over
    /// [`default_settings`] (renamed into place, never half written). They
    /// apply when the window loads: call [`Self::reload_window`] after.
    pub fn write_settings(&self, settings: Value) -> anyhow::Result<()> {
        let mut merged = default_settings();
        if let (Some(merged), Value::Object(settings)) = (merged.as_object_mut(), settings) {
            merged.extend(settings);
        }
        write_atomically(&self.run_dir.join("udd/User/settings.json"), &merged)
    }

    /// Replaces `<workspace>/.vscode/settings.json` with `settings`; VS Code
    /// applies it live (`onDidChangeConfiguration`). Settings an extension
    /// declares with `application` or `machine` scope are ignored there.
    pub fn write_workspace_settings(&self, settings: Value) -> anyhow::Result<()> {
        write_atomically(&self.workspace.join(".vscode/settings.json"), &settings)
    }

    /// Reloads the window: a new extension host (`exthostN+1`) starts and
    /// reads the user settings again.
    pub async fn reload_window(&self) -> anyhow::Result<()> {
        self.devtools("Page.reload", json!({})).await.map(drop)
    }

    /// Runs a command the way a user does: F1, its title typed into the
    /// command palette, Enter.
    pub async fn run_command(&self, title: &str) -> anyhow::Result<()> {
        self.press("F1", 112, None).await?;
        tokio::time::sleep(Duration::from_millis(700)).await;
        self.devtools("Input.insertText", json!({"text": title}))
            .await?;
        tokio::time::sleep(Duration::from_millis(700)).await;
        self.press("Enter", 13, Some("\r")).await
    }

    /// One key pressed and released in the window.
    async fn press(&self, key: &str, code: u32, text: Option<&str>) -> anyhow::Result<()> {
        let mut down = json!({"type": "keyDown", "key": key, "code": key,
                              "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code});
        if let Some(text) = text {
            down["text"] = json!(text);
        }
        self.devtools("Input.dispatchKeyEvent", down).await?;
        let up = json!({"type": "keyUp", "key": key, "code": key,
                        "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code});
        self.devtools("Input.dispatchKeyEvent", up).await.map(drop)
    }

    /// Whether a notification shows a button labelled `label`.
    pub async fn shows_notification_button(&self, label: &str) -> anyhow::Result<bool> {
        self.notification_button(label, false).await
    }

    /// Clicks the button labelled `label` of a notification, as a user
    /// does; `false` when no notification shows one (yet).
    pub async fn click_notification_button(&self, label: &str) -> anyhow::Result<bool> {
        self.notification_button(label, true).await
    }

    async fn notification_button(&self, label: &str, click: bool) -> anyhow::Result<bool> {
        let script = format!(
            "(() => {{ const button = [...document.querySelectorAll('.notifications-toasts .monaco-button')]
                 .find((b) => b.textContent.trim() === {label});
               if (!button) return false; if ({click}) button.click(); return true; }})()",
            label = serde_json::to_string(label)?
        );
        let reply = self
            .devtools(
                "Runtime.evaluate",
                json!({"expression": script, "returnByValue": true}),
            )
            .await?;
        Ok(reply["result"]["value"] == true)
    }

    /// Writes a PNG of the window to `path`.
    pub async fn screenshot(&self, path: &Path) -> anyhow::Result<()> {
        let shot = self
            .devtools("Page.captureScreenshot", json!({"format": "png"}))
            .await?;
        let data = shot["data"].as_str().context("a screenshot without data")?;
        std::fs::write(
            path,
            base64::engine::general_purpose::STANDARD.decode(data)?,
        )?;
        Ok(())
    }

    /// Stops Chromium and code-server (SIGTERM to each group, SIGKILL after
    /// 10 s) and waits until no process of either group is left.
    pub async fn stop(mut self) {
        for (mut child, group) in [self.chromium.take(), self.code_server.take()]
            .into_iter()
            .flatten()
        {
            let _ = rustix::process::kill_process_group(group, Signal::TERM);
            if tokio::time::timeout(STOP_PATIENCE, child.wait())
                .await
                .is_err()
            {
                let _ = rustix::process::kill_process_group(group, Signal::KILL);
                let _ = child.wait().await;
            }
            // Helpers (the extension host, renderers) must not outlive it.
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
            let started = Instant::now();
            while group_alive(group) && started.elapsed() < STOP_PATIENCE {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    /// Sends one DevTools command to the window's page and returns its result.
    async fn devtools(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        let active = std::fs::read_to_string(self.run_dir.join("chrome/DevToolsActivePort"))
            .context("chromium has not written DevToolsActivePort")?;
        let port: u16 = active.lines().next().unwrap_or_default().trim().parse()?;
        let list = format!("http://127.0.0.1:{port}/json/list");
        let targets: Vec<Value> = http()?.get(list).send().await?.json().await?;
        let prefix = self.url();
        let Some(socket) = targets
            .iter()
            .filter(|target| target["type"] == "page")
            .find(|target| {
                target["url"]
                    .as_str()
                    .is_some_and(|url| url.starts_with(&prefix))
            })
            .and_then(|target| target["webSocketDebuggerUrl"].as_str())
        else {
            bail!("no DevTools page on {prefix}: {targets:?}");
        };
        let (mut ws, _) = tokio_tungstenite::connect_async(socket).await?;
        let request = json!({"id": 1, "method": method, "params": params});
        ws.send(Message::text(request.to_string())).await?;
        let reply = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(message) = ws.next().await {
                if let Message::Text(text) = message? {
                    let reply: Value = serde_json::from_str(&text)?;
                    if reply["id"] == 1 {
                        return Ok(reply);
                    }
                }
            }
            bail!("DevTools closed the connection")
        })
        .await
        .with_context(|| format!("no answer to {method} within 30 s"))??;
        let _ = ws.close(None).await;
        match reply.get("result") {
            Some(result) => Ok(result.clone()),
            None => bail!("{method} failed: {reply}"),
        }
    }

    fn window_url(&self) -> anyhow::Result<reqwest::Url> {
        let mut url = reqwest::Url::parse(&self.url())?;
        let folder = self
            .workspace
            .to_str()
            .context("a workspace path in UTF-8")?;
        url.query_pairs_mut().append_pair("folder", folder);
        Ok(url)
    }

    fn output(&self, file: &str) -> String {
        std::fs::read_to_string(self.run_dir.join(file)).unwrap_or_default()
    }

    /// The files under `udd/logs` that `wanted(path, file name)`, sorted and
    /// concatenated.
    fn logs(&self, wanted: impl Fn(&Path, &str) -> bool) -> String {
        let mut found = Vec::new();
        let mut dirs = vec![self.run_dir.join("udd/logs")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if wanted(&path, &entry.file_name().to_string_lossy()) {
                    found.push(path);
                }
            }
        }
        found.sort();
        let texts = found
            .iter()
            .map(|file| std::fs::read_to_string(file).unwrap_or_default());
        texts.collect::<Vec<_>>().join("\n")
    }

    /// `program` in a clean, private environment, its output to `log`.
    fn command(&self, program: &Path, log: &str) -> anyhow::Result<tokio::process::Command> {
        let output = std::fs::File::create(self.run_dir.join(log))?;
        let errors = output.try_clone()?;
        let path = std::env::var("PATH").unwrap_or_default();
        let dir = |name: &str| self.run_dir.join(name);
        let mut command = tokio::process::Command::new(program);
        command
            .env_clear()
            .env("PATH", format!("{}:{path}", node24_bin().display()))
            .env("HOME", dir("home"))
            .env("TMPDIR", dir("tmp"))
            .envs(XDG.map(|(name, path)| (name, dir(path))))
            .env("LANG", "C.UTF-8")
            .current_dir(dir("home"))
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors)
            .kill_on_drop(true);
        Ok(command)
    }
}

impl Drop for CodeServer {
    fn drop(&mut self) {
        for (_, group) in [self.chromium.as_ref(), self.code_server.as_ref()]
            .into_iter()
            .flatten()
        {
            let _ = rustix::process::kill_process_group(*group, Signal::KILL);
        }
    }
}

/// Whether a process of `group` still runs (zombies, which init reaps
/// seconds later, do not count).
fn group_alive(group: Pid) -> bool {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return false;
    };
    processes.flatten().any(|process| {
        let stat = std::fs::read_to_string(process.path().join("stat")).unwrap_or_default();
        // "pid (comm) state ppid pgrp …"; comm may contain anything.
        let fields = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace());
        let fields: Vec<&str> = fields.into_iter().flatten().take(3).collect();
        fields.len() == 3 && fields[0] != "Z" && fields[2] == group.as_raw_nonzero().to_string()
    })
}

fn code_server_program() -> PathBuf {
    repo_root().join(".peers/code-server/node_modules/.bin/code-server")
}

/// Node 24's bin directory (code-server runs only on Node 24).
fn node24_bin() -> PathBuf {
    repo_root().join(".peers/node24/node_modules/node/bin")
}

fn write_atomically(path: &Path, value: &Value) -> anyhow::Result<()> {
    let dir = path.parent().context("a settings file needs a directory")?;
    std::fs::create_dir_all(dir)?;
    let partial = dir.join(".settings.json.partial");
    std::fs::write(&partial, serde_json::to_vec_pretty(value)?)?;
    std::fs::rename(&partial, path)?;
    Ok(())
}

/// Copies the extension folder `source` into `extensions` as
/// `<publisher>.<name>-<version>` (how VS Code finds an installed one).
fn install_extension(source: &Path, extensions: &Path) -> anyhow::Result<()> {
    let manifest = source.join("package.json");
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(&manifest).with_context(|| format!("cannot read {}", manifest.display()))?,
    )?;
    let field = |key: &str| {
        let value = manifest[key].as_str();
        value.with_context(|| format!("{} has no {key}", source.display()))
    };
    let folder = format!(
        "{}.{}-{}",
        field("publisher")?,
        field("name")?,
        field("version")?
    );
    copy_dir(source, &extensions.join(folder))
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

fn tail(text: &str, chars: usize) -> &str {
    let mut start = text.len().saturating_sub(chars);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// An HTTP client for 127.0.0.1 (no proxy from the environment).
fn http() -> anyhow::Result<reqwest::Client> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10));
    Ok(client.build()?)
}
