'use strict';
// Copilot Bridge for VS Code: connects the window to the local copilot-bridge
// daemon as a provider, offering the editor's workspace as tools and its chat
// models to the agents the daemon serves. lib/bridge.js does the work; this
// file wires it into VS Code.

const vscode = require('vscode');
const { Bridge } = require('./lib/bridge');

/** @param {import('vscode').ExtensionContext} context */
function activate(context) {
  const output = vscode.window.createOutputChannel('Copilot Bridge');
  // Lines name endpoints, sessions, tools and outcomes; never a token.
  const log = (line) => output.appendLine(`[${new Date().toISOString()}] ${line}`);
  log(`Copilot Bridge ${context.extension.packageJSON.version} activated in VS Code ${vscode.version}`);
  const bridge = new Bridge(context, log);
  context.subscriptions.push(
    output,
    bridge,
    vscode.commands.registerCommand('bridge.enable', () => bridge.setEnabled(true)),
    vscode.commands.registerCommand('bridge.disable', () => bridge.setEnabled(false)),
    vscode.commands.registerCommand('bridge.status', () => bridge.showStatus(() => output.show(true))),
  );
  bridge.reconcile();
}

/** Nothing beyond the subscriptions: disposing the bridge says goodbye to the daemon. */
function deactivate() {}

module.exports = { activate, deactivate };
