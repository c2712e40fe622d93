'use strict';
// Finding the copilot-bridge daemon (gateway.json + /healthz, or bridge.url),
// its /rpc methods, the session of this window's folder and a provider token
// for it, and starting the daemon with bridge.binary. No `vscode` import.

const fs = require('node:fs');
const nodePath = require('node:path');
const { startDaemon } = require('./daemon-start');

const HEALTH_TIMEOUT_MS = 3000;
const RPC_TIMEOUT_MS = 10000;
/** How long to wait for gateway.json after `daemon start` reported success. */
const GATEWAY_WAIT_MS = 5000;

/**
 * @typedef {{baseUrl: string, wsUrl: string, token: string, pid: number, identity: string}} Endpoint
 *   `identity` changes when the daemon restarts (new pid or port).
 * @typedef {{identity: string, daemonUrl: string, wsUrl: string, session: string,
 *   sessionLabel: string, token: string}} Binding  what a provider connection needs.
 */

/** The host to connect to for a daemon bound to `host` (a wildcard bind is reached on loopback). */
function connectHost(host) {
  if (host === '0.0.0.0' || host === '') {
    return '127.0.0.1';
  }
  if (host === '::' || host === '[::]') {
    return '[::1]';
  }
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** GET /healthz → its JSON, or null when nothing (or not the daemon) answers there. */
async function health(baseUrl) {
  try {
    const response = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
    if (!response.ok) {
      return null;
    }
    const body = await response.json();
    return body && body.service === 'copilot-bridge' && Number.isInteger(body.pid) ? body : null;
  } catch {
    return null;
  }
}

/**
 * The running daemon, or null when none runs. Throws when the settings or
 * gateway.json are unusable (the message says which and why).
 * @param {import('./settings').Settings} settings
 * @returns {Promise<Endpoint|null>}
 */
async function locateDaemon(settings) {
  return settings.url ? locateByUrl(settings) : locateByHome(settings.home);
}

async function locateByUrl(settings) {
  let url;
  try {
    url = new URL(settings.url);
  } catch {
    throw new Error(`bridge.url ${JSON.stringify(settings.url)} is not a URL; give the daemon's address, e.g. http://127.0.0.1:9400`);
  }
  if (url.protocol !== 'http:') {
    throw new Error(`bridge.url ${JSON.stringify(settings.url)} must start with http:// (the daemon speaks plain HTTP)`);
  }
  if (!settings.token) {
    throw new Error('bridge.url is set but bridge.token is empty: give the daemon\'s /rpc token (the "token" of its gateway.json)');
  }
  const baseUrl = `http://${url.host}`;
  const answer = await health(baseUrl);
  if (!answer) {
    return null;
  }
  return { baseUrl, wsUrl: `ws://${url.host}/`, token: settings.token, pid: answer.pid, identity: `${answer.pid}@${url.host}` };
}

async function locateByHome(home) {
  const file = nodePath.join(home, 'gateway.json');
  let stat;
  try {
    stat = await fs.promises.lstat(file);
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') {
      return null;
    }
    throw new Error(`cannot read ${file}: ${err.message}`);
  }
  // Only a regular file of ours is trusted: it names where to send the
  // editor's files and which token to use.
  if (!stat.isFile()) {
    throw new Error(`${file} is not a regular file (a symlink or a special file); refusing to trust it`);
  }
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) {
    throw new Error(`${file} belongs to user id ${stat.uid}, not to you (${process.getuid()}); refusing to trust it`);
  }
  let gateway;
  try {
    gateway = JSON.parse(await fs.promises.readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file} is not readable JSON: ${err.message}`);
  }
  const { port, pid, host, token } = gateway ?? {};
  if (!Number.isInteger(port) || !Number.isInteger(pid) || typeof token !== 'string' || token === '') {
    throw new Error(`${file} lacks a numeric "port" and "pid" or a "token"; is it from a copilot-bridge daemon?`);
  }
  if (!processAlive(pid)) {
    return null;
  }
  const address = `${connectHost(typeof host === 'string' ? host : '127.0.0.1')}:${port}`;
  const baseUrl = `http://${address}`;
  const answer = await health(baseUrl);
  // A stale file whose port now belongs to another program is "no daemon".
  if (!answer || answer.pid !== pid) {
    return null;
  }
  return { baseUrl, wsUrl: `ws://${address}/`, token, pid, identity: `${pid}@${address}` };
}

