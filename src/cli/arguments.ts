/**
 * Turning command-line strings into service options. Values that are not well-formed are passed
 * on unchanged, so the service's validation rejects them with its usual message, which the CLI
 * then reports under the flag's name (see output.ts).
 */

/** `"100"` → 100; anything else stays a string for the service to reject. */
export function integerArgument(value: string | undefined): number | string | undefined {
  if (value === undefined) return undefined;
  return /^[+-]?\d+$/.test(value.trim()) ? Number(value.trim()) : value;
}

/** Service option name → how the user typed it (`maxRecords` → `--max-records`). */
export function flagFor(option: string, positional: readonly string[] = []): string {
  if (positional.includes(option)) return `<${option}>`;
  return `--${option.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
}

/** Stream ids from a file or stdin: a claim result's JSON (its `ids`), a JSON array, or whitespace-separated ids. */
export function parseIdList(text: string): string[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const parsed: unknown = JSON.parse(trimmed);
    const ids: unknown = Array.isArray(parsed) ? parsed : (parsed as { ids?: unknown }).ids;
    if (!Array.isArray(ids)) throw new Error('the JSON holds no "ids" array');
    return ids.map(String);
  }
  return trimmed.length === 0 ? [] : trimmed.split(/\s+/);
}
