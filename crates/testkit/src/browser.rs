//! A real headless Chromium (Debian's `chromium`, installed by
//! scripts/install-test-deps.sh; never a downloaded browser) driven over
//! the DevTools protocol, for tests of pages the daemon serves: open tabs,
//! evaluate script in them, wait for what the page shows, click, take
//! screenshots. A private profile in the run directory; nothing reaches
//! the network; the browser's process group is killed on drop.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use futures::{SinkExt, StreamExt};
use rustix::process::{Pid, Signal};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The flags every headless Chromium of the tests gets: nothing that would
/// reach the network, no first-run chrome, DevTools on a port it picks.
pub const CHROMIUM_FLAGS: &str = "--headless=new --no-sandbox --disable-gpu --disable-crash-reporter \
     --disable-background-networking --disable-component-update --disable-sync --no-first-run \
     --no-default-browser-check --disable-quic --window-size=1280,800 --remote-debugging-port=0 \
     --enable-logging=stderr";

/// How long a DevTools answer or a condition waited for may take.
const PATIENCE: Duration = Duration::from_secs(30);

/// `chromium` on PATH.
pub fn chromium_program() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("chromium"))
        .find(|path| path.is_file())
}

/// Starts `command` as the leader of a process group of its own.
pub fn spawn_in_group(
    mut command: tokio::process::Command,
    what: &str,
) -> anyhow::Result<(tokio::process::Child, Pid)> {
    let child = command.process_group(0).spawn();
    let child = child.with_context(|| format!("cannot start {what}"))?;
    let group = child
        .id()
        .and_then(|id| Pid::from_raw(i32::try_from(id).ok()?));
    let group = group.with_context(|| format!("{what} has no process id"))?;
    Ok((child, group))
}

/// One headless Chromium.
pub struct Browser {
    run_dir: PathBuf,
    devtools_port: u16,
    _child: tokio::process::Child,
    group: Pid,
}

impl Browser {
    /// Starts Chromium with its profile and log under `run_dir`; `None`
    /// (said on stderr, a failure under CI) when it is not installed.
    pub async fn start(run_dir: &Path) -> anyhow::Result<Option<Self>> {
        let Some(program) = chromium_program() else {
            let message = "chromium: not installed; run scripts/install-test-deps.sh";
            assert!(std::env::var_os("CI").is_none(), "{message}");
            eprintln!("\n*** SKIPPED: {message} ***\n");
            return Ok(None);
        };
        std::fs::create_dir_all(run_dir.join("home"))?;
        let log = std::fs::File::create(run_dir.join("chromium.log"))?;
        let mut command = tokio::process::Command::new(program);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", run_dir.join("home"))
            .env("LANG", "C.UTF-8")
            .args(CHROMIUM_FLAGS.split_whitespace())
            .arg(format!(
                "--user-data-dir={}",
                run_dir.join("profile").display()
            ))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        let (child, group) = spawn_in_group(command, "chromium")?;
        let active = run_dir.join("profile/DevToolsActivePort");
        let started = Instant::now();
        let devtools_port = loop {
            if let Some(port) = std::fs::read_to_string(&active)
                .ok()
                .and_then(|text| text.lines().next()?.trim().parse().ok())
            {
                break port;
            }
            if started.elapsed() > PATIENCE {
                let log = std::fs::read_to_string(run_dir.join("chromium.log")).unwrap_or_default();
                bail!("chromium wrote no DevToolsActivePort within {PATIENCE:?}:\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        Ok(Some(Self {
            run_dir: run_dir.to_owned(),
            devtools_port,
            _child: child,
            group,
        }))
    }

