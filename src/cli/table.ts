import { visibleLine } from './visible-text.js';

/**
 * Aligned plain-text tables for terminal output: columns separated by two spaces, numbers
 * right-aligned. Every cell is made visible (control characters escaped) before the columns are
 * measured, so a hostile name neither acts on the terminal nor breaks the alignment.
 */

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
  // Line breaks and tabs are whitespace in a cell (a multi-line error on one row); the rest is shown escaped.
  return visibleLine(String(cell).replace(/[\r\n\t]+/g, ' '));
}
