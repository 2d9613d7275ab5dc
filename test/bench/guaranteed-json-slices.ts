import { createHash, randomUUID } from 'node:crypto';
import { Database } from '../../src/warehouse/sqlite/sqlite-driver.js';
import { isLosslessNumber } from 'lossless-json';
import { parseJsonRecord } from '../../src/extract/parse-json-record.js';
import { isIsoDate } from '../../src/dates/is-iso-date.js';
import type { Slice } from '../../src/slice/slice.js';
import { migrateWarehouse } from '../../src/warehouse/schema/migrate-warehouse.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import { inMysqlTransaction, insertMysqlRows, openMysqlBaselinePool, type MysqlValue } from './mysql-baseline.js';
import { downloadJsonSlices, jsonBaselineTarget, type RawJsonSlicesOptions, type RawJsonSlicesResult } from './raw-json-slices.js';

/** The decimal columns of an index record, by JSON key: the ones the `positiveValues` check reads. */
const DECIMAL_KEYS = ['indexValue', 'closeMarketValue', 'openMarketValue', 'closeDivisor', 'openDivisor'] as const;
/** An index record's decimals as their exact text, in {@link DECIMAL_KEYS} order. */
type Decimals = [string | null, string | null, string | null, string | null, string | null];
/** The index record's fields that have no column: they go to `extra`. */
const EXTRA_KEYS = ['indexType', 'calculationCurrency', 'numberOfConstituents'] as const;

/** The columns of `index_report` the script writes, in the order its rows' values come. */
const ROW_COLUMNS = [
  'portfolio_id',
  'report_date',
  'line_number',
  'effective_date',
  'index_id',
  'index_name',
  'index_value',
  'currency',
  'close_market_value',
  'open_market_value',
  'close_divisor',
  'open_divisor',
  'extra',
  'load_id',
] as const;

/** The ledger columns a load rewrites, in the order of {@link ledgerValues} after the slice's key (`first_loaded_at` kept if set). */
const LEDGER_UPDATES = [
  'status',
  'row_count',
  'format',
  'file_name',
  'bytes',
  'content_sha256',
  'attempts',
  'error',
  'error_code',
  'updated_at',
  'checked_at',
  'duration_ms',
  'load_id',
  'loaded_at',
] as const;

/** The columns a check row rewrites. */
const CHECK_UPDATES = ['severity', 'outcome', 'measured', 'threshold', 'message', 'checked_at'] as const;

/** How a dialect says "else update these columns to the proposed row's": SQLite's `on conflict`, MySQL's `on duplicate key`. */
interface UpsertSyntax {
  readonly onConflict: (key: string) => string;
  /** The proposed row's `column`. */
  readonly proposed: (column: string) => string;
  /** The row already there's `column`, inside the update. */
  readonly existing: (table: string, column: string) => string;
}

const SQLITE_UPSERT: UpsertSyntax = {
  onConflict: (key) => `on conflict (${key}) do update set`,
  proposed: (column) => `excluded.${column}`,
  existing: (table, column) => `${table}.${column}`,
};

const MYSQL_UPSERT: UpsertSyntax = {
  onConflict: () => 'on duplicate key update',
  proposed: (column) => `values(${column})`,
  existing: (_table, column) => column,
};

/** The script's statements, the same in both dialects but for the upserts. */
function statements(upsert: UpsertSyntax) {
  const set = (columns: readonly string[]) => columns.map((column) => `${column} = ${upsert.proposed(column)}`).join(', ');
  return {
    readLedger: `select report_date, row_count from report_loads where portfolio_id = ? and report_type = 'index' and report_date <= ?
      and (report_date = ? or status = 'loaded') order by report_date desc limit 2`,
    remove: 'delete from index_report where portfolio_id = ? and report_date = ?',
    upsertLedger: `insert into report_loads (portfolio_id, report_type, report_date, status, row_count, format, file_name, bytes,
      content_sha256, attempts, error, error_code, first_loaded_at, updated_at, checked_at, duration_ms, load_id, loaded_at)
      values (?, 'index', ?, 'loaded', ?, 'json', ?, ?, ?, 1, null, null, ?, ?, ?, ?, ?, ?)
      ${upsert.onConflict('portfolio_id, report_type, report_date')} ${set(LEDGER_UPDATES)},
      first_loaded_at = coalesce(${upsert.existing('report_loads', 'first_loaded_at')}, ${upsert.proposed('first_loaded_at')})`,
    insertChecks: `insert into slice_checks (portfolio_id, report_type, report_date, check_name, severity, outcome, measured, threshold, message, checked_at)
      values (?, 'index', ?, 'rowCountDrop', 'warn', ?, ?, 0.25, ?, ?), (?, 'index', ?, 'effectiveDate', 'fail', ?, 0, 5, ?, ?),
      (?, 'index', ?, 'positiveValues', 'fail', ?, 0, 0, ?, ?)
      ${upsert.onConflict('portfolio_id, report_type, report_date, check_name')} ${set(CHECK_UPDATES)}`,
  };
}

