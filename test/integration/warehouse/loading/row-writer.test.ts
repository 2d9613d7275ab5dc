import { CompiledQuery } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileFormatError } from '../../../../src/errors/sync-error.js';
import { indexReport } from '../../../../src/reports/index-report.js';
import { rowColumns, type RowValues } from '../../../../src/extract/row-builder.js';
import { MysqlRowWriter } from '../../../../src/warehouse/mysql/mysql-row-writer.js';
import { MysqlSliceLock } from '../../../../src/warehouse/mysql/mysql-slice-lock.js';
import { PostgresRowWriter } from '../../../../src/warehouse/postgres/postgres-row-writer.js';
import { PostgresSliceLock } from '../../../../src/warehouse/postgres/postgres-slice-lock.js';
import { MAX_BATCH_CHARS } from '../../../../src/warehouse/loading/max-batch-chars.js';
import { SqliteRowWriter } from '../../../../src/warehouse/sqlite/sqlite-row-writer.js';
import { SqliteSliceLock } from '../../../../src/warehouse/sqlite/sqlite-slice-lock.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

const columns = rowColumns(indexReport);
const LOAD_ID = '0d9e3f4a-6b1c-4f2e-8a7d-5c3b2a1f0e9d';

/** An index_report row with `line` as its line number and the columns the table requires, NULL elsewhere. */
function values(line: number): RowValues {
  const row: Record<string, string | number | null> = {
    portfolio_id: 5,
    report_date: '2024-03-01',
    line_number: line,
    effective_date: '2024-03-01',
    index_id: `IDX${line}`,
  };
  return columns.map((column) => (column in row ? row[column]! : null));
}

async function* stream(count: number, failAt?: number): AsyncGenerator<RowValues> {
  for (let line = 1; line <= count; line += 1) {
    if (line === failAt) throw new FileFormatError(`bad record ${line}`);
    yield values(line);
  }
}

describe.each(DIALECTS)('the row writer openWarehouse chose on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  it('is the dialect’s own: multi-row INSERT for SQLite and MySQL, COPY for Postgres, with the matching slice lock', () => {
    const own = { sqlite: [SqliteRowWriter, SqliteSliceLock], postgres: [PostgresRowWriter, PostgresSliceLock], mysql: [MysqlRowWriter, MysqlSliceLock] }[dialect];
    expect(warehouse.engine.rowWriter).toBeInstanceOf(own[0]);
    expect(warehouse.sliceLock).toBeInstanceOf(own[1]);
  });

  it('writes every row in batches that leave a tail, inside the caller’s transaction, each with the load’s id, and counts them', async () => {
    const written = await warehouse.db.connection().execute(async (connection) => {
      await warehouse.sliceLock.begin(connection);
      const count = await warehouse.engine.rowWriter.write(connection, { definition: indexReport, rows: stream(7), batchRows: 3, loadId: LOAD_ID });
      await connection.executeQuery(CompiledQuery.raw('commit'));
      return count;
    });
    expect(written).toBe(7);
    const lines = await warehouse.db.selectFrom('index_report').select(['line_number', 'load_id']).orderBy('line_number').execute();
    expect(lines.map((row) => Number(row.line_number))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(lines.map((row) => row.load_id))).toEqual(new Set([LOAD_ID]));
  });

  it('ends with the error of a row that cannot be built, and the rollback leaves nothing', async () => {
    const error = await warehouse.db
      .connection()
      .execute(async (connection) => {
        await warehouse.sliceLock.begin(connection);
        try {
          return await warehouse.engine.rowWriter.write(connection, { definition: indexReport, rows: stream(9, 6), batchRows: 2, loadId: LOAD_ID });
        } finally {
          await connection.executeQuery(CompiledQuery.raw('rollback'));
        }
      })
      .catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(FileFormatError);
    expect(await warehouse.db.selectFrom('index_report').select('line_number').execute()).toEqual([]);
  });
});

describe('the SQLite row writer given long rows', () => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse('sqlite');
  });
  afterEach(async () => {
    await warehouse.close();
  });

  it('ends a batch at MAX_BATCH_CHARS of text, long before batchRows: rows near limits.maxRecordBytes are not held 500 at a time', async () => {
    const nameChars = 300_000;
    const perBatch = Math.ceil(MAX_BATCH_CHARS / nameChars);
    const aheadOfWrites: number[] = [];
    const written = await warehouse.db.connection().execute(async (connection) => {
      await warehouse.sliceLock.begin(connection);
      async function* longRows(): AsyncGenerator<RowValues> {
        for (let line = 1; line <= 20; line += 1) {
          const { rows } = await connection.executeQuery<{ n: number }>(CompiledQuery.raw('select count(*) as n from index_report'));
          aheadOfWrites.push(line - 1 - Number(rows[0]!.n));
          const row = values(line);
          row[columns.indexOf('index_name')] = 'n'.repeat(nameChars);
          yield row;
        }
      }
      const count = await warehouse.engine.rowWriter.write(connection, { definition: indexReport, rows: longRows(), batchRows: 500, loadId: LOAD_ID });
      await connection.executeQuery(CompiledQuery.raw('commit'));
      return count;
    });
    expect(written).toBe(20);
    // Rows handed over but not yet written never exceed one batch of about MAX_BATCH_CHARS.
    expect(Math.max(...aheadOfWrites)).toBeLessThan(perBatch);
    const names = await warehouse.db
      .selectFrom('index_report')
      .select((eb) => eb.fn<number>('length', ['index_name']).as('length'))
      .execute();
    expect(names.map((row) => Number(row.length))).toEqual(new Array(20).fill(nameChars));
  });
});
