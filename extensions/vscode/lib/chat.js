'use strict';
// The editor's chat models (vscode.lm) offered to the hub over the provider
// connection: `chat.models` offers, `chat.request` → sendRequest streamed as
// `chat.delta` / `chat.toolCall`, ended by `chat.end`; `chat.cancel`.

const vscode = require('vscode');
const { toChatMessages, ChatInputError } = require('./chat-messages');

const JUSTIFICATION = 'Requested by an agent through Copilot Bridge';
/** What the daemon accepts in one offer. */
const MAX_MODELS = 100;
const MAX_MODEL_ID_CHARS = 256;
/** Counting tokens for `usage` must not hold up the end of an answer. */
const USAGE_TIMEOUT_MS = 2000;

/** `chat.end` error codes for `LanguageModelError.code`. */
const ERROR_CODES = { NoPermissions: 'no_permission', Blocked: 'blocked', NotFound: 'not_found' };

class ChatService {
  /**
   * @param {{send: (message: object) => boolean, log: (line: string) => void,
   *   settings: () => import('./settings').Settings,
   *   access: import('vscode').LanguageModelAccessInformation,
   *   onOfferChanged: () => void}} options
   */
  constructor(options) {
    this.options = options;
    /** The last offer sent: {available, models: [ids], reason}. */
    this.offer = { available: false, models: [], reason: 'not connected' };
    /** Requests being answered: id → {source, ended, model, started}. */
    this.active = new Map();
    this.idleWaiters = [];
    this.offering = null;
    this.offerAgain = false;
    /** The `chat.models` last sent on this connection, to skip sending the same again. */
    this.lastSent = null;
  }

  /**
   * A binding was made: the daemon holds no offer of this connection's yet
   * (or one from before a rebinding), so the next one goes out even if it
   * equals the last sent.
   */
  bound() {
    this.lastSent = null;
    return this.sendOffer();
  }

  /** Sends this window's offer when it changed; overlapping calls collapse into one more run. */
  sendOffer() {
    if (this.offering) {
      this.offerAgain = true;
      return this.offering;
    }
    this.offering = (async () => {
      do {
        this.offerAgain = false;
        const message = await this.currentOffer();
        const text = JSON.stringify(message);
        if (text !== this.lastSent && this.options.send(message)) {
          this.lastSent = text;
          this.offer = { available: message.available, models: message.models.map((model) => model.id), reason: message.reason };
          const what = message.available ? `${message.models.length} model(s): ${this.offer.models.join(', ')}` : `unavailable (${message.reason})`;
          this.options.log(`chat offer: ${what}`);
          this.options.onOfferChanged();
        }
      } while (this.offerAgain);
    })()
      .catch((err) => this.options.log(`could not make the chat offer: ${err.message}`))
      .finally(() => {
        this.offering = null;
      });
    return this.offering;
  }

  /** The `chat.models` message for the models selectable now. */
  async currentOffer() {
    const { chatEnabled, chatVendor } = this.options.settings();
    const unavailable = (reason) => ({ type: 'chat.models', models: [], available: false, reason });
    if (!chatEnabled) {
      return unavailable('chat is turned off in this editor (bridge.chat.enabled is false)');
    }
    let models;
    try {
      models = await vscode.lm.selectChatModels({ vendor: chatVendor });
    } catch (err) {
      return unavailable(`selecting the chat models of vendor "${chatVendor}" failed: ${err.message}`);
    }
    const offered = models.filter((model) => model.id.length >= 1 && model.id.length <= MAX_MODEL_ID_CHARS).slice(0, MAX_MODELS);
    if (offered.length === 0) {
      return unavailable(`no chat models of vendor "${chatVendor}" in this editor (is its extension installed and signed in?)`);
    }
    if (offered.every((model) => this.options.access.canSendRequest(model) === false)) {
      return unavailable(`the user has not allowed Copilot Bridge to use the "${chatVendor}" models`);
    }
    return { type: 'chat.models', models: offered.map(describeModel), available: true };
  }

  /** The daemon refused `chat.models` (an older daemon, or too little trust). */
  refused(message) {
    this.offer = { available: false, models: [], reason: `the daemon refused the offer: ${message}` };
    this.options.log(`chat offer refused by the daemon: ${message}`);
    this.options.onOfferChanged();
  }

  /** The connection is gone: the offer with it. */
  disconnected() {
    this.offer = { available: false, models: [], reason: 'not connected' };
    this.lastSent = null;
    for (const [id, entry] of this.active) {
      entry.ended = true;
      entry.source.cancel();
      this.options.log(`chat ${id} (model ${entry.model}): abandoned after ${Date.now() - entry.started} ms, the connection closed`);
    }
    this.active.clear();
    this.notifyIdle();
  }

