//! One provider connection: the spec's state machine (AwaitAuth →
//! AwaitPairing → AwaitHello → Bound ⇄ Rebinding, Unbound), whatever the
//! transport. Messages are handled in arrival order; every illegal message
//! gets an `error`, and only fatal errors close the connection.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use bridge_protocol::provider::{ErrorCode, ErrorMessage, ProviderMessage};

use crate::provider::{Outbound, ProviderHandle};
use crate::state::{GatewayInner, Trust};
use crate::transport::Inbound;
use crate::{auth, chat, dispatch, gates, hello, push, sessions, updates};

/// WebSocket close codes the gateway uses.
pub(crate) mod close_code {
    /// Normal closure (goodbye).
    pub const NORMAL: u16 = 1000;
    /// The gateway is going away (shutdown).
    pub const GOING_AWAY: u16 = 1001;
    /// A fatal protocol error (`AUTH_FAILED`, `UNSUPPORTED_VERSION`).
    pub const POLICY: u16 = 1008;
    /// A frame over the hard size limit.
    pub const TOO_BIG: u16 = 1009;
    /// Too many connections; try again later.
    pub const TRY_AGAIN_LATER: u16 = 1013;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnState {
    AwaitAuth,
    AwaitPairing,
    AwaitHello,
    Bound,
    /// A `hello` failed or the bound session ended: only `hello` and
    /// `goodbye` are legal.
    Unbound,
}

impl ConnState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::AwaitAuth => "AwaitAuth",
            Self::AwaitPairing => "AwaitPairing",
            Self::AwaitHello => "AwaitHello",
            Self::Bound => "Bound",
            Self::Unbound => "Unbound",
        }
    }

    /// Still authenticating: the auth deadline applies.
    pub(crate) fn authenticating(self) -> bool {
        matches!(self, Self::AwaitAuth | Self::AwaitPairing)
    }
}

/// Whether the connection goes on after a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Close,
}

pub(crate) struct Connection {
    pub gw: Arc<GatewayInner>,
    pub id: u64,
    pub state: ConnState,
    /// Set once authenticated.
    pub trust: Option<Trust>,
    /// The issued external token this connection authenticated with (or
    /// was issued by pairing): it follows the provider if its paired
    /// session ends and it rebinds elsewhere.
    pub auth_token: Option<String>,
    /// Set while registered (Bound).
    pub provider: Option<Arc<ProviderHandle>>,
    pub out: Outbound,
    /// When recent rebinds happened (10 a minute).
    pub rebinds: VecDeque<Instant>,
    /// Remote address, for logs and pairing prompts.
    pub peer: String,
    /// Authenticated with a token minted for a provider a repository
    /// declared (`tap.config.json`).
    pub spawned: bool,
}

impl Connection {
    /// A new connection. Internal (in-process) providers skip auth.
    pub(crate) fn new(
        gw: Arc<GatewayInner>,
        out: Outbound,
        peer: String,
        trust: Option<Trust>,
    ) -> Self {
        let state = if trust.is_some() {
            ConnState::AwaitHello
        } else {
            ConnState::AwaitAuth
        };
        Self {
            id: gw.next_connection_id(),
            gw,
            state,
            trust,
            auth_token: None,
            provider: None,
            out,
            rebinds: VecDeque::new(),
            peer,
            spawned: false,
        }
    }

    pub(crate) fn provider_id(&self) -> Option<&str> {
        self.provider.as_ref().map(|p| p.id.as_str())
    }

    /// Sends `error` (with this provider's id); fatal codes also close.
    pub(crate) fn error(&self, error: ErrorMessage) -> Flow {
        let error = match (&error.provider_id, self.provider_id()) {
            (None, Some(id)) => error.provider_id(id),
            _ => error,
        };
        let fatal = error.code.is_fatal();
        if fatal {
            tracing::info!(connection = self.id, code = %error.code, message = %bridge_policy::redact(&error.message), "fatal protocol error; closing");
        } else {
            tracing::debug!(connection = self.id, state = self.state.name(), code = %error.code, message = %bridge_policy::redact(&error.message), "protocol error");
        }
        let code = error.code;
        self.out.error(error);
        if fatal {
            self.out.close(close_code::POLICY, code.as_str());
            Flow::Close
        } else {
            Flow::Continue
        }
    }

    /// Shorthand for an error replying to `reply_to`.
    pub(crate) fn reject(
        &self,
        code: ErrorCode,
        message: impl Into<String>,
        reply_to: &str,
    ) -> Flow {
        self.error(ErrorMessage::new(code, message).reply_to(reply_to))
    }

