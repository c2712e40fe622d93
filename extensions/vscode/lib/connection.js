'use strict';
// The provider connection to the daemon (Provider Interface v2 over
// WebSocket): auth → sessions → hello → hello.ack, then every message to the
// handlers. Reconnects with backoff; within 30 s of a drop the hello carries
// the reconnect token so the daemon keeps the provider id. No `vscode`
// import: the editor side comes in through the options.

/** Waits between attempts: 0.5 s, doubling, at most 5 s. */
const BACKOFF_MS = [500, 1000, 2000, 4000, 5000];
/** How long the daemon honours a reconnect token after a drop. */
const RECONNECT_TOKEN_TTL_MS = 30000;
/** From opening the socket to hello.ack at most; then close and retry. */
const HANDSHAKE_TIMEOUT_MS = 10000;
/** Only a refusal of these means this attempt failed. */
const HANDSHAKE_TYPES = new Set(['auth', 'hello']);
/** Refusals of auth / hello that mean the token or its session is gone: mint a new one. */
const BINDING_GONE = new Set(['AUTH_FAILED', 'INVALID_SESSION']);

/**
 * @typedef {object} ConnectionOptions
 * @property {(previous: import('./daemon').Binding|null, fresh: boolean) =>
 *   Promise<import('./daemon').Binding|null>} resolveBinding
 * @property {() => object} helloFields  name, instance, metadata and tools of `hello`
 * @property {(ack: object, binding: import('./daemon').Binding) => void} onBound
 * @property {(reason: string) => void} onUnbound  the connection is not bound any more
 * @property {(message: object) => void} onMessage  every message after hello.ack
 * @property {(problem: string) => void} onProblem  why it is not bound (logged once per change)
 * @property {(line: string) => void} log
 * @property {number} [handshakeTimeoutMs]  tests shorten it
 */

class ProviderConnection {
  /** @param {ConnectionOptions} options */
  constructor(options) {
    this.options = options;
    /** @type {import('./daemon').Binding|null} */
    this.binding = null;
    this.socket = null;
    this.bound = false;
    this.stopped = true;
    this.failures = 0;
    this.retryTimer = null;
    this.handshakeTimer = null;
    /** Bumped by every attempt and stop, so a slow attempt that was overtaken gives up. */
    this.generation = 0;
    /** The next attempt looks the session up again instead of reusing its token. */
    this.freshNext = false;
    this.reconnectToken = null;
    this.droppedAt = 0;
    /** The last problem logged, so a retry loop does not repeat it every few seconds. */
    this.lastProblem = '';
  }

  start() {
    if (!this.stopped) {
      return;
    }
    this.stopped = false;
    this.attempt();
  }

  /** Sends `goodbye` (so the daemon drops the tools and the chat offer at once) and closes. */
  stop(reason) {
    this.stopped = true;
    this.generation += 1;
    clearTimeout(this.retryTimer);
    this.close(reason);
  }

  /** Closes and connects again at once; with `fresh`, with the session looked up and a new token. */
  restart(reason, fresh) {
    if (this.stopped) {
      return;
    }
    this.freshNext = this.freshNext || fresh;
    this.close(reason);
    this.failures = 0;
    this.attempt();
  }

  /** Tries now instead of waiting for the backoff (e.g. bridge.binary was just set). */
  retryNow() {
    if (!this.stopped && !this.socket) {
      clearTimeout(this.retryTimer);
      this.attempt();
    }
  }

  /** Sends one message while bound (after hello.ack: the daemon refuses them before); false if not sent. */
  send(message) {
    if (!this.bound || !this.socket || this.socket.readyState !== WebSocket.OPEN) {
      return false;
    }
    this.socket.send(JSON.stringify(message));
    return true;
  }

