import { CompiledQuery, Kysely, MysqlDialect, sql } from 'kysely';
import mysql from 'mysql2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../../src/errors/sync-error.js';
import type { WarehouseRow } from '../../../../src/extract/row-builder.js';
import { constituentReport } from '../../../../src/reports/constituent-report.js';
import type { Warehouse } from '../../../../src/warehouse/engine/warehouse-schema.js';
import { SliceLoader } from '../../../../src/warehouse/loading/slice-loader.js';
import { TEMPORARY_TABLE_BYTES, sessionMysqlPool, strictModeRefusal } from '../../../../src/warehouse/mysql/session-mysql-pool.js';
import { mysqlTimestamp } from '../../../../src/warehouse/mysql/mysql-timestamp.js';
import { openWarehouse } from '../../../../src/warehouse/open-warehouse.js';
import { createTempWarehouse } from '../../../helpers/temp-warehouse.js';
import { constituentRow, LOADED_FILE, LOADED_SLICE, rowStream } from '../../../helpers/constituent-row.js';

/*
 * What the MySQL (MariaDB) warehouse keeps that the other two keep by other means: every digit of a
 * decimal, strict mode, and a slice lock that is the session's and so must be let go with each
 * transaction. The tests that run per dialect cover the rest.
 */

const slice = LOADED_SLICE;
const file = LOADED_FILE;

/** A row that carries text beyond ASCII and an exact decimal in `extra`. */
function row(line: number, price: string): WarehouseRow {
  return constituentRow(line, price, { effective_date: '2024-02-29', security_name: 'Société Générale 😀', extra: '{"note":1.10}' });
}

