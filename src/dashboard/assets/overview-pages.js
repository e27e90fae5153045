// The overview in pages of `maxStreams` streams, and the filter on their names: which page is
// open, the buttons to turn it, and the query the overview is read with.
import { el } from './dom.js';
import { refreshNow } from './refresh.js';
import { state } from './state.js';

/** The overview request's page and filter (besides the streams typed into the page). */
export function overviewParams() {
  const params = [];
  if (state.overviewOffset > 0) params.push(['offset', String(state.overviewOffset)]);
  if (state.match !== '') params.push(['match', state.match]);
  return params;
}

/** Filters the overview by a part of the names (from the first page). */
export function setMatch(text) {
  state.match = text;
  state.overviewOffset = 0;
  refreshNow();
}

function turn(offset) {
  state.overviewOffset = offset;
  refreshNow();
}

/** "Streams 51–100 of 1000" and the buttons to the previous / next page (empty when one page holds them all). */
export function renderOverviewPager() {
  const box = document.getElementById('streams-pager');
  const { offset, total, next, streams } = state.overview;
  // The page may have emptied (streams gone, or a narrower filter): back to the first.
  if (streams.length === 0 && offset > 0) {
    state.overviewOffset = 0;
    return;
  }
  const filtered = state.match === '' ? '' : ` matching "${state.match}"`;
  if (offset === 0 && next === null) {
    box.replaceChildren(state.match === '' ? '' : el('span', { className: 'hint', text: `${total} streams${filtered}.` }));
    return;
  }
  const pageSize = streams.length;
  box.replaceChildren(
    el('span', { className: 'hint', dataset: { range: 'streams' }, text: `Streams ${offset + 1}–${offset + pageSize} of ${total}${filtered}.` }),
    el('button', { type: 'button', text: 'Previous streams', disabled: offset === 0, dataset: { page: 'previous' }, onclick: () => turn(Math.max(0, offset - state.session.maxStreams)) }),
    el('button', { type: 'button', text: 'Next streams', disabled: next === null, dataset: { page: 'next' }, onclick: () => turn(next) }),
  );
}
