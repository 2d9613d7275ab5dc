/**
 * The decimal text to store for a source value, or `undefined` when it is not a plain decimal
 * (`[+-]digits[.digits][(e|E)[+-]digits]` or `.digits`). Kept as written (trimmed), so NUMERIC gets
 * every digit; `1,234.5`, `NaN` and `Infinity` are refused, not guessed. Whether the column keeps
 * it exactly is `decimalMisfit`'s call. One hand-written scan: a regex per value is too costly.
 */
export function toDecimalText(raw: string): string | undefined {
  // Only a value starting or ending with a possible space can need trimming (see mayBeSpace).
  const text = raw.length > 0 && (mayBeSpace(raw.charCodeAt(0)) || mayBeSpace(raw.charCodeAt(raw.length - 1))) ? raw.trim() : raw;
  const length = text.length;
  let i = 0;
  let c = text.charCodeAt(0);
  if (c === 0x2b /* + */ || c === 0x2d /* - */) c = text.charCodeAt(++i);
  const intStart = i;
  while (c >= 0x30 && c <= 0x39) c = text.charCodeAt(++i);
  let digits = i - intStart;
  if (c === 0x2e /* . */) {
    const fracStart = ++i;
    c = text.charCodeAt(i);
    while (c >= 0x30 && c <= 0x39) c = text.charCodeAt(++i);
    digits += i - fracStart;
  }
  if (digits === 0) return undefined;
  if (c === 0x65 /* e */ || c === 0x45 /* E */) {
    c = text.charCodeAt(++i);
    if (c === 0x2b || c === 0x2d) c = text.charCodeAt(++i);
    const expStart = i;
    while (c >= 0x30 && c <= 0x39) c = text.charCodeAt(++i);
    if (i === expStart) return undefined;
  }
  if (i !== length) return undefined;
  return text;
}

/** Every character String.prototype.trim removes is at most U+0020 or at least U+00A0. */
function mayBeSpace(code: number): boolean {
  return code <= 0x20 || code >= 0xa0;
}
