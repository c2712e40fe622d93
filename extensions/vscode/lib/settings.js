'use strict';
// The extension's settings (`bridge.*`, declared in package.json) as one
// plain object. `copilot-bridge vscode install` writes a config.json next to
// package.json naming its binary and state directory: those are the
// defaults of bridge.binary and bridge.home, so the extension reaches (or
// starts) the daemon of the program that installed it.

const fs = require('node:fs');
const os = require('node:os');
const nodePath = require('node:path');
const vscode = require('vscode');
const { effectiveReadOnly } = require('./read-only');

/**
 * @typedef {{enabled: boolean, home: string, url: string, token: string, binary: string,
 *   bindAddress: string, readOnly: boolean, readOnlyIgnored: string|null, chatVendor: string,
 *   chatEnabled: boolean}} Settings  `readOnly`: the effective value (see read-only.js);
 *   `readOnlyIgnored`: which settings' `false` was ignored, if any.
 */

/** `~` and `~/…` as the user's home directory. */
function expandHome(path) {
  if (path === '~') {
    return os.homedir();
  }
  if (path.startsWith('~/') || path.startsWith('~\\')) {
    return nodePath.join(os.homedir(), path.slice(2));
  }
  return path;
}

/**
 * The installer's defaults from `<extension>/config.json`: {binary?, home?};
 * empty when the extension was not installed by `copilot-bridge vscode install`.
 * @param {string} extensionPath
 * @param {(line: string) => void} log
 */
function readInstallDefaults(extensionPath, log) {
  const file = nodePath.join(extensionPath, 'config.json');
  let parsed;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    if (err.code !== 'ENOENT') {
      log(`ignoring ${file}: ${err.message}`);
    }
    return {};
  }
  const text = (value) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);
  return { binary: text(parsed?.binary), home: text(parsed?.home) };
}

/**
 * @param {{binary?: string, home?: string}} installDefaults from readInstallDefaults
 * @returns {Settings}
 */
function readSettings(installDefaults) {
  const config = vscode.workspace.getConfiguration('bridge');
  const text = (key, fallback) => {
    const value = config.get(key, fallback);
    return typeof value === 'string' && value.trim() !== '' ? value.trim() : fallback;
  };
  const flag = (key, fallback) => {
    const value = config.get(key, fallback);
    return typeof value === 'boolean' ? value : fallback;
  };
  const envHome = process.env.COPILOT_BRIDGE_HOME;
  const readOnly = effectiveReadOnly(config.inspect('readOnly'));
  const defaultHome =
    installDefaults.home ?? (envHome && envHome.trim() !== '' ? envHome : nodePath.join(os.homedir(), '.copilot-bridge'));
  return {
    enabled: flag('enabled', true),
    home: expandHome(text('home', defaultHome)),
    url: text('url', ''),
    token: text('token', ''),
    binary: expandHome(text('binary', installDefaults.binary ?? '')),
    bindAddress: text('bindAddress', '127.0.0.1'),
    readOnly: readOnly.readOnly,
    readOnlyIgnored: readOnly.ignored,
    chatVendor: text('chat.vendor', 'copilot'),
    chatEnabled: flag('chat.enabled', true),
  };
}

module.exports = { readSettings, readInstallDefaults };
