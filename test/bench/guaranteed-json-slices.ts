import { createHash, randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { isLosslessNumber } from 'lossless-json';
import { parseJsonRecord } from '../../src/extract/parse-json-record.js';
import { isIsoDate } from '../../src/dates/is-iso-date.js';
import type { Slice } from '../../src/slice/slice.js';
import { migrateWarehouse } from '../../src/warehouse/schema/migrate-warehouse.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import { downloadJsonSlices, type RawJsonSlicesOptions, type RawJsonSlicesResult } from './raw-json-slices.js';

/** The decimal columns of an index record, by JSON key: the ones the `positiveValues` check reads. */
const DECIMAL_KEYS = ['indexValue', 'closeMarketValue', 'openMarketValue', 'closeDivisor', 'openDivisor'] as const;
/** The index record's fields that have no column: they go to `extra`. */
const EXTRA_KEYS = ['indexType', 'calculationCurrency', 'numberOfConstituents'] as const;

/**
 * A second baseline for JSON slices: the raw script plus what the issue says the product may not
 * drop, and nothing else. Per slice, on the raw script's HTTP lanes: the SHA-256 of the body, an
 * exact-decimal parse (the product's own `parseJsonRecord`, the fastest one measured), dates
 * checked, line numbers and the load's id on every row, and in one transaction the ledger read,
 * the rows replaced, the ledger row upserted and the three check rows of an index slice written,
 * into a warehouse made by the product's own migrations (its tables and indexes). No logging,
 * retries, timeouts, metrics, shutdown handling or group commit; values are typed for the index
 * report only, with no error messages to build.
 *
 * It measures how close to raw any loader keeping those guarantees can get on this machine: the
 * floor under the product's small-slice ratios.
 */
export async function runGuaranteedJsonSlices(options: RawJsonSlicesOptions): Promise<RawJsonSlicesResult> {
  const warehouse = await openWarehouse(`sqlite:${options.sqliteFile}`);
  try {
    await migrateWarehouse(warehouse);
  } finally {
    await warehouse.close();
  }
  const db = new Database(options.sqliteFile);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const readLedger = db.prepare(
    `select * from report_loads where portfolio_id = ? and report_type = 'index' and report_date <= ?
      and (report_date = ? or status = 'loaded') order by report_date desc limit 2`,
  );
  const remove = db.prepare('delete from index_report where portfolio_id = ? and report_date = ?');
  const insert = db.prepare(
    `insert into index_report (portfolio_id, report_date, line_number, effective_date, index_id, index_name, index_value,
      currency, close_market_value, open_market_value, close_divisor, open_divisor, extra, load_id)
      values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const upsertLedger = db.prepare(
    `insert into report_loads (portfolio_id, report_type, report_date, status, row_count, format, file_name, bytes,
      content_sha256, attempts, error, error_code, first_loaded_at, updated_at, checked_at, duration_ms, load_id, loaded_at)
      values (?, 'index', ?, 'loaded', ?, 'json', ?, ?, ?, 1, null, null, ?, ?, ?, ?, ?, ?)
      on conflict (portfolio_id, report_type, report_date) do update set status = excluded.status,
      row_count = excluded.row_count, format = excluded.format, file_name = excluded.file_name, bytes = excluded.bytes,
      content_sha256 = excluded.content_sha256, attempts = excluded.attempts, error = excluded.error,
      error_code = excluded.error_code, first_loaded_at = coalesce(report_loads.first_loaded_at, excluded.first_loaded_at),
      updated_at = excluded.updated_at, checked_at = excluded.checked_at, duration_ms = excluded.duration_ms,
      load_id = excluded.load_id, loaded_at = excluded.loaded_at`,
  );
  const insertChecks = db.prepare(
    `insert into slice_checks (portfolio_id, report_type, report_date, check_name, severity, outcome, measured, threshold, message, checked_at)
      values (?, 'index', ?, 'rowCountDrop', 'warn', ?, ?, 0.25, ?, ?), (?, 'index', ?, 'effectiveDate', 'fail', ?, 0, 5, ?, ?),
      (?, 'index', ?, 'positiveValues', 'fail', ?, 0, 0, ?, ?)
      on conflict (portfolio_id, report_type, report_date, check_name) do update set severity = excluded.severity,
      outcome = excluded.outcome, measured = excluded.measured, threshold = excluded.threshold, message = excluded.message,
      checked_at = excluded.checked_at`,
  );
  type JsonRecord = Record<string, unknown>;
  interface Answer {
    readonly records: JsonRecord[];
    readonly bytes: number;
    readonly sha256: string;
    readonly startedAt: number;
  }
  const text = (value: unknown): string | null => (value === null || value === undefined ? null : isLosslessNumber(value) ? value.toString() : String(value));
  const load = db.transaction((slice: Slice, answer: Answer) => {
    const now = new Date().toISOString();
    const ledger = readLedger.all(slice.portfolioId, slice.reportDate, slice.reportDate) as { report_date: string; row_count: number }[];
    const previous = ledger.find((row) => row.report_date < slice.reportDate);
    remove.run(slice.portfolioId, slice.reportDate);
    const loadId = randomUUID();
    let positive = true;
    let datesInRange = true;
    let line = 0;
    for (const record of answer.records) {
      line += 1;
      const effectiveDate = text(record.effectiveDate);
      if (effectiveDate === null || !isIsoDate(effectiveDate)) throw new Error(`record ${line}: effectiveDate is not a date`);
      if (effectiveDate > slice.reportDate) datesInRange = false;
      const decimals = DECIMAL_KEYS.map((key) => text(record[key]));
      for (const value of decimals) if (value !== null && (value.startsWith('-') || Number(value) === 0)) positive = false;
      const extra = `{${EXTRA_KEYS.map((key) => `${JSON.stringify(key)}:${isLosslessNumber(record[key]) ? text(record[key]) : JSON.stringify(record[key] ?? null)}`).join(',')}}`;
      insert.run(
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
      );
    }
    const drop = previous === undefined || previous.row_count === 0 ? 0 : Math.max(0, 1 - line / previous.row_count);
    const fileName = `${slice.reportDate}_index_${slice.portfolioId}.json`;
    upsertLedger.run(
      slice.portfolioId,
      slice.reportDate,
      line,
      fileName,
      answer.bytes,
      answer.sha256,
      now,
      now,
      now,
      Math.round(performance.now() - answer.startedAt),
      loadId,
      now,
    );
    insertChecks.run(
      slice.portfolioId,
      slice.reportDate,
      drop > 0.25 ? 'warn' : 'pass',
      drop,
      `rowCountDrop: ${Math.round(drop * 100)}%`,
      now,
      slice.portfolioId,
      slice.reportDate,
      datesInRange ? 'pass' : 'fail',
      `effectiveDate: ${datesInRange ? 'none' : 'some'} after the report date`,
      now,
      slice.portfolioId,
      slice.reportDate,
      positive ? 'pass' : 'fail',
      `positiveValues: ${positive ? 'all' : 'not all'} positive`,
      now,
    );
  });

  try {
    const result = await downloadJsonSlices(options, async (slice, body, startedAt) => {
      const bytes = Buffer.from(await body.arrayBuffer());
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const json = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      const records = json === '' ? [] : (parseJsonRecord(json, 66) as JsonRecord[]);
      load(slice, { records, bytes: bytes.length, sha256, startedAt });
      return records.length;
    });
    // What it claims to keep, kept: a ledger row and three check rows per slice, every row traced to its load.
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    const ledgerRows = count(`select count(*) as n from report_loads where status = 'loaded'`);
    const checkRows = count('select count(*) as n from slice_checks');
    const untraced = count('select count(*) as n from index_report left join report_loads using (load_id) where report_loads.load_id is null');
    if (ledgerRows !== options.slices.length || checkRows !== 3 * options.slices.length || untraced !== 0) {
      throw new Error(`the guaranteed baseline left ${ledgerRows} ledger rows, ${checkRows} check rows and ${untraced} untraced rows for ${options.slices.length} slices`);
    }
    return result;
  } finally {
    db.close();
  }
}
