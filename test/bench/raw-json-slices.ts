import { Database } from '../../src/warehouse/sqlite/sqlite-driver.js';
import { Agent, request, type Dispatcher } from 'undici';
import type { Slice } from '../../src/slice/slice.js';
import { inMysqlTransaction, insertMysqlRows, openMysqlBaselinePool, type MysqlValue } from './mysql-baseline.js';

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
  /**
   * Where the slices go, as `DATABASE_URL` says it: `sqlite:<file>` (a new file of its own) or
   * `mysql://…/<database>`. The raw baseline creates its table there (`raw_index_report`, which
   * must not exist yet); the guarantees script migrates the warehouse there, which must hold no slices yet.
   */
  readonly databaseUrl: string;
  /** Keep-alive sockets. @defaultValue 64 (the product's `http.connections`) */
  readonly connections?: number;
}

export interface RawJsonSlicesResult {
  readonly slices: number;
  readonly rows: number;
  readonly durationMs: number;
  /** CPU time of this process over the same span as `durationMs` (set-up before it and checks after it left out). */
  readonly cpuMs: number;
}

/** The dialects a JSON baseline writes to, from its `databaseUrl`. */
export type JsonBaselineTarget = { readonly dialect: 'sqlite'; readonly file: string } | { readonly dialect: 'mysql'; readonly databaseUrl: string };

/** Where `databaseUrl` points a JSON baseline; refuses a dialect the baselines do not write to. */
export function jsonBaselineTarget(databaseUrl: string): JsonBaselineTarget {
  if (databaseUrl.startsWith('sqlite:')) return { dialect: 'sqlite', file: databaseUrl.slice('sqlite:'.length) };
  if (databaseUrl.startsWith('mysql://')) return { dialect: 'mysql', databaseUrl };
  throw new Error(`a JSON baseline writes to sqlite:<file> or mysql://…/<database>, not ${databaseUrl.split(':')[0]}:`);
}

/**
 * The raw baseline's table: the index report's columns, typed alike in SQLite (by affinity) and
 * MySQL, with no key; named apart from the warehouse's, so that it can sit beside them.
 */
const RAW_TABLE = `create table raw_index_report (
  portfolio_id integer not null, report_date date not null, effective_date date not null, index_id text not null,
  index_name text, index_value decimal(65,30), currency text, close_market_value decimal(65,30), open_market_value decimal(65,30),
  close_divisor decimal(65,30), open_divisor decimal(65,30), extra text)`;
const RAW_INDEX = 'create index raw_index_report_slice on raw_index_report (portfolio_id, report_date)';
const RAW_COLUMNS = [
  'portfolio_id',
  'report_date',
  'effective_date',
  'index_id',
  'index_name',
  'index_value',
  'currency',
  'close_market_value',
  'open_market_value',
  'close_divisor',
  'open_divisor',
] as const;
const RAW_DELETE = 'delete from raw_index_report where portfolio_id = ? and report_date = ?';

/** An index record as `JSON.parse` reads it: the fields the raw table has a column for. */
type JsonRecord = Readonly<
  Record<'effectiveDate' | 'indexId' | 'indexName' | 'indexValue' | 'currency' | 'closeMarketValue' | 'openMarketValue' | 'closeDivisor' | 'openDivisor', string | number | null>
>;

/**
 * The raw baseline for JSON slices: what a hand-written script does with the same libraries and
 * nothing else. One token (password grant), an undici keep-alive pool, `concurrency` lanes each
 * doing GET → `JSON.parse` of the whole body → one transaction of prepared statements (delete the
 * slice's rows, insert its records): better-sqlite3, one INSERT per record; or mysql2 on a pool of
 * `concurrency` connections, one multi-row INSERT. No lossless numbers, no hashing, no ledger, no
 * logging, no retries: the floor the product's overhead is measured against.
 */
export async function runRawJsonSlices(options: RawJsonSlicesOptions): Promise<RawJsonSlicesResult> {
  const target = jsonBaselineTarget(options.databaseUrl);
  const loader = target.dialect === 'sqlite' ? rawSqliteLoader(target.file) : await rawMysqlLoader(target.databaseUrl, options.concurrency);
  try {
    return await downloadJsonSlices(options, async (slice, body) => {
      const text = await body.text();
      const records = text === '' ? [] : (JSON.parse(text) as JsonRecord[]);
      await loader.load(slice, records);
      return records.length;
    });
  } finally {
    await loader.close();
  }
}

interface RawLoader {
  load(slice: Slice, records: readonly JsonRecord[]): void | Promise<void>;
  close(): void | Promise<void>;
}

function rawSqliteLoader(file: string): RawLoader {
  const db = new Database(file);
  // The same durability as the product's warehouse.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(RAW_TABLE);
  db.exec(RAW_INDEX);
  const remove = db.prepare(RAW_DELETE);
  const insert = db.prepare(`insert into raw_index_report (${RAW_COLUMNS.join(', ')}) values (${RAW_COLUMNS.map(() => '?').join(', ')})`);
  const load = db.transaction((slice: Slice, records: readonly JsonRecord[]) => {
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
  return {
    load,
    close: () => {
      db.close();
    },
  };
}

async function rawMysqlLoader(databaseUrl: string, connections: number): Promise<RawLoader> {
  const pool = openMysqlBaselinePool(databaseUrl, connections);
  try {
    await pool.query(RAW_TABLE);
    await pool.query(RAW_INDEX);
  } catch (error) {
    await pool.end();
    throw error;
  }
  return {
    load: (slice, records) =>
      inMysqlTransaction(pool, async (connection) => {
        await connection.execute(RAW_DELETE, [slice.portfolioId, slice.reportDate]);
        if (records.length === 0) return;
        const values: MysqlValue[] = [];
        for (const r of records) {
          values.push(
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
        await insertMysqlRows(connection, 'raw_index_report', RAW_COLUMNS, values);
      }),
    close: () => pool.end(),
  };
}

/** What a baseline does with one slice's answer (status 200); resolves with the rows it loaded. */
export type JsonSliceHandler = (slice: Slice, body: Dispatcher.ResponseData['body'], startedAt: number) => Promise<number>;

/**
 * The HTTP side every JSON baseline shares: one token (password grant), an undici keep-alive pool,
 * `concurrency` lanes each doing GET and handing the answer to `handle`. The clock and the CPU
 * count start before the token request and stop when the last slice is handled.
 */
export async function downloadJsonSlices(
  options: Pick<RawJsonSlicesOptions, 'upstream' | 'slices' | 'concurrency' | 'connections'>,
  handle: JsonSliceHandler,
): Promise<RawJsonSlicesResult> {
  const { upstream } = options;
  const agent = new Agent({ connections: options.connections ?? 64 });
  const startedAt = performance.now();
  const cpuAtStart = process.cpuUsage();
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
        // Awaited before the sum is read: `rows += await …` would add to the total as it was before
        // the wait, losing what other lanes added meanwhile.
        const loaded = await handle(slice, response.body, sliceStartedAt);
        rows += loaded;
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, lane));
    const durationMs = performance.now() - startedAt;
    const cpu = process.cpuUsage(cpuAtStart);
    return { slices: options.slices.length, rows, durationMs, cpuMs: (cpu.user + cpu.system) / 1000 };
  } finally {
    await agent.close();
  }
}
