import { sql, type Kysely, Migrator } from 'kysely';
import { parse } from 'lossless-json';
import { afterEach, describe, expect, it } from 'vitest';
import { constituentReport } from '../../../../src/reports/constituent-report.js';
import { migrateWarehouse } from '../../../../src/warehouse/schema/migrate-warehouse.js';
import { createTables } from '../../../../src/warehouse/schema/migrations/0001-create-tables.js';
import { ledgerErrorCode } from '../../../../src/warehouse/schema/migrations/0002-ledger-error-code.js';
import { indexReportLineNumber } from '../../../../src/warehouse/schema/migrations/0003-index-report-line-number.js';
import { ledgerDuration } from '../../../../src/warehouse/schema/migrations/0004-ledger-duration.js';
import { openWarehouse, type WarehouseDialect } from '../../../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../../../src/warehouse/engine/warehouse-engine.js';
import { SliceLoader } from '../../../../src/warehouse/loading/slice-loader.js';
import { createTempDatabase, DIALECTS, migrationNamesFrom } from '../../../helpers/temp-warehouse.js';

/*
 * Migration 0005 (lineage, jsonb extra, indexes, views) on a warehouse the current release made
 * (migrations 0001–0004) and filled: every row and ledger row is still there with the same values,
 * `extra` answers JSON queries, and each loaded slice has a load_id its rows share.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SHA = (char: string) => char.repeat(64);

/** The ledger as release 0004 wrote it: two loaded slices, one failed after a load (its rows kept), one no_data, one never loaded. */
const LEDGER = [
  ledger(1001, 'index', '2024-03-04', 'loaded', { row_count: 2, content_sha256: SHA('a'), file_name: 'index-2024-03-04.json', format: 'json', bytes: 812 }),
  ledger(1001, 'constituent.close', '2024-03-04', 'loaded', { row_count: 3, content_sha256: SHA('b'), file_name: 'close-2024-03-04.zip', format: 'csv', bytes: 2048 }),
  ledger(1001, 'constituent.close', '2024-03-05', 'failed', {
    row_count: 1,
    content_sha256: SHA('c'),
    file_name: 'close-2024-03-05.zip',
    format: 'csv',
    bytes: 999,
    error: 'EXPORT_FORBIDDEN: 403 for portfolio 1001',
    error_code: 'EXPORT_FORBIDDEN',
  }),
  ledger(1001, 'constituent.close', '2024-03-06', 'no_data', { format: 'csv', bytes: 0 }),
  ledger(1002, 'index', '2024-03-04', 'failed', { error: 'FILE_INVALID: not JSON', error_code: 'FILE_INVALID' }),
];

/** `extra` as the row builder wrote it: nested objects, a list, exact decimals (trailing zero, more digits than a double). */
const RICH_EXTRA = '{"indexType":"total return","weights":{"equity":0.60,"bond":0.40},"tags":["core","esg"],"precise":12345678901234567890.123456789012,"flag":true,"none":null}';
/** Text the old `text` column took that jsonb refuses (\u0000 in a string): kept whole, as a JSON string in Postgres. */
const NUL_EXTRA = '{"Note":"before\\u0000after"}';

const INDEX_ROWS = [indexRow(1001, '2024-03-04', 1, 'IDX1', '1234.567890123456789', RICH_EXTRA), indexRow(1001, '2024-03-04', 2, 'IDX2', '99.10', null)];
const CONSTITUENT_ROWS = [
  constituentRow(1001, '2024-03-04', 1, 'XS0000000001', '10.25', '{"Sector Code":"A1","Lot":100}'),
  constituentRow(1001, '2024-03-04', 2, 'XS0000000002', '0.000000000000000000012345', null),
  constituentRow(1001, '2024-03-04', 3, 'XS0000000003', '123.456789012345678', NUL_EXTRA),
  constituentRow(1001, '2024-03-05', 1, 'XS0000000001', '11.5', '{"Sector Code":"A1"}'),
  // Rows no ledger row describes (written behind the ledger's back): kept, with no load.
  constituentRow(1003, '2024-03-04', 1, 'XS0000000009', '1', '{"Sector Code":"Z9"}'),
];

function ledger(portfolioId: number, reportType: string, reportDate: string, status: string, facts: Record<string, unknown> = {}) {
  return {
    portfolio_id: portfolioId,
    report_type: reportType,
    report_date: reportDate,
    status,
    row_count: 0,
    format: null,
    file_name: null,
    bytes: null,
    content_sha256: null,
    attempts: 2,
    error: null,
    error_code: null,
    first_loaded_at: status === 'loaded' || facts.content_sha256 ? '2024-03-04T18:00:00.000Z' : null,
    updated_at: '2024-03-05T18:30:00.000Z',
    checked_at: '2024-03-06T18:30:00.000Z',
    duration_ms: 1234,
    ...facts,
  };
}

