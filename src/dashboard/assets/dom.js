// DOM helpers of the dashboard page: it builds the DOM from text only (textContent, never
// innerHTML), so a hostile stream, group, consumer or field stays text.

export function el(tag, props, ...children) {
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
export const cell = (text, props) => el('td', { text, ...props });
export const num = (value, col) => cell(value === null || value === undefined ? '—' : String(value), { className: 'num', dataset: col ? { col } : undefined });
// A name from Redis, isolated from the text around it: a right-to-left override (U+202E) in it
// cannot reorder what follows, in the page (a <bdi> element) nor in a dialog's text (FSI…PDI).
export const nameEl = (name, props) => el('bdi', { className: 'name', text: balancedIsolates(String(name)), ...props });
export const nameCell = (name, props) => el('td', props, nameEl(name));
export const isolated = (name) => `\u2068${balancedIsolates(String(name))}\u2069`;

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

export function duration(ms) {
  if (ms === null || ms === undefined || ms < 0) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  if (ms < 86_400_000) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / 86_400_000).toFixed(1)} d`;
}

export function setStatus(text, error) {
  const status = document.getElementById('status');
  status.textContent = text;
  status.className = error ? 'error' : '';
}

const NUMERIC = new Set(['Pending', 'Idle', 'Inactive', 'Deliveries']);
export function table(headings, rows, empty) {
  return el('table', {},
    el('thead', {}, el('tr', {}, ...headings.map((heading) => el('th', { text: heading, className: NUMERIC.has(heading) ? 'num' : '' })))),
    el('tbody', {}, ...(rows.length > 0 ? rows : [el('tr', {}, el('td', { colSpan: headings.length, className: 'muted', text: empty }))])));
}

/**
 * A field name or value: its text, or its bytes as base64 marked so (they are not UTF-8), and
 * when the list sent only its first bytes, how many there are in all.
 */
export function fieldEl(field) {
  return el('span', { className: 'field', dataset: { encoding: field.encoding, truncated: field.truncated ? 'yes' : undefined } },
    field.encoding === 'base64' ? el('span', { className: 'encoding', text: 'base64:', title: `Not UTF-8 text: its ${field.bytes} bytes as base64` }) : null,
    el('bdi', { text: field.text }),
    field.truncated ? el('span', { className: 'muted', text: ` … (${size(field.bytes)} in all)` }) : null);
}

export function size(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
