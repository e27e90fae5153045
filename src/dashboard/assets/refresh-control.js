// The refresh control in the header: pause / resume, and how often the page refreshes, kept in
// the tab (session storage) across reloads; never faster than the app's refreshInterval.
import { el } from './dom.js';
import { refreshNow } from './refresh.js';
import { state } from './state.js';

const KEY = 'nestjs-redis-streams-dashboard:refresh';
const CHOICES = [1_000, 2_000, 5_000, 10_000, 30_000, 60_000];

function load() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(KEY) || '{}');
    return { paused: saved.paused === true, interval: Number.isInteger(saved.interval) ? saved.interval : null };
  } catch {
    return { paused: false, interval: null };
  }
}

function save() {
  try {
    sessionStorage.setItem(KEY, JSON.stringify({ paused: state.paused, interval: state.interval }));
  } catch {
    // Storage may be off: the choice lasts as long as the page.
  }
}

/** Draws the control (after the session is read) and applies what the tab chose before. */
export function startRefreshControl() {
  const floor = state.session.refreshInterval;
  const saved = load();
  state.paused = saved.paused;
  state.interval = saved.interval !== null && saved.interval >= floor ? saved.interval : null;
  const choices = [...new Set([floor, ...CHOICES.filter((ms) => ms >= floor)])].sort((a, b) => a - b);
  const select = el('select', { id: 'refresh-interval', title: 'How often the page refreshes' },
    ...choices.map((ms) => el('option', { value: String(ms), text: `every ${ms < 1000 ? `${ms} ms` : `${ms / 1000} s`}`, selected: ms === (state.interval ?? floor) })));
  const button = el('button', { type: 'button', id: 'refresh-toggle' });
  const draw = () => {
    button.textContent = state.paused ? 'Resume' : 'Pause';
    button.setAttribute('aria-pressed', String(state.paused));
    button.title = state.paused ? 'Refreshes are paused: resume them' : 'Pause the refreshes';
    document.body.dataset.refresh = state.paused ? 'paused' : 'running';
  };
  button.addEventListener('click', () => {
    state.paused = !state.paused;
    save();
    draw();
    if (state.paused) clearTimeout(state.timer);
    else refreshNow();
  });
  select.addEventListener('change', () => {
    const ms = Number(select.value);
    state.interval = ms === floor ? null : ms;
    save();
    if (!state.paused) refreshNow();
  });
  draw();
  document.getElementById('refresh-control').replaceChildren(el('label', { htmlFor: 'refresh-interval', className: 'sr-only', text: 'Refresh interval' }), select, button);
}
