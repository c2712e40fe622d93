//! A registered provider: its identity, binding, outbound queue and the
//! calls waiting on it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bridge_protocol::provider::{
    ErrorCode, ErrorMessage, GateResult, GatewayMessage, Hello, HookRule, ProviderTool, ToolCancel,
    ToolResult, TransformSpec, tool_error_code,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::state::{ProviderInfo, Trust};

/// What the connection's writer sends.
#[derive(Debug)]
pub(crate) enum OutFrame {
    /// A message for an in-process provider, handed over as is.
    Message(GatewayMessage),
    /// A message serialized for the wire; its bytes count against the
    /// queue's byte budget until the writer takes it.
    Text(String),
    /// Close the connection with this WebSocket close code.
    Close { code: u16, reason: String },
    /// A keepalive ping (WebSocket only).
    Ping,
}

/// The byte budget of a wire connection's queue, shared by every sender
/// and the writer. Messages are serialized when queued, so their size is
/// known there and the writer does not serialize them again.
#[derive(Debug)]
pub(crate) struct QueuedBytes {
    queued: AtomicUsize,
    max_bytes: usize,
    max_messages: usize,
    /// Set when the peer was found not reading (either bound reached).
    stuck: AtomicBool,
}

impl QueuedBytes {
    /// Takes `len` bytes of the budget; `false` if that would go over it.
    /// A message alone in the queue is always admitted, however large
    /// (its size is bounded where it is made), so no message is
    /// undeliverable.
    fn reserve(&self, len: usize) -> bool {
        let before = self.queued.fetch_add(len, Ordering::Relaxed);
        if before == 0 || before + len <= self.max_bytes {
            true
        } else {
            self.queued.fetch_sub(len, Ordering::Relaxed);
            false
        }
    }

    /// The writer took a message of `len` bytes off the queue.
    pub(crate) fn release(&self, len: usize) {
        self.queued.fetch_sub(len, Ordering::Relaxed);
    }

    /// The peer stopped reading: the connection is dropped with this
    /// notice (`RATE_LIMITED`) rather than buffered for without bound.
    pub(crate) fn stuck_notice(&self) -> Option<ErrorMessage> {
        self.stuck.load(Ordering::Relaxed).then(|| {
            ErrorMessage::new(
                ErrorCode::RateLimited,
                format!(
                    "this provider is not reading its messages (more than {} bytes or {} messages were waiting); the connection is closed, reconnect and read faster",
                    self.max_bytes, self.max_messages
                ),
            )
        })
    }
}

/// The sending half of a connection. Never blocks: a provider that does not
/// read its messages fills its queue (bounded in messages and, on the wire,
/// in bytes) and is disconnected, so it cannot hold up anyone else.
#[derive(Clone)]
pub(crate) struct Outbound {
    tx: mpsc::Sender<OutFrame>,
    /// Cancelled to drop the connection (stuck peer, takeover, shutdown).
    kill: CancellationToken,
    /// Wire connections only: messages go out serialized, within this
    /// budget. In-process providers get the messages themselves.
    wire: Option<Arc<QueuedBytes>>,
}

/// The receiving half, for the connection's writer.
pub(crate) struct OutboundQueue {
    pub rx: mpsc::Receiver<OutFrame>,
    pub kill: CancellationToken,
    /// Wire connections: the byte budget the writer gives back to.
    pub bytes: Option<Arc<QueuedBytes>>,
}

impl Outbound {
    /// The queue of an in-process provider: at most `max_messages`.
    pub(crate) fn in_process(max_messages: usize) -> (Self, OutboundQueue) {
        Self::new(max_messages, None)
    }

    /// The queue of a WebSocket connection: at most `max_messages`, and at
    /// most `max_bytes` of serialized messages.
    pub(crate) fn wire(max_messages: usize, max_bytes: usize) -> (Self, OutboundQueue) {
        let max_messages = max_messages.max(1);
        let bytes = QueuedBytes {
            queued: AtomicUsize::new(0),
            max_bytes,
            max_messages,
            stuck: AtomicBool::new(false),
        };
        Self::new(max_messages, Some(Arc::new(bytes)))
    }

    fn new(max_messages: usize, wire: Option<Arc<QueuedBytes>>) -> (Self, OutboundQueue) {
        let (tx, rx) = mpsc::channel(max_messages.max(1));
        let kill = CancellationToken::new();
        let queue = OutboundQueue {
            rx,
            kill: kill.clone(),
            bytes: wire.clone(),
        };
        (Self { tx, kill, wire }, queue)
    }

