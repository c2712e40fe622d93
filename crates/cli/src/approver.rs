//! Who answers a policy "ask": the person at the terminal when there is
//! one, otherwise nobody (every "ask" is denied). Shared by `tool` and
//! `run`.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bridge_policy::{Approver, DenyAll};
use serde_json::Value;

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
    one_at_a_time: Mutex<()>,
    /// Set while a question is on the screen, so a progress indicator stays
    /// quiet.
    asking: Arc<AtomicBool>,
}

impl TerminalApprover {
    pub fn new(asking: Arc<AtomicBool>) -> Self {
        Self {
            one_at_a_time: Mutex::new(()),
            asking,
        }
    }

    fn ask(&self, tool: &str, args: &Value, reason: &str) -> bool {
        let _turn = bridge_util::sync::lock(&self.one_at_a_time);
        self.asking.store(true, Ordering::SeqCst);
        let mut shown = args.clone();
        bridge_policy::redact_value(&mut shown);
        let reason = bridge_policy::redact(reason);
        let mut stderr = std::io::stderr().lock();
        let _ = write!(
            stderr,
            "\r\x1b[Kcopilot-bridge: {tool} needs approval: {reason}\n  arguments: {shown}\nAllow? [y/N] "
        );
        let _ = stderr.flush();
        drop(stderr);
        let mut answer = String::new();
        let read = std::io::stdin().read_line(&mut answer);
        self.asking.store(false, Ordering::SeqCst);
        read.is_ok() && matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
    }
}

impl Approver for TerminalApprover {
    fn approve(&self, tool: &str, args: &Value, reason: &str) -> bool {
        // Waiting for a person blocks this thread: tell the runtime, so the
        // other tasks (the model stream, the log writer) move elsewhere.
        let in_multi_thread_runtime = tokio::runtime::Handle::try_current().is_ok_and(|handle| {
            handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        });
        if in_multi_thread_runtime {
            tokio::task::block_in_place(|| self.ask(tool, args, reason))
        } else {
            self.ask(tool, args, reason)
        }
    }
}
