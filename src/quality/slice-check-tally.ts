import type { Settings } from '../config/settings-schema.js';
import { rowColumns, type RowValues } from '../extract/row-builder.js';
import type { ReportDefinition } from '../reports/report-definition.js';
import { printableText } from '../text/printable-text.js';
import type { Slice } from '../slice/slice.js';
import { businessDaysBetween } from './business-days-between.js';
import { absExact, compareExact, exactText, parseExactDecimal, subtractExact, timesWhole, toNumber, type ExactDecimal } from '../reports/exact-decimal.js';
import { ExactDecimalSum } from './exact-decimal-sum.js';
import type { SliceCheckName, SliceCheckResult } from './slice-check-result.js';

/** The `checks` settings: a severity per check and its limit. */
export type CheckSettings = Settings['checks'];

/** The slice's previous loaded date (of the same portfolio and report type) and its rows, for `rowCountDrop`. */
export interface PreviousLoad {
  readonly reportDate: string;
  readonly rowCount: number;
}

/** The rows of a file that repeat a value of the unique column, as the database counted them, and the first such value. */
export interface RepeatedValues {
  /** Rows beyond the first of each value. */
  readonly rows: number;
  readonly example?: { readonly value: string; readonly row: number };
}

/** What {@link SliceCheckTally.evaluate} is told from the warehouse, inside the slice's transaction. */
export interface CheckContext {
  /** The previous loaded date, when {@link SliceCheckTally.comparesRowCount} (undefined when there is none). */
  readonly previous?: PreviousLoad;
  /** The exact repeats, counted in the rows just written, when {@link SliceCheckTally.mayRepeat}. */
  readonly repeated?: RepeatedValues;
}

/**
 * What a tally saw of a file's rows: all {@link SliceCheckTally.evaluate} needs of them. Plain
 * data, so a tally on the thread that typed the rows can hand it to the slice's own tally (see
 * {@link SliceCheckTally.tallied} and {@link SliceCheckTally.adopt}).
 */
export interface SliceCheckTallied {
  readonly rows: number;
  /** The weights' exact sum, as plain decimal text. */
  readonly weightSum: string;
  readonly weightsGiven: number;
  readonly mayRepeat: boolean;
  readonly oldestDate: string | undefined;
  readonly newestDate: string | undefined;
  readonly notPositive: number;
  readonly firstNotPositive: { readonly column: string; readonly value: string; readonly line: number } | undefined;
}

/** A tally's hashes before its first unique value (never written to: it has no room). */
const NO_HASHES = new Float64Array(0);
/** Room for the first unique values' hashes; doubled when full. */
const FIRST_HASHES = 1024;

/**
 * A file's data-quality checks, tallied as its rows stream in ({@link SliceCheckTally.observe}, no
 * second pass) and judged after the last row, before the commit ({@link SliceCheckTally.evaluate}).
 * Columns come from the definition's `checks`; a check `off` or without a column is not recorded.
 */
export class SliceCheckTally {
  readonly #slice: Slice;
  readonly #settings: CheckSettings;
  readonly #definition: ReportDefinition;
  readonly #lineIndex: number;
  readonly #weightIndex: number;
  readonly #uniqueIndex: number;
  readonly #dateIndex: number;
  readonly #positiveIndexes: readonly number[];
  readonly #positiveNames: readonly string[];
  #rows = 0;
  #weightSum = new ExactDecimalSum();
  /** A sum handed over by {@link adopt}, which replaces {@link #weightSum}'s. */
  #adoptedWeightSum: ExactDecimal | undefined;
  #weightsGiven = 0;
  /**
   * A 53-bit hash of each row's unique value, not the values: a Set of a million ISINs cost more
   * than typing the rows and kept every string (and the CSV text it was cut from) alive. Sorted
   * once at the end; a repeated hash only makes the database count the real repeats.
   */
  #hashes = NO_HASHES;
  #hashed = 0;
  #mayRepeat: boolean | undefined;
  #oldestDate: string | undefined;
  #newestDate: string | undefined;
  #notPositive = 0;
  #firstNotPositive: { column: string; value: string; line: number } | undefined;

