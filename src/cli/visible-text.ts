/**
 * Text from Redis (stream, group and consumer names, dead-letter errors) shown at a terminal must
 * not act on it: an ESC, BEL or C1 control in a group name would clear the screen or set the
 * window title. Every C0 control, DEL and every C1 control is written as `\xNN` instead, so it is
 * visible and takes columns like any other text (tables stay aligned). So are the invisible
 * format characters that make one name look like another (`\uNNNN`): bidirectional overrides,
 * embeddings and isolates reorder what follows them ("Trojan Source"), zero-width characters and
 * the BOM take no column at all.
 */

/** Bidi controls (ALM, LRM, RLM, LRE…RLO, LRI…PDI) and zero-width characters (ZWSP, ZWNJ, ZWJ, WJ, BOM). */
const INVISIBLE = '\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff';
// Matching control characters is the point of these two.
// oxlint-disable-next-line no-control-regex
const CONTROL = new RegExp(`[\u0000-\u001f\u007f-\u009f${INVISIBLE}]`, 'g');
// oxlint-disable-next-line no-control-regex
const CONTROL_BUT_LINE_BREAK = new RegExp(`[\u0000-\u0009\u000b-\u001f\u007f-\u009f${INVISIBLE}]`, 'g');
const RAW_IN_JSON = new RegExp(`[\u007f-\u009f${INVISIBLE}]`, 'g');

/** One line: every control character escaped, a line break too. */
export function visibleLine(text: string): string {
  return text.replace(CONTROL, escapeControl);
}

/** Several lines: every control character escaped except the `\n` between lines. */
export function visibleText(text: string): string {
  return text.replace(CONTROL_BUT_LINE_BREAK, escapeControl);
}

/**
 * JSON.stringify escapes C0 controls but writes DEL, C1 controls and the invisible format
 * characters as they are; `--json` at a terminal (or `top`'s JSON lines in a terminal) would show
 * them raw. Their `\uNNNN` escapes parse back to the same values, so the JSON keeps the exact names.
 */
export function terminalSafeJson(json: string): string {
  return json.replace(RAW_IN_JSON, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function escapeControl(char: string): string {
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
