// The dashboard page: polls the JSON API next to it and draws its views (ES modules beside this one).
import { getJson } from './api.js';
import { renderCharts } from './charts.js';
import { renderDetail } from './detail.js';
import { setStatus } from './dom.js';
import { renderEntries } from './entries.js';
import { renderEntry } from './entry-view.js';
import { followLocation, syncLocation, watchLocation } from './links.js';
import { renderFind } from './find.js';
import './bulk.js';
import { loadOverview } from './overview.js';
import { setMatch } from './overview-pages.js';
import { startKeyboard } from './keyboard.js';
import { startRefreshControl } from './refresh-control.js';
import { addView, refreshNow } from './refresh.js';
import { saveNamed, state } from './state.js';

addView(loadOverview);
addView(renderDetail);
// The charts end the details: drawn before the views below them, they never push those down once shown.
addView(renderCharts);
addView(renderEntries);
addView(renderEntry);
addView(syncLocation);
addView(renderFind);

async function start() {
  try {
    state.session = await getJson('session');
  } catch (error) {
    return setStatus(`Cannot load the dashboard: ${error.message}`, true);
  }
  startRefreshControl();
  startKeyboard();
  const mode = document.getElementById('mode');
  const { readOnly, actions, refusedActions } = state.session;
  mode.textContent = readOnly || actions.length === 0 ? 'read-only' : refusedActions.length > 0 ? `actions: ${actions.join(', ')}` : 'actions enabled';
  document.getElementById('add-stream').addEventListener('submit', (event) => {
    event.preventDefault();
    const input = document.getElementById('stream-name');
    const name = input.value;
    if (name !== '' && !state.named.includes(name)) {
      if (state.named.length >= 10) return setStatus('At most 10 streams by name: remove one first.', true);
      state.named.push(name);
      saveNamed();
    }
    input.value = '';
    state.selected = name;
    refreshNow();
  });
  const filter = document.getElementById('stream-filter');
  document.getElementById('filter-streams').addEventListener('submit', (event) => event.preventDefault());
  // Read once typing pauses, not per key.
  let typing = null;
  filter.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => setMatch(filter.value), 250);
  });
  watchLocation();
  // A link (#/stream/…) opens its view with the first refresh.
  if (!followLocation()) refreshNow();
}

start();
