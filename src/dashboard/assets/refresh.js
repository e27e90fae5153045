// The refresh loop: one refresh at a time, every view drawn in the order it was added, then the
// next refresh after the session's interval. Navigation (select, forget) refreshes at once.
import { setStatus } from './dom.js';
import { rememberFocus, restoreFocus } from './focus-keeper.js';
import { saveNamed, state } from './state.js';

/** The page's views, drawn in order on each refresh (the overview first: the others read it). */
const views = [];

/** Adds a view: `render` is awaited on each refresh, after the views added before it. */
export function addView(render) {
  views.push(render);
}

export function select(name) {
  state.selected = name;
  state.ticked.clear();
  state.cursors.clear();
  refreshNow();
}

export function forget(name) {
  state.named = state.named.filter((one) => one !== name);
  saveNamed();
  if (state.selected === name) state.selected = null;
  refreshNow();
}

async function load() {
  const started = performance.now();
  const focus = rememberFocus();
  for (const render of views) await render();
  restoreFocus(focus);
  document.body.dataset.refreshedAt = String(state.overview.at);
  // What a refresh took (its reads and drawing), for the browser's performance tools and the scale spec.
  performance.measure('dashboard refresh', { start: started });
}

/** One refresh at a time; a refresh asked for during one runs right after it. */
export function refreshNow() {
  clearTimeout(state.timer);
  const run = (state.running || Promise.resolve())
    .then(load)
    .then(() => setStatus(`Updated ${new Date().toLocaleTimeString()}`), (error) => setStatus(`Refresh failed: ${error.message}`, true))
    .finally(() => {
      if (state.running === run) {
        state.running = null;
        // Paused (refresh-control.js): only navigation refreshes, until resumed.
        if (!state.paused) state.timer = setTimeout(refreshNow, state.interval ?? state.session.refreshInterval);
      }
    });
  state.running = run;
  return run;
}
