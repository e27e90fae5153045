// Keyboard use: `/` focuses the stream filter, Esc closes the open view (an entry, then the
// stream's details) or leaves the box being typed in. Everything else is a button, link or field
// reached with Tab, its focus always visible (dashboard.css).
import { state } from './state.js';

function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));
}

/** The view's own Close button (its toolbar's). */
function closeButton(section) {
  return [...section.querySelectorAll('.toolbar button')].find((button) => button.textContent === 'Close');
}

export function startKeyboard() {
  document.addEventListener('keydown', (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === '/' && !typing(event.target)) {
      event.preventDefault();
      document.getElementById('stream-filter').focus();
      return;
    }
    if (event.key !== 'Escape') return;
    if (typing(event.target)) {
      event.target.blur();
      return;
    }
    // Each view closes through its own Close button, so whatever closing it does (the URL too) is done.
    const entry = document.getElementById('entry');
    if (!entry.hidden) {
      closeButton(entry)?.click();
      return;
    }
    const detail = document.getElementById('detail');
    if (!detail.hidden && state.selected !== null) {
      const name = state.selected;
      closeButton(detail)?.click();
      // Back where the operator was, once redrawn: the stream's row in the overview.
      void Promise.resolve(state.running).then(() => {
        const row = [...document.querySelectorAll('#streams tbody tr')].find((one) => one.dataset.stream === name);
        row?.querySelector('button')?.focus();
      });
    }
  });
}
