/** How a benchmark row names a dialect. */
export const DIALECT_NAMES: Readonly<Record<string, string>> = { sqlite: 'SQLite', postgres: 'Postgres', mysql: 'MySQL' };

/** A count as a row prints it: `20 M`, `2.5 M`, or in full below a million. */
export function millions(count: number): string {
  return count >= 1_000_000 ? `${(count / 1_000_000).toFixed(count % 1_000_000 === 0 ? 0 : 1)} M` : count.toLocaleString('en-US');
}
