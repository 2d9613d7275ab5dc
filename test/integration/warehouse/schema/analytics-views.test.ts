import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WarehouseRow } from '../../../../src/extract/row-builder.js';
import { constituentReport } from '../../../../src/reports/constituent-report.js';
import { indexReport } from '../../../../src/reports/index-report.js';
import type { ReportDefinition } from '../../../../src/reports/report-definition.js';
import type { ReportType } from '../../../../src/reports/report-types.js';
import type { WarehouseHandle } from '../../../../src/warehouse/engine/warehouse-engine.js';
import { SliceLoader } from '../../../../src/warehouse/loading/slice-loader.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

/*
 * The analyst's side of the warehouse: the views of each portfolio's latest loaded day, and the
 * indexes behind the common questions (one ISIN over time; one portfolio's latest day; a row's load).
 */

type Row = Record<string, unknown>;

function constituent(portfolioId: number, reportDate: string, line: number, isin: string, price: string): WarehouseRow {
  return {
    portfolio_id: portfolioId,
    report_type: 'constituent.close',
    report_date: reportDate,
    line_number: line,
    effective_date: reportDate,
    isin,
    security_name: null,
    security_ticker: null,
    exchange_code: null,
    closing_price: price,
    currency: 'USD',
    closing_fx: null,
    index_shares: null,
    index_weighting: null,
    extra: `{"Lot":${line}}`,
  };
}

function index(portfolioId: number, reportDate: string, line: number, indexId: string): WarehouseRow {
  return {
    portfolio_id: portfolioId,
    report_date: reportDate,
    line_number: line,
    effective_date: reportDate,
    index_id: indexId,
    index_name: null,
    index_value: '100.5',
    currency: 'USD',
    close_market_value: null,
    open_market_value: null,
    close_divisor: null,
    open_divisor: null,
    extra: null,
  };
}

