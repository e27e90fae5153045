// Keeps the keyboard focus across a refresh: the views redraw their sections, which would drop
// the focused button; it is found again in the new DOM by its section, text and position.
const FOCUSABLE = 'button, input, select, a[href], [tabindex]';

function focusables(section) {
  return [...section.querySelectorAll(FOCUSABLE)];
}

/** Where the focus is, as something to find again after a redraw (null: nothing to keep). */
export function rememberFocus() {
  const active = document.activeElement;
  if (!active || active === document.body) return null;
  const section = active.closest('section[id], table[id], header');
  if (!section || !section.id && section.tagName !== 'HEADER') return null;
  const sameText = focusables(section).filter((node) => node.textContent === active.textContent && node.tagName === active.tagName);
  return { section: section.id || null, tag: active.tagName, text: active.textContent, index: sameText.indexOf(active), node: active };
}

/**
 * Focuses the remembered element's counterpart when the redraw replaced it, where the page is:
 * scrolled into view, a stream's button at the top would pull the page up from whatever the
 * operator scrolled down to (and a click aimed there would land elsewhere).
 */
export function restoreFocus(kept) {
  if (kept === null || kept.node.isConnected) return;
  const section = kept.section ? document.getElementById(kept.section) : document.querySelector('header');
  if (!section) return;
  const sameText = focusables(section).filter((node) => node.textContent === kept.text && node.tagName === kept.tag);
  sameText[Math.max(0, kept.index)]?.focus({ preventScroll: true });
}
