import Database from 'better-sqlite3';
import { Agent, request, type Dispatcher } from 'undici';
import type { Slice } from '../../src/slice/slice.js';

/** Where the raw baseline finds the upstream: the simulator's addresses and credentials. */
export interface RawUpstream {
  /** Gateway base URL (`REPORT_BASE_URL`). */
  readonly baseUrl: string;
  /** The whole token endpoint. */
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly username: string;
  readonly password: string;
  readonly tenantId: string;
}

export interface RawJsonSlicesOptions {
  readonly upstream: RawUpstream;
  readonly slices: readonly Slice[];
  readonly concurrency: number;
  /** A SQLite file of its own; the table is created here. */
  readonly sqliteFile: string;
  /** Keep-alive sockets. @defaultValue 64 (the product's `http.connections`) */
  readonly connections?: number;
}

export interface RawJsonSlicesResult {
  readonly slices: number;
  readonly rows: number;
  readonly durationMs: number;
}

/**
 * The raw baseline for JSON slices: what a hand-written script does with the same libraries and
 * nothing else. One token (password grant), an undici keep-alive pool, `concurrency` lanes each
 * doing GET → `JSON.parse` of the whole body → one better-sqlite3 transaction of prepared
 * statements (delete the slice's rows, insert its records). No lossless numbers, no hashing, no
 * ledger, no logging, no retries: the floor the product's overhead is measured against.
 */
export async function runRawJsonSlices(options: RawJsonSlicesOptions): Promise<RawJsonSlicesResult> {
  const db = new Database(options.sqliteFile);
  // The same durability as the product's warehouse.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`create table if not exists index_report (
    portfolio_id integer not null, report_date date not null, effective_date date not null, index_id text not null,
    index_name text, index_value numeric, currency text, close_market_value numeric, open_market_value numeric,
    close_divisor numeric, open_divisor numeric, extra text)`);
  db.exec('create index if not exists index_report_slice on index_report (portfolio_id, report_date)');
  const remove = db.prepare('delete from index_report where portfolio_id = ? and report_date = ?');
  const insert = db.prepare(
    `insert into index_report (portfolio_id, report_date, effective_date, index_id, index_name, index_value, currency,
      close_market_value, open_market_value, close_divisor, open_divisor) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  type JsonRecord = Record<string, string | number | null>;
  const load = db.transaction((slice: Slice, records: JsonRecord[]) => {
    remove.run(slice.portfolioId, slice.reportDate);
    for (const r of records) {
      insert.run(
        slice.portfolioId,
        slice.reportDate,
        r.effectiveDate,
        r.indexId,
        r.indexName,
        r.indexValue,
        r.currency,
        r.closeMarketValue,
        r.openMarketValue,
        r.closeDivisor,
        r.openDivisor,
      );
    }
  });

  try {
    return await downloadJsonSlices(options, async (slice, body) => {
      const text = await body.text();
      const records = text === '' ? [] : (JSON.parse(text) as JsonRecord[]);
      load(slice, records);
      return records.length;
    });
  } finally {
    db.close();
  }
}

/** What a baseline does with one slice's answer (status 200); resolves with the rows it loaded. */
export type JsonSliceHandler = (slice: Slice, body: Dispatcher.ResponseData['body'], startedAt: number) => Promise<number>;

/**
 * The HTTP side every JSON baseline shares: one token (password grant), an undici keep-alive pool,
 * `concurrency` lanes each doing GET and handing the answer to `handle`. The clock starts before
 * the token request.
 */
export async function downloadJsonSlices(
  options: Pick<RawJsonSlicesOptions, 'upstream' | 'slices' | 'concurrency' | 'connections'>,
  handle: JsonSliceHandler,
): Promise<RawJsonSlicesResult> {
  const { upstream } = options;
  const agent = new Agent({ connections: options.connections ?? 64 });
  const startedAt = performance.now();
  try {
    const tokenResponse = await request(upstream.tokenUrl, {
      dispatcher: agent,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: upstream.clientId,
        client_secret: upstream.clientSecret,
        grant_type: 'password',
        username: upstream.username,
        password: upstream.password,
      }).toString(),
    });
    const { access_token: token } = (await tokenResponse.body.json()) as { access_token: string };
    const headers = { authorization: `Bearer ${token}`, 'x-client-id': upstream.tenantId };
    const base = upstream.baseUrl.replace(/\/+$/, '');

    let next = 0;
    let rows = 0;
    const lane = async (): Promise<void> => {
      while (next < options.slices.length) {
        const slice = options.slices[next++]!;
        const url = `${base}/api/v1/report-service/report/generate/portfolio/${slice.portfolioId}/export?reportType=${slice.reportType}&date=${slice.reportDate}&format=json`;
        const sliceStartedAt = performance.now();
        const response = await request(url, { dispatcher: agent, headers });
        if (response.statusCode !== 200) throw new Error(`baseline: ${url} answered ${response.statusCode}: ${(await response.body.text()).slice(0, 200)}`);
        rows += await handle(slice, response.body, sliceStartedAt);
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, lane));
    return { slices: options.slices.length, rows, durationMs: performance.now() - startedAt };
  } finally {
    await agent.close();
  }
}
