import { createHash } from 'node:crypto';
import { REPORT_REGISTRY, type ReportTableName } from '../reports/report-registry.js';
import type { ReportType } from '../reports/report-types.js';
import type { Slice } from '../slice/slice.js';

/** A column of a simulated report, under both of its names. */
export interface SyntheticColumn {
  /** The CSV header. */
  readonly csv: string;
  /** The JSON key. */
  readonly json: string;
  /** Written as a raw number literal in JSON. */
  readonly decimal: boolean;
}

/** The rows a simulated export holds, before rendering to JSON or CSV. */
export interface SyntheticReport {
  /** `<date>_<index_name_with_underscores>_index`, as the spec's example file names. */
  readonly fileBaseName: string;
  readonly columns: readonly SyntheticColumn[];
  /**
   * Values as served (decimals as their exact text; `''` is an empty cell), keyed by the
   * report's native name: JSON keys for `index`, CSV headers for the constituent reports.
   */
  readonly rows: readonly Record<string, string>[];
  /** Which name `rows` are keyed by. */
  readonly nativeName: 'json' | 'csv';
}

export interface SyntheticSizes {
  /** Records per index file. @defaultValue 3 */
  readonly indexRecords?: number;
  /** Rows per constituent file. @defaultValue 25 */
  readonly constituentRows?: number;
}

const INDEX_COLUMNS: readonly SyntheticColumn[] = [
  { csv: 'Effective Date', json: 'effectiveDate', decimal: false },
  { csv: 'Index Id', json: 'indexId', decimal: false },
  { csv: 'Index Name', json: 'indexName', decimal: false },
  { csv: 'Index Value', json: 'indexValue', decimal: true },
  { csv: 'Currency', json: 'currency', decimal: false },
  { csv: 'Close Market Value', json: 'closeMarketValue', decimal: true },
  { csv: 'Open Market Value', json: 'openMarketValue', decimal: true },
  { csv: 'Close Divisor', json: 'closeDivisor', decimal: true },
  { csv: 'Open Divisor', json: 'openDivisor', decimal: true },
  // The spec's sample is cut after openDivisor and says more fields exist: these stand for them.
  { csv: 'Index Type', json: 'indexType', decimal: false },
  { csv: 'Calculation Currency', json: 'calculationCurrency', decimal: false },
  { csv: 'Number Of Constituents', json: 'numberOfConstituents', decimal: true },
];

const CONSTITUENT_COLUMNS: readonly SyntheticColumn[] = [
  { csv: 'Effective Date', json: 'effectiveDate', decimal: false },
  { csv: 'ISIN', json: 'isin', decimal: false },
  { csv: 'Security Name', json: 'securityName', decimal: false },
  { csv: 'Security Ticker', json: 'securityTicker', decimal: false },
  { csv: 'Exchange Code', json: 'exchangeCode', decimal: false },
  { csv: 'Closing Price', json: 'closingPrice', decimal: true },
  { csv: 'Currency', json: 'currency', decimal: false },
  { csv: 'Closing Fx', json: 'closingFx', decimal: true },
  { csv: 'Index Shares', json: 'indexShares', decimal: true },
  { csv: 'Index Weighting', json: 'indexWeighting', decimal: true },
];

const EXTRA_COLUMN: Partial<Record<ReportType, SyntheticColumn>> = {
  'constituent.open': { csv: 'Price Source', json: 'priceSource', decimal: false },
  'constituent.proforma': { csv: 'Price Source', json: 'priceSource', decimal: false },
  'constituent.corporateactions': { csv: 'Corporate Action', json: 'corporateAction', decimal: false },
  'constituent.proformacorporateactions': { csv: 'Corporate Action', json: 'corporateAction', decimal: false },
};

const NAMES = [
  'Acme Industries',
  'Globex, Inc.',
  'Initech "Classic" Shares',
  'Umbrella Holdings\nClass B',
  'Stark Industries',
  'Wayne Enterprises',
  'Société Générale',
  'Tyrell Corp',
  'Cyberdyne Systems',
  'Soylent, "Green" & Co',
];
const CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF', 'JPY'];
const EXCHANGES = ['XNYS', 'XLON', 'XPAR', 'XETR', 'XSWX'];

