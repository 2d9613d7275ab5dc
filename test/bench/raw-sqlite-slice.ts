import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Database } from '../../src/warehouse/sqlite/sqlite-driver.js';
import { parse } from 'csv-parse';
import { sideResult, type BigSliceSideResult } from './big-slice-side.js';
import { downloadExportCsv } from './download-export-csv.js';

/** What the raw SQLite side is given by the benchmark. */
export interface RawSqliteSliceInput {
  /** The export URL of the slice (the simulator's). */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** A migrated SQLite file. */
  readonly databasePath: string;
  readonly slice: { readonly portfolioId: number; readonly reportType: string; readonly reportDate: string };
}

/**
 * The raw baseline of the big slice into SQLite, on one thread: download the ZIP to a file,
 * unzipper (central directory) → csv-parse → one prepared INSERT in one transaction. No row
 * typing, no checks, no ledger: the floor of what these libraries cost for this work.
 */
export async function rawSqliteSlice(input: RawSqliteSliceInput): Promise<BigSliceSideResult> {
  const started = performance.now();
  const dir = await mkdtemp(join(tmpdir(), 'raw-sqlite-slice-'));
  const db = new Database(input.databasePath);
  try {
    const entry = await downloadExportCsv(input.url, input.headers, dir);

    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    const insert = db.prepare(
      `insert into constituent_report (portfolio_id, report_type, report_date, line_number, effective_date, isin, security_name,
         security_ticker, exchange_code, closing_price, currency, closing_fx, index_shares, index_weighting, extra)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null)`,
    );
    const { portfolioId, reportType, reportDate } = input.slice;
    let rows = 0;
    db.exec('begin immediate');
    for await (const record of entry.stream().pipe(parse({ bom: true, from_line: 2 })) as AsyncIterable<string[]>) {
      rows += 1;
      insert.run(portfolioId, reportType, reportDate, rows, ...record.map((value) => (value === '' ? null : value)));
    }
    db.exec('commit');
    return sideResult(rows, performance.now() - started);
  } finally {
    db.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = await rawSqliteSlice(JSON.parse(process.argv[2]!) as RawSqliteSliceInput);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
