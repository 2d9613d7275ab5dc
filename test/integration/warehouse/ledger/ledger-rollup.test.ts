import { sql, type Kysely, type RawBuilder } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReportType } from '../../../../src/reports/report-types.js';
import type { Slice } from '../../../../src/slice/slice.js';
import { Ledger, type LedgerCount, type LedgerFilter, type LedgerPeriodCount } from '../../../../src/warehouse/ledger/ledger.js';
import type { LedgerStamp } from '../../../../src/warehouse/ledger/ledger-writer.js';
import type { Warehouse } from '../../../../src/warehouse/engine/warehouse-schema.js';
import { openWarehouse } from '../../../../src/warehouse/open-warehouse.js';
import { migrateWarehouse } from '../../../../src/warehouse/schema/migrate-warehouse.js';
import { ledgerRow } from '../../../helpers/ledger-row.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';
import { insertLoadedLedgerRow } from '../../../helpers/ledger-row.js';
import { CommitGroups } from '../../../../src/warehouse/loading/commit-groups.js';
import { foldMonthlyCounts } from '../../../../src/warehouse/mysql/fold-monthly-counts.js';
import { COMMITS_PER_FOLD } from '../../../../src/warehouse/mysql/mysql-slice-lock.js';

/*
 * report_loads_monthly (migration 0007) counts the ledger per pair, month and status in the
 * transaction of every write, whoever writes: the ledger writer's outcomes, a re-check, rows
 * inserted, changed or deleted by hand. The ledger's counts answer from it for whole months and
 * must equal what counting the ledger itself gives, for any range.
 */

/** The monthly counts, summed per key (Postgres and MySQL may hold several rows of one until they fold them). */
async function monthly(db: Kysely<Warehouse>): Promise<string[]> {
  const rows = await db
    .selectFrom('report_loads_monthly')
    .select(({ fn }) => ['month', 'portfolio_id', 'report_type', 'status', fn.sum<number | string>('slices').as('slices')])
    .groupBy(['month', 'portfolio_id', 'report_type', 'status'])
    .having(({ fn }) => fn.sum('slices'), '<>', 0)
    .execute();
  return rows.map((row) => `${String(row.month)} ${row.portfolio_id} ${row.report_type} ${row.status} ${Number(row.slices)}`).sort();
}

