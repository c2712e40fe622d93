'use strict';
// The tool host and the chat service with a fake `vscode`: a cancel once an
// edit is being applied answers the real outcome, not CANCELLED; a new
// binding gets the chat offer again; in-flight chat requests can be ended.

const test = require('node:test');
const assert = require('node:assert/strict');

const vscode = require('./fake-vscode');
const { ToolHost } = require('../lib/tools');
const { ChatService } = require('../lib/chat');

const fs = require('node:fs');
const os = require('node:os');
const nodePath = require('node:path');

const folderPath = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), 'cb-hosts-')));
fs.mkdirSync(nodePath.join(folderPath, '.git', 'hooks'), { recursive: true });
fs.writeFileSync(nodePath.join(folderPath, '.agent-policy.yaml'), 'writes: {}\n');
test.after(() => fs.rmSync(folderPath, { recursive: true, force: true }));
vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(folderPath), name: 'ws' }];

/** A tool host whose vscode_format is `run`, writable. */
function hostWith(run) {
  const sent = [];
  const logs = [];
  const host = new ToolHost({ send: (message) => sent.push(message), log: (line) => logs.push(line), readOnly: () => false });
  host.byName.set('vscode_format', { ...host.byName.get('vscode_format'), run });
  return { host, sent, logs };
}

function gate() {
  let open;
  const opened = new Promise((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

test('a cancel before the edit starts answers CANCELLED at once', async () => {
  const release = gate();
  const { host, sent } = hostWith(async () => {
    await release.opened;
    return { ok: true };
  });
  const call = host.call({ id: 'c1', tool: 'vscode_format', args: { path: 'a.js' } });
  host.cancel({ id: 'c1', reason: 'timeout' });
  assert.equal(sent.length, 1);
  assert.equal(sent[0].errorCode, 'CANCELLED');
  release.open();
  await call;
  assert.equal(sent.length, 1, 'no second answer');
});

test('a cancel once the edit is being applied waits for the real outcome', async () => {
  const release = gate();
  let token;
  const { host, sent, logs } = hostWith(async (_args, context) => {
    token = context.token;
    context.committing();
    await release.opened;
    return { ok: true, path: 'a.js', changed: true };
  });
  const call = host.call({ id: 'c2', tool: 'vscode_format', args: { path: 'a.js' } });
  await new Promise((resolve) => setImmediate(resolve));
  host.cancel({ id: 'c2' });
  assert.equal(sent.length, 0);
  assert.equal(token.isCancellationRequested, false, 'the edit is not interrupted');
  assert.ok(logs.some((line) => line.includes('its outcome will be answered')));
  release.open();
  await call;
  assert.deepEqual(sent, [{ type: 'tool.result', id: 'c2', data: { ok: true, path: 'a.js', changed: true } }]);
});

test('the writing tools refuse the policy file and .git before touching anything', async () => {
  const { host, sent } = hostWith(require('../lib/tools-edit').format);
  for (const [id, path] of [['p1', '.agent-policy.yaml'], ['p2', '.git/hooks/pre-commit']]) {
    await host.call({ id, tool: 'vscode_format', args: { path } });
  }
  assert.deepEqual(sent.map((reply) => reply.errorCode), ['UNAUTHORIZED', 'UNAUTHORIZED']);
  assert.match(sent[0].error, /policy file/);
  assert.match(sent[1].error, /\.git\//);
});

function chatService() {
  const sent = [];
  const chat = new ChatService({
    send: (message) => sent.push(message) > 0,
    log: () => {},
    settings: () => ({ chatEnabled: true, chatVendor: 'copilot' }),
    access: { canSendRequest: () => true },
    onOfferChanged: () => {},
  });
  return { chat, sent };
}

test('every binding sends the chat offer, even one equal to the last', async () => {
  const { chat, sent } = chatService();
  await chat.bound();
  await chat.sendOffer();
  assert.equal(sent.length, 1, 'an unchanged offer is not repeated on the same binding');
  await chat.bound();
  assert.equal(sent.length, 2, 'a new binding gets it again');
  assert.equal(sent[1].type, 'chat.models');
});

test('cancelAll ends every request being answered with cancelled', async () => {
  const { chat, sent } = chatService();
  const source = new vscode.CancellationTokenSource();
  chat.active.set('r1', { source, ended: false, model: 'm', started: Date.now() });
  const idle = chat.whenIdle();
  chat.cancelAll('cancelled: the session ended');
  await idle;
  assert.equal(source.token.isCancellationRequested, true);
  assert.deepEqual(sent, [{ type: 'chat.end', id: 'r1', error: { code: 'cancelled', message: 'cancelled: the session ended' } }]);
});
