'use strict';
// bridge.readOnly as it takes effect, and what a daemon started by the
// extension gets: its environment and its working directory.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const nodePath = require('node:path');

const { effectiveReadOnly } = require('../lib/read-only');
const { daemonEnvironment, startDirectory } = require('../lib/daemon-start');

test('bridge.readOnly: false counts only from the user settings; true from anywhere', () => {
  assert.deepEqual(effectiveReadOnly(undefined), { readOnly: true, ignored: null });
  assert.deepEqual(effectiveReadOnly({ defaultValue: true }), { readOnly: true, ignored: null });
  assert.deepEqual(effectiveReadOnly({ globalValue: false }), { readOnly: false, ignored: null });
  assert.deepEqual(effectiveReadOnly({ workspaceValue: false }), { readOnly: true, ignored: 'workspace settings' });
  assert.deepEqual(effectiveReadOnly({ workspaceFolderValue: false, workspaceValue: false }), {
    readOnly: true,
    ignored: 'workspace and workspace folder settings',
  });
  assert.deepEqual(effectiveReadOnly({ globalValue: false, workspaceValue: true }), { readOnly: true, ignored: null });
  assert.deepEqual(effectiveReadOnly({ globalValue: false, workspaceFolderValue: true }), { readOnly: true, ignored: null });
  assert.deepEqual(effectiveReadOnly({ globalValue: true, workspaceValue: false }), { readOnly: true, ignored: 'workspace settings' });
  // The user turned it off; the workspace agrees: nothing was ignored in effect.
  assert.deepEqual(effectiveReadOnly({ globalValue: false, workspaceValue: false }), { readOnly: false, ignored: null });
  // Not a boolean: the default.
  assert.deepEqual(effectiveReadOnly({ globalValue: 'false' }), { readOnly: true, ignored: null });
});

test("the daemon's environment: its own settings and the user's basics, not the editor's", () => {
  const env = {
    PATH: '/bin', HOME: '/home/u', LC_ALL: 'C', COPILOT_BRIDGE_HOME: '/s', OPENAI_API_KEY: 'k',
    VSCODE_PID: '1', ELECTRON_RUN_AS_NODE: '1', Path: '/win', SystemRoot: 'C:\\Windows',
  };
  assert.deepEqual(Object.keys(daemonEnvironment(env, 'linux')).sort(), ['COPILOT_BRIDGE_HOME', 'HOME', 'LC_ALL', 'OPENAI_API_KEY', 'PATH']);
  const windows = { Path: 'C:\\bin', SystemRoot: 'C:\\Windows', UserProfile: 'C:\\u', Copilot_Bridge_Home: 'x', openai_api_key: 'k', VSCODE_PID: '1' };
  assert.deepEqual(Object.keys(daemonEnvironment(windows, 'win32')).sort(), ['Copilot_Bridge_Home', 'Path', 'SystemRoot', 'UserProfile', 'openai_api_key']);
});

test('the daemon starts in its state directory, created private, else in the home directory', (t) => {
  const base = fs.mkdtempSync(nodePath.join(os.tmpdir(), 'cb-start-'));
  t.after(() => fs.rmSync(base, { recursive: true, force: true }));
  const logged = [];
  const home = nodePath.join(base, 'state', 'nested');
  assert.equal(startDirectory(home, (line) => logged.push(line)), home);
  if (process.platform !== 'win32') {
    assert.equal(fs.statSync(home).mode & 0o777, 0o700);
  }
  const file = nodePath.join(base, 'a-file');
  fs.writeFileSync(file, '');
  assert.equal(startDirectory(file, (line) => logged.push(line)), os.homedir());
  assert.equal(logged.length, 1);
  assert.match(logged[0], /cannot create the daemon's state directory/);
});