/** The same counts, as counting the ledger gives them. */
async function countedFromLedger(db: Kysely<Warehouse>): Promise<string[]> {
  const rows = await db.selectFrom('report_loads').select(['portfolio_id', 'report_type', 'report_date', 'status']).execute();
  const counts = new Map<string, number>();
  for (const row of rows) {
    const key = `${String(row.report_date).slice(0, 7)}-01 ${row.portfolio_id} ${row.report_type} ${row.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([key, slices]) => `${key} ${slices}`).sort();
}

/** countByStatus as the ledger's rows alone give it. */
async function statusFromRows(db: Kysely<Warehouse>, filter: LedgerFilter): Promise<LedgerCount[]> {
  const rows = await db.selectFrom('report_loads').select(['portfolio_id', 'report_type', 'report_date', 'status']).execute();
  const counts = new Map<string, LedgerCount>();
  for (const row of rows) {
    const date = String(row.report_date);
    if (date < filter.from || date > filter.to) continue;
    if (filter.portfolios && !filter.portfolios.includes(Number(row.portfolio_id))) continue;
    if (filter.reportTypes && !filter.reportTypes.includes(row.report_type as ReportType)) continue;
    const key = `${row.portfolio_id} ${row.report_type} ${row.status}`;
    const before = counts.get(key);
    counts.set(key, { portfolioId: Number(row.portfolio_id), reportType: row.report_type, status: row.status, slices: (before?.slices ?? 0) + 1 });
  }
  return [...counts.values()];
}

/** countByPeriod by month as the ledger's rows alone give it. */
async function monthsFromRows(db: Kysely<Warehouse>, filter: LedgerFilter): Promise<LedgerPeriodCount[]> {
  const rows = await db.selectFrom('report_loads').select(['portfolio_id', 'report_type', 'report_date', 'status']).execute();
  const counts = new Map<string, { portfolioId: number; reportType: string; periodStart: string; loaded: number; noData: number; failed: number }>();
  for (const row of rows) {
    const date = String(row.report_date);
    if (date < filter.from || date > filter.to) continue;
    if (filter.portfolios && !filter.portfolios.includes(Number(row.portfolio_id))) continue;
    if (filter.reportTypes && !filter.reportTypes.includes(row.report_type as ReportType)) continue;
    const periodStart = `${date.slice(0, 7)}-01`;
    const key = `${row.portfolio_id} ${row.report_type} ${periodStart}`;
    const cell = counts.get(key) ?? { portfolioId: Number(row.portfolio_id), reportType: row.report_type, periodStart, loaded: 0, noData: 0, failed: 0 };
    if (row.status === 'loaded') cell.loaded += 1;
    else if (row.status === 'no_data') cell.noData += 1;
    else cell.failed += 1;
    counts.set(key, cell);
  }
  return [...counts.values()];
}

const byKey = <T extends { portfolioId: number; reportType: string }>(rows: readonly T[], extra: (row: T) => string) =>
  [...rows].sort((a, b) => `${a.portfolioId} ${a.reportType} ${extra(a)}`.localeCompare(`${b.portfolioId} ${b.reportType} ${extra(b)}`));

describe.each(DIALECTS)('the monthly counts of the ledger on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  const slice = (portfolioId: number, reportDate: string, reportType = 'index'): Slice => ({ portfolioId, reportType: reportType as Slice['reportType'], reportDate });
  const stamp = (s: Slice): LedgerStamp => ({ slice: s, now: '2024-04-01T00:00:00.000Z', attempts: 1, durationMs: 10 });
  const file = { format: 'json' as const, fileName: null, bytes: 10, sha256: 'a'.repeat(64) };

  it('follow every write of the ledger writer: new outcomes, changed outcomes and re-checks', async () => {
    const writer = new Ledger(warehouse).writer;
    await warehouse.db.transaction().execute(async (trx) => {
      await writer.recordLoaded(trx, stamp(slice(1001, '2024-01-31')), { file, rowCount: 3, loadId: '00000000-0000-4000-8000-000000000001' });
      await writer.recordNoData(trx, stamp(slice(1001, '2024-02-01')), 'json');
      await writer.recordFailure(trx, stamp(slice(1002, '2024-02-10')), 'EXPORT_FORBIDDEN: no entitlement');
      await writer.recordFailure(trx, stamp(slice(1001, '2024-02-11', 'constituent.close')), 'EXPORT_UNAVAILABLE: 503');
    });
    expect(await monthly(warehouse.db)).toEqual(await countedFromLedger(warehouse.db));
    await warehouse.db.transaction().execute(async (trx) => {
      // failed → loaded, loaded → failed, no_data → no_data (a re-check), then a touch
      await writer.recordLoaded(trx, stamp(slice(1002, '2024-02-10')), { file, rowCount: 3, loadId: '00000000-0000-4000-8000-000000000002' });
      await writer.recordFailure(trx, stamp(slice(1001, '2024-01-31')), 'EXPORT_UNAVAILABLE: 503');
      await writer.recordNoData(trx, stamp(slice(1001, '2024-02-01')), 'json');
      await writer.touch(trx, { ...stamp(slice(1001, '2024-02-11', 'constituent.close')), attempts: 2 });
    });
    // A re-check that changes no status adds nothing to the counts, not even a row that nets to nought.
    const stored = async () =>
      Number(
        (
          await warehouse.db
            .selectFrom('report_loads_monthly')
            .select(({ fn }) => fn.countAll<number | string>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await stored();
    // Postgres's triggers fold now and then (one write in 64), which would shrink the count being
    // compared: the fold's lock is held elsewhere meanwhile, so no fold runs in this transaction.
    const foldHeld = dialect === 'postgres' ? await holdPostgresFoldLock(warehouse.databaseUrl) : undefined;
    try {
      await warehouse.db.transaction().execute(async (trx) => {
        await writer.recordNoData(trx, stamp(slice(1001, '2024-02-01')), 'json');
        await writer.touch(trx, { ...stamp(slice(1002, '2024-02-10')), attempts: 3 });
      });
    } finally {
      await foldHeld?.end();
    }
    expect(await stored()).toBe(before);
    const counts = await monthly(warehouse.db);
    expect(counts).toEqual(await countedFromLedger(warehouse.db));
    expect(counts).toEqual(['2024-01-01 1001 index failed 1', '2024-02-01 1001 constituent.close failed 1', '2024-02-01 1001 index no_data 1', '2024-02-01 1002 index loaded 1']);
  });

  it('follow rows inserted, changed and deleted by hand, and a write rolled back', async () => {
    await warehouse.db
      .insertInto('report_loads')
      .values([
        ledgerRow(1001, 'index', '2024-03-01', 'loaded'),
        ledgerRow(1001, 'index', '2024-03-02', 'loaded'),
        ledgerRow(1001, 'index', '2024-04-02', 'failed'),
        ledgerRow(1003, 'index', '2024-04-03', 'no_data'),
      ])
      .execute();
    await warehouse.db.updateTable('report_loads').set({ status: 'no_data' }).where('report_date', '=', '2024-03-02').execute();
    // A slice moved to another month by hand.
    await warehouse.db.updateTable('report_loads').set({ report_date: '2024-05-02' }).where('report_date', '=', '2024-04-02').execute();
    await warehouse.db.deleteFrom('report_loads').where('portfolio_id', '=', 1003).execute();
    await warehouse.db
      .transaction()
      .execute(async (trx) => {
        await trx
          .insertInto('report_loads')
          .values(ledgerRow(1009, 'index', '2024-03-09', 'loaded'))
          .execute();
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    const counts = await monthly(warehouse.db);
    expect(counts).toEqual(await countedFromLedger(warehouse.db));
    expect(counts).toEqual(['2024-03-01 1001 index loaded 1', '2024-03-01 1001 index no_data 1', '2024-05-01 1001 index failed 1']);
    await warehouse.db.deleteFrom('report_loads').execute();
    expect(await monthly(warehouse.db)).toEqual([]);
  });

  it('give countByStatus, countByPeriod, countByMonth and pairs the answers counting the ledger gives, for ranges of whole and partial months', async () => {
    const statuses = ['loaded', 'loaded', 'no_data', 'failed', 'loaded'] as const;
    const rows = [];
    for (const portfolioId of [1001, 1002, 1003]) {
      for (const reportType of ['index', 'constituent.close']) {
        for (let day = 0; day < 130; day += 3) {
          const date = new Date(Date.UTC(2024, 0, 20 + day)).toISOString().slice(0, 10);
          rows.push(ledgerRow(portfolioId, reportType, date, statuses[(portfolioId + day) % statuses.length]!));
        }
      }
    }
    await warehouse.db.insertInto('report_loads').values(rows).execute();
    const ledger = new Ledger(warehouse);
    const ranges: LedgerFilter[] = [
      { from: '2024-01-01', to: '2024-12-31' },
      { from: '2024-02-01', to: '2024-04-30' },
      { from: '2024-01-25', to: '2024-05-14' },
      { from: '2024-02-10', to: '2024-02-20' },
      { from: '2024-02-15', to: '2024-03-31', portfolios: [1002] },
      // Edges whose months hold no other slice (the ledger's first and last days): counted as whole months.
      { from: '2024-01-20', to: '2024-05-29' },
      { from: '2024-01-10', to: '2024-05-31', portfolios: [1003] },
      { from: '2024-05-27', to: '2024-05-31' },
      { from: '2024-01-21', to: '2024-05-27' },
      { from: '2024-05-20', to: '2024-06-15' },
      // Edges found by their dates, with the pairs asked written apart from the key's columns.
      { from: '2024-01-25', to: '2024-04-10', portfolios: [1001, 1003], reportTypes: ['constituent.close'] },
      { from: '2024-03-01', to: '2024-03-01' },
      { from: '2025-01-01', to: '2025-03-31' },
      // Whole months reaching past one end of the months counted: that bound is left out, the other kept.
      { from: '2023-06-01', to: '2024-03-31' },
      { from: '2024-03-01', to: '2025-06-30', reportTypes: ['index'] },
      // Every portfolio the counts hold asked, and one more (MySQL leaves the list out of its
      // question of the monthly counts then), with and without report types.
      { from: '2024-01-01', to: '2024-12-31', portfolios: [1001, 1002, 1003] },
      { from: '2024-01-25', to: '2024-05-14', portfolios: [1004, 1003, 1002, 1001], reportTypes: ['constituent.close'] },
    ];
    for (const filter of ranges) {
      const status = await ledger.countByStatus(filter);
      expect(
        byKey(status, (row) => row.status),
        JSON.stringify(filter),
      ).toEqual(byKey(await statusFromRows(warehouse.db, filter), (row) => row.status));
      const months = await ledger.countByPeriod(filter, 'month');
      expect(months, JSON.stringify(filter)).toEqual(byKey(await monthsFromRows(warehouse.db, filter), (row) => row.periodStart));
      const byMonth = new Map<string, number>();
      for (const month of months) {
        for (const [status, slices] of [
          ['loaded', month.loaded],
          ['no_data', month.noData],
          ['failed', month.failed],
        ] as const) {
          if (slices > 0) byMonth.set(`${month.periodStart} ${status}`, (byMonth.get(`${month.periodStart} ${status}`) ?? 0) + slices);
        }
      }
      const expectedByMonth = [...byMonth].map(([key, slices]) => `${key} ${slices}`).sort();
      expect(
        (await ledger.countByMonth(filter)).map((count) => `${count.month} ${count.status} ${count.slices}`),
        JSON.stringify(filter),
      ).toEqual(expectedByMonth);
      const pairs = await ledger.pairs(filter, 100);
      const expectedPairs = new Set((await statusFromRows(warehouse.db, filter)).map((row) => `${row.portfolioId} ${row.reportType}`));
      expect(new Set(pairs.map((pair) => `${pair.portfolioId} ${pair.reportType}`)), JSON.stringify(filter)).toEqual(expectedPairs);
    }
    expect(await ledger.pairs({ from: '2024-01-01', to: '2024-12-31' }, 4)).toHaveLength(4);
  });

  it('are compared with the ledger for the whole months of a range (check --deep): none differ unless changed by hand', async () => {
    await warehouse.db
      .insertInto('report_loads')
      .values([ledgerRow(1001, 'index', '2024-02-10', 'loaded'), ledgerRow(1001, 'index', '2024-03-05', 'failed'), ledgerRow(1002, 'index', '2024-04-02', 'no_data')])
      .execute();
    const ledger = new Ledger(warehouse);
    const range = { from: '2024-02-15', to: '2024-04-30' };
    expect(await ledger.monthlyCountDifferences(range)).toEqual([]);
    // A count changed by hand, and one of a month outside the range's whole months (February is partial).
    await warehouse.db.updateTable('report_loads_monthly').set({ slices: 5 }).where('status', '=', 'failed').execute();
    await warehouse.db.deleteFrom('report_loads_monthly').where('month', '=', '2024-02-01').execute();
    expect(await ledger.monthlyCountDifferences(range)).toEqual([{ month: '2024-03-01', portfolioId: 1001, reportType: 'index', status: 'failed', counted: 5, ledger: 1 }]);
    await warehouse.db.deleteFrom('report_loads_monthly').where('month', '=', '2024-04-01').execute();
    expect((await ledger.monthlyCountDifferences(range)).map((difference) => `${difference.month} ${difference.counted} ${difference.ledger}`)).toEqual([
      '2024-03-01 5 1',
      '2024-04-01 0 1',
    ]);
  });

  it('are filled from the ledger by the migration', async () => {
    await warehouse.db
      .insertInto('report_loads')
      .values([ledgerRow(1001, 'index', '2024-03-01', 'loaded'), ledgerRow(1001, 'index', '2024-03-20', 'failed')])
      .execute();
    // What 0007 found: the ledger as it was, counted again from nothing.
    await sql`delete from kysely_migration where name in ('0007-ledger-rollup', '0008-monthly-counts-by-pair', '0009-monthly-totals')`.execute(warehouse.db);
    if (dialect === 'postgres')
      for (const name of ['count_rows', 'count_change', 'clear', 'fold']) await sql.raw(`drop function report_loads_monthly_${name}() cascade`).execute(warehouse.db);
    else for (const name of ['insert', 'update', 'delete']) await sql.raw(`drop trigger report_loads_monthly_${name}`).execute(warehouse.db);
    await sql`drop table report_loads_monthly`.execute(warehouse.db);
    // MySQL names an index within its table.
    await (dialect === 'mysql' ? sql`drop index report_loads_failed on report_loads` : sql`drop index report_loads_failed`).execute(warehouse.db);
    const reopened = await openWarehouse(warehouse.databaseUrl);
    try {
      expect((await migrateWarehouse(reopened)).applied).toEqual(['0007-ledger-rollup', '0008-monthly-counts-by-pair', '0009-monthly-totals']);
      expect(await monthly(reopened.db)).toEqual(['2024-03-01 1001 index failed 1', '2024-03-01 1001 index loaded 1']);
    } finally {
      await reopened.close();
    }
  });
});

describe.each(['postgres', 'mysql'] as const)('the monthly counts under many %s writers', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  const row = (portfolioId: number, date: string) => ledgerRow(portfolioId, 'index', date, 'loaded');

  /** What writes do now and then (Postgres: one in 64, in its trigger; MySQL: after every COMMITS_PER_FOLD commits of slices). */
  async function fold(): Promise<void> {
    if (dialect === 'postgres') await sql`select report_loads_monthly_fold()`.execute(warehouse.db);
    else expect(await warehouse.db.connection().execute(foldMonthlyCounts)).toBeGreaterThan(0);
  }

  it('never make two transactions wait for each other, and fold to one row per key once they commit', async () => {
    const other = await openWarehouse(warehouse.databaseUrl);
    try {
      // Two transactions that write the same two months in opposite orders: counting in place would deadlock.
      let secondWrote!: () => void;
      const secondHasWritten = new Promise<void>((resolve) => (secondWrote = resolve));
      let firstWrote!: () => void;
      const firstHasWritten = new Promise<void>((resolve) => (firstWrote = resolve));
      await Promise.all([
        warehouse.db.transaction().execute(async (trx) => {
          await trx.insertInto('report_loads').values(row(1001, '2024-03-01')).execute();
          firstWrote();
          await secondHasWritten;
          await trx.insertInto('report_loads').values(row(1002, '2024-03-02')).execute();
        }),
        other.db.transaction().execute(async (trx) => {
          await firstHasWritten;
          await trx.insertInto('report_loads').values(row(1002, '2024-03-01')).execute();
          secondWrote();
          await trx.insertInto('report_loads').values(row(1001, '2024-03-02')).execute();
        }),
      ]);
      expect(await monthly(warehouse.db)).toEqual(['2024-03-01 1001 index loaded 2', '2024-03-01 1002 index loaded 2']);
      await warehouse.db.insertInto('report_loads').values(row(1003, '2024-03-03')).execute();
      await fold();
      const stored = await warehouse.db.selectFrom('report_loads_monthly').select(['portfolio_id', 'slices']).orderBy('portfolio_id').execute();
      expect(stored.map((r) => `${r.portfolio_id}:${Number(r.slices)}`)).toEqual(['1001:2', '1002:2', '1003:1']);
      expect(await monthly(warehouse.db)).toEqual(await countedFromLedger(warehouse.db));
    } finally {
      await other.close();
    }
  });

  it('fold without waiting for a transaction still writing, and leave its rows to the next fold', async () => {
    const other = await openWarehouse(warehouse.databaseUrl);
    try {
      await warehouse.db
        .insertInto('report_loads')
        .values([row(1001, '2024-03-01'), row(1001, '2024-03-02')])
        .execute();
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let wrote!: () => void;
      const written = new Promise<void>((resolve) => (wrote = resolve));
      const writing = other.db.transaction().execute(async (trx) => {
        await trx.insertInto('report_loads').values(row(1001, '2024-03-03')).execute();
        wrote();
        await released;
      });
      await written;
      const started = performance.now();
      await fold();
      // A fold that waited for the open transaction would wait until the test released it.
      expect(performance.now() - started).toBeLessThan(5_000);
      release();
      await writing;
      expect(await monthly(warehouse.db)).toEqual(['2024-03-01 1001 index loaded 3']);
      await fold();
      const stored = await warehouse.db.selectFrom('report_loads_monthly').select(['portfolio_id', 'slices']).execute();
      expect(stored.map((r) => `${r.portfolio_id}:${Number(r.slices)}`)).toEqual(['1001:3']);
    } finally {
      await other.close();
    }
  });
});

describe('the monthly counts of slices written to MySQL', () => {
  it('are folded after every COMMITS_PER_FOLD commits of slices, before the last slice hears it committed', async () => {
    const warehouse = await createTempWarehouse('mysql');
    try {
      const committer = new CommitGroups({ db: warehouse.db, sliceLock: warehouse.sliceLock, maxSlices: 1, maxOpenMs: 10_000, parallel: 1 });
      const slices: Slice[] = Array.from({ length: COMMITS_PER_FOLD }, (_, i) => ({
        portfolioId: 1001 + (i % 4),
        reportType: 'index',
        reportDate: `2024-0${1 + (i % 3)}-${String(1 + Math.floor(i / 12)).padStart(2, '0')}`,
      }));
      const rowsOf = async (where: RawBuilder<unknown>) =>
        Number((await sql<{ rows: number | string }>`select count(*) as \`rows\` from report_loads_monthly where ${where}`.execute(warehouse.db)).rows[0]!.rows);
      const pending = () => rowsOf(sql`pending`);
      for (const slice of slices.slice(0, -1)) await committer.write(slice, (trx, now) => insertLoadedLedgerRow(trx, slice, now));
      expect(await pending()).toBe(COMMITS_PER_FOLD - 1);
      const last = slices.at(-1)!;
      await committer.write(last, (trx, now) => insertLoadedLedgerRow(trx, last, now));
      // Folded before the last write was told it had committed: 4 portfolios × 3 months, one row each.
      expect(await pending()).toBe(0);
      expect(await rowsOf(sql`true`)).toBe(12);
      expect(await monthly(warehouse.db)).toEqual(await countedFromLedger(warehouse.db));
    } finally {
      await warehouse.close();
    }
  });
});

describe('the monthly counts of a big ledger', () => {
  it('answer hundreds of thousands of pairs and months in one piece', async () => {
    const warehouse = await createTempWarehouse('sqlite');
    try {
      // 2,500 portfolios × 100 months: more rows than a function call takes arguments.
      await sql`
        with recursive p(id) as (select 1 union all select id + 1 from p where id < 2500),
          m(k) as (select 0 union all select k + 1 from m where k < 99)
        insert into report_loads_monthly (month, portfolio_id, report_type, status, slices)
        select date('2015-01-01', '+' || k || ' months'), id, 'index', 'loaded', 20 from p, m`.execute(warehouse.db);
      const ledger = new Ledger(warehouse);
      const filter = { from: '2015-01-01', to: '2023-04-30' };
      expect(await ledger.countByPeriod(filter, 'month')).toHaveLength(250_000);
      expect(await ledger.countByStatus(filter)).toHaveLength(2_500);
    } finally {
      await warehouse.close();
    }
  });
});

/** Holds the lock Postgres's fold of the monthly counts tries (see `postgresLedgerRollup`) until the returned client ends. */
async function holdPostgresFoldLock(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query("select pg_advisory_lock(hashtextextended('report-sync:report_loads_monthly:fold', 0))");
  return client;
}
