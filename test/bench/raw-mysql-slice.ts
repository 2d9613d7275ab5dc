import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse';
import mysql from 'mysql2/promise';
import { sideResult, type BigSliceSideResult } from './big-slice-side.js';
import { downloadExportCsv } from './download-export-csv.js';
import { insertMysqlRows, MYSQL_ROWS_PER_INSERT, mysqlBaselineConnection } from './mysql-baseline.js';

/** What the raw MySQL side is given by the benchmark. */
export interface RawMysqlSliceInput {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** A migrated database. */
  readonly databaseUrl: string;
  readonly slice: { readonly portfolioId: number; readonly reportType: string; readonly reportDate: string };
}

const COLUMNS = [
  'portfolio_id',
  'report_type',
  'report_date',
  'line_number',
  'effective_date',
  'isin',
  'security_name',
  'security_ticker',
  'exchange_code',
  'closing_price',
  'currency',
  'closing_fx',
  'index_shares',
  'index_weighting',
] as const;

/**
 * The raw baseline of the big slice into MySQL, on one thread: download the ZIP to a file,
 * unzipper (central directory) → csv-parse → multi-row prepared INSERTs (mysql2's `execute`) in
 * one transaction. No row typing, no checks, no ledger.
 */
export async function rawMysqlSlice(input: RawMysqlSliceInput): Promise<BigSliceSideResult> {
  const started = performance.now();
  const dir = await mkdtemp(join(tmpdir(), 'raw-mysql-slice-'));
  const connection = await mysql.createConnection(mysqlBaselineConnection(input.databaseUrl));
  try {
    const entry = await downloadExportCsv(input.url, input.headers, dir);

    const { portfolioId, reportType, reportDate } = input.slice;
    let rows = 0;
    let values: (string | number | null)[] = [];
    await connection.beginTransaction();
    for await (const record of entry.stream().pipe(parse({ bom: true, from_line: 2 })) as AsyncIterable<string[]>) {
      rows += 1;
      values.push(portfolioId, reportType, reportDate, rows);
      for (const value of record) values.push(value === '' ? null : value);
      if (values.length === MYSQL_ROWS_PER_INSERT * COLUMNS.length) {
        await insertMysqlRows(connection, 'constituent_report', COLUMNS, values);
        values = [];
      }
    }
    if (values.length > 0) await insertMysqlRows(connection, 'constituent_report', COLUMNS, values);
    await connection.commit();
    return sideResult(rows, performance.now() - started);
  } finally {
    await connection.end();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = await rawMysqlSlice(JSON.parse(process.argv[2]!) as RawMysqlSliceInput);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