    /// A new tab showing `url`, loaded.
    pub async fn open(&self, url: &str) -> anyhow::Result<Tab> {
        let endpoint = format!("http://127.0.0.1:{}/json/new?{}", self.devtools_port, url);
        let target: Value = reqwest::Client::new()
            .put(endpoint)
            .send()
            .await?
            .json()
            .await
            .context("DevTools did not open a tab")?;
        let socket = target["webSocketDebuggerUrl"]
            .as_str()
            .with_context(|| format!("a tab without a DevTools socket: {target}"))?;
        let (ws, _) = tokio_tungstenite::connect_async(socket).await?;
        let mut tab = Tab { ws, next_id: 1 };
        tab.wait_until("document.readyState === 'complete'").await?;
        Ok(tab)
    }

    /// Where screenshots and the log go.
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Renderers and helpers go with the group.
        let _ = rustix::process::kill_process_group(self.group, Signal::KILL);
    }
}

/// One tab, over its own DevTools connection.
pub struct Tab {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

impl Tab {
    /// Sends one DevTools command and returns its result.
    pub async fn call(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"id": id, "method": method, "params": params});
        self.ws.send(Message::text(request.to_string())).await?;
        let reply = tokio::time::timeout(PATIENCE, async {
            while let Some(message) = self.ws.next().await {
                if let Message::Text(text) = message? {
                    let reply: Value = serde_json::from_str(&text)?;
                    if reply["id"] == id {
                        return Ok(reply);
                    }
                }
            }
            bail!("DevTools closed the connection")
        })
        .await
        .with_context(|| format!("no answer to {method} within {PATIENCE:?}"))??;
        match reply.get("result") {
            Some(result) => Ok(result.clone()),
            None => bail!("{method} failed: {reply}"),
        }
    }

    /// The value of `expression` in the page (promises awaited).
    pub async fn eval(&mut self, expression: &str) -> anyhow::Result<Value> {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(thrown) = result.get("exceptionDetails") {
            bail!("{expression} threw: {thrown}");
        }
        Ok(result["result"]["value"].clone())
    }

    /// Waits until `condition` is true in the page; how long it took. A
    /// page being replaced (its script context destroyed mid-evaluation)
    /// is waited for too.
    pub async fn wait_until(&mut self, condition: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        loop {
            let held = self.eval(&format!("!!({condition})")).await;
            if matches!(&held, Ok(value) if *value == json!(true)) {
                return Ok(started.elapsed());
            }
            if started.elapsed() > PATIENCE {
                let body = self
                    .eval("document.body ? document.body.innerText : ''")
                    .await
                    .unwrap_or_default();
                bail!(
                    "{condition} did not hold within {PATIENCE:?} (last: {held:?}); the page shows:\n{body}"
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Clicks the first button whose text is `label` inside the element
    /// `within` selects.
    pub async fn click_button(&mut self, within: &str, label: &str) -> anyhow::Result<()> {
        let clicked = self
            .eval(&format!(
                "(() => {{ const root = document.querySelector({within:?}); \
                 const button = root && [...root.querySelectorAll('button')].find((b) => b.textContent.trim() === {label:?}); \
                 if (!button) return false; button.click(); return true; }})()"
            ))
            .await?;
        if clicked != json!(true) {
            bail!("no button {label:?} in {within}");
        }
        Ok(())
    }

    /// Goes to `url` and waits for the new page to load (not the old one
    /// still showing).
    pub async fn navigate(&mut self, url: &str) -> anyhow::Result<()> {
        self.eval("window.leaving = true").await?;
        self.call("Page.navigate", json!({"url": url})).await?;
        self.wait_until("!window.leaving && document.readyState === 'complete'")
            .await?;
        Ok(())
    }

    /// A PNG of what the tab shows, written to `path`.
    pub async fn screenshot(&mut self, path: &Path) -> anyhow::Result<()> {
        // A tab in the background paints no frame to capture.
        self.call("Page.bringToFront", json!({})).await?;
        let shot = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await?;
        let data = shot["data"].as_str().context("a screenshot without data")?;
        let png = base64::engine::general_purpose::STANDARD.decode(data)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, png)?;
        Ok(())
    }
}