  /** Closes the socket, saying goodbye when it is open. */
  close(reason) {
    const socket = this.socket;
    this.socket = null;
    clearTimeout(this.handshakeTimer);
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ type: 'goodbye', reason }));
    }
    socket?.close(1000, reason.slice(0, 120));
    this.setUnbound(reason);
  }

  async attempt() {
    clearTimeout(this.retryTimer);
    const generation = ++this.generation;
    const fresh = this.freshNext;
    let binding;
    try {
      binding = await this.options.resolveBinding(this.binding, fresh);
    } catch (err) {
      if (generation === this.generation) {
        this.problem(err.message);
        this.scheduleRetry();
      }
      return;
    }
    if (generation !== this.generation || this.stopped) {
      return;
    }
    if (!binding) {
      this.problem('no copilot-bridge daemon is running; waiting for one');
      this.scheduleRetry();
      return;
    }
    if (this.binding?.token !== binding.token) {
      // A new token means a new registration: the old reconnect token is void.
      this.reconnectToken = null;
    }
    this.freshNext = false;
    this.binding = binding;
    this.open(binding);
  }

  open(binding) {
    if (typeof WebSocket !== 'function') {
      // Node gained a global WebSocket in version 22; retrying will not help.
      this.problem(
        `this editor's extension host runs Node ${process.versions.node}, which has no WebSocket client; Copilot Bridge needs Node 22 or later (VS Code 1.101 or later)`,
      );
      return;
    }
    let socket;
    try {
      socket = new WebSocket(binding.wsUrl);
    } catch (err) {
      this.problem(`cannot open ${binding.wsUrl}: ${err.message}`);
      this.scheduleRetry();
      return;
    }
    this.socket = socket;
    // Set once a refusal has been logged, so the close that follows adds nothing.
    let explained = false;
    const explain = (text) => {
      explained = true;
      this.problem(text);
    };
    // Counted from creating the socket, so a connect that hangs is covered too.
    const deadline = this.options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS;
    clearTimeout(this.handshakeTimer);
    this.handshakeTimer = setTimeout(() => {
      explain(`${binding.daemonUrl} did not complete auth and hello within ${deadline / 1000} s; trying again`);
      this.socket = null;
      socket.close(1000, 'handshake timeout');
      this.scheduleRetry();
    }, deadline);
    socket.addEventListener('open', () => {
      socket.send(JSON.stringify({ type: 'auth', token: binding.token }));
    });
    socket.addEventListener('message', (event) => {
      if (this.socket === socket) {
        this.receive(socket, binding, event.data, explain);
      }
    });
    socket.addEventListener('close', (event) => {
      if (this.socket !== socket) {
        return;
      }
      this.socket = null;
      clearTimeout(this.handshakeTimer);
      const why = event.reason ? `${event.code} ${event.reason}` : `code ${event.code}`;
      if (this.bound) {
        this.droppedAt = Date.now();
        this.options.log(`disconnected from ${binding.daemonUrl} (${why}); reconnecting`);
      } else if (!explained) {
        this.problem(`connection to ${binding.wsUrl} closed before it was bound (${why})`);
      }
      this.setUnbound(`connection closed (${why})`);
      if (!this.stopped) {
        this.scheduleRetry();
      }
    });
  }

  receive(socket, binding, data, explain) {
    let message;
    try {
      message = JSON.parse(typeof data === 'string' ? data : Buffer.from(data).toString('utf8'));
    } catch {
      message = undefined;
    }
    if (message === null || typeof message !== 'object' || Array.isArray(message)) {
      this.options.log(`ignored a frame from the daemon that is not a JSON object (${String(data).slice(0, 80)})`);
      return;
    }
    if (this.bound) {
      this.options.onMessage(message);
      return;
    }
    switch (message.type) {
      case 'sessions':
        if (!Array.isArray(message.active) || !message.active.some((session) => session?.id === binding.session)) {
          this.freshNext = true;
          explain(`session ${binding.session} is no longer live; looking for this folder's session again`);
          socket.close(1000, 'session ended');
          return;
        }
        this.sendHello(socket, binding);
        return;
      case 'hello.ack':
        clearTimeout(this.handshakeTimer);
        this.bound = true;
        this.failures = 0;
        this.lastProblem = '';
        this.reconnectToken = message.reconnectToken ?? null;
        this.options.onBound(message, binding);
        return;
      case 'error':
        this.refused(socket, message, explain);
        return;
      default:
        // Session notices that may arrive before hello.ack concern no binding yet.
        return;
    }
  }

  sendHello(socket, binding) {
    const reusable = this.reconnectToken && this.droppedAt && Date.now() - this.droppedAt < RECONNECT_TOKEN_TTL_MS;
    const hello = { type: 'hello', protocolVersion: 2, session: binding.session, ...this.options.helloFields() };
    if (reusable) {
      hello.reconnectToken = this.reconnectToken;
    }
    socket.send(JSON.stringify(hello));
  }

  /**
   * An `error` before hello.ack. A refused auth or hello: close and retry
   * with backoff, with a new token when the old one or its session is gone.
   * (Our hello always declares its tools, so the daemon never answers it
   * with RECONNECT_EXPIRED.) Any other error (not about the handshake) is
   * only logged; the deadline catches a handshake that stalls.
   */
  refused(socket, message, explain) {
    if (!HANDSHAKE_TYPES.has(message.replyTo)) {
      this.options.log(`daemon error before hello.ack (${message.replyTo ?? 'no replyTo'}: ${message.code}: ${message.message})`);
      return;
    }
    if (BINDING_GONE.has(message.code)) {
      this.freshNext = true;
    }
    explain(`the daemon refused ${message.replyTo ?? 'the connection'} (${message.code}: ${message.message})`);
    socket.close(1000, 'refused');
  }

  setUnbound(reason) {
    if (this.bound) {
      this.bound = false;
      this.options.onUnbound(reason);
    }
  }

  scheduleRetry() {
    if (this.stopped) {
      return;
    }
    const delay = BACKOFF_MS[Math.min(this.failures, BACKOFF_MS.length - 1)];
    this.failures += 1;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.attempt(), delay);
  }

  problem(text) {
    if (text !== this.lastProblem) {
      this.lastProblem = text;
      this.options.log(text);
      this.options.onProblem(text);
    }
  }
}

module.exports = { ProviderConnection };
