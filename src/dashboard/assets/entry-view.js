// The entry view, in the section below the details: one entry's fields (formatted JSON or raw),
// the wire format's pattern, headers and trace id, per group its delivery (owner, idle time,
// deliveries) and the lifecycle (status, progress, kept result, last error), with the actions
// that apply to it. Refreshed with the page while open. Also a dead letter's whole fields.
import { act, claim, send } from './actions.js';
import { getJson } from './api.js';
import { duration, el, fieldEl, isolated, nameCell, nameEl, num, setStatus, table } from './dom.js';
import { allowed } from './permissions.js';
import { refreshNow } from './refresh.js';
import { state } from './state.js';

/** The entry the view shows: { stream, id }, or null. */
let open = null;
/** JSON values shown formatted (else raw). */
let formatted = true;
/** The whole fields of the open entry, once fetched: { of: 'stream\nid', fields }. */
let whole = null;
/** The last reply drawn: redrawn only when it changed (a selection in the view survives a refresh). */
let drawn = null;

/** The entry the view shows ({ stream, id }), or null. */
export const openedEntry = () => open;

/** Opens the entry view of entry `id` (a stream id, or a hold id) of `stream`. */
export function openEntry(stream, id) {
  showEntry({ stream, id });
  refreshNow();
}

/** Shows `entry` ({ stream, id } or null) from the next refresh on (deep links set it so). */
export function showEntry(entry) {
  const same = open !== null && entry !== null && open.stream === entry.stream && open.id === entry.id;
  if (same) return;
  open = entry;
  whole = null;
  drawn = null;
}

/** The pending list's link to an entry. */
export function inspect(stream, id) {
  openEntry(stream, id);
}

/** Draws the open entry on each refresh; a dead letter shown by inspectDeadLetter stays until closed. */
export async function renderEntry() {
  const section = document.getElementById('entry');
  // Another stream selected since it was opened: its entry closes (and the URL names the stream).
  if (open !== null && state.selected !== null && state.selected !== open.stream) showEntry(null);
  if (open === null) {
    if (section.dataset.view === 'entry') {
      section.hidden = true;
      section.replaceChildren();
      delete section.dataset.view;
    }
    return;
  }
  const asked = open;
  let view;
  try {
    view = await getJson('entry-view', [['stream', asked.stream], ['id', asked.id]]);
  } catch (error) {
    return draw(section, `error\n${error.message}`, () => [toolbar(asked, null), el('p', { className: 'warn', dataset: { notFound: 'yes' }, text: error.message })]);
  }
  if (open !== asked) return;
  const ofWhole = whole !== null && whole.of === `${asked.stream}\n${asked.id}` ? whole.fields : null;
  draw(section, JSON.stringify([view, formatted, ofWhole !== null]), () => entryParts(view, ofWhole));
}

function draw(section, key, parts) {
  section.dataset.view = 'entry';
  section.hidden = false;
  if (key === drawn) return;
  drawn = key;
  section.replaceChildren(...parts().filter(Boolean));
}

function toolbar(asked, view) {
  const cut = view !== null && view.fields !== null && view.fieldsFrom !== 'delayed' && view.fields.some(([name, value]) => name.truncated || value.truncated);
  return el('div', { className: 'toolbar' },
    el('h2', {}, 'Entry ', el('span', { className: 'name', text: asked.id }), ' of ', nameEl(asked.stream),
      view !== null && view.key !== null && view.key !== asked.stream ? el('span', { className: 'muted' }, ' (in ', nameEl(view.key), ')') : null),
    el('span', { className: 'actions' },
      view === null || view.fields === null ? null : el('button', { type: 'button', text: formatted ? 'Show raw' : 'Show formatted JSON', dataset: { action: 'format' }, onclick: () => { formatted = !formatted; drawn = null; refreshNow(); } }),
      cut && whole === null ? el('button', { type: 'button', text: 'Show whole fields', dataset: { action: 'whole' }, onclick: () => loadWhole(view) }) : null,
      el('button', { type: 'button', text: 'Close', onclick: () => { showEntry(null); refreshNow(); } })));
}

