// Deep links: the URL's hash names what is open, `#/stream/<name>` and
// `#/stream/<name>/entry/<id>` (URL-encoded), so reloading or sharing the URL opens the same view,
// and back / forward go through what was opened. Selecting something pushes its URL.
import { openedEntry, showEntry } from './entry-view.js';
import { findStream } from './overview.js';
import { refreshNow, select } from './refresh.js';
import { saveNamed, state } from './state.js';

const LINK = /^#\/stream\/([^/]+)(?:\/entry\/([^/]+))?$/;
/** A stream a link named: shown by name when no handler of the app reads it (as if typed in). */
let linked = null;

/** The URL hash of a selected stream and an open entry ({ stream, id } or null). */
export function hashOf(selected, entry) {
  if (entry !== null) return `#/stream/${encodeURIComponent(entry.stream)}/entry/${encodeURIComponent(entry.id)}`;
  if (selected !== null) return `#/stream/${encodeURIComponent(selected)}`;
  return '';
}

/** What a hash names; nothing for a hash that is not a link of the page. */
export function parseHash(hash) {
  const match = LINK.exec(hash);
  if (match === null) return { selected: null, entry: null };
  try {
    const stream = decodeURIComponent(match[1]);
    return { selected: stream, entry: match[2] === undefined ? null : { stream, id: decodeURIComponent(match[2]) } };
  } catch {
    return { selected: null, entry: null };
  }
}

const sameEntry = (a, b) => (a === null ? b === null : b !== null && a.stream === b.stream && a.id === b.id);

/** Opens what the URL names (on load, and when back / forward change it); whether that refreshed. */
export function followLocation() {
  const target = parseHash(location.hash);
  if (target.selected === state.selected && sameEntry(target.entry, openedEntry())) return false;
  linked = target.selected;
  showEntry(target.entry);
  if (target.selected !== state.selected) select(target.selected);
  else refreshNow();
  return true;
}

/** Listens for back / forward and for a link pasted into the address bar. */
export function watchLocation() {
  window.addEventListener('hashchange', followLocation);
  window.addEventListener('popstate', followLocation);
}

/** A view drawn last on each refresh: the URL follows what is open (a new history entry when it changed). */
export function syncLocation() {
  const selected = state.selected;
  if (selected !== null && selected === linked && findStream(selected) === null && !state.named.includes(selected) && state.named.length < 10) {
    // A linked stream no handler reads: shown by name, as if typed into the page.
    linked = null;
    state.named.push(selected);
    saveNamed();
    refreshNow();
    return;
  }
  const shown = parseHash(location.hash);
  const hash = hashOf(selected, openedEntry());
  // Compared as written by hashOf: the browser may have percent-encoded the address differently.
  if (hashOf(shown.selected, shown.entry) === hash) return;
  history.pushState(null, '', hash === '' ? location.pathname + location.search : hash);
}
