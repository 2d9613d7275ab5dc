import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SliceCheckResult } from '../../../../src/quality/slice-check-result.js';
import type { Slice } from '../../../../src/slice/slice.js';
import { Ledger } from '../../../../src/warehouse/ledger/ledger.js';
import { ledgerRow } from '../../../helpers/ledger-row.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

describe.each(DIALECTS)('LedgerWriter.readWithPrevious on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
    await warehouse.db
      .insertInto('report_loads')
      .values([
        { ...ledgerRow(1001, 'index', '2024-03-01', 'loaded'), row_count: 40 },
        ledgerRow(1001, 'index', '2024-03-04', 'failed'),
        ledgerRow(1001, 'index', '2024-03-05', 'no_data'),
        ledgerRow(1001, 'index', '2024-03-06', 'failed'),
        { ...ledgerRow(1001, 'index', '2024-03-07', 'loaded'), row_count: 42 },
        // Other portfolios and report types are not its history.
        ledgerRow(1002, 'index', '2024-03-05', 'loaded'),
        ledgerRow(1001, 'constituent.close', '2024-03-05', 'loaded'),
      ])
      .execute();
  });
  afterEach(async () => {
    await warehouse.close();
  });

  const slice = (reportDate: string): Slice => ({ portfolioId: 1001, reportType: 'index', reportDate });

  it.each([
    ['2024-03-06', 'failed', { reportDate: '2024-03-01', rowCount: 40 }],
    ['2024-03-07', 'loaded', { reportDate: '2024-03-01', rowCount: 40 }],
    ['2024-03-08', undefined, { reportDate: '2024-03-07', rowCount: 42 }],
    ['2024-03-01', 'loaded', undefined],
    ['2024-02-29', undefined, undefined],
  ])('for %s: the slice’s own row (%s) and the latest loaded date before it, as read and previousLoad give them apart', async (date, status, previous) => {
    const writer = new Ledger(warehouse).writer;
    const together = await writer.readWithPrevious(warehouse.db, slice(date));
    expect(together.row?.status).toBe(status);
    expect(together.previous).toEqual(previous);
    const row = await writer.read(warehouse.db, slice(date));
    expect(together.row).toEqual(row && { report_date: row.report_date, status: row.status, row_count: row.row_count, content_sha256: row.content_sha256 });
    expect(together.previous).toEqual(await writer.previousLoad(warehouse.db, slice(date)));
  });
});

describe.each(DIALECTS)('LedgerWriter’s per-slice writes on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  const result = (check: SliceCheckResult['check'], outcome: SliceCheckResult['outcome'], measured: number): SliceCheckResult => ({
    check,
    severity: 'fail',
    outcome,
    measured,
    threshold: measured + 1,
    message: `${check}: ${outcome}`,
  });
  const checksOf = async (slice: Slice) =>
    (
      await warehouse.db
        .selectFrom('slice_checks')
        .select(['check_name', 'severity', 'outcome', 'measured', 'threshold', 'message', 'checked_at'])
        .where('portfolio_id', '=', slice.portfolioId)
        .where('report_date', '=', slice.reportDate)
        .orderBy('check_name')
        .execute()
    ).map((row) => ({ ...row, measured: Number(row.measured), threshold: Number(row.threshold), checked_at: new Date(String(row.checked_at)).toISOString() }));

  it('records a load with every fact in its column, and a touch moves only checked_at, attempts and duration_ms', async () => {
    const writer = new Ledger(warehouse).writer;
    const slice: Slice = { portfolioId: 1003, reportType: 'index', reportDate: '2024-03-07' };
    const file = { format: 'json' as const, fileName: 'f.json', bytes: 120, sha256: 'ab'.repeat(32) };
    await writer.recordLoaded(
      warehouse.db,
      { slice, now: '2024-03-07T10:00:00.000Z', attempts: 2, durationMs: 15 },
      { file, rowCount: 50, loadId: '0b6f3f7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b' },
    );
    const loaded = {
      portfolio_id: 1003,
      report_type: 'index',
      report_date: '2024-03-07',
      status: 'loaded',
      row_count: 50,
      format: 'json',
      file_name: 'f.json',
      bytes: 120,
      content_sha256: file.sha256,
      attempts: 2,
      error: null,
      error_code: null,
      first_loaded_at: '2024-03-07T10:00:00.000Z',
      updated_at: '2024-03-07T10:00:00.000Z',
      checked_at: '2024-03-07T10:00:00.000Z',
      duration_ms: 15,
      load_id: '0b6f3f7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b',
      loaded_at: '2024-03-07T10:00:00.000Z',
    };
    const row = async () => {
      const found = await new Ledger(warehouse).row(slice);
      return found && { ...found, row_count: Number(found.row_count), bytes: Number(found.bytes), report_date: String(found.report_date) };
    };
    expect(await row()).toMatchObject(loaded);
    await writer.touch(warehouse.db, { slice, now: '2024-03-08T09:00:00.000Z', attempts: 1, durationMs: 7 });
    expect(await row()).toMatchObject({ ...loaded, checked_at: '2024-03-08T09:00:00.000Z', attempts: 1, duration_ms: 7 });
  });

  it('writes each result to its own row, for each slice, and replaces them with the next file’s (of another count)', async () => {
    const writer = new Ledger(warehouse).writer;
    const first: Slice = { portfolioId: 1001, reportType: 'index', reportDate: '2024-03-04' };
    const second: Slice = { portfolioId: 1002, reportType: 'index', reportDate: '2024-03-05' };
    const three = [result('rowCountDrop', 'pass', 0.1), result('effectiveDate', 'fail', 2), result('positiveValues', 'pass', 0)];
    await writer.recordChecks(warehouse.db, { slice: first, now: '2024-03-04T10:00:00.000Z' }, three, { replace: false });
    await writer.recordChecks(warehouse.db, { slice: second, now: '2024-03-05T10:00:00.000Z' }, three.slice(1), { replace: false });
    const expected = (results: readonly SliceCheckResult[], now: string) =>
      results.map(({ check, ...rest }) => ({ check_name: check, ...rest, checked_at: now })).sort((a, b) => a.check_name.localeCompare(b.check_name));
    expect(await checksOf(first)).toEqual(expected(three, '2024-03-04T10:00:00.000Z'));
    expect(await checksOf(second)).toEqual(expected(three.slice(1), '2024-03-05T10:00:00.000Z'));

    const one = [result('rowCountDrop', 'fail', 0.5)];
    await writer.recordChecks(warehouse.db, { slice: first, now: '2024-03-06T10:00:00.000Z' }, one);
    expect(await checksOf(first)).toEqual(expected(one, '2024-03-06T10:00:00.000Z'));
    expect(await checksOf(second)).toEqual(expected(three.slice(1), '2024-03-05T10:00:00.000Z'));
  });
});
