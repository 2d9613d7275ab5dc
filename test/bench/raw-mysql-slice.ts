import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse';
import mysql from 'mysql2/promise';
import { sideResult, type BigSliceSideResult } from './big-slice-side.js';
import { downloadExportCsv } from './download-export-csv.js';

/** What the raw MySQL side is given by the benchmark. */
export interface RawMysqlSliceInput {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** A migrated database. */
  readonly databaseUrl: string;
  readonly slice: { readonly portfolioId: number; readonly reportType: string; readonly reportDate: string };
}

/** Rows per INSERT: the product's default `warehouse.batchRows`. */
const ROWS_PER_INSERT = 500;
const COLUMNS = `portfolio_id, report_type, report_date, line_number, effective_date, isin, security_name,
  security_ticker, exchange_code, closing_price, currency, closing_fx, index_shares, index_weighting`;
const insertOf = (rows: number) =>
  `insert into constituent_report (${COLUMNS}) values ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`;

/**
 * The raw baseline of the big slice into MySQL, on one thread: download the ZIP to a file,
 * unzipper (central directory) → csv-parse → multi-row prepared INSERTs (mysql2's `execute`) in
 * one transaction. No row typing, no checks, no ledger.
 */
export async function rawMysqlSlice(input: RawMysqlSliceInput): Promise<BigSliceSideResult> {
  const started = performance.now();
  const dir = await mkdtemp(join(tmpdir(), 'raw-mysql-slice-'));
  const connection = await mysql.createConnection({ uri: input.databaseUrl, charset: 'utf8mb4' });
  try {
    const entry = await downloadExportCsv(input.url, input.headers, dir);

    const { portfolioId, reportType, reportDate } = input.slice;
    const fullInsert = insertOf(ROWS_PER_INSERT);
    let rows = 0;
    let values: (string | number | null)[] = [];
    await connection.beginTransaction();
    for await (const record of entry.stream().pipe(parse({ bom: true, from_line: 2 })) as AsyncIterable<string[]>) {
      rows += 1;
      values.push(portfolioId, reportType, reportDate, rows);
      for (const value of record) values.push(value === '' ? null : value);
      if (values.length === ROWS_PER_INSERT * 14) {
        await connection.execute(fullInsert, values);
        values = [];
      }
    }
    if (values.length > 0) await connection.execute(insertOf(values.length / 14), values);
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
