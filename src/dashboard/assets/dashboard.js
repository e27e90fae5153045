// The dashboard page: polls the JSON API next to it and builds the DOM from text only
// (textContent, never innerHTML), so a hostile stream, group, consumer or field stays text.
'use strict';
(() => {
  const api = new URL('../api/', document.currentScript.src);
  const NAMED_KEY = 'nestjs-redis-streams-dashboard:streams';
  const state = {
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
  };

  // ---- DOM helpers -------------------------------------------------------------------------
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null) continue;
      if (key === 'text') node.textContent = String(value);
      else if (key === 'dataset') Object.assign(node.dataset, value);
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node[key] = value;
    }
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }
  const cell = (text, props) => el('td', { text, ...props });
  const num = (value, col) => cell(value === null || value === undefined ? '—' : String(value), { className: 'num', dataset: col ? { col } : undefined });
  // A name from Redis, isolated from the text around it: a right-to-left override (U+202E) in it
  // cannot reorder what follows, in the page (a <bdi> element) nor in a dialog's text (FSI…PDI).
  const nameEl = (name, props) => el('bdi', { className: 'name', text: balancedIsolates(String(name)), ...props });
  const nameCell = (name, props) => el('td', props, nameEl(name));
  const isolated = (name) => `\u2068${balancedIsolates(String(name))}\u2069`;

  /**
   * `text` with every isolate it opens closed and no stray PDI (U+2069): a stray one would close
   * the isolate around the name early, and let an override after it reach the text beyond.
   */
  function balancedIsolates(text) {
    let open = 0;
    let out = '';
    for (const char of text) {
      if (char === '\u2066' || char === '\u2067' || char === '\u2068') open++;
      else if (char === '\u2069') {
        if (open === 0) continue;
        open--;
      }
      out += char;
    }
    return out + '\u2069'.repeat(open);
  }

  function duration(ms) {
    if (ms === null || ms === undefined || ms < 0) return '—';
    if (ms < 1000) return `${ms} ms`;
    if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
    if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
    if (ms < 86_400_000) return `${(ms / 3_600_000).toFixed(1)} h`;
    return `${(ms / 86_400_000).toFixed(1)} d`;
  }

  function setStatus(text, error) {
    const status = document.getElementById('status');
    status.textContent = text;
    status.className = error ? 'error' : '';
  }

  // ---- API -----------------------------------------------------------------------------------
  async function getJson(path, params) {
    const url = new URL(path, api);
    for (const [name, value] of params || []) url.searchParams.append(name, value);
    return reply(await fetch(url, { headers: { Accept: 'application/json' }, cache: 'no-store' }));
  }

  /**
   * A mutation with the session's CSRF token. Refused for its token (expired, or the app's
   * replicas changed their secret), the page fetches a new token and tries once more.
   */
  async function postJson(path, body) {
    const post = () => {
      const session = state.session;
      const headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
      if (session.csrfToken) headers[session.csrfHeader] = session.csrfToken;
      return fetch(new URL(path, api), { method: 'POST', headers, body: JSON.stringify(body) });
    };
    let response = await post();
    if (response.status === 403) {
      const refusal = await response.clone().json().catch(() => null);
      if (refusal && refusal.reason === 'csrf') {
        state.session = await getJson('session');
        response = await post();
      }
    }
    return reply(response);
  }

  async function reply(response) {
    const body = await response.json().catch(() => null);
    if (!response.ok) throw new Error((body && body.message) || `HTTP ${response.status}`);
    return body;
  }

  // ---- streams typed into the page -----------------------------------------------------------
  function loadNamed() {
    try {
      const names = JSON.parse(sessionStorage.getItem(NAMED_KEY) || '[]');
      return Array.isArray(names) ? names.filter((name) => typeof name === 'string' && name !== '').slice(0, 10) : [];
    } catch {
      return [];
    }
  }
  function saveNamed() {
    try {
      sessionStorage.setItem(NAMED_KEY, JSON.stringify(state.named));
    } catch {
      // Storage may be off: the names last as long as the page.
    }
  }

  // ---- overview --------------------------------------------------------------------------------
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

  function renderOverview() {
    const body = document.querySelector('#streams tbody');
    const rows = [];
    for (const stream of state.overview.streams) {
      rows.push(...streamRows(stream, false));
      for (const partition of stream.partitions || []) rows.push(...streamRows(partition, true));
    }
    if (rows.length === 0) rows.push(el('tr', {}, el('td', { colSpan: 11, className: 'muted', text: 'No streams: no handler of this app reads one yet. Show one by name above.' })));
    if (state.overview.omitted > 0) rows.push(el('tr', {}, el('td', { colSpan: 11, className: 'warn', text: `${state.overview.omitted} more streams not shown (the maxStreams option).` })));
    body.replaceChildren(...rows);
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
  function pausedBadge(group) {
    if (!group.paused) return null;
    return el('span', { className: 'paused', text: ' paused', title: `Paused for every worker since ${group.pausedAt}` });
  }

  function findStream(name) {
    for (const stream of state.overview ? state.overview.streams : []) {
      if (stream.name === name) return { stream, partitioned: Boolean(stream.partitions), partitionOf: null };
      for (const partition of stream.partitions || []) if (partition.name === name) return { stream: partition, partitioned: false, partitionOf: stream.name };
    }
    return null;
  }

  // ---- details of one stream -------------------------------------------------------------------
  async function renderDetail() {
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
    parts.push(...deadLetterDetail(stream, deadLetters, partitioned, readOnly));
    parts.push(...delayedDetail(stream, delayed, schedules, readOnly));
    section.replaceChildren(...parts);
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
        el('td', {}, readOnly || partitioned ? null : el('button', {
          type: 'button', className: 'danger', text: 'Delete', disabled: consumer.pending > 0,
          title: consumer.pending > 0 ? 'Claim or ack its pending entries first' : 'Delete this consumer',
          onclick: () => act(`Delete consumer "${isolated(consumer.name)}" of group "${isolated(group.name)}" on "${isolated(stream.name)}"?`, 'consumers/delete', { stream: stream.name, group: group.name, consumer: consumer.name }),
        }))));
    parts.push(table(['Consumer', 'Pending', 'Idle', 'Inactive', ''], consumers, 'No consumers.'));
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
          el('button', { type: 'button', text: 'Claim', onclick: () => claim(stream.name, group.name, entry) }),
          el('button', { type: 'button', className: 'danger', text: 'Ack', onclick: () => act(`Acknowledge entry ${entry.id} of group "${isolated(group.name)}" on "${isolated(stream.name)}"? It will not be handled again.`, 'pending/ack', { stream: stream.name, group: group.name, ids: [entry.id] }) })))));
    parts.push(el('h3', { text: `Pending entries (${pending.total} in all)` }));
    parts.push(table(['Id', 'Consumer', 'Idle', 'Deliveries', ''], rows, 'Nothing pending.'));
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
    if (readOnly) return el('p', { className: 'muted', text: since });
    const where = `group "${isolated(group.name)}" on "${isolated(stream.name)}"`;
    const button = group.paused
      ? el('button', { type: 'button', text: 'Resume', dataset: { action: 'resume' }, onclick: () => act(`Resume ${where}? Every worker reads it again within a second.`, 'groups/resume', { stream: stream.name, group: group.name }) })
      : el('button', { type: 'button', className: 'danger', text: 'Pause', dataset: { action: 'pause' }, onclick: () => act(`Pause ${where} for every worker? They stop reading new entries within a second; handlers already running finish, nothing is lost.`, 'groups/pause', { stream: stream.name, group: group.name }) });
    return el('p', { className: 'actions' }, el('span', { className: 'muted', text: `${since} ` }), button);
  }

  function deadLetterDetail(stream, page, partitioned, readOnly) {
    const parts = [el('h3', { text: page.error ? 'Dead letters' : `Dead letters (${page.total} in all)` })];
    if (page.error) return [...parts, el('p', { className: 'warn', text: page.error })];
    const letters = page.deadLetters;
    const key = (letter) => `${letter.sourceStream}\n${letter.deadLetterId}`;
    // Ticks of letters that are gone are dropped (deleting while iterating a Set is safe).
    const present = new Set(letters.map(key));
    for (const ticked of state.ticked) if (!present.has(ticked)) state.ticked.delete(ticked);
    if (!readOnly) {
      parts.push(el('div', { className: 'actions' },
        el('button', { type: 'button', text: 'Redrive selected', onclick: () => onTicked('redrive') }),
        el('button', { type: 'button', className: 'danger', text: 'Purge selected', onclick: () => onTicked('purge') }),
        el('button', { type: 'button', text: 'Redrive all', disabled: stream.deadLetters === 0, onclick: () => act(`Redrive ALL ${stream.deadLetters} dead letters of "${isolated(stream.name)}" back to the stream?`, 'dead-letters/redrive', { stream: stream.name, ids: 'all' }) }),
        el('button', { type: 'button', className: 'danger', text: 'Purge all', disabled: stream.deadLetters === 0, onclick: () => act(`Delete ALL ${stream.deadLetters} dead letters of "${isolated(stream.name)}" for good?`, 'dead-letters/purge', { stream: stream.name, ids: 'all' }) })));
    }
    const rows = letters.map((letter) => {
      const fields = letter.tombstone
        ? el('pre', { className: 'fields', text: 'body gone (trimmed while pending)' })
        : el('pre', { className: 'fields' }, ...letter.fields.flatMap(([name, value], index) => [index > 0 ? '\n' : null, fieldEl(name), ' = ', fieldEl(value)]));
      const cut = letter.fields.some(([name, value]) => name.truncated || value.truncated);
      return el('tr', { dataset: { deadLetter: letter.deadLetterId } },
        readOnly ? null : el('td', {}, el('input', { type: 'checkbox', checked: state.ticked.has(key(letter)), title: 'Select', onchange: (event) => (event.target.checked ? state.ticked.add(key(letter)) : state.ticked.delete(key(letter))) })),
        el('td', { className: 'name id', text: letter.deadLetterId }),
        partitioned ? nameCell(letter.sourceStream) : null,
        el('td', { className: 'name id', text: letter.sourceId }),
        nameCell(letter.group),
        cell(letter.reason),
        el('td', {}, nameEl(letter.error)),
        cell(new Date(letter.deadLetteredAt).toISOString()),
        num(letter.deliveryCount),
        el('td', {}, fields, cut ? el('button', { type: 'button', className: 'link', text: 'Show whole fields', dataset: { action: 'whole' }, onclick: () => inspectDeadLetter(letter) }) : null),
        readOnly ? null : el('td', {}, el('span', { className: 'actions' },
          el('button', { type: 'button', text: 'Redrive', disabled: Boolean(letter.tombstone), onclick: () => act(`Redrive dead letter ${letter.deadLetterId} back to "${isolated(letter.sourceStream)}"?`, 'dead-letters/redrive', { stream: letter.sourceStream, ids: [letter.deadLetterId] }) }),
          el('button', { type: 'button', className: 'danger', text: 'Purge', onclick: () => act(`Delete dead letter ${letter.deadLetterId} of "${isolated(letter.sourceStream)}" for good?`, 'dead-letters/purge', { stream: letter.sourceStream, ids: [letter.deadLetterId] }) }))));
    });
    const headings = [readOnly ? null : '', 'Id', partitioned ? 'Partition' : null, 'Source id', 'Group', 'Reason', 'Error', 'At', 'Deliveries', 'Fields', readOnly ? null : ''].filter((heading) => heading !== null);
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
    const removeButton = (entry, what) => el('button', {
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
            el('button', { type: 'button', text: 'Promote now', dataset: { action: 'promote' }, onclick: () => act(`Promote delayed entry ${isolated(entry.hold)} of ${where} now? It is added to the stream at once, with the entries already due.`, 'delayed/promote', { stream: stream.name, hold: entry.hold }) }),
            removeButton(entry, 'delayed entry')))));
      parts.push(table(['Hold', 'Due at', 'Repeats', 'Fields', readOnly ? null : ''].filter((heading) => heading !== null), rows, 'No delayed entries.'));
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

  // ---- lists paged with a cursor ---------------------------------------------------------------------
  const DEAD_LETTERS = 'dead-letters';
  const DELAYED = 'delayed';
  const SCHEDULES = 'schedules';
  const cursorParam = (list) => (state.cursors.has(list) ? [['cursor', state.cursors.get(list)]] : []);

  /**
   * Which page of `list` is shown, and buttons to the next one and back to the first (each
   * refresh re-reads the same page); null when the whole list fits on its first page.
   */
  function pager(list, page, name, order = 'oldest') {
    const first = !state.cursors.has(list);
    if (first && page.next === null) return null;
    const shown = page.deadLetters || page.entries;
    const where = first ? `The ${order} ${shown.length} shown.` : shown.length === 0 ? 'None after the previous page.' : `${shown.length} shown, from ${shown[0].deadLetterId || shown[0].id || isolated(shown[0].hold)} on.`;
    const turn = (cursor) => {
      if (cursor === null) state.cursors.delete(list);
      else state.cursors.set(list, cursor);
      refreshNow();
    };
    return el('p', { className: 'actions pager', dataset: { list: name } },
      el('span', { className: 'hint', text: where }),
      first ? null : el('button', { type: 'button', text: 'First page', dataset: { page: 'first' }, onclick: () => turn(null) }),
      page.next === null ? null : el('button', { type: 'button', text: 'Next page', dataset: { page: 'next' }, onclick: () => turn(page.next) }));
  }

  const NUMERIC = new Set(['Pending', 'Idle', 'Inactive', 'Deliveries']);
  function table(headings, rows, empty) {
    return el('table', {},
      el('thead', {}, el('tr', {}, ...headings.map((heading) => el('th', { text: heading, className: NUMERIC.has(heading) ? 'num' : '' })))),
      el('tbody', {}, ...(rows.length > 0 ? rows : [el('tr', {}, el('td', { colSpan: headings.length, className: 'muted', text: empty }))])));
  }

  /**
   * A field name or value: its text, or its bytes as base64 marked so (they are not UTF-8), and
   * when the list sent only its first bytes, how many there are in all.
   */
  function fieldEl(field) {
    return el('span', { className: 'field', dataset: { encoding: field.encoding, truncated: field.truncated ? 'yes' : undefined } },
      field.encoding === 'base64' ? el('span', { className: 'encoding', text: 'base64:', title: `Not UTF-8 text: its ${field.bytes} bytes as base64` }) : null,
      el('bdi', { text: field.text }),
      field.truncated ? el('span', { className: 'muted', text: ` … (${size(field.bytes)} in all)` }) : null);
  }

  function size(bytes) {
    if (bytes < 1024) return `${bytes} bytes`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
    return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  }

  /** An entry's or a dead letter's whole fields, fetched on demand, in the section below the details. */
  function showFields(title, fields) {
    const section = document.getElementById('entry');
    const rows = fields.map(([name, value]) => el('tr', {}, el('td', { className: 'name field-name' }, fieldEl(name)), el('td', {}, el('pre', { className: 'fields' }, fieldEl(value)))));
    section.replaceChildren(
      el('div', { className: 'toolbar' },
        el('h2', {}, ...title),
        el('button', { type: 'button', text: 'Close', onclick: () => { section.hidden = true; } })),
      table(['Field', 'Value'], rows, 'No fields.'));
    section.hidden = false;
  }

  async function inspect(stream, id) {
    try {
      const entry = await getJson('entry', [['stream', stream], ['id', id]]);
      showFields(['Entry ', el('span', { className: 'name', text: entry.id }), ' of ', nameEl(stream)], entry.fields);
    } catch (error) {
      setStatus(error.message, true);
    }
  }

  async function inspectDeadLetter(letter) {
    try {
      const whole = await getJson('dead-letter', [['stream', letter.sourceStream], ['id', letter.deadLetterId]]);
      showFields(['Dead letter ', el('span', { className: 'name', text: whole.deadLetterId }), ' of ', nameEl(whole.sourceStream)], whole.fields);
    } catch (error) {
      setStatus(error.message, true);
    }
  }

  // ---- actions -----------------------------------------------------------------------------------
  async function act(question, path, body) {
    if (!window.confirm(question)) return;
    await send(path, body);
  }

  async function send(path, body) {
    try {
      setStatus(describeResult(await postJson(path, body)));
    } catch (error) {
      setStatus(error.message, true);
    }
    await refreshNow();
  }

  async function claim(stream, group, entry) {
    const consumer = window.prompt(`Claim entry ${entry.id} (held by "${isolated(entry.consumer)}") for which consumer of group "${isolated(group)}"?`, 'dashboard');
    if (consumer === null || consumer === '') return;
    await send('pending/claim', { stream, group, owner: entry.consumer, consumer, ids: [entry.id] });
  }

  async function onTicked(action) {
    const byStream = new Map();
    for (const ticked of state.ticked) {
      const [stream, id] = ticked.split('\n');
      byStream.set(stream, [...(byStream.get(stream) || []), id]);
    }
    const count = state.ticked.size;
    if (count === 0) return setStatus('Select dead letters first.', true);
    const verb = action === 'redrive' ? 'Redrive' : 'Delete for good';
    if (!window.confirm(`${verb} ${count} selected dead letter${count === 1 ? '' : 's'}?`)) return;
    state.ticked.clear();
    for (const [stream, ids] of byStream) await send(`dead-letters/${action}`, { stream, ids });
  }

  function describeResult(result) {
    if (typeof result.paused === 'boolean') {
      const where = `group "${isolated(result.group)}" on "${isolated(result.stream)}"`;
      if (result.paused) return result.changed ? `${where} paused` : `${where} was already paused`;
      return result.changed ? `${where} resumed` : `${where} was not paused`;
    }
    if (result.redriven) return `${result.redriven.length} redriven, ${result.skipped.length} skipped`;
    if (typeof result.purged === 'number') return `${result.purged} purged`;
    if (typeof result.acked === 'number') return `${result.acked} acknowledged`;
    if (result.handedOff) return `${result.handedOff.length} claimed, ${result.lost.length} held by another consumer by now`;
    if (typeof result.removed === 'number') return `${result.removed} removed`;
    if (result.hold !== undefined && result.promoted) {
      const skipped = result.skipped.find((one) => one.hold === result.hold);
      if (result.promoted.some((one) => one.hold === result.hold)) return `${isolated(result.hold)} promoted`;
      return skipped ? `${isolated(result.hold)} not promoted: ${skipped.status}` : `${isolated(result.hold)} was not held any more`;
    }
    if (result.outcomes) return `consumer: ${result.outcomes.map((outcome) => outcome.status).join(', ')}`;
    return 'done';
  }

  // ---- refresh loop --------------------------------------------------------------------------------
  function select(name) {
    state.selected = name;
    state.ticked.clear();
    state.cursors.clear();
    refreshNow();
  }

  function forget(name) {
    state.named = state.named.filter((one) => one !== name);
    saveNamed();
    if (state.selected === name) state.selected = null;
    refreshNow();
  }

  async function load() {
    const overview = await getJson('overview', state.named.map((name) => ['stream', name]));
    state.previous = state.overview ? counters(state.overview) : null;
    state.overview = overview;
    renderOverview();
    await renderDetail();
    document.body.dataset.refreshedAt = String(overview.at);
  }

  /** One refresh at a time; a refresh asked for during one runs right after it. */
  function refreshNow() {
    clearTimeout(state.timer);
    const run = (state.running || Promise.resolve())
      .then(load)
      .then(() => setStatus(`Updated ${new Date().toLocaleTimeString()}`), (error) => setStatus(`Refresh failed: ${error.message}`, true))
      .finally(() => {
        if (state.running === run) {
          state.running = null;
          state.timer = setTimeout(refreshNow, state.session.refreshInterval);
        }
      });
    state.running = run;
    return run;
  }

  async function start() {
    try {
      state.session = await getJson('session');
    } catch (error) {
      return setStatus(`Cannot load the dashboard: ${error.message}`, true);
    }
    const mode = document.getElementById('mode');
    mode.textContent = state.session.readOnly ? 'read-only' : 'actions enabled';
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
    refreshNow();
  }

  start();
})();
