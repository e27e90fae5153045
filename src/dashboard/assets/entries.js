// The selected stream's entries, below its details: newest or oldest first, within an id or time
// range, paged with a cursor; and a box that opens one entry by id. The form is built once and
// kept (a refresh redraws the list, never what the operator is typing).
import { getJson } from './api.js';
import { el, fieldEl, nameEl, table } from './dom.js';
import { openEntry } from './entry-view.js';
import { findStream } from './overview.js';
import { cursorParam, pager } from './pager.js';
import { refreshNow } from './refresh.js';
import { state } from './state.js';

/** The entries list's key in state.cursors. */
export const ENTRIES = 'entries';

/** The list's order and range, for the stream they were chosen on. */
const filter = { stream: null, order: 'newest', from: '', to: '' };
let form = null;
/** The last reply drawn: the list is redrawn only when it changed (a selection in it survives a refresh). */
let drawn = null;

export async function renderEntries() {
  const section = document.getElementById('entries');
  const found = state.selected === null ? null : findStream(state.selected);
  if (found === null) {
    section.hidden = true;
    drawn = null;
    return;
  }
  const { stream, partitioned } = found;
  if (filter.stream !== stream.name) {
    Object.assign(filter, { stream: stream.name, order: 'newest', from: '', to: '' });
    if (form !== null) form.reset();
  }
  if (form === null) form = buildForm(section);
  const body = section.querySelector('.entries-list');
  section.querySelector('.entries-title').replaceChildren('Entries of ', nameEl(stream.name));
  section.hidden = false;
  if (partitioned) {
    drawn = null;
    body.replaceChildren(el('p', { className: 'hint', text: 'Entries are listed per partition: select a partition above. Open by id searches every partition.' }));
    return;
  }
  let page;
  try {
    page = await getJson('entries', [['stream', stream.name], ['order', filter.order], ['from', filter.from], ['to', filter.to], ...cursorParam(ENTRIES)]);
  } catch (error) {
    drawn = null;
    body.replaceChildren(el('p', { className: 'warn', text: error.message }));
    return;
  }
  const text = JSON.stringify(page);
  if (text === drawn && body.childElementCount > 0) return;
  drawn = text;
  body.replaceChildren(...listParts(stream, page));
}

/** The order and range controls and the open-by-id box (kept across refreshes). */
function buildForm(section) {
  const order = el('select', { name: 'order', title: 'Order' }, el('option', { value: 'newest', text: 'Newest first' }), el('option', { value: 'oldest', text: 'Oldest first' }));
  const from = el('input', { name: 'from', placeholder: 'from: id, ms or ISO time', autocomplete: 'off', maxLength: 64, size: 24 });
  const to = el('input', { name: 'to', placeholder: 'to: id, ms or ISO time', autocomplete: 'off', maxLength: 64, size: 24 });
  const range = el('form', { className: 'actions entries-range' },
    order, from, to,
    el('button', { type: 'submit', text: 'Show' }),
    el('button', { type: 'button', text: 'Whole stream', onclick: () => { from.value = ''; to.value = ''; apply(); } }));
  const apply = () => {
    Object.assign(filter, { order: order.value, from: from.value.trim(), to: to.value.trim() });
    state.cursors.delete(ENTRIES);
    drawn = null;
    refreshNow();
  };
  range.addEventListener('submit', (event) => { event.preventDefault(); apply(); });
  order.addEventListener('change', apply);
  const id = el('input', { name: 'id', placeholder: 'entry id or hold id', autocomplete: 'off', maxLength: 1024, size: 28, required: true });
  const find = el('form', { className: 'actions entries-find' },
    el('label', { text: 'Open entry by id' }), id,
    el('button', { type: 'submit', text: 'Open' }));
  find.addEventListener('submit', (event) => {
    event.preventDefault();
    if (id.value.trim() !== '' && filter.stream !== null) openEntry(filter.stream, id.value.trim());
  });
  section.replaceChildren(
    el('div', { className: 'toolbar' }, el('h2', { className: 'entries-title' }), find),
    range,
    el('div', { className: 'entries-list' }));
  return range;
}

function listParts(stream, page) {
  const counted = page.range === null
    ? `${page.total} in all`
    : `${page.total} in all; ${page.rangeCount === null ? 'in the range: more than a page, not counted (Redis counts a range only by reading it)' : `${page.rangeCount} in the range`}`;
  const rows = page.entries.map((entry) =>
    el('tr', { dataset: { entry: entry.id } },
      el('td', {}, el('button', { type: 'button', className: 'link name id', text: entry.id, title: 'Open this entry', onclick: () => openEntry(stream.name, entry.id) })),
      el('td', { className: 'muted', text: addedAt(entry.id) }),
      el('td', {}, el('pre', { className: 'fields' }, ...entry.fields.flatMap(([name, value], index) => [index > 0 ? '\n' : null, fieldEl(name), ' = ', fieldEl(value)])))));
  const range = page.range === null ? null : el('p', { className: 'hint', text: `Ids ${page.range.from} … ${page.range.to}` });
  return [
    el('h3', { text: `Entries (${counted})` }),
    range,
    table(['Id', 'Added', 'Fields'], rows, page.range === null ? 'No entries.' : 'No entries in this range.'),
    pager(ENTRIES, page, 'entries', page.order),
  ].filter(Boolean);
}

/** When an entry was added: its id's ms part. */
function addedAt(id) {
  const ms = Number(id.slice(0, id.indexOf('-')));
  return Number.isSafeInteger(ms) && ms < 8.64e15 ? new Date(ms).toISOString() : '';
}
