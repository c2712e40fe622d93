//! `copilot-bridge chat`: the hub's own agent in the terminal
//! (docs/chat.md). Always in a daemon session of its own (started when no
//! daemon runs), talked to over `/rpc` as the person at the machine (the
//! approver token: its asks are answered here, or from any other
//! surface): `session.create` or `session.resume`, then `session.prompt`
//! per prompt, `session.events` for what each turn does. `-p PROMPT` (or a
//! prompt piped on stdin) prints the answer and exits.

mod info;
mod print;
mod screen;

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bridge_config::BridgeConfig;
use bridge_server::client::GatewayClient;
use serde_json::{Value, json};

use super::daemon::{launch as launch_daemon, serve_command_args};
use super::remote::call_failure;
use crate::args::{ChatArgs, GlobalArgs};
use crate::exit::Failure;

pub async fn run(
    global: &GlobalArgs,
    config: &BridgeConfig,
    args: ChatArgs,
) -> Result<ExitCode, Failure> {
    let piped = if args.prompt.is_none() && !std::io::stdin().is_terminal() {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|err| {
            Failure::internal(format!("cannot read the prompt from stdin: {err}"))
        })?;
        Some(text)
    } else {
        None
    };
    let prompt = args.prompt.clone().or(piped);
    if prompt
        .as_ref()
        .is_some_and(|prompt| prompt.trim().is_empty())
    {
        return Err(Failure::usage("the prompt is empty"));
    }
    let conversation = Conversation::open(global, config, &args).await?;
    match prompt {
        Some(prompt) => {
            print::answer(
                &conversation,
                &prompt,
                args.model.as_deref(),
                args.runner.as_deref(),
            )
            .await
        }
        None => {
            let cwd = conversation.cwd.clone();
            let chosen = screen::Chosen {
                model: args.model.clone(),
                runner: args.runner.clone(),
            };
            screen::run(conversation, chosen, !args.no_alt_screen, cwd).await
        }
    }
}

/// The daemon session a chat talks in.
pub(crate) struct Conversation {
    pub client: GatewayClient,
    pub session: String,
    /// Its workspace.
    pub cwd: PathBuf,
    /// The conversation so far, when resumed (as `session.events` shows a
    /// task log); taken by the screen.
    pub history: Vec<Value>,
}

impl Conversation {
    /// The daemon (started when none runs) and a session of this chat's
    /// own: a new one in `--cwd`, or the conversation `--resume` names.
    pub async fn open(
        global: &GlobalArgs,
        config: &BridgeConfig,
        args: &ChatArgs,
    ) -> Result<Self, Failure> {
        if bridge_server::find_running(&config.home).await.is_none() {
            launch_daemon(&config.home, &serve_command_args(global, config, false)).await?;
        }
        let client = super::approvals::approver_client(config).await?;
        if let Some(asked) = &args.resume {
            let id = if asked.is_empty() {
                latest_conversation(&client).await?
            } else {
                asked.clone()
            };
            let resumed = call(&client, "session.resume", json!({"id": id})).await?;
            return Ok(Self {
                client,
                session: resumed["session"]["id"].as_str().unwrap_or(&id).to_owned(),
                cwd: resumed["session"]["cwd"]
                    .as_str()
                    .map(PathBuf::from)
                    .unwrap_or_default(),
                history: resumed["history"].as_array().cloned().unwrap_or_default(),
            });
        }
        let cwd = match &args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().map_err(|err| {
                Failure::internal(format!("cannot read the current directory: {err}"))
            })?,
        };
        let cwd = std::path::absolute(&cwd).unwrap_or(cwd);
        let session = create_session(&client, &cwd).await?;
        Ok(Self {
            client,
            session,
            cwd,
            history: Vec::new(),
        })
    }

    /// A new session in the same workspace (`/new`).
    pub async fn new_session(&mut self, cwd: &Path) -> Result<(), Failure> {
        self.session = create_session(&self.client, cwd).await?;
        self.history.clear();
        Ok(())
    }

    /// Starts a turn answering `prompt`, by `runner` (`native`,
    /// `copilot`; else the session's).
    pub async fn prompt(
        &self,
        prompt: &str,
        model: Option<&str>,
        runner: Option<&str>,
    ) -> Result<Value, Failure> {
        let mut params = json!({"session": self.session, "prompt": prompt});
        if let Some(runner) = runner {
            params["runner"] = json!(runner);
        }
        if let Some(model) = model {
            params["model"] = json!(model);
        }
        call(&self.client, "session.prompt", params).await
    }

    /// The session's events after `since`, waiting up to `wait_ms` for one.
    pub async fn events(&self, since: u64, wait_ms: u64) -> Result<Value, Failure> {
        call(
            &self.client,
            "session.events",
            json!({"session": self.session, "since": since, "waitMs": wait_ms}),
        )
        .await
    }

    /// The sequence number of the transcript's newest event.
    pub async fn newest(&self) -> Result<u64, Failure> {
        let mut since = 0;
        loop {
            let page = self.events(since, 0).await?;
            let next = page["next"].as_u64().unwrap_or(since);
            if next == since {
                return Ok(since);
            }
            since = next;
        }
    }

    pub async fn abort(&self) -> Result<Value, Failure> {
        call(
            &self.client,
            "session.abort",
            json!({"session": self.session}),
        )
        .await
    }
}

/// A daemon session of the chat's own in `cwd`.
async fn create_session(client: &GatewayClient, cwd: &Path) -> Result<String, Failure> {
    let label = format!("chat · {}", dir_name(cwd));
    let created = call(
        client,
        "session.create",
        json!({"cwd": cwd, "label": label, "foreground": true}),
    )
    .await?;
    created["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| Failure::internal(format!("session.create answered no id: {created}")))
}

async fn call(client: &GatewayClient, method: &str, params: Value) -> Result<Value, Failure> {
    client
        .call(method, params)
        .await
        .map_err(|err| call_failure(method, &err))
}

/// The newest logged conversation.
async fn latest_conversation(client: &GatewayClient) -> Result<String, Failure> {
    let listed = call(client, "session.transcripts", json!({})).await?;
    listed["logs"][0]["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| Failure::usage("there is no conversation to resume yet"))
}

fn dir_name(dir: &Path) -> String {
    dir.file_name().map_or_else(
        || dir.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}
