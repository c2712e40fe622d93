//! Who answers a policy "ask": the person at the terminal when there is
//! one, otherwise nobody (every "ask" is denied). Shared by `tool` and
//! `run`.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use std::time::Instant;

use bridge_policy::{Approval, ApprovalFuture, Approver, Ask, DenyAll, Scope, Surface};

/// The approver of a command: [`TerminalApprover`] when stdin and stderr are
/// terminals, else [`DenyAll`].
pub fn for_this_terminal(asking: Arc<AtomicBool>) -> Arc<dyn Approver> {
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Arc::new(TerminalApprover::new(asking))
    } else {
        Arc::new(DenyAll)
    }
}

/// Asks on the terminal when the policy says "ask".
pub struct TerminalApprover {
    /// One question at a time, even when tools run in parallel.
    one_at_a_time: Arc<Mutex<()>>,
    /// Set while a question is on the screen, so a progress indicator stays
    /// quiet.
    asking: Arc<AtomicBool>,
}

impl TerminalApprover {
    pub fn new(asking: Arc<AtomicBool>) -> Self {
        Self {
            one_at_a_time: Arc::new(Mutex::new(())),
            asking,
        }
    }
}

/// Shows `ask` and reads the answer: `y` once, `s` for the session, `r`
/// for a rule (when the ask offers them), anything else no.
fn ask_on_terminal(ask: &Ask, turn: &Mutex<()>, asking: &AtomicBool) -> Option<Scope> {
    let _turn = bridge_util::sync::lock(turn);
    asking.store(true, Ordering::SeqCst);
    let choices = ask.choices();
    let options = answer_options(&choices, ask.shared, &ask.rule_texts());
    let mut stderr = std::io::stderr().lock();
    let _ = write!(
        stderr,
        "\r\x1b[Kcopilot-bridge: {} needs approval: {}\n  arguments: {}\nAllow? {options}, [N] no: ",
        ask.tool, ask.reason, ask.arguments
    );
    let _ = stderr.flush();
    drop(stderr);
    let mut answer = String::new();
    let read = std::io::stdin().read_line(&mut answer);
    asking.store(false, Ordering::SeqCst);
    if read.is_err() {
        return None;
    }
    chosen_scope(&answer, &choices)
}

/// The answers a terminal offers for an ask with `choices` (its `shared`
/// session and the `rules` a rule grant keeps, shown before it is kept).
pub(crate) fn answer_options(choices: &[&str], shared: bool, rules: &[String]) -> String {
    let mut options = String::from("[y] once");
    if choices.contains(&"session") {
        options.push_str(if shared {
            ", [s] this session (shared with other clients)"
        } else {
            ", [s] this session"
        });
    }
    if choices.contains(&"rule") {
        options.push_str(&format!(
            ", [r] keep the rule {} for this workspace",
            rules.join(" + ")
        ));
    }
    options
}

/// The scope a typed answer allows: `y` once, `s` the session, `r` a rule
/// (when offered); anything else is no.
pub(crate) fn chosen_scope(answer: &str, choices: &[&str]) -> Option<Scope> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Scope::Once),
        "s" if choices.contains(&"session") => Some(Scope::Session),
        "r" if choices.contains(&"rule") => Some(Scope::Rule { expires_at: None }),
        _ => None,
    }
}

impl Approver for TerminalApprover {
    fn approve(&self, ask: Ask) -> ApprovalFuture<'_> {
        let turn = self.one_at_a_time.clone();
        let asking = self.asking.clone();
        Box::pin(async move {
            let started = Instant::now();
            // Waiting for a person blocks a thread: not one of the runtime's.
            let scope = tokio::task::spawn_blocking(move || ask_on_terminal(&ask, &turn, &asking))
                .await
                .ok()
                .flatten();
            let waited = started.elapsed();
            match scope {
                Some(scope) => Approval::Allowed {
                    scope,
                    surface: Surface::Cli,
                    waited,
                },
                None => Approval::Denied {
                    surface: Surface::Cli,
                    reason: None,
                    waited,
                },
            }
        })
    }
}
