// Configuration: the settings in force, each with its source, secrets
// redacted; the permission rules.

import { el, rpc, page, table } from './lib.js';

export async function render() {
  const { config, file } = await rpc('bridge.config');
  const values = table(['Key', 'Value', 'From', 'Variable'],
    config.values.map((row) => el('tr', {},
      el('td', { class: 'rule' }, row.key),
      el('td', {}, row.value ?? '—'),
      el('td', { class: 'muted' }, row.source),
      el('td', { class: 'muted' }, row.env),
    )));
  const permissions = config.permissions ?? {};
  const rules = el('table', {},
    el('tbody', {}, ...Object.entries(permissions).map(([name, value]) => el('tr', {},
      el('td', { class: 'rule' }, name),
      el('td', {}, Array.isArray(value) ? (value.join(', ') || '—') : JSON.stringify(value)),
    ))));
  const state = [`config.toml: ${file.file}`, file.read ? `, loaded ${file.loadedAt}` : ' (not present: defaults, the environment and flags)'];
  page.replaceChildren(
    el('h1', {}, 'Configuration'),
    el('p', {}, ...state),
    file.problem ? el('p', { class: 'bad', role: 'alert' }, `Edit not in force: ${file.problem}`) : '',
    (file.restartNeeded ?? []).length ? el('p', {}, `Changed, waiting for a restart: ${file.restartNeeded.join(', ')}`) : '',
    el('h2', {}, 'Permission rules in force'),
    rules,
    el('h2', {}, 'Every setting, and where it came from'),
    values,
  );
}
