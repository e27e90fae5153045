// The details of the selected stream: its groups, consumers, pending entries, dead letters,
// delayed entries and recurring schedules, each list paged with a cursor.
import { act, claim, onTicked } from './actions.js';
import { getJson } from './api.js';
import { drawnCharts } from './charts.js';
import { cell, duration, el, fieldEl, isolated, nameCell, nameEl, num, table } from './dom.js';
import { inspect, inspectDeadLetter } from './entry-view.js';
import { findStream, pausedBadge } from './overview.js';
import { allowed } from './permissions.js';
import { delayedBulk, pendingBulk, tickBox } from './bulk.js';
import { cursorParam, DEAD_LETTERS, DELAYED, pager, SCHEDULES } from './pager.js';
import { select } from './refresh.js';
import { state } from './state.js';

export async function renderDetail() {
  const section = document.getElementById('detail');
  const found = state.selected === null ? null : findStream(state.selected);
  if (found === null) {
    section.hidden = true;
    section.replaceChildren();
    return;
  }
  const { stream, partitioned, partitionOf } = found;
  const readOnly = state.session.readOnly;
  const failed = (error) => ({ error: error.message });
  const [deadLetters, pendings, delayed, schedules] = await Promise.all([
    getJson('dead-letters', [['stream', stream.name], ...cursorParam(DEAD_LETTERS)]).catch(failed),
    Promise.all(stream.groups.map((group) => (partitioned ? null : getJson('pending', [['stream', stream.name], ['group', group.name], ...cursorParam(`group:${group.name}`)]).catch(failed)))),
    partitioned ? null : getJson('delayed', [['stream', stream.name], ...cursorParam(DELAYED)]).catch(failed),
    partitioned ? null : getJson('schedules', [['stream', stream.name], ...cursorParam(SCHEDULES)]).catch(failed),
  ]);
  const parts = [
    el('div', { className: 'toolbar' },
      el('h2', {}, 'Stream ', nameEl(stream.name)),
      el('button', { type: 'button', text: 'Close', onclick: () => select(null) })),
    el('p', { className: 'muted', text: `${stream.length} entries` + (stream.firstEntryId ? `, ids ${stream.firstEntryId} … ${stream.lastEntryId}` : '') + `, ${stream.deadLetters} dead letters, ` + (stream.delayed ? `${stream.delayed.held} delayed (${stream.delayed.due} due, not promoted)` : 'delayed entries not readable') }),
  ];
  stream.groups.forEach((group, index) => parts.push(...groupDetail(stream, group, pendings[index], partitioned, readOnly, partitionOf)));
  parts.push(...deadLetterDetail(stream, deadLetters, partitioned));
  parts.push(...delayedDetail(stream, delayed, schedules, readOnly));
  // The stream's charts (charts.js draws them next) stay until redrawn in place: taken out here
  // and put back a round trip later, everything below them would jump meanwhile.
  const charts = drawnCharts(section);
  section.replaceChildren(...parts, ...(charts?.dataset.stream === stream.name ? [charts] : []));
  section.hidden = false;
}

