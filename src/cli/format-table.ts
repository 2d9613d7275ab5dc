import { escapeControlCharacters } from '../text/printable-text.js';

/**
 * Renders rows as a plain-text table with a header rule; numbers are right-aligned. Cells are
 * shown with their control characters escaped: they may hold what the upstream sent (a file name,
 * an error page quoted by the ledger), which must not act on the terminal or break the table.
 */
export function formatTable(headers: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = rows.map((row) => row.map((value) => (value === null || value === undefined ? '' : escapeControlCharacters(String(value)))));
  const numeric = headers.map((_, column) => rows.length > 0 && rows.every((row) => typeof row[column] === 'number' || row[column] == null));
  const widths = headers.map((header, column) => Math.max(header.length, ...cells.map((row) => row[column]?.length ?? 0)));
  const line = (values: readonly string[]) =>
    values
      .map((value, column) => (numeric[column] ? value.padStart(widths[column]!) : value.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((width) => '-'.repeat(width)).join('  '), ...cells.map(line)].join('\n');
}
