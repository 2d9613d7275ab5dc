import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { constituentReport } from '../../../../src/reports/constituent-report.js';
import type { WarehouseRow } from '../../../../src/extract/row-builder.js';
import type { Slice } from '../../../../src/slice/slice.js';
import { Ledger } from '../../../../src/warehouse/ledger/ledger.js';
import { SliceLoader } from '../../../../src/warehouse/loading/slice-loader.js';
import type { Warehouse } from '../../../../src/warehouse/engine/warehouse-schema.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

const slice: Slice = { portfolioId: 9, reportType: 'constituent.close', reportDate: '2024-03-04' };
const file = { format: 'csv' as const, fileName: 'f.zip', bytes: 1, sha256: 'x' };

/** Text that SQL, CSV or COPY text format could each mangle, and must reach the table unchanged. */
const AWKWARD = [
  'Globex, Inc.',
  'Initech "Classic" Shares',
  "O'Brien & Sons",
  'Umbrella Holdings\nClass B',
  'Windows\r\nline end',
  'back\\slash \\N \\. \\t',
  'tab\there',
  '',
  '   ',
  'Société Générale 😀',
  "'); drop table report_loads; --",
];

function row(line: number, name: string | null, extra: string | null): WarehouseRow {
  return {
    portfolio_id: 9,
    report_type: 'constituent.close',
    report_date: '2024-03-04',
    line_number: line,
    effective_date: '2024-03-04',
    isin: `ISIN${line}`,
    security_name: name,
    security_ticker: null,
    exchange_code: '',
    closing_price: line === 1 ? '1234.56789012345678901' : '-0.5',
    currency: 'EUR',
    closing_fx: null,
    index_shares: '1e3',
    index_weighting: '0.0000000000000000001',
    extra,
  };
}

describe.each(DIALECTS)('SliceLoader values on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeAll(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterAll(async () => {
    await warehouse.close();
  });

  it('stores every text value byte for byte, NULL as NULL and the empty string as itself', async () => {
    const rows = [...AWKWARD.map((name, i) => row(i + 1, name, JSON.stringify({ note: name }))), row(AWKWARD.length + 1, null, null)];
    // A batch size that leaves a tail, so full batches and the last one both run.
    const loader = new SliceLoader({ warehouse, batchRows: 4 });
    const count = await loader.replaceRows({
      slice,
      definition: constituentReport,
      rows: (async function* () {
        yield* rows;
      })(),
      file,
      attempts: 1,
    });
    expect(count).toBe(rows.length);

    const stored = await warehouse.db
      .selectFrom('constituent_report')
      .select(['line_number', 'security_name', 'exchange_code', 'closing_fx', 'extra', 'effective_date', 'report_date'])
      .orderBy('line_number')
      .execute();
    expect(stored.map((r) => r.security_name)).toEqual([...AWKWARD, null]);
    // extra is JSON text in SQLite and jsonb in Postgres (which spaces it as it likes): its values arrive byte for byte.
    expect(stored.map((r) => (r.extra === null ? null : JSON.parse(r.extra)))).toEqual([...AWKWARD.map((name) => ({ note: name })), null]);
    expect(new Set(stored.map((r) => r.exchange_code))).toEqual(new Set(['']));
    expect(new Set(stored.map((r) => r.closing_fx))).toEqual(new Set([null]));
    expect(stored[0]).toMatchObject({ effective_date: '2024-03-04', report_date: '2024-03-04' });
    expect((await new Ledger(warehouse).row(slice))?.row_count).toBe(rows.length);
    // The warehouse is still whole: the injection attempt above was data.
    expect(await warehouse.db.selectFrom('report_loads').select('status').execute()).toEqual([{ status: 'loaded' }]);
  });

  it('keeps decimals as the exact text given (every digit in Postgres)', async () => {
    const stored = await warehouse.db.selectFrom('constituent_report').select(['closing_price', 'index_weighting']).where('line_number', '=', 1).executeTakeFirstOrThrow();
    if (dialect === 'postgres') {
      expect(stored).toEqual({ closing_price: '1234.56789012345678901', index_weighting: '0.0000000000000000001' });
    } else {
      expect(Number(stored.closing_price)).toBeCloseTo(1234.567890123457, 9);
    }
  });

  it('loads a slice again and again on the same connection (prepared statements kept, COPY leaves the connection clean)', async () => {
    const loader = new SliceLoader({ warehouse, batchRows: 3 });
    for (let round = 1; round <= 3; round += 1) {
      const rows = Array.from({ length: 7 + round }, (_, i) => row(i + 1, `name ${round}`, null));
      expect(
        await loader.replaceRows({
          slice,
          definition: constituentReport,
          rows: (async function* () {
            yield* rows;
          })(),
          file: { ...file, sha256: `r${round}` },
          attempts: 1,
        }),
      ).toBe(rows.length);
    }
    const names = await warehouse.db.selectFrom('constituent_report').select('security_name').distinct().execute();
    expect(names).toEqual([{ security_name: 'name 3' }]);
    expect((await new Ledger(warehouse).row(slice))?.row_count).toBe(10);
  });
});

describe('COPY into Postgres', () => {
  it('fails a value the column refuses as WAREHOUSE_REJECTED, naming it, and leaves the slice and the connection as they were', async () => {
    const warehouse = await createTempWarehouse('postgres');
    try {
      // One connection, so the next statements prove that the failed COPY left it usable.
      const loader = new SliceLoader({ warehouse, batchRows: 2 });
      await loader.replaceRows({
        slice,
        definition: constituentReport,
        rows: (async function* () {
          yield row(1, 'kept', null);
        })(),
        file,
        attempts: 1,
      });
      const rows = [row(1, 'a', null), row(2, 'b', null), row(3, 'c', null), { ...row(4, 'd', null), closing_price: 'not a number' }];
      const error = await loader
        .replaceRows({
          slice,
          definition: constituentReport,
          rows: (async function* () {
            yield* rows;
          })(),
          file: { ...file, sha256: 'new' },
          attempts: 1,
        })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'WAREHOUSE_REJECTED' });
      expect((error as Error).message).toContain('not a number');
      const stored = await warehouse.db.selectFrom('constituent_report').select('security_name').execute();
      expect(stored).toEqual([{ security_name: 'kept' }]);
      expect((await new Ledger(warehouse).row(slice))?.content_sha256).toBe('x');
    } finally {
      await warehouse.close();
    }
  });
});

describe('COPY through a Kysely that openWarehouse did not open', () => {
  it('fails clearly instead of sending the rows as a mangled parameter', async () => {
    const warehouse = await createTempWarehouse('postgres');
    const pool = new pg.Pool({ connectionString: warehouse.databaseUrl, max: 1 });
    // The temporary database is dropped WITH (FORCE) at the end: a client of this pool still
    // closing then hears "terminating connection", which must not end the test run as uncaught.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    const plain = new Kysely<Warehouse>({ dialect: new PostgresDialect({ pool }) });
    try {
      const loader = new SliceLoader({ warehouse: { ...warehouse, db: plain } });
      const error = await loader
        .replaceRows({
          slice,
          definition: constituentReport,
          rows: (async function* () {
            yield row(1, 'a', null);
          })(),
          file,
          attempts: 1,
        })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'WAREHOUSE_REJECTED' });
      expect((error as Error).message).toContain('open the warehouse with openWarehouse()');
      expect(await warehouse.db.selectFrom('constituent_report').select('isin').execute()).toEqual([]);
    } finally {
      await plain.destroy();
      await warehouse.close();
    }
  });
});
