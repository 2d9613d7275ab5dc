import { parseExactDecimal, type ExactDecimal } from '../exact-decimal.js';

/** Powers of ten a double holds exactly (10^0 … 10^22). */
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * A running sum of decimal texts, exact whatever they hold: `0.5 + 0.499` is `0.999`, not
 * `0.9990000000000001`, so a check's limit is applied to the value the file states. Most weights
 * have a few digits each, so their units (at the largest scale seen) are summed in a double while
 * that sum stays an exact integer, and moved to a bigint only when it would not: a bigint per row
 * would cost more than the rest of tallying it.
 */
export class ExactDecimalSum {
  #big = 0n;
  /** Units at {@link #scale} not yet moved to {@link #big}: always an integer below 2^53. */
  #small = 0;
  #scale = 0;

  /** Adds a decimal's text; false (and nothing added) when it is not a decimal. */
  add(text: string): boolean {
    const fast = smallDecimal(text);
    if (fast !== undefined && fast.scale <= this.#scale) {
      const scaled = fast.units * POW10[this.#scale - fast.scale]!;
      const sum = this.#small + scaled;
      if (this.#scale - fast.scale < POW10.length && Number.isSafeInteger(scaled) && Number.isSafeInteger(sum)) {
        this.#small = sum;
        return true;
      }
    }
    const value = parseExactDecimal(text);
    if (value === undefined) return false;
    if (value.scale > this.#scale) {
      this.#big = (this.#big + BigInt(this.#small)) * 10n ** BigInt(value.scale - this.#scale);
      this.#small = 0;
      this.#scale = value.scale;
    }
    this.#big += value.units * 10n ** BigInt(this.#scale - value.scale);
    return true;
  }

  /** The sum so far, exactly. */
  get value(): ExactDecimal {
    return { units: this.#big + BigInt(this.#small), scale: this.#scale };
  }
}

/**
 * The units and scale of a plain decimal of at most 15 digits (`[+-]digits[.digits]`, no exponent
 * or spaces), read in one scan as a double (exact at that length); undefined for anything else,
 * which {@link parseExactDecimal} reads.
 */
function smallDecimal(text: string): { units: number; scale: number } | undefined {
  const length = text.length;
  let i = 0;
  let c = text.charCodeAt(0);
  const negative = c === 0x2d; /* - */
  if (negative || c === 0x2b /* + */) c = text.charCodeAt(++i);
  let units = 0;
  let digits = 0;
  let scale = -1;
  for (; i < length; c = text.charCodeAt(++i)) {
    if (c >= 0x30 && c <= 0x39) {
      units = units * 10 + (c - 0x30);
      digits += 1;
      if (scale >= 0) scale += 1;
    } else if (c === 0x2e /* . */ && scale < 0) scale = 0;
    else return undefined;
  }
  if (digits === 0 || digits > 15) return undefined;
  return { units: negative ? -units : units, scale: Math.max(0, scale) };
}
