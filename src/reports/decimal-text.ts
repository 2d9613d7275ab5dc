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
  // Without an exponent, fewer than 300 characters cannot pass the largest double (about 1.8e308),
  // so the costly conversion is only needed for the rest.
  if ((text.length >= 300 || /[eE]/.test(text)) && !Number.isFinite(Number(text))) return undefined;
  return text;
}
