/**
 * A UTC DATETIME the driver gave as text → ISO 8601 with milliseconds, as every ledger time is
 * written: `2026-11-22 13:00:00.123` → `2026-11-22T13:00:00.123Z`. Over the binary protocol (a
 * statement with parameters) mysql2 leaves out a fraction that is all zeros, and the ledger's
 * times are text compared as text, so `…:00Z` would sort after `…:00.500Z`.
 */
export function mysqlTimestamp(text: string): string {
  const date = new Date(`${text.replace(' ', 'T')}Z`);
  if (Number.isNaN(date.getTime())) throw new TypeError(`the MySQL server's clock read as ${JSON.stringify(text)}, which is not a DATETIME`);
  return date.toISOString();
}
