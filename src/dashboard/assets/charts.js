// Charts of the selected stream over the last hour, drawn from the samples the module keeps
// (`api/series`: memory only, no Redis command): per stream in/s and dead letters, per group
// out/s, lag and pending. Inline SVG built with DOM calls, no library, no markup from strings.
import { getJson } from './api.js';
import { el, nameEl } from './dom.js';
import { state } from './state.js';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 260;
const HEIGHT = 64;

/** The last series read, and when: read again once a sample may have been added. */
let cached = { stream: null, readAt: 0, series: null, error: null };

function svg(tag, attributes, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  for (const child of children) if (child) node.append(child);
  return node;
}

function format(value) {
  if (value === null || value === undefined) return '—';
  if (Number.isInteger(value)) return String(value);
  return value.toFixed(value < 10 ? 2 : 1);
}

/** One series as a line over the sample times; gaps (null) break the line. */
export function chart(title, key, at, values) {
  const known = values.filter((value) => value !== null);
  const top = known.length > 0 ? Math.max(...known) : 0;
  const first = at[0];
  const span = at.length > 1 ? at[at.length - 1] - first : 0;
  const x = (index) => (span > 0 ? ((at[index] - first) / span) * WIDTH : WIDTH);
  const y = (value) => HEIGHT - 2 - (top > 0 ? (value / top) * (HEIGHT - 4) : 0);
  const lines = [];
  let points = [];
  values.forEach((value, index) => {
    if (value === null) {
      if (points.length > 0) lines.push(points);
      points = [];
    } else points.push(`${x(index).toFixed(1)},${y(value).toFixed(1)}`);
  });
  if (points.length > 0) lines.push(points);
  const latest = values.length > 0 ? values[values.length - 1] : null;
  const minutes = Math.round(span / 60_000);
  const summary = `${title}: now ${format(latest)}, highest ${format(known.length > 0 ? top : null)} over the last ${minutes} min`;
  const drawing = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, width: WIDTH, height: HEIGHT, role: 'img', 'aria-label': summary, class: 'chart-plot' },
    svg('title', {}, summary),
    svg('line', { x1: 0, y1: HEIGHT - 1, x2: WIDTH, y2: HEIGHT - 1, class: 'chart-axis' }),
    ...lines.map((line) => (line.length === 1
      ? svg('circle', { cx: line[0].split(',')[0], cy: line[0].split(',')[1], r: 1.5, class: 'chart-dot' })
      : svg('polyline', { points: line.join(' '), class: 'chart-line' }))));
  return el('figure', { className: 'chart', dataset: { series: key, latest: latest === null ? '' : String(latest), points: String(known.length) } },
    drawing,
    el('figcaption', {}, el('span', { text: title }), el('span', { className: 'muted', text: ` now ${format(latest)} · max ${format(known.length > 0 ? top : null)}` })));
}

async function seriesOf(name) {
  const interval = state.session.sampleInterval;
  if (cached.stream === name && Date.now() - cached.readAt < Math.min(interval, 10_000)) return cached;
  cached = { stream: name, readAt: Date.now(), series: null, error: null };
  try {
    cached.series = await getJson('series', [['stream', name]]);
  } catch (error) {
    cached.error = error.message;
  }
  return cached;
}

/** The charts block drawn at the end of the details (detail.js keeps it across its redraws), or null. */
export function drawnCharts(section) {
  return section.querySelector(':scope > [data-view="charts"]');
}

/** Draws the charts of the selected stream at the end of its details (right after them on each refresh), in place of those drawn before. */
export async function renderCharts() {
  const section = document.getElementById('detail');
  if (section.hidden || state.selected === null || !state.session.sampleInterval) {
    // None to draw (sampling turned off, as a session read again after a redeploy may say): none kept from before either.
    drawnCharts(section)?.remove();
    return;
  }
  const name = state.selected;
  const { series, error } = await seriesOf(name);
  if (state.selected !== name) return;
  const parts = [el('h3', { text: 'Last hour' })];
  if (series === null) {
    parts.push(el('p', { className: 'hint', text: `No charts: ${error}. A partition's samples are kept on its partitioned stream.` }));
  } else {
    parts.push(el('p', { className: 'hint', text: `One sample every ${series.intervalMs / 1000} s, kept by the app (${series.at.length} so far).` }));
    parts.push(el('div', { className: 'charts', dataset: { charts: 'stream' } },
      chart('In/s', 'in-rate', series.at, series.inRate),
      chart('Dead letters', 'dead-letters', series.at, series.deadLetters)));
    for (const group of series.groups) {
      parts.push(el('h4', {}, 'Group ', nameEl(group.name)));
      parts.push(el('div', { className: 'charts', dataset: { charts: 'group', group: group.name } },
        chart('Out/s', 'out-rate', series.at, group.outRate),
        chart('Lag', 'lag', series.at, group.lag),
        chart('Pending', 'pending', series.at, group.pending)));
    }
  }
  const block = el('div', { className: 'charts-block', dataset: { view: 'charts', stream: name } }, ...parts);
  const drawn = drawnCharts(section);
  if (drawn === null) section.append(block);
  else drawn.replaceWith(block);
}
