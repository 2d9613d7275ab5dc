import { absExact, compareExact, parseExactDecimal } from './exact-decimal.js';

/**
 * What a warehouse's decimal columns keep exactly; each row writer says which (`RowWriter.decimals`).
 * Plain data, so it travels to the thread that types a big file's rows.
 */
export type DecimalCapacity =
  /** Postgres `NUMERIC` without a precision: every digit, at most `maxScale` of them after the point. */
  | { readonly kind: 'numeric'; readonly maxScale: number }
  /**
   * SQLite's NUMERIC affinity: a whole number of up to 64 bits as an integer, any other value as
   * the nearest 64-bit float (15 significant digits kept, at most 17).
   */
  | { readonly kind: 'float64' }
  /**
   * A `DECIMAL(precision, scale)` column (MySQL, MariaDB): at most `precision - scale` digits before
   * the point and `scale` after it. A value with more after the point would be rounded (MySQL does
   * so even in strict mode, with only a note), so it is refused.
   */
  | { readonly kind: 'fixed'; readonly precision: number; readonly scale: number };

/** Postgres `NUMERIC`: 16,383 digits after the point is the most it stores (more overflows it). */
export const POSTGRES_DECIMALS: DecimalCapacity = { kind: 'numeric', maxScale: 16_383 };

/** SQLite `NUMERIC`: what a 64-bit float (or integer) holds. */
export const SQLITE_DECIMALS: DecimalCapacity = { kind: 'float64' };

/** MySQL and MariaDB `DECIMAL(65,30)`, the widest they have: 35 digits before the point, 30 after. */
export const MYSQL_DECIMALS: DecimalCapacity = { kind: 'fixed', precision: 65, scale: 30 };

/**
 * The sizes every warehouse loads, whatever it could hold: the range of a 64-bit float at full
 * precision, so a file is refused for a value's size by both dialects or by neither.
 */
const LARGEST = parseExactDecimal('1.7976931348623157e308')!;
const SMALLEST = parseExactDecimal('2.2250738585072014e-308')!;

/**
 * Why a column of `capacity` cannot keep a decimal text exactly, or undefined when it can. Refused
 * rather than stored as something else: SQLite would turn `1e-400` into 0, and `1e999` is no float;
 * Postgres NUMERIC has a limit on digits after the point.
 */
export function decimalMisfit(text: string, capacity: DecimalCapacity): string | undefined {
  // No exponent and fewer than 300 characters: between 1e-299 and 1e300 in size (or 0), with under
  // 300 digits after the point, which NUMERIC and a double keep. A fixed DECIMAL keeps any text no
  // longer than the digits it has on either side of the point. Most values end here.
  const plain = text.indexOf('e') < 0 && text.indexOf('E') < 0;
  const plainFits = capacity.kind === 'fixed' ? Math.min(capacity.precision - capacity.scale, capacity.scale) : 299;
  if (plain && text.length <= plainFits) return undefined;
  const shape = decimalShape(text);
  if (shape.significant.length > 0) {
    if (shape.magnitude > 308 || (shape.magnitude === 308 && compareExact(absExact(parseExactDecimal(text)!), LARGEST) > 0)) {
      return `${quote(text)} is too large: a decimal is loaded up to 1.7976931348623157e308 in size (a 64-bit float's range, in either warehouse)`;
    }
    if (shape.magnitude < -308 || (shape.magnitude === -308 && compareExact(absExact(parseExactDecimal(text)!), SMALLEST) < 0)) {
      return (
        `${quote(text)} is too small to keep exactly: a decimal other than 0 is loaded from 2.2250738585072014e-308 in size` +
        ` (a 64-bit float's range at full precision, in either warehouse; SQLite would store ${String(Number(text))})`
      );
    }
  }
  if (capacity.kind === 'fixed') return fixedMisfit(text, shape, capacity);
  if (capacity.kind === 'numeric') {
    return shape.scale <= capacity.maxScale
      ? undefined
      : `${quote(text)} has ${shape.scale} digits after the point; the column (Postgres NUMERIC) keeps at most ${capacity.maxScale}`;
  }
  // SQLite: a value of more significant digits than a double keeps (15 to 17) is stored as the
  // nearest one, as docs/warehouse.md's known limits say: the service writes decimals of 20 digits
  // (0.30000000000000004, 105.20697588613054211), and refusing every such file would leave SQLite
  // nothing to load. A value a double cannot hold at full precision at all is refused above.
  return undefined;
}

/** Why a `DECIMAL(precision, scale)` cannot keep the value exactly (trailing zeros after the point cost nothing). */
function fixedMisfit(text: string, shape: DecimalShape, capacity: { readonly precision: number; readonly scale: number }): string | undefined {
  if (shape.significant.length === 0) return undefined;
  const whole = capacity.precision - capacity.scale;
  if (shape.magnitude >= whole) {
    return `${quote(text)} has ${shape.magnitude + 1} digits before the point; the column (MySQL DECIMAL(${capacity.precision},${capacity.scale})) keeps at most ${whole}`;
  }
  const scale = shape.significant.length - 1 - shape.magnitude;
  if (scale > capacity.scale) {
    return `${quote(text)} has ${scale} digits after the point; the column (MySQL DECIMAL(${capacity.precision},${capacity.scale})) keeps at most ${capacity.scale}`;
  }
  return undefined;
}

interface DecimalShape {
  /** The digits from the first to the last that is not 0 (empty for zero). */
  readonly significant: string;
  /** The power of ten of the first significant digit (`1.5e-3`: -3). */
  readonly magnitude: number;
  /** Digits after the point as written, the exponent applied (`1.50`: 2; `1e-400`: 400; `1e3`: 0). */
  readonly scale: number;
}

/** The parts of a decimal's text (of `toDecimalText`'s form) that decide whether it fits. */
function decimalShape(text: string): DecimalShape {
  const e = text.search(/[eE]/);
  const mantissa = e < 0 ? text : text.slice(0, e);
  // An exponent of any length: beyond 2^53 it is far out of every range either way.
  const exponent = e < 0 ? 0 : Number(text.slice(e + 1));
  const unsigned = mantissa.charCodeAt(0) === 0x2d || mantissa.charCodeAt(0) === 0x2b ? mantissa.slice(1) : mantissa;
  const point = unsigned.indexOf('.');
  const whole = point < 0 ? unsigned : unsigned.slice(0, point);
  const fraction = point < 0 ? '' : unsigned.slice(point + 1);
  const digits = whole + fraction;
  let first = 0;
  while (first < digits.length && digits.charCodeAt(first) === 0x30) first += 1;
  let last = digits.length;
  while (last > first && digits.charCodeAt(last - 1) === 0x30) last -= 1;
  return {
    significant: digits.slice(first, last),
    magnitude: whole.length - 1 - first + exponent,
    scale: Math.max(0, fraction.length - exponent),
  };
}

function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}