function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** Calls a JSON-RPC method on the daemon's /rpc; throws with the method and the daemon's reason. */
async function rpc(endpoint, method, params) {
  let response;
  try {
    response = await fetch(`${endpoint.baseUrl}/rpc`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${endpoint.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: params ?? {} }),
      signal: AbortSignal.timeout(RPC_TIMEOUT_MS),
    });
  } catch (err) {
    throw new Error(`${method} on ${endpoint.baseUrl}/rpc failed: ${err.message}`);
  }
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const reason = body?.error?.message ?? response.statusText;
    throw new Error(`${method} on ${endpoint.baseUrl}/rpc: HTTP ${response.status} ${reason}`);
  }
  if (body?.error) {
    throw new Error(`${method} on ${endpoint.baseUrl}/rpc: ${body.error.message} (JSON-RPC ${body.error.code})`);
  }
  return body?.result;
}

function realpathOr(path) {
  try {
    return fs.realpathSync.native(path);
  } catch {
    return path;
  }
}

/**
 * The live session whose workspace is `folderPath` (the default one first,
 * then the foreground one), or a new one labelled after the folder.
 * @returns {Promise<{id: string, label: string, created: boolean}>}
 */
async function findOrCreateSession(endpoint, folderPath, folderName) {
  const real = realpathOr(folderPath);
  const sessions = await rpc(endpoint, 'session.list');
  const matching = (Array.isArray(sessions) ? sessions : []).filter(
    (session) => session.state !== 'ending' && typeof session.cwd === 'string' && realpathOr(session.cwd) === real,
  );
  const rank = (session) => (session.default ? 0 : session.foreground ? 1 : 2);
  const found = matching.sort((a, b) => rank(a) - rank(b))[0];
  if (found) {
    return { id: found.id, label: found.label, created: false };
  }
  const created = await rpc(endpoint, 'session.create', { cwd: folderPath, label: `vscode: ${folderName}` });
  return { id: created.id, label: created.label, created: true };
}

/**
 * What a provider connection to the daemon needs. With `previous` from the
 * same daemon (same pid and port) its session and token are kept; after a
 * daemon restart, or with `fresh`, the session is looked up and a token
 * minted again. Null when no daemon runs.
 * @param {import('./settings').Settings} settings
 * @param {{path: string, name: string}} folder
 * @param {Binding|null} previous
 * @param {{fresh: boolean, log: (line: string) => void, mayStart: boolean, startRefused?: string|null}} options
 *   `mayStart`: run bridge.binary when no daemon runs; `startRefused`: why
 *   one would have been started but may not be (then an error says so)
 * @returns {Promise<Binding|null>}
 */
async function resolveBinding(settings, folder, previous, options) {
  let endpoint = await locateDaemon(settings);
  const wouldStart = !endpoint && settings.binary && !settings.url;
  if (wouldStart && !options.mayStart && options.startRefused) {
    throw new Error(`no copilot-bridge daemon is running, and none is started from bridge.binary: ${options.startRefused}`);
  }
  if (wouldStart && options.mayStart) {
    await startDaemon(settings, options.log);
    // `daemon start` returns once the daemon answers; gateway.json may follow a moment later.
    for (let waited = 0; !(endpoint = await locateDaemon(settings)) && waited < GATEWAY_WAIT_MS; waited += 250) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    if (!endpoint) {
      throw new Error(`${settings.binary} daemon start finished, but no daemon answers through ${nodePath.join(settings.home, 'gateway.json')}`);
    }
  }
  if (!endpoint) {
    return null;
  }
  if (previous && !options.fresh && previous.identity === endpoint.identity) {
    return previous;
  }
  if (previous && previous.identity !== endpoint.identity) {
    options.log(`the daemon restarted (now ${endpoint.identity}); finding this folder's session again`);
  }
  const session = await findOrCreateSession(endpoint, folder.path, folder.name);
  options.log(`${session.created ? 'created' : 'found'} session ${session.id} (${session.label}) for ${folder.path}`);
  const minted = await rpc(endpoint, 'gateway.providerToken', { session: session.id });
  if (typeof minted?.token !== 'string') {
    throw new Error(`gateway.providerToken on ${endpoint.baseUrl}/rpc answered without a token`);
  }
  return {
    identity: endpoint.identity,
    daemonUrl: endpoint.baseUrl,
    wsUrl: endpoint.wsUrl,
    session: minted.session ?? session.id,
    sessionLabel: session.label,
    token: minted.token,
  };
}

module.exports = { resolveBinding };