/** The index name of a portfolio, which the file names carry. */
export function indexNameOf(portfolioId: number): string {
  return `Global Equity ${portfolioId} Index`;
}

/** A report whose rows are made on demand, so a million-row file never sits in memory. */
export interface LazySyntheticReport extends Omit<SyntheticReport, 'rows'> {
  readonly rowCount: number;
  rows(): Generator<Record<string, string>>;
}

/** What makes a synthetic report, beyond its slice. */
export interface SyntheticReportOptions {
  /** Another revision of the same slice is a restatement: other values. @defaultValue 0 */
  readonly revision?: number;
  /** @defaultValue the simulator's usual row counts */
  readonly sizes?: SyntheticSizes;
}

/**
 * The deterministic content of one export: the same (portfolio, report type, date, revision)
 * always gives the same rows. Values are awkward on purpose: decimals with up to 20 significant
 * digits, negative numbers, names with commas, quotes and line breaks, empty exchange codes.
 */
export function syntheticReport(slice: Slice, options: SyntheticReportOptions = {}): SyntheticReport {
  const lazy = lazySyntheticReport(slice, options);
  return { fileBaseName: lazy.fileBaseName, columns: lazy.columns, nativeName: lazy.nativeName, rows: [...lazy.rows()] };
}

/** {@link syntheticReport}, with rows generated as they are read. */
export function lazySyntheticReport(slice: Slice, { revision = 0, sizes = {} }: SyntheticReportOptions = {}): LazySyntheticReport {
  const { portfolioId, reportType, reportDate: date } = slice;
  const seed = `${portfolioId}|${reportType}|${date}|${revision}`;
  const fileBaseName = `${date}_${indexNameOf(portfolioId).replace(/\s+/g, '_')}_index`;
  return SAMPLES[REPORT_REGISTRY[reportType].table]({ portfolioId, reportType, date, revision, sizes, seed, fileBaseName });
}

/** What a table's sample is made from: the slice, its revision, the sizes asked for. */
interface SampleRequest {
  readonly portfolioId: number;
  readonly reportType: ReportType;
  readonly date: string;
  readonly revision: number;
  readonly sizes: SyntheticSizes;
  /** Seeds the sample's random values: the same request always gives the same rows. */
  readonly seed: string;
  readonly fileBaseName: string;
}

/**
 * The sample export of each report table, chosen through the registry: a report table added
 * there does not compile until the simulator can serve it.
 */
const SAMPLES: Record<ReportTableName, (request: SampleRequest) => LazySyntheticReport> = {
  index_report: indexSample,
  constituent_report: constituentSample,
};

/** An `index` export: a few records (JSON), with fields the spec's sample cuts off kept as extras. */
function indexSample({ portfolioId, date, revision, sizes, seed, fileBaseName }: SampleRequest): LazySyntheticReport {
  const rowCount = Math.max(1, (sizes.indexRecords ?? 3) - revision);
  return {
    fileBaseName,
    columns: INDEX_COLUMNS,
    nativeName: 'json',
    rowCount,
    *rows() {
      const random = seededRandom(seed);
      for (let i = 0; i < rowCount; i += 1) {
        yield {
          effectiveDate: date,
          indexId: uuidFrom(`${portfolioId}|index|${i}`),
          indexName: i === 0 ? indexNameOf(portfolioId) : `${indexNameOf(portfolioId)} ${String.fromCharCode(65 + (i % 26))}`,
          indexValue: i === 0 ? `${1000 + (portfolioId % 1000)}.${digits(random, 17)}` : decimal(random, 5, 8),
          currency: CURRENCIES[i % CURRENCIES.length]!,
          closeMarketValue: decimal(random, 9, 2),
          // Above zero, as an index's values are (the data-quality checks refuse others).
          openMarketValue: i === 1 ? `0.${digits(random, 4)}` : decimal(random, 9, 2),
          closeDivisor: decimal(random, 4, 12),
          openDivisor: decimal(random, 4, 12),
          indexType: i % 2 === 0 ? 'PRICE' : 'TOTAL_RETURN',
          calculationCurrency: 'EUR',
          numberOfConstituents: String(sizes.constituentRows ?? 25),
        };
      }
    },
  };
}