  constructor(definition: ReportDefinition, slice: Slice, settings: CheckSettings) {
    this.#slice = slice;
    this.#settings = settings;
    this.#definition = definition;
    const columns = rowColumns(definition);
    const indexOf = (name: string | undefined, on: boolean) => (name !== undefined && on ? columns.indexOf(name) : -1);
    const { checks } = definition;
    this.#lineIndex = columns.indexOf('line_number');
    this.#weightIndex = indexOf(checks.weightColumn, settings.weightsSum.severity !== 'off');
    this.#uniqueIndex = indexOf(checks.uniqueColumn, settings.duplicateIsin.severity !== 'off');
    this.#dateIndex = indexOf(checks.effectiveDateColumn, settings.effectiveDate.severity !== 'off');
    const positive = settings.positiveValues.severity === 'off' ? [] : checks.positiveColumns;
    this.#positiveNames = positive;
    this.#positiveIndexes = positive.map((name) => columns.indexOf(name));
  }

  /** The settings the tally was made with (a tally on another thread is made with the same). */
  get settings(): CheckSettings {
    return this.#settings;
  }

  /** Whether {@link evaluate} needs the previous loaded date's row count (a ledger read). */
  get comparesRowCount(): boolean {
    return this.#settings.rowCountDrop.severity !== 'off';
  }

  /** The unique column the database is to count repeats of (see {@link mayRepeat}), if the check is on. */
  get uniqueColumn(): string | undefined {
    return this.#uniqueIndex >= 0 ? this.#definition.checks.uniqueColumn : undefined;
  }

  /**
   * Whether two rows of the file share a hash of their unique value, once every row is tallied:
   * only then is {@link CheckContext.repeated} needed (a repeated hash may be a collision, which
   * the database's count tells apart).
   */
  get mayRepeat(): boolean {
    if (this.#mayRepeat === undefined) {
      const hashes = this.#hashes.subarray(0, this.#hashed).sort();
      this.#mayRepeat = false;
      for (let i = 1; i < hashes.length; i += 1) {
        if (hashes[i] === hashes[i - 1]) {
          this.#mayRepeat = true;
          break;
        }
      }
      this.#hashes = NO_HASHES;
    }
    return this.#mayRepeat;
  }