function indexRow(portfolioId: number, reportDate: string, line: number, indexId: string, value: string, extra: string | null) {
  return {
    portfolio_id: portfolioId,
    report_date: reportDate,
    line_number: line,
    effective_date: reportDate,
    index_id: indexId,
    index_name: `Index ${indexId}`,
    index_value: value,
    currency: 'EUR',
    close_market_value: '1000000.00',
    open_market_value: null,
    close_divisor: '12.000001',
    open_divisor: null,
    extra,
  };
}

function constituentRow(portfolioId: number, reportDate: string, line: number, isin: string, price: string, extra: string | null) {
  return {
    portfolio_id: portfolioId,
    report_type: 'constituent.close',
    report_date: reportDate,
    line_number: line,
    effective_date: reportDate,
    isin,
    security_name: `Security ${isin}`,
    security_ticker: null,
    exchange_code: 'XLON',
    closing_price: price,
    currency: 'GBP',
    closing_fx: '1',
    index_shares: '2500',
    index_weighting: '0.00012345678901234567',
    extra,
  };
}

type Row = Record<string, unknown>;

async function everything(db: Kysely<unknown>): Promise<{ index: Row[]; constituents: Row[]; ledger: Row[] }> {
  const index = await sql<Row>`select * from index_report order by portfolio_id, report_date, line_number`.execute(db);
  const constituents = await sql<Row>`select * from constituent_report order by portfolio_id, report_type, report_date, line_number`.execute(db);
  const ledgerRows = await sql<Row>`select * from report_loads order by portfolio_id, report_type, report_date`.execute(db);
  return { index: index.rows, constituents: constituents.rows, ledger: ledgerRows.rows };
}

function without(row: Row, ...columns: string[]): Row {
  return Object.fromEntries(Object.entries(row).filter(([column]) => !columns.includes(column)));
}

/** A warehouse as the current release (migrations 0001–0004) leaves it, holding the rows above. */
async function currentReleaseWarehouse(dialect: WarehouseDialect): Promise<{ warehouse: WarehouseHandle; drop: () => Promise<void> }> {
  const database = await createTempDatabase(dialect);
  const warehouse = await openWarehouse(database.databaseUrl);
  const release = new Migrator({
    db: warehouse.db,
    provider: {
      getMigrations: async () => ({
        '0001-create-tables': createTables(warehouse.engine.migrations),
        '0002-ledger-error-code': ledgerErrorCode(),
        '0003-index-report-line-number': indexReportLineNumber(warehouse.engine.migrations),
        '0004-ledger-duration': ledgerDuration(),
      }),
    },
  });
  expect((await release.migrateToLatest()).error).toBeUndefined();
  const db = warehouse.db as unknown as Kysely<Record<string, Row>>;
  await db.insertInto('report_loads').values(LEDGER).execute();
  await db.insertInto('index_report').values(INDEX_ROWS).execute();
  await db.insertInto('constituent_report').values(CONSTITUENT_ROWS).execute();
  return { warehouse, drop: database.drop };
}