function entryParts(view, wholeFields) {
  const readOnly = state.session.readOnly;
  const parts = [toolbar({ stream: view.stream, id: view.id }, view)];
  parts.push(el('p', { className: 'entry-state' },
    'Status: ', el('strong', { text: view.state, dataset: { state: view.state } }),
    view.dueAt ? ` (held until ${view.dueAt})` : '',
    view.fieldsFrom === 'dead-letter' ? ' (fields from its dead letter)' : '',
    view.state === 'held' && view.fields === null ? ' (its body was not found among the holds due at its time)' : '',
    view.deadLettersSearched ? '' : el('span', { className: 'warn', text: ' (the dead-letter search stopped at its bound: "done" may be a dead letter further on)' })));
  if (!readOnly) parts.push(entryActions(view));
  parts.push(...wireParts(view.wire));
  parts.push(...lifecycleParts(view));
  if (view.groups.length > 0) parts.push(el('h3', { text: 'Consumer groups' }), groupTable(view, readOnly));
  if (view.fields !== null) {
    const fields = wholeFields || view.fields;
    const rows = fields.map(([name, value]) => el('tr', {}, el('td', { className: 'name field-name' }, fieldEl(name)), el('td', {}, valueEl(value))));
    parts.push(el('h3', { text: 'Fields' }), table(['Field', 'Value'], rows, 'No fields.'));
  }
  return parts;
}

/** The wire format's pattern, trace id and headers (src/codec/wire-format.ts). */
function wireParts(wire) {
  const parts = [];
  const lines = [];
  if (wire.pattern !== null) lines.push(el('div', {}, 'Pattern: ', nameEl(wire.pattern, { dataset: { wire: 'pattern' } })));
  if (wire.traceId !== null) lines.push(el('div', {}, 'Trace id: ', el('span', { className: 'name', text: wire.traceId, dataset: { wire: 'trace-id' } })));
  if (wire.headersError !== null) lines.push(el('div', { className: 'warn', text: `Headers: ${wire.headersError}` }));
  if (lines.length > 0) parts.push(el('div', { className: 'entry-wire' }, ...lines));
  if (wire.headers !== null) {
    const rows = Object.entries(wire.headers).map(([name, value]) => el('tr', { dataset: { header: name } }, nameCell(name), nameCell(value)));
    parts.push(el('h3', { text: 'Headers' }), table(['Header', 'Value'], rows, 'No headers.'));
  }
  return parts;
}

/** Progress and the kept result (docs/lifecycle.md), when kept. */
function lifecycleParts(view) {
  const parts = [];
  if (view.progress !== null) {
    parts.push(el('h3', { text: `Progress (delivery ${view.progress.delivery}, ${view.progress.at})` }), el('div', { dataset: { lifecycle: 'progress' } }, valueEl(view.progress.value)));
  }
  if (view.result !== null) {
    const result = view.result;
    parts.push(el('h3', { text: `Result: ${result.state} (delivery ${result.delivery}, ${result.at})` }));
    parts.push(result.state === 'failed'
      ? el('p', { className: 'warn', dataset: { lifecycle: 'error' } }, `${result.error.name}: `, nameEl(result.error.message))
      : el('div', { dataset: { lifecycle: 'result' } }, valueEl(result.value)));
  }
  return parts;
}

function groupTable(view, readOnly) {
  const rows = view.groups.map((group) => {
    const pending = group.consumer !== null;
    const letter = group.deadLetter;
    const buttons = [];
    if (!readOnly && pending && view.key !== null) {
      if (allowed('claim')) buttons.push(el('button', { type: 'button', text: 'Claim', dataset: { action: 'claim' }, onclick: () => claim(view.key, group.group, { id: view.id, consumer: group.consumer }) }));
      if (allowed('ack')) buttons.push(el('button', { type: 'button', className: 'danger', text: 'Ack', dataset: { action: 'ack' }, onclick: () => act(`Acknowledge entry ${view.id} of group "${isolated(group.group)}" on "${isolated(view.key)}"? It will not be handled again.`, 'pending/ack', { stream: view.key, group: group.group, ids: [view.id] }) }));
    }
    if (!readOnly && allowed('redrive') && letter !== null && view.key !== null) {
      buttons.push(el('button', { type: 'button', text: 'Redrive', dataset: { action: 'redrive' }, onclick: () => redrive(view, letter) }));
    }
    return el('tr', { dataset: { group: group.group } },
      nameCell(group.group),
      el('td', { text: group.state, dataset: { col: 'state' } }),
      group.consumer === null ? el('td', { className: 'muted', text: '—' }) : nameCell(group.consumer, { dataset: { col: 'owner' } }),
      num(duration(group.idleMs)),
      num(group.deliveries, 'deliveries'),
      el('td', {}, letter === null ? null : el('span', {}, `${letter.reason}: `, nameEl(letter.error), el('span', { className: 'muted', text: ` (${letter.id}, ${letter.at})` }))),
      el('td', {}, el('span', { className: 'actions' }, ...buttons)));
  });
  return table(['Group', 'State', 'Owner', 'Idle', 'Deliveries', 'Dead letter', ''], rows, 'No groups.');
}

