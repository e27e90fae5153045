// The streams table: one row per stream and group, with rates from the previous refresh.
import { getJson } from './api.js';
import { cell, el, nameEl, num } from './dom.js';
import { overviewParams, renderOverviewPager } from './overview-pages.js';
import { forget, select } from './refresh.js';
import { state } from './state.js';

function rate(key, current, kind) {
  const previous = state.previous;
  if (!previous || current === null || current === undefined) return null;
  const before = previous[kind].get(key);
  const seconds = (state.overview.at - previous.at) / 1000;
  if (before === null || before === undefined || seconds <= 0) return null;
  return Math.max(0, (current - before) / seconds).toFixed(1);
}

function counters(overview) {
  const added = new Map();
  const read = new Map();
  const visit = (stream) => {
    added.set(stream.name, stream.entriesAdded);
    for (const group of stream.groups) read.set(`${stream.name}\n${group.name}`, group.entriesRead);
    for (const partition of stream.partitions || []) visit(partition);
  };
  overview.streams.forEach(visit);
  return { at: overview.at, added, read };
}

/** Reads the overview of the app's streams and the ones typed into the page, and draws it. */
export async function loadOverview() {
  const overview = await getJson('overview', [...state.named.map((name) => ['stream', name]), ...overviewParams()]);
  // Rates from the same page only: another page's counters are of other streams.
  state.previous = state.overview && state.overview.offset === overview.offset ? counters(state.overview) : null;
  state.overview = overview;
  renderOverview();
}

function renderOverview() {
  const body = document.querySelector('#streams tbody');
  const rows = [];
  for (const stream of state.overview.streams) {
    rows.push(...streamRows(stream, false));
    for (const partition of stream.partitions || []) rows.push(...streamRows(partition, true));
  }
  if (rows.length === 0) rows.push(el('tr', {}, el('td', { colSpan: 11, className: 'muted', text: 'No streams: no handler of this app reads one yet. Show one by name above.' })));
  body.replaceChildren(...rows);
  renderOverviewPager();
}

function streamRows(stream, isPartition) {
  const groups = stream.groups.length > 0 ? stream.groups : [null];
  return groups.map((group, index) => {
    const first = index === 0;
    const row = el('tr', { className: [isPartition ? 'partition' : '', state.selected === stream.name ? 'selected' : ''].join(' ').trim(), dataset: { stream: stream.name, group: group ? group.name : '' } });
    if (first) {
      const label = el('button', { type: 'button', className: 'link', title: 'Details', onclick: () => select(stream.name) }, nameEl(stream.name));
      const extra = [];
      if (stream.partitions) extra.push(el('span', { className: 'muted', text: ` (${stream.partitions.length} partitions)` }));
      if (!stream.exists) extra.push(el('span', { className: 'muted', text: ' (no such stream)' }));
      if (stream.error) extra.push(el('span', { className: 'warn', text: ` ${stream.error}` }));
      if (stream.groupsOmitted) extra.push(el('span', { className: 'muted', dataset: { omitted: 'groups' }, text: ` (${stream.groupsOmitted} more groups not listed)` }));
      if (stream.partitionsOmitted) extra.push(el('span', { className: 'muted', dataset: { omitted: 'partitions' }, text: ` (${stream.partitionsOmitted} more partitions not listed)` }));
      if (stream.source === 'page') extra.push(el('button', { type: 'button', className: 'link', text: ' ×', title: 'Stop showing', onclick: () => forget(stream.name) }));
      row.append(
        el('td', { dataset: { col: 'name' } }, label, ...extra),
        num(stream.length, 'length'),
        num(rate(stream.name, stream.entriesAdded, 'added'), 'in-rate'),
        num(stream.deadLetters, 'dead-letters'),
        // null (shown "—") when Redis refused the delayed keys.
        num(stream.delayed ? stream.delayed.held : null, 'delayed'),
        num(stream.delayed ? stream.delayed.due : null, 'delayed-due'),
      );
    } else {
      row.append(cell(''), cell(''), cell(''), cell(''), cell(''), cell(''));
    }
    if (group === null) {
      row.append(el('td', { colSpan: 5, className: 'muted', text: 'no consumer group' }));
    } else {
      row.append(
        el('td', { dataset: { col: 'group' } }, nameEl(group.name), pausedBadge(group)),
        num(group.consumers.length, 'consumers'),
        num(group.pending, 'pending'),
        num(group.lag, 'lag'),
        num(rate(`${stream.name}\n${group.name}`, group.entriesRead, 'read'), 'out-rate'),
      );
    }
    return row;
  });
}

/** A paused group's mark (null when it runs): workers of every process stopped reading it. */
export function pausedBadge(group) {
  if (!group.paused) return null;
  return el('span', { className: 'paused', text: ' paused', title: `Paused for every worker since ${group.pausedAt}` });
}

export function findStream(name) {
  for (const stream of state.overview ? state.overview.streams : []) {
    if (stream.name === name) return { stream, partitioned: Boolean(stream.partitions), partitionOf: null };
    for (const partition of stream.partitions || []) if (partition.name === name) return { stream: partition, partitioned: false, partitionOf: stream.name };
  }
  return null;
}