    pub(crate) async fn handle(&mut self, inbound: Inbound) -> Flow {
        if let Some(provider) = &self.provider {
            provider.touch(self.gw.tick());
            // Its sessions may have ended since the last message.
            if self.state == ConnState::Bound && provider.is_unbound() {
                self.state = ConnState::Unbound;
            }
        }
        let message = match inbound {
            Inbound::Message(message) => message,
            Inbound::Invalid(err) => {
                let mut error = ErrorMessage::new(err.code(), err.message);
                if let Some(type_name) = err.type_name {
                    error = error.reply_to(type_name);
                }
                return self.error(error);
            }
            Inbound::TooLarge {
                type_name,
                size,
                limit,
            } => {
                let mut error = ErrorMessage::new(
                    ErrorCode::PayloadTooLarge,
                    format!("message of {size} bytes is over the {limit}-byte limit for its type"),
                );
                if let Some(type_name) = type_name {
                    error = error.reply_to(type_name);
                }
                return self.error(error);
            }
            Inbound::Binary { size } => {
                return self.error(ErrorMessage::new(
                    ErrorCode::InvalidJson,
                    format!("binary frame of {size} bytes ignored: messages are JSON text frames"),
                ));
            }
        };
        self.dispatch(message).await
    }

    async fn dispatch(&mut self, message: ProviderMessage) -> Flow {
        use ConnState::*;
        use ProviderMessage as M;
        let type_name = message.type_name();
        match (self.state, message) {
            (_, M::Unknown) => unreachable_unknown(self),
            (AwaitAuth, M::Auth(auth)) => auth::on_auth(self, auth),
            (AwaitPairing, M::AuthConfirm(confirm)) => auth::on_confirm(self, confirm),
            (AwaitHello | Bound | Unbound, M::Hello(hello)) => hello::on_hello(self, *hello).await,
            (AwaitHello | Bound | Unbound, M::Goodbye(goodbye)) => {
                tracing::debug!(connection = self.id, reason = ?goodbye.reason, "goodbye");
                self.out.close(close_code::NORMAL, "goodbye");
                Flow::Close
            }
            (Bound, M::ToolResult(result)) => dispatch::on_tool_result(self, result),
            (Bound, M::ToolProgress(progress)) => dispatch::on_tool_progress(self, progress),
            (Bound, M::GateResult(result)) => gates::on_gate_result(self, result),
            (Bound, M::TransformResult(result)) => gates::on_transform_result(self, result),
            (Bound, M::Push(message)) => push::on_push(self, message),
            (Bound, M::StreamQuery(query)) => push::on_stream_query(self, query),
            (Bound, M::FilterSet(filter)) => updates::on_filter_set(self, filter),
            (Bound, M::ToolsUpdate(update)) => updates::on_tools_update(self, update),
            (Bound, M::HooksUpdate(update)) => updates::on_hooks_update(self, update),
            (Bound, M::ContextUpdate(update)) => updates::on_context_update(self, update),
            (Bound, M::SessionReady(ready)) => sessions::on_session_ready(self, ready),
            (Bound, M::ShutdownReady(ready)) => sessions::on_shutdown_ready(self, ready),
            // Chat belongs to the connection, not to a session: it goes on
            // while the provider is unbound.
            (Bound | Unbound, M::ChatModels(offer)) => chat::on_models(self, offer),
            (Bound | Unbound, M::ChatDelta(delta)) => chat::on_delta(self, delta),
            (Bound | Unbound, M::ChatToolCall(call)) => chat::on_tool_call(self, call),
            (Bound | Unbound, M::ChatEnd(end)) => chat::on_end(self, end),
            (AwaitAuth | AwaitPairing, _) => {
                let expected = if self.state == AwaitAuth {
                    "auth"
                } else {
                    "auth.confirm"
                };
                self.reject(
                    ErrorCode::Unauthorized,
                    format!("{type_name} is not allowed before authentication; send {expected}"),
                    type_name,
                )
            }
            (AwaitHello | Bound | Unbound, M::Auth(_) | M::AuthConfirm(_)) => {
                self.reject(ErrorCode::Unauthorized, "already authenticated", type_name)
            }
            (AwaitHello | Unbound, _) => self.reject(
                ErrorCode::InvalidSession,
                format!("{type_name} needs a bound session; send hello first"),
                type_name,
            ),
        }
    }

    /// The connection is gone: unregister, fail what waits on it, keep what
    /// a reconnect restores.
    pub(crate) async fn closed(&mut self) {
        self.gw.chat.connection_closed(self.id);
        auth::on_disconnect(self);
        hello::on_disconnect(self).await;
    }
}

/// `ProviderMessage::Unknown` never reaches dispatch: the parser turns it
/// into `UNKNOWN_TYPE`. Answer the same way if it ever does.
fn unreachable_unknown(conn: &Connection) -> Flow {
    conn.error(ErrorMessage::new(
        ErrorCode::UnknownType,
        "unknown message type",
    ))
}