/** A `constituent.*` export: one row per security (CSV), some types with a column the spec does not list. */
function constituentSample({ portfolioId, reportType, date, revision, sizes, seed, fileBaseName }: SampleRequest): LazySyntheticReport {
  const extra = EXTRA_COLUMN[reportType];
  const rowCount = Math.max(1, (sizes.constituentRows ?? 25) - revision);
  return {
    fileBaseName,
    columns: extra ? [...CONSTITUENT_COLUMNS, extra] : CONSTITUENT_COLUMNS,
    nativeName: 'csv',
    rowCount,
    *rows() {
      const random = seededRandom(seed);
      // The weights of a file sum to exactly 1, as a real index's do, yet each differs: rows pair
      // up, the second of a pair giving back what the first got over the even share (up to half of
      // it), and the first row takes the units the even share leaves over. Nothing needs a look
      // at the other rows, so a million-row file still streams.
      const share = Math.floor(WEIGHT_UNITS / rowCount);
      let pairJitter = 0;
      const weightUnits = (i: number): number => {
        if (i % 2 === 1) return share - pairJitter;
        pairJitter = i + 1 < rowCount ? Math.floor(random() * (share / 2)) : 0;
        return share + pairJitter + (i === 0 ? WEIGHT_UNITS - share * rowCount : 0);
      };
      for (let i = 0; i < rowCount; i += 1) {
        const row: Record<string, string> = {
          'Effective Date': date,
          ISIN: `XS${String(portfolioId).padStart(4, '0')}${String(i).padStart(6, '0')}`,
          'Security Name': NAMES[i % NAMES.length]!,
          'Security Ticker': `T${portfolioId % 100}${i}`,
          'Exchange Code': i % 5 === 4 ? '' : EXCHANGES[i % EXCHANGES.length]!,
          'Closing Price': i === 0 ? `${100 + (portfolioId % 7)}.${digits(random, 17)}` : decimal(random, 3, 6),
          Currency: CURRENCIES[i % CURRENCIES.length]!,
          'Closing Fx': i % 3 === 0 ? '1' : `1.${digits(random, 10)}`,
          'Index Shares': i % 11 === 10 ? `0.${digits(random, 6)}` : `${1 + Math.floor(random() * 9)}${decimal(random, 5, 3)}`,
          'Index Weighting': weightText(weightUnits(i)),
        };
        if (extra) row[extra.csv] = i % 4 === 0 ? 'split 2:1, effective' : '';
        yield row;
      }
    },
  };
}

/** The value of `column` in `row`, whichever name the rows are keyed by. */
export function columnValue(report: Pick<SyntheticReport, 'nativeName'>, row: Record<string, string>, column: SyntheticColumn): string {
  return row[column[report.nativeName]] ?? '';
}

function seededRandom(seed: string): () => number {
  // mulberry32, seeded from a hash of the slice: deterministic and fast.
  let state = createHash('sha256').update(seed).digest().readUInt32LE(0);
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function digits(random: () => number, count: number): string {
  let text = '';
  for (let i = 0; i < count; i += 1) text += Math.floor(random() * 10);
  // A trailing digit of 0 would read as fewer significant digits; keep the last one non-zero.
  return text.slice(0, -1) + String(1 + Math.floor(random() * 9));
}

/** Weights are written in units of 10^-12: the largest total, 10^12, is exact as a double. */
const WEIGHT_UNITS = 1e12;

function weightText(units: number): string {
  return `${Math.floor(units / WEIGHT_UNITS)}.${String(units % WEIGHT_UNITS).padStart(12, '0')}`;
}

function decimal(random: () => number, integerDigits: number, fractionDigits: number): string {
  const whole = String(Math.floor(random() * 10 ** integerDigits));
  return `${whole}.${digits(random, fractionDigits)}`;
}

function uuidFrom(seed: string): string {
  const hex = createHash('sha1').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
