'use strict';
// The provider connection's handshake, against a fake WebSocket: what it
// sends before and after hello.ack, which refusals end an attempt, the
// handshake deadline, frames that are not JSON objects.

const test = require('node:test');
const assert = require('node:assert/strict');

const { ProviderConnection } = require('../lib/connection');

class FakeSocket {
  static OPEN = 1;
  static all = [];
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    this.closed = null;
    this.listeners = {};
    FakeSocket.all.push(this);
  }
  addEventListener(type, listener) {
    (this.listeners[type] ??= []).push(listener);
  }
  emit(type, event = {}) {
    (this.listeners[type] ?? []).forEach((listener) => listener(event));
  }
  open() {
    this.readyState = 1;
    this.emit('open');
  }
  receive(message) {
    this.emit('message', { data: typeof message === 'string' ? message : JSON.stringify(message) });
  }
  send(text) {
    this.sent.push(JSON.parse(text));
  }
  close(code, reason) {
    this.closed ??= { code, reason };
    this.readyState = 3;
  }
  types() {
    return this.sent.map((message) => message.type);
  }
}

const BINDING = { identity: '1@h', daemonUrl: 'http://h', wsUrl: 'ws://h/', session: 's-1', sessionLabel: 'x', token: 't' };
const tick = () => new Promise((resolve) => setImmediate(resolve));

function connect(t, extra = {}) {
  const saved = globalThis.WebSocket;
  globalThis.WebSocket = FakeSocket;
  FakeSocket.all = [];
  const events = { bound: 0, messages: [], logs: [], fresh: [] };
  const connection = new ProviderConnection({
    resolveBinding: async (_previous, fresh) => {
      events.fresh.push(fresh);
      return BINDING;
    },
    helloFields: () => ({ name: 'vscode', tools: [] }),
    onBound: () => {
      events.bound += 1;
    },
    onUnbound: () => {},
    onMessage: (message) => events.messages.push(message),
    onProblem: () => {},
    log: (line) => events.logs.push(line),
    ...extra,
  });
  t.after(() => {
    connection.stop('test over');
    globalThis.WebSocket = saved;
  });
  return { connection, events };
}

async function handshake(socket) {
  socket.open();
  socket.receive({ type: 'sessions', active: [{ id: 's-1' }] });
}

test('nothing but the handshake goes out before hello.ack; after it, messages do', async (t) => {
  const { connection, events } = connect(t);
  connection.start();
  await tick();
  const socket = FakeSocket.all[0];
  await handshake(socket);
  assert.equal(connection.send({ type: 'chat.models', models: [], available: false }), false);
  assert.deepEqual(socket.types(), ['auth', 'hello']);
  socket.receive({ type: 'hello.ack', providerId: 'p-1', reconnectToken: 'r' });
  assert.equal(events.bound, 1);
  assert.equal(connection.send({ type: 'chat.models', models: [], available: false }), true);
  assert.deepEqual(socket.types(), ['auth', 'hello', 'chat.models']);
});

test('frames that are not JSON objects are ignored, before and after binding', async (t) => {
  const { connection, events } = connect(t);
  connection.start();
  await tick();
  const socket = FakeSocket.all[0];
  socket.open();
  for (const frame of ['null', '42', '"text"', '[1]', 'not json']) {
    socket.receive(frame);
  }
  socket.receive({ type: 'sessions', active: [null, { id: 's-1' }] });
  socket.receive({ type: 'hello.ack', providerId: 'p-1' });
  socket.receive('null');
  assert.equal(events.bound, 1);
  assert.deepEqual(events.messages, []);
  assert.equal(events.logs.filter((line) => line.includes('not a JSON object')).length, 6);
  assert.equal(socket.closed, null);
});

test('only refusals of auth or hello end the attempt; a token is minted again only when it is gone', async (t) => {
  const { connection, events } = connect(t);
  connection.start();
  await tick();
  const first = FakeSocket.all[0];
  first.open();
  first.receive({ type: 'error', code: 'UNAUTHORIZED', message: 'not at this trust level', replyTo: 'chat.models' });
  first.receive({ type: 'error', code: 'INVALID_JSON', message: 'binary frame' });
  assert.equal(first.closed, null);
  first.receive({ type: 'error', code: 'UNAUTHORIZED', message: 'capability', replyTo: 'hello' });
  assert.deepEqual(first.closed, { code: 1000, reason: 'refused' });
  assert.equal(connection.freshNext, false);
  connection.restart('again', false);
  await tick();
  const second = FakeSocket.all[1];
  second.open();
  second.receive({ type: 'error', code: 'AUTH_FAILED', message: 'unknown token', replyTo: 'auth' });
  assert.ok(second.closed);
  assert.equal(connection.freshNext, true);
  assert.deepEqual(events.fresh, [false, false]);
});

test('an error after binding (UNAUTHORIZED for chat.models) keeps the connection', async (t) => {
  const { connection, events } = connect(t);
  connection.start();
  await tick();
  const socket = FakeSocket.all[0];
  await handshake(socket);
  socket.receive({ type: 'hello.ack', providerId: 'p-1' });
  socket.receive({ type: 'error', code: 'UNAUTHORIZED', message: 'no', replyTo: 'chat.models' });
  assert.equal(socket.closed, null);
  assert.equal(connection.bound, true);
  assert.equal(events.messages[0].replyTo, 'chat.models');
});

test('a handshake that does not finish in time is closed and retried', async (t) => {
  const { connection, events } = connect(t, { handshakeTimeoutMs: 30 });
  connection.start();
  await tick();
  const socket = FakeSocket.all[0];
  socket.open();
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.deepEqual(socket.closed, { code: 1000, reason: 'handshake timeout' });
  assert.ok(events.logs.some((line) => line.includes('did not complete auth and hello')));
  assert.ok(connection.retryTimer, 'a retry is scheduled');
  assert.equal(events.bound, 0);
});
