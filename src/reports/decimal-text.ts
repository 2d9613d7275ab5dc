const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * The decimal text to store for a source value, or `undefined` when the value is not a plain
 * decimal number. The text is kept as written (trimmed), so Postgres NUMERIC gets every digit;
 * forms such as `1,234.5`, `NaN`, `Infinity` and `1e999` (not finite as a double, so SQLite
 * could not hold it) are refused rather than guessed at.
 */
export function toDecimalText(raw: string): string | undefined {
  const text = raw.trim();
  if (!DECIMAL.test(text)) return undefined;
  if (!Number.isFinite(Number(text))) return undefined;
  return text;
}
