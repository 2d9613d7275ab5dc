import { addExact, parseExactDecimal, pow10, type ExactDecimal } from '../reports/exact-decimal.js';

/** Decimal digits per limb: a limb's sum over 2^25 rows stays below 2^53, an exact integer in a double. */
const LIMB_DIGITS = 8;
const LIMBS = 5;
/** Rows summed into the limbs before they are moved to the bigint, so no limb can pass 2^53. */
const ROWS_PER_FLUSH = 2 ** 25;
const LIMB_BASE = 10n ** BigInt(LIMB_DIGITS);
const POW10 = Array.from({ length: LIMB_DIGITS }, (_, i) => 10 ** i);

/**
 * A running sum of decimal texts, exact (`0.5 + 0.499` is `0.999`), so a check's limit applies to
 * the value the file states. Plain decimals of up to 40 digits are added digit by digit into five
 * eight-digit limbs, each exact in a double, sparing a bigint and a parse per row; the rest is
 * summed apart as an exact bigint.
 */
export class ExactDecimalSum {
  /**
   * The plain decimals' sum: units at {@link #scale}, in the limbs (limb `i` counting 10^(8i)) and
   * what was moved from them to {@link #flushed}.
   */
  readonly #limbs = new Float64Array(LIMBS);
  #inLimbs = 0;
  #flushed = 0n;
  #scale = 0;
  /**
   * The sum of everything else, at a scale of its own: one weight of thousands of digits must not
   * make every ordinary weight after it a bigint sum at that scale.
   */
  #other: ExactDecimal = { units: 0n, scale: 0 };

  /** Adds a decimal's text; false (and nothing added) when it is not a decimal. */
  add(text: string): boolean {
    if (this.#addPlain(text)) return true;
    const value = parseExactDecimal(text);
    if (value === undefined) return false;
    this.#other = addExact(this.#other, value);
    return true;
  }

  /** The sum so far, exactly. */
  get value(): ExactDecimal {
    this.#flush();
    return addExact({ units: this.#flushed, scale: this.#scale }, this.#other);
  }

  /**
   * Adds a plain decimal (`[+-]digits[.digits]`) into the limbs, right to left; false, having
   * added nothing, for any other form or one whose digits reach past the limbs.
   */
  #addPlain(text: string): boolean {
    const length = text.length;
    if (length === 0 || length > 60) return false;
    const first = text.charCodeAt(0);
    const negative = first === 0x2d; /* - */
    const start = negative || first === 0x2b /* + */ ? 1 : 0;
    const point = text.indexOf('.', start);
    const fraction = point < 0 ? 0 : length - point - 1;
    if (fraction > this.#scale) this.#atScale(fraction);
    // The power of ten of the last digit, in units of the sum's scale.
    let power = this.#scale - fraction;
    if (power + (length - start) > LIMBS * LIMB_DIGITS) return false;
    // Checked before anything is added: a text that is not a plain decimal adds nothing.
    let digits = 0;
    for (let i = start; i < length; i += 1) {
      const c = text.charCodeAt(i);
      if (c >= 0x30 && c <= 0x39) digits += 1;
      else if (i !== point) return false;
    }
    if (digits === 0) return false;
    const limbs = this.#limbs;
    const sign = negative ? -1 : 1;
    for (let i = length - 1; i >= start; i -= 1) {
      if (i === point) continue;
      const digit = text.charCodeAt(i) - 0x30;
      if (digit !== 0) limbs[(power / LIMB_DIGITS) | 0]! += sign * digit * POW10[power % LIMB_DIGITS]!;
      power += 1;
    }
    if (++this.#inLimbs === ROWS_PER_FLUSH) this.#flush();
    return true;
  }

  /** Brings the sum to `scale` digits after the point, if it has fewer. */
  #atScale(scale: number): void {
    if (scale <= this.#scale) return;
    this.#flush();
    this.#flushed *= pow10(scale - this.#scale);
    this.#scale = scale;
  }

  #flush(): void {
    if (this.#inLimbs === 0) return;
    let total = 0n;
    for (let i = LIMBS - 1; i >= 0; i -= 1) total = total * LIMB_BASE + BigInt(this.#limbs[i]!);
    this.#flushed += total;
    this.#limbs.fill(0);
    this.#inLimbs = 0;
  }
}