describe.each(DIALECTS)('views and indexes for analysts (%s)', (dialect) => {
  let warehouse: WarehouseHandle;
  let db: Kysely<unknown>;
  const loadIds = new Map<string, string>();

  async function load(portfolioId: number, reportType: ReportType, reportDate: string, definition: ReportDefinition, rows: WarehouseRow[]): Promise<void> {
    const loader = new SliceLoader({ warehouse });
    await loader.replaceRows({
      slice: { portfolioId, reportType, reportDate },
      definition,
      rows: (async function* () {
        yield* rows;
      })(),
      file: { format: 'csv', fileName: `${portfolioId}-${reportType}-${reportDate}.zip`, bytes: 10, sha256: `${portfolioId}${reportDate}`.padEnd(64, '0') },
      attempts: 1,
    });
    const ledger = await warehouse.db
      .selectFrom('report_loads')
      .select('load_id')
      .where('portfolio_id', '=', portfolioId)
      .where('report_type', '=', reportType)
      .where('report_date', '=', reportDate)
      .executeTakeFirstOrThrow();
    loadIds.set(`${portfolioId} ${reportType} ${reportDate}`, ledger.load_id!);
  }

  beforeAll(async () => {
    warehouse = await createTempWarehouse(dialect);
    db = warehouse.db as unknown as Kysely<unknown>;
    const loader = new SliceLoader({ warehouse });
    // Portfolio 1: two loaded days, then a day loaded and later failed, a day that failed outright, a day of no data.
    await load(1, 'constituent.close', '2024-03-04', constituentReport, [constituent(1, '2024-03-04', 1, 'XS1', '10'), constituent(1, '2024-03-04', 2, 'XS2', '20')]);
    await load(1, 'constituent.close', '2024-03-05', constituentReport, [constituent(1, '2024-03-05', 1, 'XS1', '11'), constituent(1, '2024-03-05', 2, 'XS2', '21')]);
    await load(1, 'constituent.close', '2024-03-06', constituentReport, [constituent(1, '2024-03-06', 1, 'XS1', '12')]);
    await loader.recordFailure({ portfolioId: 1, reportType: 'constituent.close', reportDate: '2024-03-06' }, 'EXPORT_FORBIDDEN: 403', { attempts: 1 });
    await loader.recordFailure({ portfolioId: 1, reportType: 'constituent.close', reportDate: '2024-03-07' }, 'FILE_INVALID: not a ZIP', { attempts: 1 });
    await loader.recordNoData({ portfolioId: 1, reportType: 'constituent.close', reportDate: '2024-03-08' }, constituentReport, 'csv', 1);
    // Portfolio 2: one constituent day, and its index report a day later.
    await load(2, 'constituent.close', '2024-03-04', constituentReport, [constituent(2, '2024-03-04', 1, 'XS1', '30')]);
    await load(2, 'index', '2024-03-05', indexReport, [index(2, '2024-03-05', 1, 'IDX'), index(2, '2024-03-05', 2, 'IDX2')]);
  });
  afterAll(async () => {
    await warehouse?.close();
  });

  it('latest_loaded_day: per portfolio and report type, the latest day whose status is loaded (failed and no_data days after it do not count)', async () => {
    const { rows } = await sql<Row>`
      select portfolio_id, report_type, report_date, row_count, load_id, file_name, format, content_sha256, loaded_at
      from latest_loaded_day order by portfolio_id, report_type`.execute(db);
    expect(rows.map((row) => [row.portfolio_id, row.report_type, row.report_date, row.row_count, row.load_id, row.file_name])).toEqual([
      [1, 'constituent.close', '2024-03-05', 2, loadIds.get('1 constituent.close 2024-03-05'), '1-constituent.close-2024-03-05.zip'],
      [2, 'constituent.close', '2024-03-04', 1, loadIds.get('2 constituent.close 2024-03-04'), '2-constituent.close-2024-03-04.zip'],
      [2, 'index', '2024-03-05', 2, loadIds.get('2 index 2024-03-05'), '2-index-2024-03-05.zip'],
    ]);
    for (const row of rows) expect(Number.isNaN(Date.parse(String(row.loaded_at)))).toBe(false);
  });

  it('latest_constituent_report and latest_index_report: the rows of those days, with their load_id', async () => {
    const constituents = await sql<Row>`select portfolio_id, report_date, isin, closing_price, load_id from latest_constituent_report order by portfolio_id, line_number`.execute(
      db,
    );
    expect(constituents.rows.map((row) => [row.portfolio_id, row.report_date, row.isin, Number(row.closing_price), row.load_id])).toEqual([
      [1, '2024-03-05', 'XS1', 11, loadIds.get('1 constituent.close 2024-03-05')],
      [1, '2024-03-05', 'XS2', 21, loadIds.get('1 constituent.close 2024-03-05')],
      [2, '2024-03-04', 'XS1', 30, loadIds.get('2 constituent.close 2024-03-04')],
    ]);
    const indexes = await sql<Row>`select portfolio_id, report_date, index_id, load_id from latest_index_report order by line_number`.execute(db);
    expect(indexes.rows).toEqual([
      { portfolio_id: 2, report_date: '2024-03-05', index_id: 'IDX', load_id: loadIds.get('2 index 2024-03-05') },
      { portfolio_id: 2, report_date: '2024-03-05', index_id: 'IDX2', load_id: loadIds.get('2 index 2024-03-05') },
    ]);
  });

  it('answers one ISIN over time, and the rows of a day that failed after its load keep that load', async () => {
    const { rows } = await sql<Row>`
      select report.report_date, report.closing_price, ledger.status, ledger.file_name
      from constituent_report as report join report_loads as ledger on ledger.load_id = report.load_id
      where report.isin = 'XS1' and report.portfolio_id = 1 order by report.report_date`.execute(db);
    expect(rows.map((row) => [row.report_date, Number(row.closing_price), row.status, row.file_name])).toEqual([
      ['2024-03-04', 10, 'loaded', '1-constituent.close-2024-03-04.zip'],
      ['2024-03-05', 11, 'loaded', '1-constituent.close-2024-03-05.zip'],
      ['2024-03-06', 12, 'failed', '1-constituent.close-2024-03-06.zip'],
    ]);
  });

  it('has the indexes: load_id unique in the ledger, loaded slices by portfolio, type and date, ISIN by date', async () => {
    const names =
      dialect === 'sqlite'
        ? await sql<{ name: string }>`select name from sqlite_master where type = 'index' and name not like 'sqlite_autoindex%' order by name`.execute(db)
        : dialect === 'mysql'
          ? await sql<{ name: string }>`select distinct index_name as name from information_schema.statistics where table_schema = database() order by index_name`.execute(db)
          : await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = 'public' order by indexname`.execute(db);
    expect(names.rows.map((row) => row.name)).toEqual(expect.arrayContaining(['constituent_report_isin', 'report_loads_load_id', 'report_loads_loaded']));
    // Two loads can never share an id.
    await expect(
      sql`update report_loads set load_id = ${loadIds.get('2 index 2024-03-05')} where portfolio_id = 2 and report_type = 'constituent.close'`.execute(db),
    ).rejects.toThrow(/unique|duplicate/i);
  });

  it('plans the common questions on those indexes', async () => {
    if (dialect === 'postgres') {
      // Enough rows that an index beats reading the table: 200 ISINs × 100 days, 50 portfolios × 400 days.
      await sql`insert into constituent_report (portfolio_id, report_type, report_date, line_number, effective_date, isin, closing_price)
        select 9, 'constituent.close', date '2020-01-01' + day, isin, date '2020-01-01' + day, 'XB' || isin, 1
        from generate_series(1, 100) as day, generate_series(1, 200) as isin`.execute(db);
      await sql`insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, updated_at, checked_at)
        select portfolio, 'constituent.close', date '2019-01-01' + day, case when day % 5 = 0 then 'failed' else 'loaded' end, 0, 1, now(), now()
        from generate_series(100, 149) as portfolio, generate_series(1, 400) as day`.execute(db);
      await sql`analyze constituent_report`.execute(db);
      await sql`analyze report_loads`.execute(db);
    }
    if (dialect === 'mysql') {
      // The same rows as Postgres's, counted by recursive queries.
      await sql`insert into constituent_report (portfolio_id, report_type, report_date, line_number, effective_date, isin, closing_price)
        with recursive days(day) as (select 1 union all select day + 1 from days where day < 100),
          isins(isin) as (select 1 union all select isin + 1 from isins where isin < 200)
        select 9, 'constituent.close', date '2020-01-01' + interval day day, isin, date '2020-01-01' + interval day day, concat('XB', isin), 1 from days, isins`.execute(db);
      await sql`insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, updated_at, checked_at)
        with recursive days(day) as (select 1 union all select day + 1 from days where day < 400),
          portfolios(portfolio) as (select 100 union all select portfolio + 1 from portfolios where portfolio < 149)
        select portfolio, 'constituent.close', date '2019-01-01' + interval day day, case when day % 5 = 0 then 'failed' else 'loaded' end, 0, 1,
          '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z'
        from portfolios, days`.execute(db);
      await sql`analyze table constituent_report, report_loads`.execute(db);
    }
    const plan = async (query: ReturnType<typeof sql>): Promise<string> => {
      if (dialect === 'sqlite') {
        const { rows } = await sql<{ detail: string }>`explain query plan ${query}`.execute(db);
        return rows.map((row) => row.detail).join('\n');
      }
      if (dialect === 'mysql') {
        // One line per table read: its name, the index it reads it by, and how.
        const { rows } = await sql<{ table: string | null; key: string | null; Extra: string }>`explain ${query}`.execute(db);
        return rows.map((row) => `${row.table} ${row.key} ${row.Extra}`).join('\n');
      }
      const { rows } = await sql<{ 'QUERY PLAN': string }>`explain ${query}`.execute(db);
      return rows.map((row) => row['QUERY PLAN']).join('\n');
    };
    expect(await plan(sql`select report_date, closing_price from constituent_report where isin = 'XB17' order by report_date`)).toMatch(/constituent_report_isin/);
    // MySQL reads a MIN/MAX off the end of an index before running the query ("Select tables optimized
    // away"), which with the status filter only report_loads_loaded (status, portfolio_id, report_type,
    // report_date) can; and it reads a portfolio's latest day by the ledger's key, whose prefix is the portfolio.
    expect(await plan(sql`select max(report_date) from report_loads where portfolio_id = 120 and report_type = 'constituent.close' and status = 'loaded'`)).toMatch(
      dialect === 'mysql' ? /^null null Select tables optimized away$/ : /report_loads_loaded/,
    );
    expect(await plan(sql`select * from latest_loaded_day where portfolio_id = 120`)).toMatch(dialect === 'mysql' ? /^report_loads PRIMARY /m : /report_loads_loaded/);
    expect(
      await plan(sql`select ledger.file_name from constituent_report as report join report_loads as ledger on ledger.load_id = report.load_id
        where report.portfolio_id = 1 and report.report_type = 'constituent.close' and report.report_date = '2024-03-05' and report.isin = 'XS1'`),
    ).toMatch(/report_loads_load_id/);
  });
});
