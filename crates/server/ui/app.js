// The dashboard's entry (docs/dashboard.md): which page the URL names, the
// login check, and the tab's one live stream. Each page is a module of its
// own; nothing polls on a timer.

import { el, page, setCsrf, csrfToken, showLogin, follow, NotLoggedIn } from './lib.js';
import * as overview from './overview.js';
import * as approvals from './approvals.js';
import * as sessions from './sessions.js';
import * as activity from './activity.js';
import * as orchestrations from './orchestrations.js';
import * as configuration from './configuration.js';

function currentPath() {
  const path = location.pathname.replace(/\/$/, '');
  return path === '/ui' ? '/ui/overview' : path;
}

function markCurrent() {
  const section = `/${currentPath().split('/').slice(1, 3).join('/')}`;
  for (const link of document.querySelectorAll('nav a')) {
    if (link.getAttribute('href') === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

function shownError(error) {
  if (!(error instanceof NotLoggedIn)) page.append(el('p', { class: 'bad', role: 'alert' }, error.message));
}

/** Renders with `draw`; a change while drawing draws once more after. */
function redrawing(draw) {
  let drawing = null;
  let again = false;
  const redraw = async () => {
    if (drawing) { again = true; return; }
    drawing = draw().catch(shownError);
    await drawing;
    drawing = null;
    if (again) { again = false; redraw(); }
  };
  return redraw;
}

/** The page the URL names: what it draws and what it follows live. */
async function open() {
  const path = currentPath();
  const [, , section, id] = path.split('/');
  const name = id ? decodeURIComponent(id) : null;
  if (section === 'sessions' && name) {
    const { view, since } = await sessions.renderOne(name);
    follow({ session: name, sessionSince: since }, { transcript: (event) => view.add(event) });
    return;
  }
  if (section === 'orchestrations' && name) {
    const plan = new orchestrations.PlanView(name);
    const since = await plan.render();
    follow({ orchestration: name, orchestrationSince: since }, {
      orchestration: (event) => plan.apply(event),
      'orchestration.done': (result) => plan.finish(result),
    });
    return;
  }
  const pages = {
    overview: [overview.render, { sessions: true }, ['approval', 'sessions']],
    approvals: [approvals.render, {}, ['approval']],
    sessions: [sessions.renderList, { sessions: true }, ['sessions']],
    activity: [activity.render, {}, []],
    orchestrations: [orchestrations.renderList, { orchestrations: true }, ['orchestrations']],
    configuration: [configuration.render, {}, []],
  };
  const [draw, topics, redrawOn] = pages[section] ?? pages.overview;
  const redraw = redrawing(draw);
  await redraw();
  if (redrawOn.length) follow(topics, Object.fromEntries(redrawOn.map((name) => [name, redraw])));
}

async function start() {
  markCurrent();
  const session = await fetch('/ui/api/session');
  if (session.status !== 200) { showLogin(); return; }
  setCsrf((await session.json()).csrf);
  const logout = document.getElementById('logout');
  logout.hidden = false;
  logout.addEventListener('click', async () => {
    await fetch('/ui/logout', { method: 'POST', headers: { 'x-csrf-token': csrfToken() } });
    showLogin();
    logout.hidden = true;
  });
  await open().catch(shownError);
}

start();
