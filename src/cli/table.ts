/** Aligned plain-text tables for terminal output: columns separated by two spaces, numbers right-aligned. */

export type Cell = string | number | null | undefined;

export interface Column {
  header: string;
  /** `right` for counts and durations; default `left`. */
  align?: 'left' | 'right';
}

export function formatTable(columns: readonly Column[], rows: readonly (readonly Cell[])[]): string {
  const text = rows.map((row) => columns.map((_, i) => cellText(row[i])));
  const widths = columns.map((column, i) => Math.max(column.header.length, ...text.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (columns[i]!.align === 'right' ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((column) => column.header)), ...text.map(line)].join('\n') + '\n';
}

function cellText(cell: Cell): string {
  if (cell === null || cell === undefined) return '-';
  return String(cell).replace(/[\r\n\t]+/g, ' ');
}