    /// Queues a message; `false` if the connection is gone or stuck (and it
    /// is then being dropped).
    pub(crate) fn send(&self, message: GatewayMessage) -> bool {
        let frame = match &self.wire {
            None => OutFrame::Message(message),
            Some(bytes) => {
                if self.kill.is_cancelled() {
                    return false;
                }
                let text = message.to_json();
                if !bytes.reserve(text.len()) {
                    self.stuck(bytes);
                    return false;
                }
                OutFrame::Text(text)
            }
        };
        match self.tx.try_send(frame) {
            Ok(()) => true,
            Err(err) => {
                let full = matches!(err, mpsc::error::TrySendError::Full(_));
                if let (OutFrame::Text(text), Some(bytes)) = (err.into_inner(), &self.wire) {
                    bytes.release(text.len());
                }
                if full {
                    match &self.wire {
                        Some(bytes) => self.stuck(bytes),
                        None => self.stuck_in_process(),
                    }
                }
                false
            }
        }
    }

    fn stuck(&self, bytes: &QueuedBytes) {
        if !bytes.stuck.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "provider is not reading its messages ({} bytes waiting); disconnecting it",
                bytes.queued.load(Ordering::Relaxed)
            );
        }
        self.kill.cancel();
    }

    fn stuck_in_process(&self) {
        if !self.kill.is_cancelled() {
            tracing::warn!("in-process provider is not reading its messages; disconnecting it");
            self.kill.cancel();
        }
    }

    pub(crate) fn error(&self, error: ErrorMessage) -> bool {
        self.send(GatewayMessage::Error(error))
    }

    /// Queues a close frame after what is already queued.
    pub(crate) fn close(&self, code: u16, reason: impl Into<String>) {
        if self
            .tx
            .try_send(OutFrame::Close {
                code,
                reason: reason.into(),
            })
            .is_err()
        {
            self.kill.cancel();
        }
    }

    /// Drops the connection now, without waiting for the queue.
    pub(crate) fn kill(&self) {
        self.kill.cancel();
    }

    pub(crate) fn ping(&self) -> bool {
        self.tx.try_send(OutFrame::Ping).is_ok()
    }
}

/// The answer to a `tool.call`, as the waiting caller receives it.
pub(crate) type CallReply = ToolResult;

/// Where a provider is bound.
#[derive(Debug, Clone, Default)]
pub(crate) struct Binding {
    /// Bound to every session (`"all"`).
    pub all: bool,
    /// Sessions where the provider's tools, rules and context are live.
    pub sessions: BTreeSet<String>,
    /// `"all"`-bound: sessions started after `hello` that await
    /// `session.ready`.
    pub awaiting_ready: BTreeSet<String>,
}

pub(crate) struct ProviderHandle {
    pub id: String,
    pub name: String,
    pub instance: Option<String>,
    pub trust: Trust,
    pub out: Outbound,
    /// The registration as last declared (hello, then updates applied).
    pub registration: Mutex<Registration>,
    pub binding: Mutex<Binding>,
    pub pending_calls: Mutex<HashMap<String, PendingCall>>,
    pub pending_gates: Mutex<HashMap<String, oneshot::Sender<GateResult>>>,
    pub pending_transforms: Mutex<HashMap<String, oneshot::Sender<String>>>,
    /// Gateway-wide activity tick of the last message from this provider.
    pub last_active: AtomicU64,
    pub reconnect_token: Mutex<String>,
    /// Revision per session (monotonic per (provider, session)).
    pub revisions: Mutex<HashMap<String, u64>>,
    /// Per bound session: stops the `session.event` forwarder.
    pub forwarders: Mutex<HashMap<String, CancellationToken>>,
    /// Event types the provider subscribed to.
    pub subscribe: Vec<String>,
    /// Local providers' `persistDir`.
    pub persist_dir: Option<std::path::PathBuf>,
}

/// What a provider declared, kept so updates and reconnects can rebuild it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registration {
    /// The `hello` as sent: the starting state for every session the
    /// provider binds to later (`session.ready`).
    pub hello: Hello,
    /// What is live in each bound session (updates may make sessions
    /// differ).
    pub sessions: HashMap<String, SessionRegistration>,
}

/// A provider's state in one session.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionRegistration {
    pub tools: Vec<ProviderTool>,
    pub rules: Vec<HookRule>,
    pub transforms: BTreeMap<String, TransformSpec>,
    pub context: Option<String>,
}

impl SessionRegistration {
    /// The state a `hello` declares.
    pub(crate) fn from_hello(hello: &Hello) -> Self {
        let hooks = hello.hooks.clone().unwrap_or_default();
        Self {
            tools: hello.tools.clone(),
            rules: hooks.on_pre_tool_use,
            transforms: hooks
                .transforms
                .into_iter()
                .filter_map(|(section, spec)| spec.map(|spec| (section, spec)))
                .collect(),
            context: hello.context.clone(),
        }
    }
}

/// A call waiting for its terminal `tool.result`.
pub(crate) struct PendingCall {
    pub session_id: String,
    pub reply: oneshot::Sender<CallReply>,
}