describe('the MySQL warehouse', () => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeAll(async () => {
    warehouse = await createTempWarehouse('mysql');
  });
  afterAll(async () => {
    await warehouse.close();
  });

  it('is what a mariadb:// URL opens too, the same database as its mysql:// spelling', async () => {
    const loader = new SliceLoader({ warehouse });
    await loader.replaceRows({ slice, definition: constituentReport, rows: rowStream(row(1, '1.5')), file, attempts: 1 });
    const same = await openWarehouse(warehouse.databaseUrl.replace(/^mysql:\/\//, 'mariadb://'));
    try {
      expect(same.engine.dialect).toBe('mysql');
      const rows = await same.db.selectFrom('constituent_report').select(['line_number', 'closing_price']).execute();
      expect(rows).toEqual([{ line_number: 1, closing_price: '1.5' }]);
    } finally {
      await same.close();
    }
    await warehouse.db.deleteFrom('constituent_report').execute();
    await warehouse.db.deleteFrom('report_loads').execute();
  });

  it('round-trips every one of 20 significant digits, dates as written and text as utf8mb4', async () => {
    const prices = ['1234.56789012345678901', '-0.00000000000000000012345', '12345678901234567890', '105.20697588613054211'];
    const loader = new SliceLoader({ warehouse });
    await loader.replaceRows({ slice, definition: constituentReport, rows: rowStream(...prices.map((price, i) => row(i + 1, price))), file, attempts: 1 });
    const stored = await warehouse.db
      .selectFrom('constituent_report')
      .select(['closing_price', 'report_date', 'effective_date', 'security_name', 'extra'])
      .orderBy('line_number')
      .execute();
    expect(stored.map((r) => r.closing_price)).toEqual(prices);
    expect(stored[0]).toMatchObject({ report_date: '2024-03-01', effective_date: '2024-02-29', security_name: 'Société Générale 😀', extra: '{"note":1.10}' });
    // The server holds the exact value, not a double near it: SQL compares and sums it exactly.
    const { rows: exact } = await sql<{ same: number; total: string }>`
      select sum(closing_price = 105.20697588613054211) as same, sum(closing_price) as total from constituent_report`.execute(warehouse.db);
    expect(Number(exact[0]!.same)).toBe(1);
    expect(exact[0]!.total).toBe('12345678901234569229.77486600958733111987655');
    const ledger = await warehouse.db.selectFrom('report_loads').select(['report_date', 'updated_at', 'bytes', 'row_count']).execute();
    expect(ledger[0]).toMatchObject({ report_date: '2024-03-01', bytes: 10, row_count: 4 });
    expect(ledger[0]!.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('stamps a clock read that falls on a whole second with .000, as the driver does not', async () => {
    // A statement with parameters goes over the binary protocol, which drops a fraction of zeros:
    // the slice lock reads the clock that way.
    const { rows } = await warehouse.db.executeQuery<{ at: string }>(CompiledQuery.raw('select cast(? as datetime(3)) as at', ['2026-11-27 22:10:02.000']));
    expect(rows[0]!.at).toBe('2026-11-27 22:10:02');
    expect(mysqlTimestamp(rows[0]!.at)).toBe('2026-11-27T22:10:02.000Z');
  });

  it('lets a session count into an in-memory temporary table larger than the server default, in UTC', async () => {
    const { rows } = await sql<{ heap: number | string; tmp: number | string; zone: string }>`
      select @@session.max_heap_table_size as heap, @@session.tmp_table_size as tmp, @@session.time_zone as zone`.execute(warehouse.db);
    expect({ ...rows[0], heap: Number(rows[0]!.heap), tmp: Number(rows[0]!.tmp) }).toEqual({
      heap: TEMPORARY_TABLE_BYTES,
      tmp: TEMPORARY_TABLE_BYTES,
      zone: '+00:00',
    });
    expect(TEMPORARY_TABLE_BYTES).toBeGreaterThan(16 * 1024 * 1024);
  });

  it('concatenates with ||, as SQLite and Postgres do, and stays strict', async () => {
    const { rows } = await sql<{ joined: string; mode: string }>`select 'constituent' || '.close' as joined, @@session.sql_mode as mode`.execute(warehouse.db);
    expect(rows[0]!.joined).toBe('constituent.close');
    expect(rows[0]!.mode.split(',')).toEqual(expect.arrayContaining(['PIPES_AS_CONCAT', 'STRICT_TRANS_TABLES']));
  });

  it('types every decimal column DECIMAL(65,30), and none DOUBLE', async () => {
    const { rows: columns } = await sql<{ table_name: string; column_name: string; column_type: string }>`
      select table_name, column_name, column_type from information_schema.columns
      where table_schema = database() and table_name in ('index_report', 'constituent_report')
        and (data_type in ('decimal', 'double', 'float') or column_name in ('closing_price', 'index_value', 'index_weighting'))`.execute(warehouse.db);
    expect(columns.length).toBe(9);
    for (const column of columns) expect(`${column.table_name}.${column.column_name} ${column.column_type}`).toMatch(/ decimal\(65,30\)$/);
  });

  it('keeps extra as JSON text, byte for byte, and refuses text that is no JSON', async () => {
    // MySQL 8's JSON type would keep 0.30000000000000004441 as the double 0.30000000000000004.
    const extra = '{"b": 0.30000000000000004441, "a": [1.10, "x"]}';
    const loader = new SliceLoader({ warehouse });
    const other = { ...slice, reportDate: '2024-03-04' };
    await loader.replaceRows({ slice: other, definition: constituentReport, rows: rowStream({ ...row(1, '1.5'), report_date: '2024-03-04', extra }), file, attempts: 1 });
    const stored = await warehouse.db.selectFrom('constituent_report').select('extra').where('report_date', '=', '2024-03-04').executeTakeFirstOrThrow();
    expect(stored.extra).toBe(extra);
    const { rows } = await sql<{ b: string }>`select json_unquote(json_extract(extra, '$.a[1]')) as b from constituent_report where report_date = '2024-03-04'`.execute(
      warehouse.db,
    );
    expect(rows[0]!.b).toBe('x');
    await expect(sql`update constituent_report set extra = '{"no json' where report_date = '2024-03-04'`.execute(warehouse.db)).rejects.toThrow(/constraint|check/i);
  });

  it('lets go of a slice’s lock when its transaction ends, so another session takes it at once', async () => {
    const other = await openWarehouse(warehouse.databaseUrl);
    try {
      await warehouse.db.connection().execute(async (mine) => {
        await other.db.connection().execute(async (theirs) => {
          await warehouse.sliceLock.begin(mine);
          expect(await warehouse.sliceLock.lock(mine, slice, true)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
          await other.sliceLock.begin(theirs);
          expect(await other.sliceLock.lock(theirs, slice, false)).toBeUndefined();
          // Another slice is not held.
          expect(await other.sliceLock.lock(theirs, { ...slice, reportDate: '2024-03-02' }, false)).toBeDefined();
          await sql`commit`.execute(mine);
          expect(await other.sliceLock.lock(theirs, slice, false)).toBeDefined();
          await sql`rollback`.execute(theirs);
          // Rolled back, theirs are free again too.
          await warehouse.sliceLock.begin(mine);
          expect(await warehouse.sliceLock.lock(mine, slice, false)).toBeDefined();
          await sql`rollback`.execute(mine);
        });
      });
    } finally {
      await other.close();
    }
  });
});

describe('strict SQL mode', () => {
  it('is what a session of the test server has: report-sync accepts it', async () => {
    const warehouse = await createTempWarehouse('mysql');
    try {
      const { rows } = await sql<{ mode: string }>`select @@session.sql_mode as mode`.execute(warehouse.db);
      expect(rows[0]!.mode).toMatch(/STRICT_(TRANS|ALL)_TABLES/);
      expect(strictModeRefusal(rows[0]!.mode, warehouse.location)).toBeUndefined();
    } finally {
      await warehouse.close();
    }
  });

  it('is required: a server whose sql_mode is not strict is refused at its first query, naming sql_mode', async () => {
    const warehouse = await createTempWarehouse('mysql');
    const url = new URL(warehouse.databaseUrl);
    const pool = mysql.createPool({ host: url.hostname, port: Number(url.port), user: url.username, database: url.pathname.slice(1) });
    // A server configured without strict mode, as far as this pool's sessions can tell.
    pool.on('connection', (connection) => connection.query("set session sql_mode = 'NO_ENGINE_SUBSTITUTION'"));
    const db = new Kysely<Warehouse>({ dialect: new MysqlDialect({ pool: sessionMysqlPool(pool, { location: 'the lax server', localFiles: false }) }) });
    try {
      const refusal = await sql`select 1`.execute(db).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refusal).toBeInstanceOf(ConfigError);
      expect((refusal as ConfigError).code).toBe('CONFIG_INVALID');
      expect((refusal as Error).message).toMatch(/^the warehouse at the lax server runs with sql_mode 'NO_ENGINE_SUBSTITUTION', which is not strict: .*Add STRICT_TRANS_TABLES/);
      // Nothing was written through it: the refusal came before the first statement.
      expect(strictModeRefusal('', 'x')?.message).toMatch(/sql_mode ''/);
      expect(strictModeRefusal('ONLY_FULL_GROUP_BY,STRICT_ALL_TABLES', 'x')).toBeUndefined();
    } finally {
      await db.destroy();
      await warehouse.close();
    }
  });
});
