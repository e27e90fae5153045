// Bulk actions: on a selection (check boxes of pending and delayed entries; the dead letters
// have theirs in detail.js) or on everything of a list matching a filter (a finished find, or
// all of it). A filter-wide action runs on the server a bounded step a request (api/bulk/<kind>);
// this module confirms with how many, asks step after step, and says what happened.
import { postJson } from './api.js';
import { el, isolated, nameEl } from './dom.js';
import { addFindExtra } from './find.js';
import { findStream } from './overview.js';
import { allowed } from './permissions.js';
import { refreshNow } from './refresh.js';
import { state } from './state.js';

const NOT_AGAIN = ' They will not be handled again.';
const VERBS = { redrive: ['Redrive', 'redriven'], purge: ['Purge', 'purged'], ack: ['Acknowledge', 'acknowledged'], promote: ['Promote', 'promoted'] };
const REASONS = {
  not_found: 'not there any more',
  tombstone: 'body gone (purge it)',
  other_stream: 'of another stream',
  not_dead_letter: 'not a dead letter',
  not_pending: 'not pending any more',
  body_gone: 'body gone from the stream (cannot be matched)',
  recurring: 'recurring schedule (promote its run from its row)',
  not_held: 'not held any more',
  dropped: 'dropped (no stream)',
  missing: 'body missing',
  invalid: 'body unreadable',
};

/** Ticked pending entries (`group\nid`) and delayed holds of the open stream. */
const selection = { stream: null, pending: new Set(), holds: new Set() };

function selected(list) {
  if (selection.stream !== state.selected) {
    selection.stream = state.selected;
    selection.pending.clear();
    selection.holds.clear();
  }
  return selection[list];
}

/** A check box that adds `key` to the `list` selection ('pending' or 'holds'). */
export function tickBox(list, key) {
  const set = selected(list);
  return el('td', {}, el('input', { type: 'checkbox', checked: set.has(key), title: 'Select', dataset: { tick: key }, onchange: (event) => (event.target.checked ? set.add(key) : set.delete(key)) }));
}

/** "Ack selected" and "Ack all N pending" of a group; null when ack is not allowed or nothing is pending. */
export function pendingBulk(stream, group, total) {
  if (!allowed('ack') || total === 0) return null;
  const where = `of group "${isolated(group)}" on "${isolated(stream)}"`;
  return el('div', { className: 'actions bulk', dataset: { bulk: `pending:${group}` } },
    el('button', { type: 'button', text: 'Ack selected', dataset: { action: 'ack-selected' }, onclick: () => {
      const ids = [...selected('pending')].filter((key) => key.startsWith(`${group}\n`)).map((key) => key.slice(group.length + 1));
      if (ids.length === 0) return showResult('Select pending entries first.', true);
      runSelection('ack', `${ids.length} selected pending entr${ids.length === 1 ? 'y' : 'ies'} ${where}`, 'pending/ack', { stream, group, ids }, (result) => ({ done: result.acked, skipped: { not_pending: ids.length - result.acked } }), () => selected('pending').clear());
    } }),
    el('button', { type: 'button', className: 'danger', text: `Ack all ${total} pending`, dataset: { action: 'ack-all' }, onclick: () => runFiltered('ack', `ALL ${total} pending entries ${where}`, { stream, group }, null, NOT_AGAIN) }));
}

/** "Promote selected" and "Promote all N held" of the delayed list; null when promote is not allowed or nothing is held. */
export function delayedBulk(stream, total) {
  if (!allowed('promote') || total === 0) return null;
  return el('div', { className: 'actions bulk', dataset: { bulk: 'delayed' } },
    el('button', { type: 'button', text: 'Promote selected', dataset: { action: 'promote-selected' }, onclick: () => {
      const holds = [...selected('holds')];
      if (holds.length === 0) return showResult('Select delayed entries first.', true);
      runFiltered('promote', `${holds.length} selected delayed entr${holds.length === 1 ? 'y' : 'ies'} of "${isolated(stream)}" now`, { stream, holds }, () => selected('holds').clear());
    } }),
    el('button', { type: 'button', text: `Promote all ${total} held`, dataset: { action: 'promote-all' }, onclick: () => runFiltered('promote', `ALL ${total} delayed entries held for "${isolated(stream)}" now (recurring schedules stay)`, { stream }) }));
}