function groupDetail(stream, group, pending, partitioned, readOnly, partitionOf) {
  const parts = [el('h3', {}, 'Group ', nameEl(group.name), group.handled ? el('span', { className: 'muted', text: ' (read by this app)' }) : null, pausedBadge(group))];
  parts.push(pauseControl(stream, group, readOnly, partitionOf));
  const consumers = group.consumers.map((consumer) =>
    el('tr', { dataset: { consumer: consumer.name } },
      nameCell(consumer.name),
      num(consumer.pending, 'pending'),
      num(duration(consumer.idleMs)),
      num(duration(consumer.inactiveMs)),
      el('td', {}, !allowed('delete-consumer') || partitioned ? null : el('button', {
        type: 'button', className: 'danger', text: 'Delete', disabled: consumer.pending > 0,
        title: consumer.pending > 0 ? 'Claim or ack its pending entries first' : 'Delete this consumer',
        onclick: () => act(`Delete consumer "${isolated(consumer.name)}" of group "${isolated(group.name)}" on "${isolated(stream.name)}"?`, 'consumers/delete', { stream: stream.name, group: group.name, consumer: consumer.name }),
      }))));
  parts.push(table(['Consumer', 'Pending', 'Idle', 'Inactive', ''], consumers, 'No consumers.'));
  if (group.consumersOmitted) parts.push(el('p', { className: 'hint', dataset: { omitted: 'consumers' }, text: `${group.consumersOmitted} more consumers not listed (the overview sends 20 a group).` }));
  if (partitioned) {
    parts.push(el('p', { className: 'hint', text: 'Pending entries are listed per partition: select a partition above.' }));
    return parts;
  }
  if (pending === null || pending.error) {
    parts.push(el('p', { className: 'warn', text: pending ? pending.error : '' }));
    return parts;
  }
  const rows = pending.entries.map((entry) =>
    el('tr', { dataset: { id: entry.id } },
      el('td', {}, el('button', { type: 'button', className: 'link name id', text: entry.id, title: 'Show its fields', onclick: () => inspect(stream.name, entry.id) })),
      nameCell(entry.consumer),
      num(duration(entry.idleMs)),
      num(entry.deliveryCount),
      el('td', {}, readOnly ? null : el('span', { className: 'actions' },
        allowed('claim') ? el('button', { type: 'button', text: 'Claim', onclick: () => claim(stream.name, group.name, entry) }) : null,
        !allowed('ack') ? null : el('button', { type: 'button', className: 'danger', text: 'Ack', onclick: () => act(`Acknowledge entry ${entry.id} of group "${isolated(group.name)}" on "${isolated(stream.name)}"? It will not be handled again.`, 'pending/ack', { stream: stream.name, group: group.name, ids: [entry.id] }) }))),
      allowed('ack') ? tickBox('pending', `${group.name}\n${entry.id}`) : null));
  parts.push(el('h3', { text: `Pending entries (${pending.total} in all)` }));
  parts.push(...[pendingBulk(stream.name, group.name, pending.total)].filter(Boolean));
  parts.push(table(['Id', 'Consumer', 'Idle', 'Deliveries', '', allowed('ack') ? 'Select' : null].filter((heading) => heading !== null), rows, 'Nothing pending.'));
  parts.push(...[pager(`group:${group.name}`, pending, 'pending')].filter(Boolean));
  return parts;
}

/**
 * Pause / resume of a group for every worker. A partition shows where its pause is kept: on the
 * partitioned stream, for every partition (the button is there).
 */
function pauseControl(stream, group, readOnly, partitionOf) {
  const since = group.paused ? `Paused for every worker since ${group.pausedAt}.` : 'Running.';
  if (partitionOf !== null) return el('p', { className: 'hint' }, `${since} Pause and resume on the partitioned stream `, nameEl(partitionOf), ', for every partition.');
  if (!allowed('pause')) return el('p', { className: 'muted', text: since });
  const where = `group "${isolated(group.name)}" on "${isolated(stream.name)}"`;
  const button = group.paused
    ? el('button', { type: 'button', text: 'Resume', dataset: { action: 'resume' }, onclick: () => act(`Resume ${where}? Every worker reads it again within a second.`, 'groups/resume', { stream: stream.name, group: group.name }) })
    : el('button', { type: 'button', className: 'danger', text: 'Pause', dataset: { action: 'pause' }, onclick: () => act(`Pause ${where} for every worker? They stop reading new entries within a second; handlers already running finish, nothing is lost.`, 'groups/pause', { stream: stream.name, group: group.name }) });
  return el('p', { className: 'actions' }, el('span', { className: 'muted', text: `${since} ` }), button);
}

