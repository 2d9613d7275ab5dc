import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { sideResult, type BigSliceSideResult } from './big-slice-side.js';
import { downloadExportCsv } from './download-export-csv.js';

/** What the raw Postgres side is given by the benchmark. */
export interface RawPostgresSliceInput {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** A migrated database. */
  readonly databaseUrl: string;
  readonly slice: { readonly portfolioId: number; readonly reportType: string; readonly reportDate: string };
}

/**
 * The raw baseline of the big slice into Postgres, on one thread: download the ZIP to a file,
 * unzipper (central directory) → csv-parse → COPY FROM STDIN (text format) in one transaction.
 * No row typing, no checks, no ledger.
 */
export async function rawPostgresSlice(input: RawPostgresSliceInput): Promise<BigSliceSideResult> {
  const started = performance.now();
  const dir = await mkdtemp(join(tmpdir(), 'raw-postgres-slice-'));
  const client = new pg.Client({ connectionString: input.databaseUrl });
  await client.connect();
  try {
    const entry = await downloadExportCsv(input.url, input.headers, dir);

    const prefix = `${input.slice.portfolioId}\t${input.slice.reportType}\t${input.slice.reportDate}\t`;
    let rows = 0;
    // Lines are handed to COPY in chunks of ~64 KiB, as anyone writing this by hand would: a write
    // per row costs a socket write per row.
    let chunk = '';
    const toCopyText = new Transform({
      writableObjectMode: true,
      transform(record: string[], _encoding, callback) {
        rows += 1;
        let line = `${prefix}${rows}`;
        for (const value of record) line += value === '' ? '\t\\N' : `\t${/[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]!) : value}`;
        chunk += `${line}\t\\N\n`;
        if (chunk.length < 65_536) return callback();
        const full = chunk;
        chunk = '';
        callback(null, full);
      },
      flush(callback) {
        callback(null, chunk === '' ? undefined : chunk);
      },
    });
    await client.query('begin');
    await pipeline(
      entry.stream(),
      parse({ bom: true, from_line: 2 }),
      toCopyText,
      client.query(
        copyFrom(
          `copy constituent_report (portfolio_id, report_type, report_date, line_number, effective_date, isin, security_name,
             security_ticker, exchange_code, closing_price, currency, closing_fx, index_shares, index_weighting, extra) from stdin`,
        ),
      ),
    );
    await client.query('commit');
    return sideResult(rows, performance.now() - started);
  } finally {
    await client.end();
    await rm(dir, { recursive: true, force: true });
  }
}

const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = await rawPostgresSlice(JSON.parse(process.argv[2]!) as RawPostgresSliceInput);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