// A finished find offers the filter-wide actions on its matches.
addFindExtra((result) => {
  if (!result.done || result.error || result.count === 0) return null;
  const { stream, query } = result;
  const filter = query.contains !== undefined ? `whose values contain "${isolated(query.contains)}"` : `whose field "${isolated(query.field)}" equals "${isolated(query.value)}"`;
  const buttons = [];
  if (result.target === 'dead-letters') {
    const what = `dead letters of "${isolated(stream)}" ${filter} (the find counted ${result.count})`;
    if (allowed('redrive')) buttons.push(el('button', { type: 'button', text: `Redrive all ${result.count} matching`, dataset: { action: 'redrive-matching' }, onclick: () => runFiltered('redrive', `every one of the ${what} back to the stream`, { stream, ...query }) }));
    if (allowed('purge')) buttons.push(el('button', { type: 'button', className: 'danger', text: `Purge all ${result.count} matching`, dataset: { action: 'purge-matching' }, onclick: () => runFiltered('purge', `every one of the ${what} for good`, { stream, ...query }) }));
  } else if (allowed('ack')) {
    const found = findStream(stream);
    for (const group of found ? found.stream.groups : []) {
      buttons.push(el('button', { type: 'button', className: 'danger', dataset: { action: 'ack-matching', group: group.name }, onclick: () => runFiltered('ack', `every pending entry of group "${isolated(group.name)}" on "${isolated(stream)}" ${filter} (the find matched ${result.count} entries of the stream)`, { stream, group: group.name, ...query }, null, NOT_AGAIN) }, 'Ack matching pending of ', nameEl(group.name)));
    }
  }
  return buttons.length === 0 ? null : el('div', { className: 'actions bulk' }, ...buttons);
});

/** A selection action through its single route (at most a page of ids). */
async function runSelection(kind, what, path, body, outcome, clear) {
  if (!window.confirm(`${VERBS[kind][0]} ${what}?`)) return;
  try {
    const counts = outcome(await postJson(path, body));
    clear();
    showResult(describe(kind, { done: counts.done, skipped: counts.skipped, promotedAlong: 0 }));
  } catch (error) {
    showResult(error.message, true);
  }
  await refreshNow();
}

/** A filter-wide (or held-selection) action: step after step until the server says the list is gone through. */
async function runFiltered(kind, what, body, clear, note = '') {
  if (!window.confirm(`${VERBS[kind][0]} ${what}?${note}`)) return;
  const total = { done: 0, skipped: {}, promotedAlong: 0 };
  let cursor;
  try {
    do {
      const step = await postJson(`bulk/${kind}`, cursor === undefined ? body : { ...body, cursor });
      total.done += step.done;
      total.promotedAlong += step.promotedAlong;
      for (const [reason, count] of Object.entries(step.skipped)) total.skipped[reason] = (total.skipped[reason] || 0) + count;
      cursor = step.next;
      showResult(`${describe(kind, total)}${cursor === null ? '' : ' (going on…)'}`);
    } while (cursor !== null);
    if (clear) clear();
  } catch (error) {
    showResult(`${describe(kind, total)}; then failed: ${error.message}`, true);
  }
  await refreshNow();
}

function describe(kind, { done, skipped, promotedAlong }) {
  const reasons = Object.entries(skipped).filter(([, count]) => count > 0);
  const count = reasons.reduce((sum, [, one]) => sum + one, 0);
  const why = reasons.map(([reason, one]) => `${one} ${REASONS[reason] || reason}`).join(', ');
  const along = promotedAlong > 0 ? `, ${promotedAlong} other due entries went along` : '';
  return `${VERBS[kind][0]}: ${done} ${VERBS[kind][1]}, ${count} skipped${why ? ` (${why})` : ''}${along}.`;
}

/** The result of the last bulk action, kept until the next one (the status line is the refresh's). */
function showResult(text, error) {
  const section = document.getElementById('bulk');
  section.replaceChildren(el('p', { id: 'bulk-result', className: error ? 'warn' : '', text }), el('button', { type: 'button', text: 'Close', onclick: () => { section.hidden = true; } }));
  section.hidden = false;
}