describe.each(DIALECTS)('migrating a warehouse of the current release to lineage and analytics-ready tables (%s)', (dialect) => {
  let warehouse: WarehouseHandle | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await warehouse?.close();
    await drop?.();
    warehouse = drop = undefined;
  });

  it('loses nothing, gives each loaded slice a load_id its rows share, and makes extra queryable as JSON', async () => {
    ({ warehouse, drop } = await currentReleaseWarehouse(dialect));
    const db = warehouse.db as unknown as Kysely<unknown>;
    const before = await everything(db);
    expect(before.index).toHaveLength(INDEX_ROWS.length);
    expect(before.constituents).toHaveLength(CONSTITUENT_ROWS.length);

    expect((await migrateWarehouse(warehouse)).applied).toEqual(migrationNamesFrom('0005-lineage-and-analytics'));
    const after = await everything(db);

    // The ledger: every row, every value it had; a load_id where it describes rows the warehouse holds.
    expect(after.ledger.map((row) => without(row, 'load_id', 'loaded_at'))).toEqual(before.ledger);
    const ledgerBySlice = new Map(after.ledger.map((row) => [`${row.portfolio_id} ${row.report_type} ${row.report_date}`, row]));
    const loadOf = (slice: string) => ledgerBySlice.get(slice)!.load_id as string | null;
    expect(after.ledger.map((row) => [row.status, row.row_count, typeof row.load_id === 'string' && UUID.test(row.load_id), row.loaded_at])).toEqual([
      ['loaded', 3, true, '2024-03-05T18:30:00.000Z'],
      // Failed after a load: the rows are that load's, but when it wrote them the ledger no longer knows.
      ['failed', 1, true, null],
      ['no_data', 0, false, null],
      ['loaded', 2, true, '2024-03-05T18:30:00.000Z'],
      ['failed', 0, false, null],
    ]);
    const loadIds = after.ledger.map((row) => row.load_id).filter((id) => id !== null);
    expect(new Set(loadIds).size).toBe(3);

    // The report rows: every one, every value; extra the same JSON (every digit), load_id their slice's.
    const same = (rows: Row[]) => rows.map((row) => without(row, 'extra', 'load_id'));
    expect(same(after.index)).toEqual(same(before.index));
    expect(same(after.constituents)).toEqual(same(before.constituents));
    expect(after.index.map((row) => row.load_id)).toEqual([loadOf('1001 index 2024-03-04'), loadOf('1001 index 2024-03-04')]);
    expect(after.constituents.map((row) => row.load_id)).toEqual([
      loadOf('1001 constituent.close 2024-03-04'),
      loadOf('1001 constituent.close 2024-03-04'),
      loadOf('1001 constituent.close 2024-03-04'),
      loadOf('1001 constituent.close 2024-03-05'),
      null,
    ]);
    const json = (text: unknown) => (text === null ? null : parse(String(text)));
    const keptWhole = (row: Row) => row.extra === NUL_EXTRA || (dialect === 'postgres' && json(row.extra) === NUL_EXTRA);
    expect(after.index.map((row) => json(row.extra))).toEqual(before.index.map((row) => json(row.extra)));
    expect(after.constituents.filter((row) => !keptWhole(row)).map((row) => json(row.extra))).toEqual(
      before.constituents.filter((row) => row.extra !== NUL_EXTRA).map((row) => json(row.extra)),
    );
    expect(after.constituents.filter(keptWhole)).toHaveLength(1);

    // An analyst's JSON questions, in each dialect's words.
    if (dialect === 'postgres') {
      const { rows } = await sql<Row>`
        select extra ->> 'indexType' as index_type, extra -> 'weights' ->> 'equity' as equity, extra ->> 'precise' as precise,
          (extra ->> 'precise')::numeric * 10 as scaled, jsonb_typeof(extra) as type, extra -> 'tags' ->> 1 as second_tag
        from index_report where index_id = 'IDX1'`.execute(db);
      expect(rows).toEqual([
        {
          index_type: 'total return',
          equity: '0.60',
          precise: '12345678901234567890.123456789012',
          scaled: '123456789012345678901.234567890120',
          type: 'object',
          second_tag: 'esg',
        },
      ]);
      const nul = await sql<Row>`select jsonb_typeof(extra) as type, extra #>> '{}' as text from constituent_report where isin = 'XS0000000003'`.execute(db);
      expect(nul.rows).toEqual([{ type: 'string', text: NUL_EXTRA }]);
      const sector = await sql<Row>`select count(*)::int as rows from constituent_report where extra @> '{"Sector Code": "A1"}'`.execute(db);
      expect(sector.rows).toEqual([{ rows: 2 }]);
    } else if (dialect === 'mysql') {
      // MariaDB's JSON is the text as written, so a decimal in it keeps every digit.
      const { rows } = await sql<Row>`
        select json_unquote(json_extract(extra, '$.indexType')) as index_type, json_extract(extra, '$.weights.equity') as equity,
          json_unquote(json_extract(extra, '$.precise')) as precise, json_unquote(json_extract(extra, '$.tags[1]')) as second_tag,
          json_type(extra) as type
        from index_report where index_id = 'IDX1'`.execute(db);
      expect(rows).toEqual([{ index_type: 'total return', equity: '0.60', precise: '12345678901234567890.123456789012', second_tag: 'esg', type: 'OBJECT' }]);
      const nul = await sql<Row>`select json_unquote(json_extract(extra, '$.Note')) as note from constituent_report where isin = 'XS0000000003'`.execute(db);
      expect(nul.rows).toEqual([{ note: 'before\u0000after' }]);
      const sector = await sql<Row>`select count(*) as \`rows\` from constituent_report where json_unquote(json_extract(extra, '$."Sector Code"')) = 'A1'`.execute(db);
      expect(sector.rows).toEqual([{ rows: 2 }]);
    } else {
      const { rows } = await sql<Row>`
        select json_extract(extra, '$.indexType') as index_type, json_extract(extra, '$.weights.equity') as equity,
          extra ->> 'indexType' as arrow, json_extract(extra, '$.tags[1]') as second_tag, json_type(extra, '$.precise') as precise_type
        from index_report where index_id = 'IDX1'`.execute(db);
      expect(rows).toEqual([{ index_type: 'total return', equity: 0.6, arrow: 'total return', second_tag: 'esg', precise_type: 'real' }]);
      const nul = await sql<Row>`select json_extract(extra, '$.Note') as note from constituent_report where isin = 'XS0000000003'`.execute(db);
      expect(nul.rows).toEqual([{ note: 'before\u0000after' }]);
      const sector = await sql<Row>`select count(*) as rows from constituent_report where json_extract(extra, '$."Sector Code"') = 'A1'`.execute(db);
      expect(sector.rows).toEqual([{ rows: 2 }]);
    }

    // The lineage question answers from the migrated rows, and the views from the migrated ledger.
    const lineage = await sql<Row>`
      select ledger.file_name, ledger.content_sha256 from constituent_report as report join report_loads as ledger on ledger.load_id = report.load_id
      where report.isin = 'XS0000000001' and report.report_date = '2024-03-05'`.execute(db);
    expect(lineage.rows).toEqual([{ file_name: 'close-2024-03-05.zip', content_sha256: SHA('c') }]);
    const latest = await sql<Row>`select portfolio_id, report_type, report_date, row_count, load_id from latest_loaded_day order by portfolio_id, report_type`.execute(db);
    expect(latest.rows).toEqual([
      { portfolio_id: 1001, report_type: 'constituent.close', report_date: '2024-03-04', row_count: 3, load_id: loadOf('1001 constituent.close 2024-03-04') },
      { portfolio_id: 1001, report_type: 'index', report_date: '2024-03-04', row_count: 2, load_id: loadOf('1001 index 2024-03-04') },
    ]);

    expect((await migrateWarehouse(warehouse)).applied).toEqual([]);
  });

  it('takes new loads afterwards: a restated slice replaces its migrated rows under a new load_id', async () => {
    ({ warehouse, drop } = await currentReleaseWarehouse(dialect));
    await migrateWarehouse(warehouse);
    const slice = { portfolioId: 1001, reportType: 'constituent.close' as const, reportDate: '2024-03-04' };
    const migratedLoad = await warehouse.db
      .selectFrom('report_loads')
      .select('load_id')
      .where('portfolio_id', '=', 1001)
      .where('report_type', '=', 'constituent.close')
      .where('report_date', '=', '2024-03-04')
      .executeTakeFirstOrThrow();
    const loader = new SliceLoader({ warehouse });
    const rows = (async function* () {
      yield { ...constituentRow(1001, '2024-03-04', 1, 'XS0000000004', '7.5', '{"Sector Code":"Q7","nested":{"a":[1,2.50]}}') };
    })();
    await loader.replaceRows({
      slice,
      definition: constituentReport,
      rows,
      file: { format: 'csv', fileName: 'close-2024-03-04-restated.zip', bytes: 100, sha256: SHA('d') },
      attempts: 1,
    });
    const ledgerRow = await warehouse.db
      .selectFrom('report_loads')
      .select(['load_id', 'loaded_at', 'file_name'])
      .where('portfolio_id', '=', 1001)
      .where('report_type', '=', 'constituent.close')
      .where('report_date', '=', '2024-03-04')
      .executeTakeFirstOrThrow();
    expect(ledgerRow.load_id).toMatch(UUID);
    expect(ledgerRow.load_id).not.toBe(migratedLoad.load_id);
    expect(ledgerRow.file_name).toBe('close-2024-03-04-restated.zip');
    const stored = await warehouse.db
      .selectFrom('constituent_report')
      .select(['isin', 'load_id', 'extra'])
      .where('portfolio_id', '=', 1001)
      .where('report_date', '=', '2024-03-04')
      .execute();
    expect(stored.map((row) => [row.isin, row.load_id])).toEqual([['XS0000000004', ledgerRow.load_id]]);
    expect(parse(stored[0]!.extra!)).toEqual(parse('{"Sector Code":"Q7","nested":{"a":[1,2.50]}}'));
  });
});
