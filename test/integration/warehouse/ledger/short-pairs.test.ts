import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eachIsoDate } from '../../../../src/dates/report-date.js';
import { planMissingSlices } from '../../../../src/planning/plan-missing-slices.js';
import type { ReportType } from '../../../../src/reports/report-types.js';
import { planSlices, type SliceRange } from '../../../../src/slice/slice-range.js';
import { sliceKey, type Slice } from '../../../../src/slice/slice.js';
import { SLICE_STATUSES, type SliceStatus } from '../../../../src/warehouse/engine/warehouse-schema.js';
import { Ledger } from '../../../../src/warehouse/ledger/ledger.js';
import { ledgerRow } from '../../../helpers/ledger-row.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

/*
 * `backfill --only-missing` plans, a month at a time, the slices the ledger lacks as loaded or
 * no_data: the pairs the counts show short, and of them only the days of those with some are read.
 * What it finds must be what looking every slice of the range up in the ledger finds.
 */

const PORTFOLIOS = [1003, 1001, 1002];
const REPORT_TYPES: ReportType[] = ['index', 'constituent.close'];
const DONE: readonly SliceStatus[] = ['loaded', 'no_data'];
const MARCH: SliceRange = { from: '2024-03-01', to: '2024-03-31', portfolios: PORTFOLIOS, reportTypes: REPORT_TYPES };
const SEEDED = { from: '2024-02-01', to: '2024-04-30' };

/**
 * The seeded ledger, February to April: 1003 complete; 1001's constituent.close failed on
 * 15 March; 1002's index never attempted after 10 March; 1002's constituent.close never attempted.
 */
function seeded(portfolioId: number, reportType: string, date: string): SliceStatus | undefined {
  if (date < SEEDED.from || date > SEEDED.to) return undefined;
  if (portfolioId === 1002 && reportType === 'constituent.close') return undefined;
  if (portfolioId === 1002 && reportType === 'index' && date > '2024-03-10') return undefined;
  if (portfolioId === 1001 && reportType === 'constituent.close' && date === '2024-03-15') return 'failed';
  return date.endsWith('6') ? 'no_data' : 'loaded';
}

/** The slices of the range the seeded ledger lacks with one of `done`, found slice by slice. */
function lacking(range: SliceRange, done: readonly SliceStatus[] = DONE): string[] {
  return [...planSlices(range)].filter((slice) => !done.includes(seeded(slice.portfolioId, slice.reportType, slice.reportDate)!)).map(sliceKey);
}

async function collect(slices: AsyncIterable<Slice>): Promise<string[]> {
  const keys: string[] = [];
  for await (const slice of slices) keys.push(sliceKey(slice));
  return keys;
}

