'use strict';
// Ties the pieces together for one window: follows the settings and the
// workspace folder, keeps one provider connection to the daemon, routes its
// messages to the tools, the chat models and the ambient context, and shows
// the outcome in the status bar.

const vscode = require('vscode');
const { readSettings, readInstallDefaults } = require('./settings');
const { resolveBinding } = require('./daemon');
const { ProviderConnection } = require('./connection');
const { ToolHost, toolDeclarations } = require('./tools');
const { ChatService } = require('./chat');
const { ContextReporter } = require('./context');
const { StatusView } = require('./status');
const { ApprovalPrompts } = require('./approvals');
const { currentFolder } = require('./workspace');

/** How long chat answers may go on after the session ended before rebinding cancels them. */
const CHAT_DRAIN_MS = 10000;

class Bridge {
  /**
   * @param {import('vscode').ExtensionContext} context
   * @param {(line: string) => void} log
   */
  constructor(context, log) {
    this.log = log;
    this.installDefaults = readInstallDefaults(context.extensionPath, log);
    this.settings = readSettings(this.installDefaults);
    this.connection = null;
    /** Settings and folder the connection was made for; a change of them means a new connection. */
    this.connectionKey = null;
    this.binding = null;
    this.providerId = null;
    /** Why the bridge is off, for the tooltip and bridge.status. */
    this.problem = null;
    /**
     * Whether the next attempt may start a daemon: only the first one after
     * an enable (or a change of bridge.binary). A daemon that goes away later
     * was stopped or is restarting; starting another behind its back would
     * race it.
     */
    this.startAllowed = true;
    /** The settings whose ignored `bridge.readOnly: false` was last logged. */
    this.readOnlyIgnoredLogged = null;
    const send = (message) => this.connection?.send(message) ?? false;
    this.status = new StatusView(log);
    this.tools = new ToolHost({ send, log, readOnly: () => this.settings.readOnly });
    this.chat = new ChatService({
      send,
      log,
      settings: () => this.settings,
      access: context.languageModelAccessInformation,
      onOfferChanged: () => this.refreshStatus(),
    });
    this.ambient = new ContextReporter({ send });
    this.approvals = new ApprovalPrompts({ window: vscode.window, log });
    const reoffer = () => {
      if (this.connection?.bound) {
        this.chat.sendOffer();
      }
    };
    this.subscriptions = [
      vscode.lm.onDidChangeChatModels(reoffer),
      context.languageModelAccessInformation.onDidChange(reoffer),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration('bridge')) {
          this.reconcile();
        }
      }),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.reconcile()),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.connection?.retryNow()),
    ];
  }

  /** Brings the connection in line with the settings and the folder; safe to call any time. */
  reconcile() {
    const previous = this.settings;
    const settings = readSettings(this.installDefaults);
    this.settings = settings;
    if (settings.readOnlyIgnored !== this.readOnlyIgnoredLogged && settings.readOnlyIgnored) {
      this.log(`bridge.readOnly is false in the ${settings.readOnlyIgnored}, which is ignored: only your user settings can turn read-only off (a repository's settings come with the code agents work on)`);
    }
    this.readOnlyIgnoredLogged = settings.readOnlyIgnored;
    const folder = currentFolder();
    if (!settings.enabled || !folder) {
      this.problem = settings.enabled ? 'this window has no workspace folder on disk' : 'bridge.enabled is false';
      this.disconnect(this.problem);
      return;
    }
    const key = JSON.stringify([settings.home, settings.url, settings.token, folder.uri.toString()]);
    if (this.connection && key === this.connectionKey) {
      this.applyLiveChanges(previous, settings);
      return;
    }
    if (this.connection) {
      this.log('the daemon settings or the workspace folder changed; reconnecting');
      this.disconnect('settings changed');
    }
    this.connectionKey = key;
    this.startAllowed = true;
    this.problem = 'connecting';
    this.log(`connecting ${folder.path} to the daemon ${settings.url || `of ${settings.home}`} (read-only: ${settings.readOnly})`);
    this.connection = this.newConnection(folder);
    this.connection.start();
    this.refreshStatus();
  }

  /** Settings that take effect without a new connection. */
  applyLiveChanges(previous, settings) {
    if (previous.readOnly !== settings.readOnly) {
      this.log(`read-only is now ${settings.readOnly}: vscode_apply_diff, vscode_format and vscode_organize_imports are ${settings.readOnly ? 'refused' : 'allowed'}`);
    }
    if ((previous.chatVendor !== settings.chatVendor || previous.chatEnabled !== settings.chatEnabled) && this.connection.bound) {
      this.chat.sendOffer();
    }
    if ((previous.binary !== settings.binary || previous.bindAddress !== settings.bindAddress) && !this.connection.bound) {
      this.startAllowed = true;
      this.connection.retryNow();
    }
    this.refreshStatus();
  }

  newConnection(folder) {
    return new ProviderConnection({
      resolveBinding: (previous, fresh) => {
        // Never start a program for a workspace the user has not trusted; the
        // chance to start one is kept for when they do (onDidGrantWorkspaceTrust).
        const trusted = vscode.workspace.isTrusted;
        const wanted = this.startAllowed;
        const startRefused = wanted && !trusted ? 'this workspace is not trusted (trust it, or start the daemon yourself)' : null;
        if (trusted) {
          this.startAllowed = false;
        }
        return resolveBinding(this.settings, folder, previous, { fresh, log: this.log, mayStart: wanted && trusted, startRefused });
      },
      helloFields: () => ({
        name: 'vscode',
        instance: vscode.env.sessionId,
        metadata: { editor: 'vscode', version: vscode.version, folder: folder.path },
        tools: toolDeclarations(),
      }),
      onBound: (ack, binding) => {
        this.binding = binding;
        this.providerId = ack.providerId;
        this.problem = null;
        this.log(`connected to ${binding.daemonUrl}: session ${binding.session} (${binding.sessionLabel}), provider id ${ack.providerId}`);
        this.chat.bound();
        this.ambient.bind();
        // Asks of this session, answerable here; a daemon found by address
        // (bridge.url) has no approver token this window can read.
        if (!this.settings.url) {
          this.approvals.follow(binding, this.settings.home);
        }
        this.refreshStatus();
      },
      onUnbound: (reason) => {
        this.problem = reason;
        this.providerId = null;
        this.tools.abandonAll(reason);
        this.chat.disconnected();
        this.ambient.unbind();
        this.approvals.stop();
        this.refreshStatus();
      },
      onMessage: (message) => this.receive(message),
      onProblem: (problem) => {
        this.problem = problem;
        this.refreshStatus();
      },
      log: this.log,
    });
  }

  receive(message) {
    switch (message.type) {
      case 'tool.call':
        this.tools.call(message);
        return;
      case 'tool.cancel':
        this.tools.cancel(message);
        return;
      case 'chat.request':
        this.chat.request(message);
        return;
      case 'chat.cancel':
        this.chat.cancel(message);
        return;
      case 'ack':
        this.ambient.answered(message.requestId);
        return;
      case 'error':
        this.daemonError(message);
        return;
      case 'session.lifecycle':
        this.lifecycle(message);
        return;
      default:
        // sessions.updated, session.event, …: nothing this provider acts on.
        return;
    }
  }

  daemonError(message) {
    const what = `${message.code}: ${message.message}`;
    if (message.requestId && this.ambient.answered(message.requestId)) {
      this.log(`the daemon refused the editor context update (${what})`);
    } else if (message.replyTo === 'chat.models') {
      this.chat.refused(what);
    } else {
      this.log(`daemon error${message.replyTo ? ` in reply to ${message.replyTo}` : ''} (${what})`);
    }
  }

  /** The session is ending: let go of it, then bind to the folder's session anew. */
  lifecycle(message) {
    if (message.state !== 'shutdown.pending' || message.sessionId !== this.binding?.session) {
      return;
    }
    this.log(`session ${message.sessionId} is ending; releasing it`);
    this.tools.abandonAll('the session is ending');
    this.ambient.unbind();
    this.connection.send({ type: 'shutdown.ready', sessionId: message.sessionId });
    // Chat answers go on over an unbound connection: reconnect once they are
    // done, or after CHAT_DRAIN_MS (a stuck answer must not keep the window
    // off its session).
    const connection = this.connection;
    let timer;
    const drained = new Promise((resolve) => {
      timer = setTimeout(resolve, CHAT_DRAIN_MS, false);
    });
    Promise.race([this.chat.whenIdle().then(() => true), drained]).then((idle) => {
      clearTimeout(timer);
      if (this.connection !== connection) {
        return;
      }
      if (!idle) {
        this.log(`chat answers still running ${CHAT_DRAIN_MS / 1000} s after the session ended; cancelling them`);
        this.chat.cancelAll('the session ended before the answer was complete');
      }
      connection.restart('session ended', true);
    });
  }

  disconnect(reason) {
    if (this.connection) {
      this.log(`disconnecting: ${reason}`);
      this.connection.stop(reason);
      this.connection = null;
      this.connectionKey = null;
    }
    this.refreshStatus();
  }

  /** bridge.enable / bridge.disable: the user setting, then the connection. */
  async setEnabled(enabled) {
    await vscode.workspace.getConfiguration('bridge').update('enabled', enabled, vscode.ConfigurationTarget.Global);
    const inspected = vscode.workspace.getConfiguration('bridge').inspect('enabled');
    const override = inspected?.workspaceFolderValue ?? inspected?.workspaceValue;
    if (override !== undefined && override !== enabled) {
      vscode.window.showWarningMessage(
        `Copilot Bridge stays ${override ? 'on' : 'off'} in this window: its workspace settings set bridge.enabled to ${override}, which wins over the user setting.`,
      );
    }
    this.reconcile();
  }

  /** The status as the status bar and the status file show it. */
  currentStatus() {
    const on = this.connection?.bound === true;
    return {
      state: on ? 'on' : 'off',
      chat: on && this.chat.offer.available ? 'ok' : 'unavailable',
      providerId: on ? this.providerId : null,
      session: on ? this.binding.session : null,
      daemonUrl: on ? this.binding.daemonUrl : null,
      models: on ? this.chat.offer.models : [],
      readOnly: this.settings.readOnly,
      problem: on ? null : this.problem,
    };
  }

  refreshStatus() {
    this.status.show(this.currentStatus());
  }

  /** bridge.status: the whole status in the log, a summary in a notification. */
  showStatus(revealLog) {
    return this.status.report(this.currentStatus(), this.chat.offer.reason, revealLog);
  }

  dispose() {
    this.disconnect('VS Code is closing the window');
    this.ambient.dispose();
    this.approvals.dispose();
    this.status.dispose();
    this.subscriptions.forEach((subscription) => subscription.dispose());
  }
}

module.exports = { Bridge };
