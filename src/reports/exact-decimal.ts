/** An exact decimal: `units × 10^-scale`, `scale` never negative. */
export interface ExactDecimal {
  readonly units: bigint;
  readonly scale: number;
}

/**
 * The exact value of a decimal's text as the row builder checked it (`[+-]digits[.digits][e±n]`),
 * or undefined when the text is not of that form, or its exponent is beyond ±1,000,000 (far past
 * what any warehouse loads, and a power of ten that size would take the process's memory).
 */
export function parseExactDecimal(text: string): ExactDecimal | undefined {
  const match = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(text);
  if (!match || (match[2] === '' && (match[3] ?? '') === '')) return undefined;
  const [, sign, whole, written = '', exponent = '0'] = match;
  if (!(Math.abs(Number(exponent)) <= 1_000_000)) return undefined;
  // Zeros ending the fraction change no value, only the scale every later sum would work at.
  let end = written.length;
  while (end > 0 && written.charCodeAt(end - 1) === 0x30) end -= 1;
  const fraction = written.slice(0, end);
  const scale = fraction.length - Number(exponent);
  const digits = BigInt(`${whole}${fraction}` || '0');
  const units = scale >= 0 ? digits : digits * pow10(-scale);
  return { units: sign === '-' ? -units : units, scale: Math.max(0, scale) };
}

/** The two decimals brought to the same scale. */
function aligned(a: ExactDecimal, b: ExactDecimal): [bigint, bigint, number] {
  if (a.scale === b.scale) return [a.units, b.units, a.scale];
  if (a.scale > b.scale) return [a.units, b.units * pow10(a.scale - b.scale), a.scale];
  return [a.units * pow10(b.scale - a.scale), b.units, b.scale];
}

/** -1, 0 or 1 as `a` is below, equal to or above `b`, exactly. */
export function compareExact(a: ExactDecimal, b: ExactDecimal): number {
  const [x, y] = aligned(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** `a - b`, exactly. */
export function subtractExact(a: ExactDecimal, b: ExactDecimal): ExactDecimal {
  const [x, y, scale] = aligned(a, b);
  return { units: x - y, scale };
}

/** `a + b`, exactly. */
export function addExact(a: ExactDecimal, b: ExactDecimal): ExactDecimal {
  const [x, y, scale] = aligned(a, b);
  return { units: x + y, scale };
}

/** `|a|`. */
export function absExact(a: ExactDecimal): ExactDecimal {
  return a.units < 0n ? { units: -a.units, scale: a.scale } : a;
}

/** `a × n` for a whole number `n`. */
export function timesWhole(a: ExactDecimal, n: number): ExactDecimal {
  return { units: a.units * BigInt(n), scale: a.scale };
}

/** The decimal's plain text (no exponent), as short as its value allows: `0.999`, `-12`, `0`. */
export function exactText(a: ExactDecimal): string {
  if (a.units === 0n) return '0';
  const negative = a.units < 0n;
  let digits = (negative ? -a.units : a.units).toString();
  let scale = a.scale;
  while (scale > 0 && digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    scale -= 1;
  }
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
  }
  return negative && digits !== '0' ? `-${digits}` : digits;
}

/** The nearest double to the decimal (for display and for a `measured` value, never for a decision). */
export function toNumber(a: ExactDecimal): number {
  return Number(exactText(a));
}

const POWERS = new Map<number, bigint>();

/** 10^n as a bigint, each computed once: a file whose weights have thousands of digits asks for the same few. */
export function pow10(n: number): bigint {
  let power = POWERS.get(n);
  if (power === undefined) {
    power = 10n ** BigInt(n);
    if (POWERS.size < 64) POWERS.set(n, power);
  }
  return power;
}