/** Records the parameters of every query that reads `report_loads` itself (not its monthly counts). */
class LedgerReads implements KyselyPlugin {
  readonly reads: unknown[][] = [];

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const text = JSON.stringify(args.node);
    if (args.node.kind === 'SelectQueryNode' && text.includes('"report_loads"')) this.reads.push(collectValues(args.node));
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

/** Every value a query node holds, in order. */
function collectValues(node: unknown): unknown[] {
  if (Array.isArray(node)) return node.flatMap(collectValues);
  if (typeof node !== 'object' || node === null) return [];
  const record = node as Record<string, unknown>;
  if (record.kind === 'ValueNode') return [record.value];
  if (record.kind === 'PrimitiveValueListNode') return record.values as unknown[];
  return Object.values(record).flatMap(collectValues);
}

describe.each(DIALECTS)('the pairs the ledger is short of, and the missing slices planned from them, on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeAll(async () => {
    warehouse = await createTempWarehouse(dialect);
    const rows = [];
    for (const date of eachIsoDate(SEEDED.from, SEEDED.to)) {
      for (const portfolioId of PORTFOLIOS) {
        for (const reportType of REPORT_TYPES) {
          const status = seeded(portfolioId, reportType, date);
          if (status) rows.push(ledgerRow(portfolioId, reportType, date, status));
        }
      }
    }
    for (let i = 0; i < rows.length; i += 200)
      await warehouse.db
        .insertInto('report_loads')
        .values(rows.slice(i, i + 200))
        .execute();
  });
  afterAll(async () => {
    await warehouse.close();
  });

  it('leaves out a complete pair, reads only the pairs with some days, and counts a failed slice as missing', async () => {
    const plugin = new LedgerReads();
    const ledger = new Ledger({ db: warehouse.db.withPlugin(plugin), engine: warehouse.engine });
    const short = await ledger.shortPairs(MARCH, { status: DONE });
    expect(short.pairs).toEqual([
      { portfolioId: 1001, reportType: 'constituent.close' },
      { portfolioId: 1002, reportType: 'index' },
      { portfolioId: 1002, reportType: 'constituent.close' },
    ]);
    const slice = (portfolioId: number, reportType: ReportType, reportDate: string) => ({ portfolioId, reportType, reportDate });
    expect(short.lacks(slice(1001, 'constituent.close', '2024-03-15'))).toBe(true);
    expect(short.lacks(slice(1001, 'constituent.close', '2024-03-14'))).toBe(false);
    expect(short.lacks(slice(1002, 'index', '2024-03-10'))).toBe(false);
    expect(short.lacks(slice(1002, 'index', '2024-03-11'))).toBe(true);
    expect(short.lacks(slice(1002, 'constituent.close', '2024-03-01'))).toBe(true);
    expect(short.lacks(slice(1001, 'index', '2024-03-15'))).toBe(false);
    expect(short.lacks(slice(1003, 'constituent.close', '2024-03-31'))).toBe(false);
    // A whole month is counted from the monthly counts: the ledger's rows are read once, for the
    // pairs with some days (1001 and 1002); 1003 is complete and 1002's constituent.close has none.
    expect(plugin.reads).toHaveLength(1);
    expect(plugin.reads[0]).toEqual(expect.arrayContaining([1001, 1002, 'index', 'constituent.close']));
    expect(plugin.reads[0]).not.toContain(1003);
  });

  it('counts a failed slice as done when asked to, leaving only the slices never attempted', async () => {
    const short = await new Ledger(warehouse).shortPairs(MARCH, { status: SLICE_STATUSES });
    expect(short.pairs).toEqual([
      { portfolioId: 1002, reportType: 'index' },
      { portfolioId: 1002, reportType: 'constituent.close' },
    ]);
    expect(short.lacks({ portfolioId: 1001, reportType: 'constituent.close', reportDate: '2024-03-15' })).toBe(false);
  });

  it('finds no pair short where the ledger has every day, and every pair short where it has none, reading no row for either', async () => {
    const plugin = new LedgerReads();
    const ledger = new Ledger({ db: warehouse.db.withPlugin(plugin), engine: warehouse.engine });
    const complete = await ledger.shortPairs({ ...MARCH, portfolios: [1003] }, { status: DONE });
    expect(complete.pairs).toEqual([]);
    const empty = await ledger.shortPairs({ ...MARCH, from: '2024-06-01', to: '2024-06-30' }, { status: DONE });
    expect(empty.pairs).toHaveLength(PORTFOLIOS.length * REPORT_TYPES.length);
    expect(empty.lacks({ portfolioId: 1003, reportType: 'index', reportDate: '2024-06-17' })).toBe(true);
    expect(plugin.reads).toEqual([]);
  });

  it('answers a window that cuts months in half, and one inside a month, as the ledger has them', async () => {
    const ledger = new Ledger(warehouse);
    for (const window of [
      { ...MARCH, from: '2024-02-20', to: '2024-03-12' },
      { ...MARCH, from: '2024-03-05', to: '2024-03-20' },
      { ...MARCH, from: '2024-03-20', to: '2024-04-10' },
    ]) {
      const short = await ledger.shortPairs(window, { status: DONE });
      expect([...planSlices(window)].filter((slice) => short.lacks(slice)).map(sliceKey)).toEqual(lacking(window));
      expect(short.pairs.length).toBeLessThan(PORTFOLIOS.length * REPORT_TYPES.length);
    }
    // Only 15 March of 1001's constituent.close failed: outside it, that pair is not short.
    const before = await ledger.shortPairs({ ...MARCH, from: '2024-02-20', to: '2024-03-12' }, { status: DONE });
    expect(before.pairs).not.toContainEqual({ portfolioId: 1001, reportType: 'constituent.close' });
  });

  it('reads the days of many short pairs a few portfolios a query, missing none', async () => {
    // 100 portfolios each short of one day of March: more than one query's worth of slices.
    const many: SliceRange = { ...MARCH, portfolios: Array.from({ length: 100 }, (_, i) => 2001 + i) };
    const failedOn = (portfolioId: number) => `2024-03-${String(1 + (portfolioId % 31)).padStart(2, '0')}`;
    const rows = [...planSlices(many)].map((slice) =>
      ledgerRow(slice.portfolioId, slice.reportType, slice.reportDate, slice.reportDate === failedOn(slice.portfolioId) ? 'failed' : 'loaded'),
    );
    for (let i = 0; i < rows.length; i += 200)
      await warehouse.db
        .insertInto('report_loads')
        .values(rows.slice(i, i + 200))
        .execute();
    const plugin = new LedgerReads();
    const short = await new Ledger({ db: warehouse.db.withPlugin(plugin), engine: warehouse.engine }).shortPairs(many, { status: DONE });
    expect(short.pairs).toHaveLength(200);
    expect(plugin.reads.length).toBeGreaterThan(1);
    const failed = [...planSlices(many)].filter((slice) => slice.reportDate === failedOn(slice.portfolioId));
    expect(failed).toHaveLength(200);
    expect([...planSlices(many)].filter((slice) => short.lacks(slice))).toEqual(failed);
  });

  it('plans every missing slice of a range that cuts months, in the range’s order', async () => {
    const range: SliceRange = { ...MARCH, from: '2024-01-20', to: '2024-05-05' };
    expect(await collect(planMissingSlices(range, new Ledger(warehouse)))).toEqual(lacking(range));
    expect(await collect(planMissingSlices(range, new Ledger(warehouse), { done: SLICE_STATUSES }))).toEqual(lacking(range, SLICE_STATUSES));
  });

  it('plans every slice, in order, where the ledger has none of the range', async () => {
    const range: SliceRange = { ...MARCH, from: '2023-11-15', to: '2024-01-10' };
    expect(await collect(planMissingSlices(range, new Ledger(warehouse)))).toEqual([...planSlices(range)].map(sliceKey));
  });
});
