// Find by content in the selected stream: entries (or dead letters) whose field equals a value,
// or whose values contain a substring. The server reads a bounded page of the stream a request;
// this module asks page after page, shows the progress and the matches as they come, and stops
// on Stop (or when the stream's details close). Its section keeps its state across refreshes.
import { getJson } from './api.js';
import { el, fieldEl, nameCell, nameEl } from './dom.js';
import { inspect, inspectDeadLetter } from './entry-view.js';
import { findStream } from './overview.js';
import { state } from './state.js';

/** Matches the page lists at most (the count goes on). */
const MATCHES_SHOWN = 500;

/** The open find: its stream, its last query, and the scan under way. */
const find = { stream: null, scan: null, last: null, extras: [] };

/** Adds controls under the matches of a finished (or stopped) find: `render(result)` returns elements or null. */
export function addFindExtra(render) {
  find.extras.push(render);
}

export function renderFind() {
  const section = document.getElementById('find');
  const found = state.selected === null ? null : findStream(state.selected);
  if (found === null) {
    stop();
    find.stream = null;
    section.hidden = true;
    section.replaceChildren();
    return;
  }
  if (find.stream === found.stream.name) return;
  stop();
  find.stream = found.stream.name;
  find.last = null;
  section.replaceChildren(form(found.stream.name, found.partitioned));
  section.hidden = false;
}

function stop() {
  if (find.scan) find.scan.stopped = true;
  find.scan = null;
}

/** The find form; a partitioned stream's entries are in its partitions (select one), its dead letters are searched merged. */
function form(stream, partitioned) {
  const target = el('select', { id: 'find-in', title: 'What to look through' },
    partitioned ? null : el('option', { value: 'entries', text: 'entries' }),
    el('option', { value: 'dead-letters', text: 'dead letters' }));
  const mode = el('select', { id: 'find-mode' },
    el('option', { value: 'field', text: 'whose field' }),
    el('option', { value: 'contains', text: 'whose values contain' }));
  const field = el('input', { id: 'find-field', placeholder: 'field name', autocomplete: 'off', maxLength: 1024 });
  const value = el('input', { id: 'find-value', placeholder: 'value', autocomplete: 'off', maxLength: 4096 });
  const equals = el('span', { className: 'muted', text: 'equals' });
  mode.addEventListener('change', () => {
    field.hidden = mode.value === 'contains';
    equals.hidden = field.hidden;
  });
  const stopButton = el('button', { type: 'button', id: 'find-stop', text: 'Stop', disabled: true, onclick: () => stop() });
  const progress = el('p', { id: 'find-progress', className: 'hint', role: 'status' });
  const results = el('div', { id: 'find-results' });
  const submit = (event) => {
    event.preventDefault();
    const query = mode.value === 'contains' ? { contains: value.value } : { field: field.value, value: value.value };
    run(stream, target.value, query, { stopButton, progress, results });
  };
  return el('div', {},
    el('h2', {}, 'Find in ', nameEl(stream)),
    el('form', { id: 'find-form', className: 'actions', onsubmit: submit },
      el('span', { className: 'muted', text: 'Find' }), target, mode, field, equals, value,
      el('button', { type: 'submit', text: 'Find' }), stopButton),
    partitioned ? el('p', { className: 'hint', text: 'Entries are found per partition: select a partition above.' }) : null,
    progress,
    results);
}

/** Scans page after page until the end, Stop, or another stream; shows the matches as they come. */
async function run(stream, target, query, { stopButton, progress, results }) {
  stop();
  const scan = { stopped: false };
  find.scan = scan;
  const result = { stream, target, query, total: 0, scanned: 0, matches: [], count: 0, done: false, error: null };
  find.last = result;
  const rows = el('tbody');
  results.replaceChildren(el('table', {}, el('thead', {}, el('tr', {}, ...headings(target).map((text) => el('th', { text })))), rows));
  stopButton.disabled = false;
  let cursor = null;
  try {
    do {
      const params = [['stream', stream], ['in', target], ...Object.entries(query), ...(cursor === null ? [] : [['cursor', cursor]])];
      const page = await getJson('find', params);
      if (scan.stopped) break;
      result.total = page.total;
      result.scanned += page.scanned;
      result.count += page.matches.length;
      for (const match of page.matches) {
        if (result.matches.length >= MATCHES_SHOWN) break;
        result.matches.push(match);
        rows.append(matchRow(stream, target, match));
      }
      cursor = page.next;
      result.position = cursor === null ? null : cursor.slice(1);
      progress.textContent = progressText(result, false);
    } while (cursor !== null && !scan.stopped);
    result.done = cursor === null;
  } catch (error) {
    result.error = error.message;
  }
  stopButton.disabled = true;
  if (find.scan === scan) find.scan = null;
  if (find.stream !== stream) return;
  progress.textContent = progressText(result, true);
  progress.className = result.error ? 'warn' : 'hint';
  if (result.count === 0 && !result.error) rows.append(el('tr', {}, el('td', { colSpan: headings(target).length, className: 'muted', text: 'No matches.' })));
  for (const extra of find.extras) {
    const controls = extra(result);
    if (controls) results.append(controls);
  }
}

function headings(target) {
  return target === 'entries' ? ['Id', 'Fields'] : ['Dead letter', 'Source id', 'Group', 'Reason', 'Fields'];
}

function progressText(result, finished) {
  const what = result.target === 'entries' ? 'entries' : 'dead letters';
  const found = `${result.count} match${result.count === 1 ? '' : 'es'}` + (result.count > result.matches.length ? ` (the first ${result.matches.length} listed)` : '');
  const scanned = `${result.scanned} of ${result.total} ${what} scanned`;
  if (result.error) return `Find failed: ${result.error} (${found}, ${scanned}).`;
  if (!finished) return `Scanning… ${scanned}, up to ${result.position}: ${found}.`;
  if (result.done) return `Done: ${found}, ${scanned}.`;
  return `Stopped: ${found}, ${scanned}, up to ${result.position}.`;
}

function fieldsPre(fields) {
  return el('pre', { className: 'fields' }, ...fields.flatMap(([name, value], index) => [index > 0 ? '\n' : null, fieldEl(name), ' = ', fieldEl(value)]));
}

function matchRow(stream, target, match) {
  if (target === 'entries') {
    return el('tr', { dataset: { found: match.id } },
      el('td', {}, el('button', { type: 'button', className: 'link name id', text: match.id, title: 'Show the entry', onclick: () => inspect(stream, match.id) })),
      el('td', {}, fieldsPre(match.fields)));
  }
  return el('tr', { dataset: { found: match.deadLetterId } },
    el('td', {}, el('button', { type: 'button', className: 'link name id', text: match.deadLetterId, title: 'Show the dead letter', onclick: () => inspectDeadLetter(match) })),
    el('td', { className: 'name id', text: match.sourceId }),
    nameCell(match.group),
    el('td', { text: match.reason }),
    el('td', {}, match.tombstone ? el('pre', { className: 'fields', text: 'body gone (trimmed while pending)' }) : fieldsPre(match.fields)));
}

/** The last find's outcome (for the bulk actions on its matches), or null. */
export function lastFind() {
  return find.last;
}
