// Lists paged with a cursor: which page of a list is open, and the buttons to turn it.
import { el, isolated } from './dom.js';
import { refreshNow } from './refresh.js';
import { state } from './state.js';

export const DEAD_LETTERS = 'dead-letters';
export const DELAYED = 'delayed';
export const SCHEDULES = 'schedules';
export const cursorParam = (list) => (state.cursors.has(list) ? [['cursor', state.cursors.get(list)]] : []);

/**
 * Which page of `list` is shown, and buttons to the next one and back to the first (each
 * refresh re-reads the same page); null when the whole list fits on its first page.
 */
export function pager(list, page, name, order = 'oldest') {
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