/// What a reconnect restores, kept by reconnect token.
#[derive(Debug, Clone)]
pub(crate) struct DetachedProvider {
    pub provider_id: String,
    pub name: String,
    pub instance: Option<String>,
    pub trust: Trust,
    pub binding: Binding,
    pub registration: Registration,
    pub revisions: HashMap<String, u64>,
    /// When the connection dropped (or the record was put back after a
    /// failed reconnect); the token expires a TTL later.
    pub detached_at: Instant,
}

impl DetachedProvider {
    /// What a reconnect of `handle` restores.
    pub(crate) fn of(handle: &ProviderHandle) -> Self {
        Self {
            provider_id: handle.id.clone(),
            name: handle.name.clone(),
            instance: handle.instance.clone(),
            trust: handle.trust.clone(),
            binding: lock(&handle.binding).clone(),
            registration: lock(&handle.registration).clone(),
            revisions: lock(&handle.revisions).clone(),
            detached_at: Instant::now(),
        }
    }
}

impl ProviderHandle {
    pub(crate) fn touch(&self, tick: u64) {
        self.last_active.store(tick, Ordering::Relaxed);
    }

    pub(crate) fn last_active(&self) -> u64 {
        self.last_active.load(Ordering::Relaxed)
    }

    /// The owner key of this instance's rules, transforms and context in a
    /// session (`name`, or `name#instance`).
    pub(crate) fn owner_key(&self) -> String {
        match &self.instance {
            Some(instance) => format!("{}#{instance}", self.name),
            None => self.name.clone(),
        }
    }

    pub(crate) fn identity(&self) -> (String, String) {
        (self.name.clone(), self.instance.clone().unwrap_or_default())
    }

    /// The sessions this provider's state is live in.
    pub(crate) fn bound_sessions(&self) -> Vec<String> {
        lock(&self.binding).sessions.iter().cloned().collect()
    }

    /// Registered but bound nowhere (its sessions ended): the connection
    /// accepts only `hello` and `goodbye`.
    pub(crate) fn is_unbound(&self) -> bool {
        let binding = lock(&self.binding);
        !binding.all && binding.sessions.is_empty()
    }

    pub(crate) fn is_bound_to(&self, session_id: &str) -> bool {
        lock(&self.binding).sessions.contains(session_id)
    }

    /// The next revision for `session_id`.
    pub(crate) fn next_revision(&self, session_id: &str) -> u64 {
        let mut revisions = lock(&self.revisions);
        let revision = revisions.entry(session_id.to_owned()).or_insert(0);
        *revision += 1;
        *revision
    }

    pub(crate) fn info(&self) -> ProviderInfo {
        let binding = lock(&self.binding).clone();
        let registration = lock(&self.registration);
        ProviderInfo {
            provider_id: self.id.clone(),
            name: self.name.clone(),
            instance: self.instance.clone(),
            trust: self.trust.level().to_owned(),
            sessions: binding.sessions.into_iter().collect(),
            all_sessions: binding.all,
            tools: {
                let mut tools: Vec<String> = registration
                    .sessions
                    .values()
                    .flat_map(|r| r.tools.iter().map(|t| t.name.clone()))
                    .collect();
                tools.sort();
                tools.dedup();
                tools
            },
        }
    }

    /// Ends the calls in flight (in `session_id`, or everywhere) as
    /// `CANCELLED`: the provider gets `tool.cancel`, the caller its terminal
    /// result now; a late `tool.result` is ignored.
    pub(crate) fn cancel_calls(&self, session_id: Option<&str>, reason: &str) {
        let calls: Vec<(String, PendingCall)> = {
            let mut pending = lock(&self.pending_calls);
            let ids: Vec<String> = pending
                .iter()
                .filter(|(_, call)| session_id.is_none_or(|s| call.session_id == s))
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| pending.remove(&id).map(|call| (id, call)))
                .collect()
        };
        for (id, call) in calls {
            self.out.send(GatewayMessage::ToolCancel(ToolCancel {
                id: id.clone(),
                session_id: call.session_id.clone(),
                reason: reason.to_owned(),
            }));
            let _ = call.reply.send(ToolResult {
                id,
                error: Some(format!("cancelled: {reason}")),
                error_code: Some(tool_error_code::CANCELLED.to_owned()),
                ..ToolResult::default()
            });
        }
    }

    /// Fails every waiting call, gate and transform: calls end with
    /// `errorCode` (`DISCONNECTED` or `CANCELLED`), gates are denied (their
    /// senders drop), transforms keep the current text.
    pub(crate) fn fail_pending(&self, error_code: &str, message: &str) {
        let calls: Vec<(String, PendingCall)> = lock(&self.pending_calls).drain().collect();
        for (id, call) in calls {
            let _ = call.reply.send(ToolResult {
                id,
                error: Some(message.to_owned()),
                error_code: Some(error_code.to_owned()),
                ..ToolResult::default()
            });
        }
        lock(&self.pending_gates).clear();
        lock(&self.pending_transforms).clear();
    }
}

/// The crate's locks tolerate a panicked holder (see `bridge_util::sync`).
pub(crate) use bridge_util::sync::lock;