type JsonRecord = Record<string, unknown>;

/** One slice's answer, hashed and parsed. */
interface Answer {
  readonly records: JsonRecord[];
  readonly bytes: number;
  readonly sha256: string;
  readonly startedAt: number;
}

/** The ledger's rows of a slice and its latest loaded day before it, as `readLedger` reads them. */
type LedgerRows = readonly { readonly report_date: string; readonly row_count: number }[];

/** What a slice's rows said about its checks, once written. */
interface Written {
  readonly rows: number;
  readonly positive: boolean;
  readonly datesInRange: boolean;
}

const text = (value: unknown): string | null => (value === null || value === undefined ? null : isLosslessNumber(value) ? value.toString() : String(value));

/** Types the slice's records into `index_report` rows (values in {@link ROW_COLUMNS} order), handing each to `write`. */
function typeRows(slice: Slice, records: readonly JsonRecord[], loadId: string, write: (row: MysqlValue[]) => void): Written {
  let positive = true;
  let datesInRange = true;
  let line = 0;
  for (const record of records) {
    line += 1;
    const effectiveDate = text(record.effectiveDate);
    if (effectiveDate === null || !isIsoDate(effectiveDate)) throw new Error(`record ${line}: effectiveDate is not a date`);
    if (effectiveDate > slice.reportDate) datesInRange = false;
    const decimals = DECIMAL_KEYS.map((key) => text(record[key])) as Decimals;
    for (const value of decimals) if (value !== null && (value.startsWith('-') || Number(value) === 0)) positive = false;
    const extra = `{${EXTRA_KEYS.map((key) => `${JSON.stringify(key)}:${isLosslessNumber(record[key]) ? text(record[key]) : JSON.stringify(record[key] ?? null)}`).join(',')}}`;
    write([
      slice.portfolioId,
      slice.reportDate,
      line,
      effectiveDate,
      text(record.indexId),
      text(record.indexName),
      decimals[0],
      text(record.currency),
      decimals[1],
      decimals[2],
      decimals[3],
      decimals[4],
      extra,
      loadId,
    ]);
  }
  return { rows: line, positive, datesInRange };
}

/** The ledger upsert's values: the slice loaded, its file, hash and load. */
function ledgerValues(slice: Slice, answer: Answer, written: Written, loadId: string, now: string): MysqlValue[] {
  const fileName = `${slice.reportDate}_index_${slice.portfolioId}.json`;
  const durationMs = Math.round(performance.now() - answer.startedAt);
  return [slice.portfolioId, slice.reportDate, written.rows, fileName, answer.bytes, answer.sha256, now, now, now, durationMs, loadId, now];
}

/** The three check rows' values of an index slice: the row count's drop from the latest loaded day before it, dates, positive values. */
function checkValues(slice: Slice, ledger: LedgerRows, written: Written, now: string): MysqlValue[] {
  const previous = ledger.find((row) => row.report_date < slice.reportDate);
  const drop = previous === undefined || previous.row_count === 0 ? 0 : Math.max(0, 1 - written.rows / previous.row_count);
  const { portfolioId, reportDate } = slice;
  return [
    portfolioId,
    reportDate,
    drop > 0.25 ? 'warn' : 'pass',
    drop,
    `rowCountDrop: ${Math.round(drop * 100)}%`,
    now,
    portfolioId,
    reportDate,
    written.datesInRange ? 'pass' : 'fail',
    `effectiveDate: ${written.datesInRange ? 'none' : 'some'} after the report date`,
    now,
    portfolioId,
    reportDate,
    written.positive ? 'pass' : 'fail',
    `positiveValues: ${written.positive ? 'all' : 'not all'} positive`,
    now,
  ];
}

/** A dialect's writing of one slice (its transaction) and its counting afterwards. */
interface GuaranteedWriter {
  load(slice: Slice, answer: Answer): void | Promise<void>;
  count(sql: string): Promise<number>;
  close(): void | Promise<void>;
}