/** Cancel (unless settled), and promote now / remove for a delayed hold. */
function entryActions(view) {
  const where = `"${isolated(view.stream)}"`;
  const buttons = [];
  if (allowed('cancel') && ['held', 'waiting', 'pending', 'running', 'failed'].includes(view.state)) {
    buttons.push(el('button', { type: 'button', className: 'danger', text: 'Cancel…', dataset: { action: 'cancel' }, onclick: () => cancel(view) }));
  }
  if (view.state === 'held' && view.key !== null) {
    if (allowed('promote')) buttons.push(el('button', { type: 'button', text: 'Promote now', dataset: { action: 'promote' }, onclick: () => promote(view) }));
    if (allowed('remove')) buttons.push(el('button', { type: 'button', className: 'danger', text: 'Remove', dataset: { action: 'remove' }, onclick: () => act(`Remove delayed entry ${isolated(view.id)} of ${where} for good? It will never be added to the stream.`, 'delayed/remove', { stream: view.key, holds: [view.id] }) }));
  }
  return buttons.length === 0 ? null : el('p', { className: 'actions entry-actions' }, ...buttons);
}

/** The lifecycle's cancel, with the operator's reason (the prompt is the confirmation). */
async function cancel(view) {
  const reason = window.prompt(`Cancel entry ${isolated(view.id)} of "${isolated(view.stream)}"? It is moved to the dead letters (reason "cancelled"; redrive brings it back) and a handler running it is told. Why (kept as its error):`, '');
  if (reason === null) return;
  if (reason.trim() === '') return setStatus('Give a reason to cancel.', true);
  await send('entries/cancel', { stream: view.key === null ? view.stream : view.key, id: view.id, reason });
}

/** Redrives the entry's dead letter; the view follows it to its new id. */
async function redrive(view, letter) {
  if (!window.confirm(`Redrive dead letter ${letter.id} back to "${isolated(view.key)}"? It is added as a new entry.`)) return;
  const result = await send('dead-letters/redrive', { stream: view.key, ids: [letter.id] });
  const moved = result && result.redriven ? result.redriven.find((one) => one.deadLetterId === letter.id) : undefined;
  if (moved !== undefined) openEntry(view.stream, moved.newId);
}

/** Promotes a held entry now; the view follows it to its stream id. */
async function promote(view) {
  if (!window.confirm(`Promote delayed entry ${isolated(view.id)} of "${isolated(view.stream)}" now? It is added to the stream at once, with the entries already due.`)) return;
  const result = await send('delayed/promote', { stream: view.key, hold: view.id });
  const promoted = result && result.promoted ? result.promoted.find((one) => one.hold === view.id) : undefined;
  if (promoted !== undefined) openEntry(view.stream, promoted.id);
}

async function loadWhole(view) {
  try {
    const letter = view.groups.find((group) => group.deadLetter !== null);
    const fields = view.fieldsFrom === 'stream'
      ? (await getJson('entry', [['stream', view.key], ['id', view.id]])).fields
      : (await getJson('dead-letter', [['stream', view.key], ['id', letter.deadLetter.id]])).fields;
    whole = { of: `${view.stream}\n${view.id}`, fields };
    drawn = null;
    refreshNow();
  } catch (error) {
    setStatus(error.message, true);
  }
}

/** A value: formatted when it is whole UTF-8 text that parses as JSON and the view formats, else as sent. */
function valueEl(value) {
  if (value === null) return el('span', { className: 'muted', text: '—' });
  if (formatted && value.encoding === 'utf8' && !value.truncated) {
    const json = parsedJson(value.text);
    if (json !== undefined) return el('pre', { className: 'fields json', dataset: { format: 'json' }, text: JSON.stringify(json, null, 2) });
  }
  return el('pre', { className: 'fields', dataset: { format: 'raw' } }, fieldEl(value));
}

function parsedJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** An entry's or a dead letter's whole fields, fetched on demand, in the section below the details. */
function showFields(title, fields) {
  const section = document.getElementById('entry');
  showEntry(null);
  section.dataset.view = 'fields';
  const rows = fields.map(([name, value]) => el('tr', {}, el('td', { className: 'name field-name' }, fieldEl(name)), el('td', {}, el('pre', { className: 'fields' }, fieldEl(value)))));
  section.replaceChildren(
    el('div', { className: 'toolbar' },
      el('h2', {}, ...title),
      el('button', { type: 'button', text: 'Close', onclick: () => { section.hidden = true; } })),
    table(['Field', 'Value'], rows, 'No fields.'));
  section.hidden = false;
}

export async function inspectDeadLetter(letter) {
  try {
    const whole = await getJson('dead-letter', [['stream', letter.sourceStream], ['id', letter.deadLetterId]]);
    showFields(['Dead letter ', el('span', { className: 'name', text: whole.deadLetterId }), ' of ', nameEl(whole.sourceStream)], whole.fields);
  } catch (error) {
    setStatus(error.message, true);
  }
}