  /** `chat.request`: streams the model's answer back. */
  async request(message) {
    const entry = { source: new vscode.CancellationTokenSource(), ended: false, model: message.model, started: Date.now() };
    this.active.set(message.id, entry);
    try {
      const { chatEnabled, chatVendor } = this.options.settings();
      const [model] = chatEnabled ? await vscode.lm.selectChatModels({ vendor: chatVendor, id: message.model }) : [];
      if (!model) {
        this.end(message.id, { error: { code: 'no_model', message: `this editor does not offer the model ${JSON.stringify(message.model)} now` } });
        return;
      }
      const messages = toChatMessages(message.messages);
      const response = await model.sendRequest(messages, requestOptions(message), entry.source.token);
      let text = '';
      for await (const part of response.stream) {
        if (entry.ended) {
          break;
        }
        if (part instanceof vscode.LanguageModelTextPart) {
          text += part.value;
          this.options.send({ type: 'chat.delta', id: message.id, text: part.value });
        } else if (part instanceof vscode.LanguageModelToolCallPart) {
          this.options.send({ type: 'chat.toolCall', id: message.id, callId: part.callId, name: part.name, input: part.input ?? {} });
        }
      }
      if (!entry.ended) {
        const usage = await countUsage(model, messages, text);
        this.end(message.id, usage ? { usage } : {});
      }
    } catch (err) {
      this.end(message.id, { error: failure(err, entry) });
    }
  }

  /** `chat.cancel`: cancels and ends the request at once; late or unknown ids are ignored. */
  cancel(message) {
    if (this.active.has(message.id)) {
      this.active.get(message.id).source.cancel();
      this.end(message.id, { error: { code: 'cancelled', message: 'cancelled by the caller' } });
    }
  }

  /** Cancels every request being answered, ending each with `cancelled`. */
  cancelAll(reason) {
    for (const [id, entry] of [...this.active]) {
      entry.source.cancel();
      this.end(id, { error: { code: 'cancelled', message: reason } });
    }
  }

  /** Resolves once no request is being answered. */
  whenIdle() {
    return this.active.size === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  end(id, outcome) {
    const entry = this.active.get(id);
    if (!entry || entry.ended) {
      return;
    }
    entry.ended = true;
    this.active.delete(id);
    entry.source.dispose();
    this.options.send({ type: 'chat.end', id, ...outcome });
    const result = outcome.error ? `${outcome.error.code}: ${outcome.error.message}` : 'ok';
    this.options.log(`chat ${id} (model ${entry.model}): ${result} in ${Date.now() - entry.started} ms`);
    this.notifyIdle();
  }

  notifyIdle() {
    if (this.active.size === 0) {
      this.idleWaiters.splice(0).forEach((resolve) => resolve());
    }
  }
}

function describeModel(model) {
  const info = { id: model.id, name: model.name, vendor: model.vendor, family: model.family, version: model.version };
  if (Number.isInteger(model.maxInputTokens)) {
    info.maxInputTokens = model.maxInputTokens;
  }
  if (Number.isInteger(model.maxOutputTokens)) {
    info.maxOutputTokens = model.maxOutputTokens;
  }
  return info;
}

/** sendRequest's options: the justification shown in the consent dialog, the tools, the model options. */
function requestOptions(message) {
  const options = { justification: JUSTIFICATION };
  if (Array.isArray(message.tools) && message.tools.length > 0) {
    options.tools = message.tools.map((tool) => ({ name: tool.name, description: tool.description ?? '', inputSchema: tool.inputSchema }));
  }
  if (message.options && Object.keys(message.options).length > 0) {
    options.modelOptions = message.options;
  }
  return options;
}

/** Token counts by the model's own tokenizer, or undefined when it cannot say in time. */
async function countUsage(model, messages, text) {
  const counting = (async () => {
    const inputs = await Promise.all(messages.map((message) => model.countTokens(message)));
    return { inputTokens: inputs.reduce((sum, count) => sum + count, 0), outputTokens: await model.countTokens(text) };
  })().catch(() => undefined); // a provider without a working tokenizer: the answer stands without usage
  const timeout = new Promise((resolve) => setTimeout(resolve, USAGE_TIMEOUT_MS, undefined));
  const usage = await Promise.race([counting, timeout]);
  return usage && Number.isInteger(usage.inputTokens) && Number.isInteger(usage.outputTokens) ? usage : undefined;
}

/** The `chat.end` error for a failed request. */
function failure(err, entry) {
  if (entry.source.token.isCancellationRequested || err instanceof vscode.CancellationError) {
    return { code: 'cancelled', message: 'the request was cancelled' };
  }
  if (err instanceof ChatInputError) {
    return { code: 'failed', message: err.message };
  }
  if (err instanceof vscode.LanguageModelError) {
    return { code: ERROR_CODES[err.code] ?? 'failed', message: err.message };
  }
  return { code: 'failed', message: err?.message ?? String(err) };
}

module.exports = { ChatService };
