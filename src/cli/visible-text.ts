/**
 * Text from Redis (stream, group and consumer names, dead-letter errors) shown at a terminal must
 * not act on it: an ESC, BEL or C1 control in a group name would clear the screen or set the
 * window title. Every C0 control, DEL and every C1 control is written as `\xNN` instead, so it is
 * visible and takes columns like any other text (tables stay aligned).
 */

// Matching control characters is the point of these two.
// oxlint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
// oxlint-disable-next-line no-control-regex
const CONTROL_BUT_LINE_BREAK = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;

/** One line: every control character escaped, a line break too. */
export function visibleLine(text: string): string {
  return text.replace(CONTROL, escapeControl);
}

/** Several lines: every control character escaped except the `\n` between lines. */
export function visibleText(text: string): string {
  return text.replace(CONTROL_BUT_LINE_BREAK, escapeControl);
}

/**
 * JSON.stringify escapes C0 controls but writes DEL and C1 controls as they are; `--json` at a
 * terminal (or `top`'s JSON lines in a terminal) would show them raw. `\u007f`…`\u009f` escapes
 * parse back to the same values, so the JSON keeps the exact names.
 */
export function terminalSafeJson(json: string): string {
  return json.replace(/[\u007f-\u009f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function escapeControl(char: string): string {
  return `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`;
}
