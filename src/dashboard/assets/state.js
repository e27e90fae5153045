// What the page shows now: the session, the streams typed into the page, the open stream and
// the cursors of its lists. One object, shared by the page's modules.

const NAMED_KEY = 'nestjs-redis-streams-dashboard:streams';
export const state = {
  session: null,
  named: loadNamed(),
  overview: null,
  previous: null,
  /** Name of the stream (or partition key) whose details are open. */
  selected: null,
  /** Dead letters ticked for "selected" actions: `${sourceStream}\n${id}`. */
  ticked: new Set(),
  /** Where the open lists start (the `next` of a page; absent: the first page): 'dead-letters', or a group's name. */
  cursors: new Map(),
  timer: null,
  running: null,
  /** The overview page shown (where it starts among the streams), and the filter on their names. */
  overviewOffset: 0,
  match: '',
  /** The refresh control (refresh-control.js): paused, and the tab's interval (null: the app's). */
  paused: false,
  interval: null,
};

// ---- streams typed into the page -----------------------------------------------------------
function loadNamed() {
  try {
    const names = JSON.parse(sessionStorage.getItem(NAMED_KEY) || '[]');
    return Array.isArray(names) ? names.filter((name) => typeof name === 'string' && name !== '').slice(0, 10) : [];
  } catch {
    return [];
  }
}
export function saveNamed() {
  try {
    sessionStorage.setItem(NAMED_KEY, JSON.stringify(state.named));
  } catch {
    // Storage may be off: the names last as long as the page.
  }
}
