'use strict';
// Starting the copilot-bridge daemon with bridge.binary: the environment it
// gets and the directory it starts in. No `vscode` import, so node can test it.

const fs = require('node:fs');
const os = require('node:os');
const { spawn } = require('node:child_process');

/** `daemon start` waits up to 10 s for the daemon itself; give it some slack. */
const START_TIMEOUT_MS = 30000;

/** Variables passed by exact name (compared case-insensitively on Windows). */
const PASSED_NAMES = [
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'TZ', 'TMPDIR', 'TEMP', 'TMP',
  'USERPROFILE', 'APPDATA', 'LOCALAPPDATA', 'SYSTEMROOT', 'SSL_CERT_FILE', 'SSL_CERT_DIR',
  'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy',
  'GH_TOKEN', 'GITHUB_TOKEN', 'RUST_LOG',
];

/**
 * The environment the daemon gets: what locates the user and their locale,
 * proxies and certificates, and the daemon's own configuration (COPILOT_*,
 * OPENCLAW_*, API keys); not the editor's internals (VSCODE_*, ELECTRON_*).
 * Windows spells its variables as it likes (`Path`, `SystemRoot`) and treats
 * names case-insensitively, so there they are matched that way.
 * @param {NodeJS.ProcessEnv} [env]
 * @param {string} [platform]
 * @returns {Record<string, string>}
 */
function daemonEnvironment(env = process.env, platform = process.platform) {
  const windows = platform === 'win32';
  const fold = (name) => (windows ? name.toUpperCase() : name);
  const names = new Set(PASSED_NAMES.map(fold));
  const prefixes = new RegExp('^(LC_|XDG_|COPILOT_|OPENCLAW_)', windows ? 'i' : '');
  const apiKey = new RegExp('_API_KEY$', windows ? 'i' : '');
  const wanted = (name) => names.has(fold(name)) || prefixes.test(name) || apiKey.test(name);
  return Object.fromEntries(Object.entries(env).filter(([name, value]) => value !== undefined && wanted(name)));
}

/**
 * The directory the daemon starts in: its state directory (created, private,
 * when missing), else the user's home. Never the workspace folder: the
 * daemon reads a `.env` from its working directory, and a repository's
 * `.env` could point its API keys (and so the prompts) elsewhere.
 * @param {string} home the daemon's state directory
 * @param {(line: string) => void} log
 */
function startDirectory(home, log) {
  try {
    fs.mkdirSync(home, { recursive: true, mode: 0o700 });
    if (fs.statSync(home).isDirectory()) {
      return home;
    }
  } catch (err) {
    log(`cannot create the daemon's state directory ${home} (${err.message}); starting it in ${os.homedir()}`);
  }
  return os.homedir();
}

/**
 * Runs `<binary> --home <home> daemon start` and waits for it to report the
 * daemon started. The bind address goes in COPILOT_BRIDGE_BIND, the
 * daemon's own setting for it (the command line has no flag for it). The
 * daemon's default session is its start directory; the extension makes its
 * own session for the folder.
 * @param {import('./settings').Settings} settings
 * @param {(line: string) => void} log
 * @returns {Promise<void>}
 */
function startDaemon(settings, log) {
  const args = ['--home', settings.home, 'daemon', 'start'];
  const cwd = startDirectory(settings.home, log);
  log(`no daemon runs; starting one in ${cwd}: COPILOT_BRIDGE_BIND=${settings.bindAddress} ${settings.binary} ${args.join(' ')}`);
  return new Promise((resolve, reject) => {
    let output = '';
    const child = spawn(settings.binary, args, {
      cwd,
      env: { ...daemonEnvironment(), COPILOT_BRIDGE_BIND: settings.bindAddress },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const collect = (chunk) => {
      output = (output + chunk.toString('utf8')).slice(-4000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`${settings.binary} daemon start did not finish within ${START_TIMEOUT_MS / 1000} s`));
    }, START_TIMEOUT_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot run bridge.binary ${settings.binary}: ${err.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) {
        log(`daemon start: ${output.trim()}`);
        resolve();
      } else {
        reject(new Error(`${settings.binary} daemon start exited with status ${code}: ${output.trim()}`));
      }
    });
  });
}

module.exports = { startDaemon, daemonEnvironment, startDirectory };
