import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReusableStatement } from '../../../../src/warehouse/engine/reusable-statement.js';
import type { ReportLoadsRow } from '../../../../src/warehouse/engine/warehouse-schema.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

type Key = Pick<ReportLoadsRow, 'portfolio_id' | 'report_type' | 'report_date'>;

const ROW: ReportLoadsRow = {
  portfolio_id: 1,
  report_type: 'index',
  report_date: '2024-03-01',
  status: 'loaded',
  row_count: 3,
  format: 'json',
  file_name: "it's; --.json",
  bytes: 10,
  content_sha256: 'abc',
  attempts: 1,
  error: null,
  error_code: null,
  first_loaded_at: '2024-03-02T00:00:00.000Z',
  updated_at: '2024-03-02T00:00:00.000Z',
  checked_at: '2024-03-02T00:00:00.000Z',
  duration_ms: null,
  load_id: null,
  loaded_at: null,
};

describe.each(DIALECTS)('ReusableStatement on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  it('runs again with new values, each where Kysely put it, whatever the order the values are given in', async () => {
    const { db } = warehouse;
    const insert = ReusableStatement.compile<ReportLoadsRow>(
      // Deliberately not in column order: the placeholders, not the order of names, decide where values go.
      [
        'checked_at',
        'report_date',
        'portfolio_id',
        'report_type',
        'status',
        'row_count',
        'format',
        'file_name',
        'bytes',
        'content_sha256',
        'attempts',
        'error',
        'first_loaded_at',
        'updated_at',
      ],
      (row) => db.insertInto('report_loads').values(row),
    );
    await db.executeQuery(insert.with(ROW));
    await db.executeQuery(insert.with({ ...ROW, portfolio_id: 2, file_name: null, status: 'no_data' }));

    const select = ReusableStatement.compile<Key>(['portfolio_id', 'report_type', 'report_date'], (key) =>
      db.selectFrom('report_loads').selectAll().where('report_date', '=', key.report_date).where('portfolio_id', '=', key.portfolio_id).where('report_type', '=', key.report_type),
    );
    const first = await db.executeQuery(select.with<ReportLoadsRow>({ portfolio_id: 1, report_type: 'index', report_date: '2024-03-01' }));
    expect(first.rows).toEqual([ROW]);
    const second = await db.executeQuery(select.with<ReportLoadsRow>({ portfolio_id: 2, report_type: 'index', report_date: '2024-03-01' }));
    expect(second.rows).toMatchObject([{ portfolio_id: 2, status: 'no_data', file_name: null }]);
    const none = await db.executeQuery(select.with({ portfolio_id: 1, report_type: 'index', report_date: '2024-03-04' }));
    expect(none.rows).toEqual([]);
  });

  it('keeps the values the statement itself holds as they were compiled', async () => {
    const { db } = warehouse;
    await db.insertInto('report_loads').values(ROW).execute();
    const fail = ReusableStatement.compile<Key & { error: string }>(['portfolio_id', 'report_type', 'report_date', 'error'], (values) =>
      db
        .updateTable('report_loads')
        .set({ status: 'failed', error: values.error })
        .where('portfolio_id', '=', values.portfolio_id)
        .where('report_type', '=', values.report_type)
        .where('report_date', '=', values.report_date),
    );
    await db.executeQuery(fail.with({ portfolio_id: 1, report_type: 'index', report_date: '2024-03-01', error: "E: '; drop table report_loads; --" }));
    const rows = await db.selectFrom('report_loads').select(['status', 'error']).execute();
    expect(rows).toEqual([{ status: 'failed', error: "E: '; drop table report_loads; --" }]);
  });
});