  /** What this tally saw, once every row is tallied (see {@link adopt}). */
  tallied(): SliceCheckTallied {
    return {
      rows: this.#rows,
      weightSum: exactText(this.#weightSumValue),
      weightsGiven: this.#weightsGiven,
      mayRepeat: this.mayRepeat,
      oldestDate: this.#oldestDate,
      newestDate: this.#newestDate,
      notPositive: this.#notPositive,
      firstNotPositive: this.#firstNotPositive,
    };
  }

  /**
   * Takes on what another tally of the same file, settings and definition saw (on the thread that
   * typed the rows), as if this one had observed the rows itself.
   */
  adopt(seen: SliceCheckTallied): void {
    if (this.#rows > 0) throw new Error('SliceCheckTally.adopt: this tally has already observed rows of its own');
    this.#rows = seen.rows;
    this.#adoptedWeightSum = parseExactDecimal(seen.weightSum);
    this.#weightsGiven = seen.weightsGiven;
    this.#mayRepeat = seen.mayRepeat;
    this.#hashes = NO_HASHES;
    this.#oldestDate = seen.oldestDate;
    this.#newestDate = seen.newestDate;
    this.#notPositive = seen.notPositive;
    this.#firstNotPositive = seen.firstNotPositive;
  }

  /** Tallies one row's values (in `rowColumns` order), before it is written. */
  observe(values: RowValues): void {
    this.#rows += 1;
    if (this.#weightIndex >= 0) {
      const weight = values[this.#weightIndex];
      if (weight !== null && weight !== undefined) {
        this.#weightSum.add(String(weight));
        this.#weightsGiven += 1;
      }
    }
    if (this.#uniqueIndex >= 0) {
      if (this.#hashed === this.#hashes.length) {
        // Made on the first row that has a unique value: a table without that check (or a slice
        // with no rows) makes none, and a typed array's store costs more than a small file's checks.
        const grown = new Float64Array(Math.max(FIRST_HASHES, this.#hashes.length * 2));
        grown.set(this.#hashes);
        this.#hashes = grown;
      }
      this.#hashes[this.#hashed++] = hash53(String(values[this.#uniqueIndex]));
    }
    if (this.#dateIndex >= 0) {
      const date = values[this.#dateIndex];
      if (typeof date === 'string') {
        if (this.#oldestDate === undefined || date < this.#oldestDate) this.#oldestDate = date;
        if (this.#newestDate === undefined || date > this.#newestDate) this.#newestDate = date;
      }
    }
    for (let i = 0; i < this.#positiveIndexes.length; i += 1) {
      const value = values[this.#positiveIndexes[i]!];
      if (typeof value !== 'string' || isAboveZero(value)) continue;
      this.#notPositive += 1;
      this.#firstNotPositive ??= { column: this.#positiveNames[i]!, value, line: this.#line(values) };
    }
  }

  /**
   * The results of every check that applies, once the last row is tallied, with what the
   * warehouse said inside the slice's transaction (see {@link CheckContext}).
   */
  evaluate(context: CheckContext = {}): SliceCheckResult[] {
    const { previous } = context;
    const results: SliceCheckResult[] = [];
    const { checks } = this.#definition;
    const s = this.#settings;
    if (this.#weightIndex >= 0) {
      const tolerance = s.weightsSum.tolerance;
      if (this.#weightsGiven === 0) {
        results.push(this.#result('weightsSum', { measured: 0, threshold: tolerance, finding: `no row gives a weight (${checks.weightColumn}): nothing to sum` }));
      } else {
        // Exact decimal arithmetic: in doubles 0.5 + 0.499 is 0.0010000000000000009 away from 1,
        // and a tolerance of 0.001 refused what the file states is exactly 0.001 away.
        const sum = this.#weightSumValue;
        // Weights are fractions or percentages: whichever total the sum is nearer to is the scale.
        const scale = compareExact(sum, HALFWAY) > 0 ? 100 : 1;
        const gap = absExact(subtractExact(sum, { units: BigInt(scale), scale: 0 }));
        // The tolerance as the setting was written (a double's shortest text: 0.001, not 0.00100000000000000002).
        const allowed = timesWhole(parseExactDecimal(String(tolerance))!, scale);
        const off = toNumber(gap) / scale;
        results.push(
          this.#result('weightsSum', {
            measured: off,
            threshold: tolerance,
            finding:
              `the weights (${checks.weightColumn}) of ${this.#weightsGiven} rows sum to ${shortText(sum)}, ${percent(off)} away from ${scale}` +
              ` (checks.weightsSum.tolerance allows ${percent(tolerance)})`,
            missed: compareExact(gap, allowed) > 0,
          }),
        );
      }
    }
    if (this.#uniqueIndex >= 0) {
      const repeats = this.mayRepeat ? (context.repeated?.rows ?? 0) : 0;
      const first = context.repeated?.example;
      results.push(
        this.#result('duplicateIsin', {
          measured: repeats,
          threshold: 0,
          finding:
            repeats > 0
              ? `${repeats} row${repeats === 1 ? ' repeats' : 's repeat'} the ${checks.uniqueColumn} of an earlier row` +
                `${first ? ` (first: ${JSON.stringify(printableText(first.value, 40))} on row ${first.row})` : ''}; none may`
              : `the ${this.#rows} rows have ${this.#rows} different ${checks.uniqueColumn} values`,
        }),
      );
    }
    if (this.comparesRowCount) {
      const max = s.rowCountDrop.maxDropShare;
      if (previous === undefined || previous.rowCount === 0) {
        results.push(
          this.#result('rowCountDrop', {
            measured: 0,
            threshold: max,
            finding: previous ? `${previous.reportDate} holds no rows to compare with` : 'no earlier loaded date to compare with',
          }),
        );
      } else {
        const drop = Math.max(0, 1 - this.#rows / previous.rowCount);
        results.push(
          this.#result('rowCountDrop', {
            measured: drop,
            threshold: max,
            finding:
              `${this.#rows} rows against ${previous.rowCount} on ${previous.reportDate}, the previous loaded date: ${percent(drop)} fewer` +
              ` (checks.rowCountDrop.maxDropShare allows ${percent(max)})`,
          }),
        );
      }
    }
    if (this.#dateIndex >= 0 && this.#oldestDate !== undefined && this.#newestDate !== undefined) {
      const max = s.effectiveDate.maxBusinessDaysBefore;
      const reportDate = this.#slice.reportDate;
      if (this.#newestDate > reportDate) {
        const after = Math.max(1, businessDaysBetween(reportDate, this.#newestDate));
        results.push(
          this.#result('effectiveDate', {
            measured: -after,
            threshold: max,
            finding: `a row's ${checks.effectiveDateColumn} is ${this.#newestDate}, after the report date ${reportDate}; none may be`,
            missed: true,
          }),
        );
      } else {
        const before = businessDaysBetween(this.#oldestDate, reportDate);
        results.push(
          this.#result('effectiveDate', {
            measured: before,
            threshold: max,
            finding:
              `the oldest ${checks.effectiveDateColumn} is ${this.#oldestDate}, ${before} business day${before === 1 ? '' : 's'} before the report date ${reportDate}` +
              ` (checks.effectiveDate.maxBusinessDaysBefore allows ${max})`,
          }),
        );
      }
    }
    if (this.#positiveIndexes.length > 0) {
      const first = this.#firstNotPositive;
      results.push(
        this.#result('positiveValues', {
          measured: this.#notPositive,
          threshold: 0,
          finding: first
            ? `${this.#notPositive} value${this.#notPositive === 1 ? ' is' : 's are'} not above zero (first: ${first.column} ${first.value} on row ${first.line}); ${this.#positiveNames.join(', ')} must be`
            : `every ${this.#positiveNames.join(', ')} given is above zero`,
        }),
      );
    }
    return results;
  }

  /** A result that misses when `measured` is above `threshold` (or when `missed` says so). */
  #result(check: SliceCheckName, { measured, threshold, finding, missed = measured > threshold }: CheckFinding): SliceCheckResult {
    const severity = this.#settings[check].severity === 'warn' ? 'warn' : 'fail';
    const outcome = missed ? severity : 'pass';
    const advice = !missed ? '' : severity === 'fail' ? ` (checks.${check}.severity 'warn' would load it with a warning)` : '';
    return { check, severity, outcome, measured, threshold, message: `${check}: ${finding}${advice}` };
  }