function deadLetterDetail(stream, page, partitioned) {
  const parts = [el('h3', { text: page.error ? 'Dead letters' : `Dead letters (${page.total} in all)` })];
  if (page.error) return [...parts, el('p', { className: 'warn', text: page.error })];
  const letters = page.deadLetters;
  const key = (letter) => `${letter.sourceStream}\n${letter.deadLetterId}`;
  // Ticks of letters that are gone are dropped (deleting while iterating a Set is safe).
  const present = new Set(letters.map(key));
  for (const ticked of state.ticked) if (!present.has(ticked)) state.ticked.delete(ticked);
  const [redrive, purge] = [allowed('redrive'), allowed('purge')];
  // Ticks and per-row buttons only for the kinds the server takes.
  const noActions = !redrive && !purge;
  if (!noActions) {
    parts.push(el('div', { className: 'actions' },
      redrive ? el('button', { type: 'button', text: 'Redrive selected', onclick: () => onTicked('redrive') }) : null,
      purge ? el('button', { type: 'button', className: 'danger', text: 'Purge selected', onclick: () => onTicked('purge') }) : null,
      !redrive ? null : el('button', { type: 'button', text: 'Redrive all', disabled: stream.deadLetters === 0, onclick: () => act(`Redrive ALL ${stream.deadLetters} dead letters of "${isolated(stream.name)}" back to the stream?`, 'dead-letters/redrive', { stream: stream.name, ids: 'all' }) }),
      !purge ? null : el('button', { type: 'button', className: 'danger', text: 'Purge all', disabled: stream.deadLetters === 0, onclick: () => act(`Delete ALL ${stream.deadLetters} dead letters of "${isolated(stream.name)}" for good?`, 'dead-letters/purge', { stream: stream.name, ids: 'all' }) })));
  }
  const rows = letters.map((letter) => {
    const fields = letter.tombstone
      ? el('pre', { className: 'fields', text: 'body gone (trimmed while pending)' })
      : el('pre', { className: 'fields' }, ...letter.fields.flatMap(([name, value], index) => [index > 0 ? '\n' : null, fieldEl(name), ' = ', fieldEl(value)]));
    const cut = letter.fields.some(([name, value]) => name.truncated || value.truncated);
    return el('tr', { dataset: { deadLetter: letter.deadLetterId } },
      noActions ? null : el('td', {}, el('input', { type: 'checkbox', checked: state.ticked.has(key(letter)), title: 'Select', onchange: (event) => (event.target.checked ? state.ticked.add(key(letter)) : state.ticked.delete(key(letter))) })),
      el('td', { className: 'name id', text: letter.deadLetterId }),
      partitioned ? nameCell(letter.sourceStream) : null,
      el('td', { className: 'name id', text: letter.sourceId }),
      nameCell(letter.group),
      cell(letter.reason),
      el('td', {}, nameEl(letter.error)),
      cell(new Date(letter.deadLetteredAt).toISOString()),
      num(letter.deliveryCount),
      el('td', {}, fields, cut ? el('button', { type: 'button', className: 'link', text: 'Show whole fields', dataset: { action: 'whole' }, onclick: () => inspectDeadLetter(letter) }) : null),
      noActions ? null : el('td', {}, el('span', { className: 'actions' },
        !redrive ? null : el('button', { type: 'button', text: 'Redrive', disabled: Boolean(letter.tombstone), onclick: () => act(`Redrive dead letter ${letter.deadLetterId} back to "${isolated(letter.sourceStream)}"?`, 'dead-letters/redrive', { stream: letter.sourceStream, ids: [letter.deadLetterId] }) }),
        !purge ? null : el('button', { type: 'button', className: 'danger', text: 'Purge', onclick: () => act(`Delete dead letter ${letter.deadLetterId} of "${isolated(letter.sourceStream)}" for good?`, 'dead-letters/purge', { stream: letter.sourceStream, ids: [letter.deadLetterId] }) }))));
  });
  const headings = [noActions ? null : '', 'Id', partitioned ? 'Partition' : null, 'Source id', 'Group', 'Reason', 'Error', 'At', 'Deliveries', 'Fields', noActions ? null : ''].filter((heading) => heading !== null);
  parts.push(table(headings, rows, 'No dead letters.'));
  parts.push(...[pager(DEAD_LETTERS, page, 'dead-letters')].filter(Boolean));
  return parts;
}