/**
 * A second baseline for JSON slices: the raw script plus what the issue says the product may not
 * drop, and nothing else. Per slice, on the raw script's HTTP lanes: the SHA-256 of the body, an
 * exact-decimal parse (the product's own `parseJsonRecord`, the fastest one measured), dates
 * checked, line numbers and the load's id on every row, and in one transaction the ledger read,
 * the rows replaced, the ledger row upserted and the three check rows of an index slice written,
 * into a warehouse made by the product's own migrations (its tables and indexes): SQLite through
 * better-sqlite3 (one INSERT per row), or MySQL through mysql2 on a pool of `concurrency`
 * connections (one multi-row INSERT). No logging, retries, timeouts, metrics, shutdown handling,
 * slice locks or group commit; values are typed for the index report only, with no error messages
 * to build.
 *
 * It measures how close to raw any loader keeping those guarantees can get on this machine: the
 * floor under the product's small-slice ratios.
 */
export async function runGuaranteedJsonSlices(options: RawJsonSlicesOptions): Promise<RawJsonSlicesResult> {
  const target = jsonBaselineTarget(options.databaseUrl);
  const warehouse = await openWarehouse(options.databaseUrl);
  try {
    await migrateWarehouse(warehouse);
  } finally {
    await warehouse.close();
  }
  const writer = target.dialect === 'sqlite' ? guaranteedSqliteWriter(target.file) : guaranteedMysqlWriter(target.databaseUrl, options.concurrency);
  try {
    const result = await downloadJsonSlices(options, async (slice, body, startedAt) => {
      const bytes = Buffer.from(await body.arrayBuffer());
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const json = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      const records = json === '' ? [] : (parseJsonRecord(json, 66) as JsonRecord[]);
      await writer.load(slice, { records, bytes: bytes.length, sha256, startedAt });
      return records.length;
    });
    // What it claims to keep, kept: a ledger row and three check rows per slice, every row traced to its load.
    const ledgerRows = await writer.count(`select count(*) as n from report_loads where status = 'loaded'`);
    const checkRows = await writer.count('select count(*) as n from slice_checks');
    const untraced = await writer.count('select count(*) as n from index_report left join report_loads using (load_id) where report_loads.load_id is null');
    if (ledgerRows !== options.slices.length || checkRows !== 3 * options.slices.length || untraced !== 0) {
      throw new Error(`the guaranteed baseline left ${ledgerRows} ledger rows, ${checkRows} check rows and ${untraced} untraced rows for ${options.slices.length} slices`);
    }
    return result;
  } finally {
    await writer.close();
  }
}

function guaranteedSqliteWriter(file: string): GuaranteedWriter {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const sql = statements(SQLITE_UPSERT);
  const readLedger = db.prepare(sql.readLedger);
  const remove = db.prepare(sql.remove);
  const insert = db.prepare(`insert into index_report (${ROW_COLUMNS.join(', ')}) values (${ROW_COLUMNS.map(() => '?').join(', ')})`);
  const upsertLedger = db.prepare(sql.upsertLedger);
  const insertChecks = db.prepare(sql.insertChecks);
  const load = db.transaction((slice: Slice, answer: Answer) => {
    const now = new Date().toISOString();
    const ledger = readLedger.all(slice.portfolioId, slice.reportDate, slice.reportDate) as LedgerRows;
    remove.run(slice.portfolioId, slice.reportDate);
    const loadId = randomUUID();
    const written = typeRows(slice, answer.records, loadId, (row) => insert.run(row));
    upsertLedger.run(ledgerValues(slice, answer, written, loadId, now));
    insertChecks.run(checkValues(slice, ledger, written, now));
  });
  return {
    load,
    count: async (statement) => (db.prepare(statement).get() as { n: number }).n,
    close: () => {
      db.close();
    },
  };
}

function guaranteedMysqlWriter(databaseUrl: string, connections: number): GuaranteedWriter {
  const pool = openMysqlBaselinePool(databaseUrl, connections);
  const sql = statements(MYSQL_UPSERT);
  return {
    load: (slice, answer) =>
      inMysqlTransaction(pool, async (connection) => {
        const now = new Date().toISOString();
        const [ledger] = await connection.execute(sql.readLedger, [slice.portfolioId, slice.reportDate, slice.reportDate]);
        await connection.execute(sql.remove, [slice.portfolioId, slice.reportDate]);
        const loadId = randomUUID();
        const values: MysqlValue[] = [];
        const written = typeRows(slice, answer.records, loadId, (row) => values.push(...row));
        if (values.length > 0) await insertMysqlRows(connection, 'index_report', ROW_COLUMNS, values);
        await connection.execute(sql.upsertLedger, ledgerValues(slice, answer, written, loadId, now));
        await connection.execute(sql.insertChecks, checkValues(slice, ledger as unknown as LedgerRows, written, now));
      }),
    count: async (statement) => {
      const [rows] = await pool.query(statement);
      return Number((rows as { n: number | string }[])[0]!.n);
    },
    close: () => pool.end(),
  };
}