  get #weightSumValue(): ExactDecimal {
    return this.#adoptedWeightSum ?? this.#weightSum.value;
  }

  #line(values: RowValues): number {
    return this.#lineIndex >= 0 ? Number(values[this.#lineIndex]) : this.#rows;
  }
}

/** What one check measured, against what it allows, in words. */
interface CheckFinding {
  readonly measured: number;
  readonly threshold: number;
  readonly finding: string;
  /** @defaultValue `measured > threshold` */
  readonly missed?: boolean;
}

/**
 * Whether a decimal's text (as the row builder checked it) is above zero: most start with a
 * digit 1–9, which settles it without converting.
 */
function isAboveZero(text: string): boolean {
  const c = text.charCodeAt(0);
  if (c >= 0x31 && c <= 0x39) return true;
  if (c === 0x2d /* - */) return false;
  return Number(text) > 0;
}

/** Halfway between 1 and 100: a sum above it is nearer 100. */
const HALFWAY: ExactDecimal = { units: 505n, scale: 1 };

/** A sum as written exactly when short, else to 12 significant digits. */
function shortText(value: ExactDecimal): string {
  const text = exactText(value);
  return text.length <= 16 ? text : String(Number(toNumber(value).toPrecision(12)));
}

function percent(share: number): string {
  return `${Number((share * 100).toPrecision(4))} %`;
}

/**
 * Two 32-bit string hashes (FNV-1a, and a multiply-rotate one) folded into 53 bits, exact as a
 * double: false repeats are rare, and one only costs the database's count.
 */
function hash53(text: string): number {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return (a >>> 0) * 2_097_152 + ((b >>> 0) >>> 11);
}
