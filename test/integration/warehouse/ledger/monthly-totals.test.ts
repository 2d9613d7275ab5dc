import { sql, type KyselyPlugin, type QueryId } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Ledger, type LedgerFilter } from '../../../../src/warehouse/ledger/ledger.js';
import { foldMonthlyCounts } from '../../../../src/warehouse/mysql/fold-monthly-counts.js';
import { openWarehouse } from '../../../../src/warehouse/open-warehouse.js';
import { migrateWarehouse } from '../../../../src/warehouse/schema/migrate-warehouse.js';
import { ledgerRow } from '../../../helpers/ledger-row.js';
import { createTempWarehouse } from '../../../helpers/temp-warehouse.js';

/*
 * MySQL's monthly totals (migration 0009): the folded monthly counts summed over every portfolio
 * per month, report type and status, kept by triggers on report_loads_monthly as folds move its
 * rows. `check`'s count per month reads them, with the rows not yet folded, whenever it asks of
 * every portfolio held; it must give what counting the ledger gives, folded or not, whoever folds.
 */

/** countByMonth as counting the ledger's rows gives it. */
async function monthsCounted(warehouse: Awaited<ReturnType<typeof createTempWarehouse>>, filter: LedgerFilter): Promise<string[]> {
  const rows = await warehouse.db.selectFrom('report_loads').select(['portfolio_id', 'report_type', 'report_date', 'status']).execute();
  const counts = new Map<string, number>();
  for (const row of rows) {
    const date = String(row.report_date);
    if (date < filter.from || date > filter.to) continue;
    if (filter.portfolios && !filter.portfolios.includes(Number(row.portfolio_id))) continue;
    if (filter.reportTypes && !filter.reportTypes.includes(row.report_type as never)) continue;
    const key = `${date.slice(0, 7)}-01 ${row.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([key, slices]) => `${key} ${slices}`).sort();
}

/** The totals as stored, without the rows that net to nought. */
async function storedTotals(warehouse: Awaited<ReturnType<typeof createTempWarehouse>>): Promise<string[]> {
  const { rows } = await sql<{ month: string; report_type: string; status: string; slices: number | string }>`
    select date_format(month, '%Y-%m-%d') as month, report_type, status, slices from report_loads_monthly_totals where slices <> 0
    order by month, report_type, status`.execute(warehouse.db);
  return rows.map((row) => `${row.month} ${row.report_type} ${row.status} ${Number(row.slices)}`);
}

/** Ledger rows of `portfolios` × two report types, every other day of 2024's first five months, in rotating statuses. */
function ledgerRows(portfolios: readonly number[]) {
  const statuses = ['loaded', 'no_data', 'loaded', 'failed'] as const;
  const rows = [];
  for (const portfolioId of portfolios) {
    for (const reportType of ['index', 'constituent.close']) {
      for (let day = 0; day < 150; day += 2) {
        const date = new Date(Date.UTC(2024, 0, 1 + day)).toISOString().slice(0, 10);
        rows.push(ledgerRow(portfolioId, reportType, date, statuses[(portfolioId + day) % statuses.length]!));
      }
    }
  }
  return rows;
}

const PORTFOLIOS = [1001, 1002, 1003];

/**
 * Every portfolio held asked, or most of them (the totals answer, less the portfolios not asked),
 * or fewer than half (their own monthly counts answer), over whole months, partial months and one
 * report type.
 */
const FILTERS: readonly LedgerFilter[] = [
  { from: '2024-01-01', to: '2024-12-31', portfolios: PORTFOLIOS },
  { from: '2024-02-01', to: '2024-04-30', portfolios: PORTFOLIOS, reportTypes: ['constituent.close'] },
  { from: '2024-01-15', to: '2024-05-10', portfolios: [...PORTFOLIOS, 1999] },
  { from: '2024-03-01', to: '2024-03-31' },
  { from: '2024-01-01', to: '2024-05-31', portfolios: [1003, 1001] },
  { from: '2024-02-01', to: '2024-03-31', portfolios: [1002, 1003, 1999], reportTypes: ['index'] },
  { from: '2024-01-01', to: '2024-05-31', portfolios: [1002] },
];

describe('the monthly totals of a MySQL ledger', () => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse('mysql');
  });
  afterEach(async () => {
    await warehouse.close();
  });

  const fold = () => warehouse.db.connection().execute(foldMonthlyCounts);

  async function expectCountsAsCounted(): Promise<void> {
    const ledger = new Ledger(warehouse);
    for (const filter of FILTERS) {
      const answer = (await ledger.countByMonth(filter)).map((count) => `${count.month} ${count.status} ${count.slices}`);
      expect(answer, JSON.stringify(filter)).toEqual(await monthsCounted(warehouse, filter));
    }
    expect(await ledger.monthlyTotalDifferences({ from: '2024-01-01', to: '2024-12-31' })).toEqual([]);
  }

  it('answer countByMonth as counting the ledger does, before, between and after folds, and after changes by hand', async () => {
    await warehouse.db.insertInto('report_loads').values(ledgerRows(PORTFOLIOS)).execute();
    // Nothing folded yet: every count is a pending row, and the totals are empty.
    expect(await storedTotals(warehouse)).toEqual([]);
    await expectCountsAsCounted();
    while ((await fold()) > 0);
    expect(await storedTotals(warehouse)).toContain('2024-03-01 index loaded 16');
    await expectCountsAsCounted();
    // Changes after the fold: pending again until the next, summed with the totals meanwhile.
    await warehouse.db.updateTable('report_loads').set({ status: 'failed' }).where('report_date', '=', '2024-03-03').execute();
    await warehouse.db.deleteFrom('report_loads').where('portfolio_id', '=', 1002).where('report_date', '>=', '2024-04-01').execute();
    await expectCountsAsCounted();
    while ((await fold()) > 0);
    await expectCountsAsCounted();
    // The monthly counts rebuilt by hand as the warehouse docs say: the totals follow the rows deleted and folded.
    await sql`delete from report_loads_monthly`.execute(warehouse.db);
    expect(await storedTotals(warehouse)).toEqual([]);
    await sql`insert into report_loads_monthly (month, portfolio_id, report_type, status, slices)
      select date_format(report_date, '%Y-%m-01'), portfolio_id, report_type, status, count(*) from report_loads group by 1, 2, 3, 4`.execute(warehouse.db);
    await expectCountsAsCounted();
    while ((await fold()) > 0);
    await expectCountsAsCounted();
  });

  it('never give a reader a count a fold is moving: a fold that commits right after each statement of the read changes no answer', async () => {
    // 120 portfolios × 2 report types × 5 months: 1,200 keys, folded 1,000 at most, so two folds a round.
    const portfolios = Array.from({ length: 120 }, (_, i) => 2001 + i);
    const rows = ledgerRows(portfolios);
    // A statement takes at most 65,535 placeholders.
    for (let at = 0; at < rows.length; at += 2_000)
      await warehouse.db
        .insertInto('report_loads')
        .values(rows.slice(at, at + 2_000))
        .execute();
    // Every portfolio asked, and all but a tenth (their counts taken out of the totals in the same statement).
    const filters: LedgerFilter[] = [
      { from: '2024-01-01', to: '2024-05-31', portfolios },
      { from: '2024-01-01', to: '2024-05-31', portfolios: portfolios.slice(12) },
    ];
    const expected = await Promise.all(filters.map(async (filter) => (await monthsCounted(warehouse, filter)).join(', ')));
    const folder = await openWarehouse(warehouse.databaseUrl);
    try {
      // After every statement of the read that asks the totals, a fold on another connection
      // commits before the read goes on: a read asking the totals and the pending rows in two
      // statements would miss the rows that fold moved between them.
      let keysFolded = 0;
      const asksTotals = new WeakSet<QueryId>();
      const foldAfterTotals: KyselyPlugin = {
        transformQuery: (args) => {
          if (JSON.stringify(args.node).includes('report_loads_monthly_totals')) asksTotals.add(args.queryId);
          return args.node;
        },
        transformResult: async (args) => {
          if (asksTotals.has(args.queryId)) keysFolded += await folder.db.connection().execute(foldMonthlyCounts);
          return args.result;
        },
      };
      const ledger = new Ledger({ db: warehouse.db.withPlugin(foldAfterTotals), engine: warehouse.engine });
      const answers: string[] = [];
      for (let round = 0; round < 2; round += 1) {
        // Every key pending again: each slice's status changed and changed back.
        await sql`update report_loads set error_code = concat('WAS ', status), status = 'failed' where status <> 'failed'`.execute(warehouse.db);
        await sql`update report_loads set status = substr(error_code, 5), error_code = null where error_code like 'WAS %'`.execute(warehouse.db);
        const before = keysFolded;
        // Two reads with a fold after each, a third after the last fold.
        for (let read = 0; read < 3; read += 1) {
          for (const filter of filters) answers.push((await ledger.countByMonth(filter)).map((count) => `${count.month} ${count.status} ${count.slices}`).join(', '));
        }
        expect(keysFolded - before).toBe(1_200);
      }
      expect(answers).toEqual(Array.from({ length: 6 }, () => expected).flat());
    } finally {
      await folder.close();
    }
  });

  it('are said by check --deep when changed by hand or left behind by a TRUNCATE', async () => {
    await warehouse.db.insertInto('report_loads').values(ledgerRows(PORTFOLIOS)).execute();
    while ((await fold()) > 0);
    const ledger = new Ledger(warehouse);
    const range = { from: '2024-02-10', to: '2024-04-30' };
    expect(await ledger.monthlyTotalDifferences(range)).toEqual([]);
    await sql`update report_loads_monthly_totals set slices = slices + 2 where month = '2024-03-01' and report_type = 'index' and status = 'loaded'`.execute(warehouse.db);
    // February is partial: a change there is outside the whole months compared.
    await sql`update report_loads_monthly_totals set slices = 0 where month = '2024-02-01'`.execute(warehouse.db);
    expect(await ledger.monthlyTotalDifferences(range)).toEqual([{ month: '2024-03-01', reportType: 'index', status: 'loaded', total: 18, folded: 16 }]);
    expect(await ledger.monthlyTotalDifferences({ ...range, reportTypes: ['constituent.close'] })).toEqual([]);
    // TRUNCATE fires no trigger: the totals keep what the emptied rows held.
    await sql`truncate table report_loads_monthly`.execute(warehouse.db);
    const left = await ledger.monthlyTotalDifferences(range);
    expect(left.map((difference) => `${difference.month} ${difference.reportType} ${difference.status} ${difference.folded}`)).toEqual([
      '2024-03-01 constituent.close failed 0',
      '2024-03-01 constituent.close loaded 0',
      '2024-03-01 constituent.close no_data 0',
      '2024-03-01 index failed 0',
      '2024-03-01 index loaded 0',
      '2024-03-01 index no_data 0',
      '2024-04-01 constituent.close failed 0',
      '2024-04-01 constituent.close loaded 0',
      '2024-04-01 constituent.close no_data 0',
      '2024-04-01 index failed 0',
      '2024-04-01 index loaded 0',
      '2024-04-01 index no_data 0',
    ]);
  });

  it('are filled by the migration from the folded counts (read from the monthly counts until then), and a run of it cut short is done again whole', async () => {
    await warehouse.db.insertInto('report_loads').values(ledgerRows(PORTFOLIOS)).execute();
    while ((await fold()) > 0);
    // Changed since the last fold: pending rows, which the migration leaves to the readers.
    await warehouse.db.deleteFrom('report_loads').where('portfolio_id', '=', 1003).where('report_type', '=', 'index').execute();
    const before = await storedTotals(warehouse);
    // What a warehouse of the release before had: no totals, no triggers on the monthly counts.
    await sql`delete from kysely_migration where name = '0009-monthly-totals'`.execute(warehouse.db);
    for (const name of ['insert', 'update', 'delete']) await sql.raw(`drop trigger report_loads_monthly_totals_${name}`).execute(warehouse.db);
    await sql`drop table report_loads_monthly_totals`.execute(warehouse.db);
    // Read before `migrate` (a read-only command after an upgrade): counted from the monthly counts.
    await expectCountsAsCounted();
    const reopened = await openWarehouse(warehouse.databaseUrl);
    try {
      expect((await migrateWarehouse(reopened)).applied).toEqual(['0009-monthly-totals']);
      expect(await storedTotals(warehouse)).toEqual(before);
      await expectCountsAsCounted();
      // Cut short after the totals were filled, before its triggers: run again, it fills them
      // again from nothing rather than adding to what is there.
      await sql`delete from kysely_migration where name = '0009-monthly-totals'`.execute(warehouse.db);
      await sql`drop trigger report_loads_monthly_totals_delete`.execute(warehouse.db);
      expect((await migrateWarehouse(reopened)).applied).toEqual(['0009-monthly-totals']);
      expect(await storedTotals(warehouse)).toEqual(before);
      while ((await fold()) > 0);
      await expectCountsAsCounted();
    } finally {
      await reopened.close();
    }
  });

  it('wait for a fold that holds its lock before they are filled, and refuse with the way out when it is never let go', async () => {
    await sql`delete from kysely_migration where name = '0009-monthly-totals'`.execute(warehouse.db);
    const holder = await openWarehouse(warehouse.databaseUrl);
    try {
      await holder.db.connection().execute(async (connection) => {
        await sql`select get_lock('report-sync:report_loads_monthly:fold', 0)`.execute(connection);
        const started = performance.now();
        const failure = await migrateWarehouse(warehouse).then(
          () => undefined,
          (error: unknown) => error as Error,
        );
        expect(performance.now() - started).toBeGreaterThan(4_500);
        expect(failure?.message).toMatch(
          /held the lock report-sync:report_loads_monthly:fold for 5 s.*select is_used_lock\('report-sync:report_loads_monthly:fold'\).*run report-sync migrate again/,
        );
        // A fold of a few milliseconds: the migration waits for it and goes on.
        setTimeout(() => void sql`do release_lock('report-sync:report_loads_monthly:fold')`.execute(connection), 300);
        expect((await migrateWarehouse(warehouse)).applied).toEqual(['0009-monthly-totals']);
      });
    } finally {
      await holder.close();
    }
  }, 30_000);
});