/**
 * The delayed entries held for the stream (soonest due first) and its recurring schedules, each
 * with promote-now / remove; a partitioned stream's are held per partition.
 */
function delayedDetail(stream, delayed, schedules, readOnly) {
  if (delayed === null) return [el('h3', { text: 'Delayed entries' }), el('p', { className: 'hint', text: 'Delayed entries are held per partition: select a partition above.' })];
  const parts = [];
  const fieldsOf = (entry) => (entry.fields === null
    ? el('pre', { className: 'fields muted', text: 'body missing or unreadable' })
    : el('pre', { className: 'fields' }, ...entry.fields.flatMap(([name, value], index) => [index > 0 ? '\n' : null, fieldEl(name), ' = ', fieldEl(value)])));
  const where = `"${isolated(stream.name)}"`;
  const removeButton = (entry, what) => !allowed('remove') ? null : el('button', {
    type: 'button', className: 'danger', text: 'Remove', dataset: { action: 'remove' },
    onclick: () => act(`Remove ${what} ${isolated(entry.hold)} of ${where} for good? It will never be added to the stream.`, 'delayed/remove', { stream: stream.name, holds: [entry.hold] }),
  });
  parts.push(el('h3', { text: delayed.error ? 'Delayed entries' : `Delayed entries (${delayed.total} held)` }));
  if (delayed.error) parts.push(el('p', { className: 'warn', text: delayed.error }));
  else {
    const rows = delayed.entries.map((entry) =>
      el('tr', { dataset: { hold: entry.hold } },
        nameCell(entry.hold),
        cell(entry.dueAt + (entry.due ? ' (due, not promoted yet)' : '')),
        cell(recurrenceText(entry)),
        el('td', {}, fieldsOf(entry)),
        readOnly ? null : el('td', {}, el('span', { className: 'actions' },
          !allowed('promote') ? null : el('button', { type: 'button', text: 'Promote now', dataset: { action: 'promote' }, onclick: () => act(`Promote delayed entry ${isolated(entry.hold)} of ${where} now? It is added to the stream at once, with the entries already due.`, 'delayed/promote', { stream: stream.name, hold: entry.hold }) }),
          removeButton(entry, 'delayed entry'))),
        allowed('promote') ? tickBox('holds', entry.hold) : null));
    parts.push(...[delayedBulk(stream.name, delayed.total)].filter(Boolean));
    parts.push(table(['Hold', 'Due at', 'Repeats', 'Fields', readOnly ? null : '', allowed('promote') ? 'Select' : null].filter((heading) => heading !== null), rows, 'No delayed entries.'));
    parts.push(...[pager(DELAYED, delayed, 'delayed', 'soonest due')].filter(Boolean));
  }
  parts.push(el('h3', { text: schedules.error ? 'Recurring schedules' : `Recurring schedules (${schedules.total} in all)` }));
  if (schedules.error) return [...parts, el('p', { className: 'warn', text: schedules.error })];
  const rows = schedules.entries.map((entry) =>
    el('tr', { dataset: { schedule: entry.hold } },
      nameCell(entry.hold),
      cell(recurrenceText(entry)),
      cell(entry.cron ? entry.cron.nextRuns.join(', ') : entry.dueAt),
      el('td', {}, fieldsOf(entry)),
      readOnly ? null : el('td', {}, removeButton(entry, 'recurring schedule'))));
  parts.push(table(['Schedule', 'Repeats', 'Next runs', 'Fields', readOnly ? null : ''].filter((heading) => heading !== null), rows, 'No recurring schedules.'));
  parts.push(...[pager(SCHEDULES, schedules, 'schedules', 'soonest due')].filter(Boolean));
  return parts;
}

function recurrenceText(entry) {
  if (entry.cron) return `cron ${entry.cron.expression} (${entry.cron.timezone})`;
  if (entry.everyMs !== null) return `every ${duration(entry.everyMs)}`;
  return 'once';
}
