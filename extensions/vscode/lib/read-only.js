'use strict';
// bridge.readOnly as it takes effect. No `vscode` import, so node can test it.

/**
 * The effective read-only flag from `inspect('readOnly')` of the `bridge`
 * configuration. `true` counts from anywhere; `false` only from the user's
 * own (global) settings: a repository's `.vscode/settings.json` (or a
 * `.code-workspace` file) comes with the code an agent works on, and must not
 * be able to let agents change files.
 * @param {{globalValue?: unknown, workspaceValue?: unknown, workspaceFolderValue?: unknown}|undefined} inspected
 * @returns {{readOnly: boolean, ignored: string|null}} `ignored`: which
 *   settings said `false` in vain, for the log
 */
function effectiveReadOnly(inspected) {
  const scoped = [
    ['workspace', inspected?.workspaceValue],
    ['workspace folder', inspected?.workspaceFolderValue],
  ];
  if (scoped.some(([, value]) => value === true)) {
    return { readOnly: true, ignored: null };
  }
  const readOnly = inspected?.globalValue !== false;
  const vain = scoped.filter(([, value]) => value === false).map(([where]) => where);
  return { readOnly, ignored: readOnly && vain.length > 0 ? `${vain.join(' and ')} settings` : null };
}

module.exports = { effectiveReadOnly };
