// Orchestrations: every plan the daemon ran or runs, and one plan as its
// DAG: waves side by side, each task with its state, time and the tasks
// it waits for, live; a running plan can be cancelled.

import { el, rpc, page, table, duration } from './lib.js';

export async function renderList() {
  const plans = await rpc('orchestrate.list');
  page.replaceChildren(
    el('h1', {}, 'Orchestrations'),
    plans.length
      ? table(['Orchestration', 'State', 'Sub-tasks'], [...plans].reverse().map((plan) => el('tr', { 'data-plan': plan.id },
        el('td', {}, el('a', { href: `/ui/orchestrations/${encodeURIComponent(plan.id)}` }, plan.id)),
        el('td', { class: plan.done ? (plan.status === 'completed' ? 'ok' : 'bad') : '' }, plan.done ? plan.status : 'running'),
        el('td', {}, String(plan.tasks)))), { id: 'plans' })
      : el('p', { class: 'muted' }, 'No orchestration has run in this daemon yet: start one with ',
        el('code', {}, 'copilot-bridge orchestrate'), ', the ', el('code', {}, 'copilot_orchestrate'),
        ' tool or ', el('code', {}, 'orchestrate.start'), ' (docs/orchestrator.md).'),
  );
}

/** One plan's DAG, kept up to date by its events. */
export class PlanView {
  constructor(id) {
    this.id = id;
    this.cards = new Map();
    this.status = el('p', { id: 'plan-status', role: 'status' }, 'running');
    this.cancel = el('button', { type: 'button', class: 'deny', onclick: () => this.stop() }, 'Cancel');
  }

  async render() {
    const answer = await rpc('orchestrate.watch', { id: this.id, since: 0 });
    const plan = answer.plan ?? { tasks: [], dependencies: {} };
    const waves = answer.waves ?? [];
    const tasks = new Map(plan.tasks.map((task) => [task.id, task]));
    const columns = waves.map((wave, index) => el('section', { class: 'wave', 'aria-label': `Wave ${index + 1}` },
      el('h3', {}, `Wave ${index + 1}`),
      ...wave.map((taskId) => this.card(tasks.get(taskId) ?? { id: taskId }, plan.dependencies?.[taskId] ?? []))));
    page.replaceChildren(
      el('p', {}, el('a', { href: '/ui/orchestrations' }, '← All orchestrations')),
      el('h1', {}, 'Orchestration ', el('code', {}, this.id)),
      el('div', { class: 'actions' }, this.status, this.cancel),
      el('div', { class: 'dag', id: 'dag' }, ...columns));
    for (const event of answer.events) this.apply(event);
    if (answer.done) this.finish(answer.result);
    return answer.next;
  }

  card(task, after) {
    const state = el('p', { class: 'state' }, 'waiting');
    const card = el('article', { class: 'task', 'data-task': task.id, 'data-state': 'waiting' },
      el('h4', {}, task.id),
      el('p', {}, task.description ?? ''),
      after.length ? el('p', { class: 'muted' }, `after ${after.join(', ')}`) : null,
      state);
    this.cards.set(task.id, { card, state });
    return card;
  }

  set(taskId, stateName, words, log) {
    const found = this.cards.get(taskId);
    if (!found) return;
    found.card.dataset.state = stateName;
    found.state.replaceChildren(words, log ? ' — ' : '',
      log ? el('a', { href: `/ui/sessions/${encodeURIComponent(log)}` }, 'its log') : '');
    if (log) found.card.dataset.log = log;
  }

  apply(event) {
    const data = event.data ?? {};
    switch (event.type) {
      case 'task_start':
        this.set(data.taskId, 'running', `running (${data.runner ?? 'runner'})`, data.log);
        break;
      case 'task_complete':
        this.set(data.taskId, data.status, `${data.status} in ${duration(data.durationMs)}${data.error ? `: ${data.error}` : ''}`,
          this.cards.get(data.taskId)?.card.dataset.log);
        break;
      case 'task_skipped':
        this.set(data.taskId, 'skipped', `skipped${data.reason ? `: ${data.reason}` : ''}`);
        break;
      case 'plan_complete':
        this.status.replaceChildren(`${data.status}: ${data.summary ?? ''} (${duration(data.durationMs)})`);
        this.cancel.hidden = true;
        break;
      default:
        break;
    }
  }

  finish(result) {
    this.cancel.hidden = true;
    if (!result) return;
    for (const task of result.tasks ?? []) {
      const log = this.cards.get(task.id)?.card.dataset.log;
      this.set(task.id, task.status, `${task.status} in ${duration(task.durationMs)}${task.error ? `: ${task.error}` : ''}`, log);
    }
    this.status.replaceChildren(`${result.status}: ${result.summary} (${duration(result.durationMs)})`);
  }

  async stop() {
    this.cancel.disabled = true;
    const answer = await rpc('orchestrate.cancel', { id: this.id });
    this.status.replaceChildren(answer.cancelled ? 'cancelling…' : 'already finished');
  }
}
