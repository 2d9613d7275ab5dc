import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syntheticReport } from '../../src/simulator/synthetic-reports.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';

// Monday 4 to Sunday 10 March 2024.
const FROM = '2024-03-04';
const TO = '2024-03-10';
const WEEKDAYS = ['2024-03-04', '2024-03-05', '2024-03-06', '2024-03-07', '2024-03-08'];

/** What the warehouse holds, minus the bookkeeping times, for before/after comparisons. */
async function snapshot(rig: SyncRig) {
  const warehouse = await rig.warehouse();
  const index = await sql`select * from index_report order by portfolio_id, report_date, index_id`.execute(warehouse.db);
  const constituents = await sql`select * from constituent_report order by portfolio_id, report_type, report_date, line_number`.execute(warehouse.db);
  const ledger = await sql`select portfolio_id, report_type, report_date, status, row_count, format, file_name, bytes, content_sha256, error, first_loaded_at, updated_at
    from report_loads order by portfolio_id, report_type, report_date`.execute(warehouse.db);
  return { index: index.rows, constituents: constituents.rows, ledger: ledger.rows };
}

describe.each(DIALECTS)('a week for two portfolios and two report types, in-process into %s', (dialect) => {
  let rig: SyncRig;
  beforeAll(async () => {
    rig = await startSyncRig({ dialect });
  });
  afterAll(async () => {
    await rig.close();
  });

  it('loads every weekday, records the weekend as no_data, and exits 0', async () => {
    const result = await rig.cli(['run', '--from', FROM, '--to', TO]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/loaded\s+20/);
    expect(result.stdout).toMatch(/no_data\s+8/);
    expect(result.stdout).toMatch(/failed\s+0/);

    const warehouse = await rig.warehouse();
    const ledger = await warehouse.db.selectFrom('report_loads').selectAll().execute();
    expect(ledger).toHaveLength(28);
    for (const entry of ledger) {
      const weekday = WEEKDAYS.includes(String(entry.report_date));
      expect(entry.status).toBe(weekday ? 'loaded' : 'no_data');
      expect(entry.attempts).toBe(1);
      if (weekday) {
        expect(entry.format).toBe(entry.report_type === 'index' ? 'json' : 'csv');
        expect(entry.file_name).toMatch(entry.report_type === 'index' ? /^2024-03-0\d_.+_index\.json$/ : /^2024-03-0\d_.+_index\.zip$/);
        expect(entry.content_sha256).toMatch(/^[0-9a-f]{64}$/);
      } else {
        expect(entry.row_count).toBe(0);
      }
    }
    // One JSON log line per slice outcome, with the fields an operator filters on.
    const outcomes = result.logLines.filter((line) => line.status === 'loaded' || line.status === 'no_data');
    expect(outcomes).toHaveLength(28);
    expect(outcomes[0]).toMatchObject({ portfolioId: expect.any(Number), reportType: expect.any(String), reportDate: expect.any(String), attempts: 1 });
    expect(outcomes[0]).toHaveProperty('durationMs');
    expect(outcomes[0]).toHaveProperty('bytes');
  });

  it('holds exactly the rows that were served, typed', async () => {
    const warehouse = await rig.warehouse();
    for (const portfolioId of [1001, 1002]) {
      for (const reportDate of WEEKDAYS) {
        const served = syntheticReport({ portfolioId, reportType: 'constituent.close', reportDate });
        const stored = await warehouse.db
          .selectFrom('constituent_report')
          .selectAll()
          .where('portfolio_id', '=', portfolioId)
          .where('report_date', '=', reportDate)
          .orderBy('line_number')
          .execute();
        expect(stored).toHaveLength(served.rows.length);
        served.rows.forEach((source, i) => {
          const row = stored[i]!;
          expect(row.line_number).toBe(i + 1);
          expect(row.isin).toBe(source.ISIN);
          expect(row.security_name).toBe(source['Security Name'] || null);
          expect(row.exchange_code).toBe(source['Exchange Code'] || null);
          expect(row.effective_date).toBe(source['Effective Date']);
          if (dialect === 'postgres') {
            // Postgres NUMERIC keeps every digit that was served.
            expect(row.closing_price).toBe(source['Closing Price']);
            expect(row.index_weighting).toBe(source['Index Weighting']);
            expect(row.index_shares).toBe(source['Index Shares']);
          } else {
            // SQLite keeps 15 significant digits of a decimal.
            expect(Number(row.closing_price)).toBeCloseTo(Number(source['Closing Price']), 6);
            expect(Number(row.index_weighting)).toBeCloseTo(Number(source['Index Weighting']), 9);
          }
        });

        const servedIndex = syntheticReport({ portfolioId, reportType: 'index', reportDate });
        const storedIndex = await warehouse.db.selectFrom('index_report').selectAll().where('portfolio_id', '=', portfolioId).where('report_date', '=', reportDate).execute();
        expect(storedIndex).toHaveLength(servedIndex.rows.length);
        for (const record of servedIndex.rows) {
          const row = storedIndex.find((candidate) => candidate.index_id === record.indexId)!;
          expect(row).toBeDefined();
          expect(row.index_name).toBe(record.indexName);
          if (dialect === 'postgres') expect(row.index_value).toBe(record.indexValue);
          else expect(Number(row.index_value)).toBeCloseTo(Number(record.indexValue), 6);
          // The fields after openDivisor that the spec does not list are kept in extra.
          const extra = JSON.parse(row.extra ?? '{}') as Record<string, unknown>;
          const listed = ['effectiveDate', 'indexId', 'indexName', 'indexValue', 'currency', 'closeMarketValue', 'openMarketValue', 'closeDivisor', 'openDivisor'];
          const unlisted = Object.keys(record).filter((key) => !listed.includes(key));
          expect(unlisted.length).toBeGreaterThan(0);
          expect(Object.keys(extra).sort()).toEqual(unlisted.sort());
        }
      }
    }
  });

  it('changes nothing when the same week is run again', async () => {
    const before = await snapshot(rig);
    const again = await rig.cli(['run', '--from', FROM, '--to', TO]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/of which unchanged\s+20/);
    const after = await snapshot(rig);
    expect(after).toEqual(before);
  });

  it('replaces a restated slice whole', async () => {
    rig.simulator.restate(1001, 'constituent.close', '2024-03-05');
    const result = await rig.cli(['run', '--from', '2024-03-05', '--to', '2024-03-05', '--portfolios', '1001', '--report-types', 'constituent.close']);
    expect(result.code).toBe(0);
    const restated = syntheticReport({ portfolioId: 1001, reportType: 'constituent.close', reportDate: '2024-03-05' }, { revision: 1 });
    const original = syntheticReport({ portfolioId: 1001, reportType: 'constituent.close', reportDate: '2024-03-05' });
    expect(restated.rows.length).not.toBe(original.rows.length);
    const warehouse = await rig.warehouse();
    const stored = await warehouse.db
      .selectFrom('constituent_report')
      .select(['line_number', 'isin', 'closing_price'])
      .where('portfolio_id', '=', 1001)
      .where('report_type', '=', 'constituent.close')
      .where('report_date', '=', '2024-03-05')
      .orderBy('line_number')
      .execute();
    expect(stored.map((row) => row.isin)).toEqual(restated.rows.map((row) => row.ISIN));
    const ledger = await warehouse.db
      .selectFrom('report_loads')
      .selectAll()
      .where('portfolio_id', '=', 1001)
      .where('report_type', '=', 'constituent.close')
      .where('report_date', '=', '2024-03-05')
      .executeTakeFirstOrThrow();
    expect(ledger.row_count).toBe(restated.rows.length);
  });

  it('reports per portfolio and report type in status, as text and JSON', async () => {
    const text = await rig.cli(['status', '--from', '2024-03-01', '--to', TO]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/1001\s+constituent\.close\s+5\s+2\s+0\s+3/);
    const json = await rig.cli(['status', '--from', '2024-03-01', '--to', TO, '--json']);
    const parsed = JSON.parse(json.stdout) as {
      days: number;
      pairs: { portfolioId: number; reportType: string; loaded: number; noData: number; failed: number; missing: number; warned: number }[];
    };
    expect(parsed.days).toBe(10);
    expect(parsed.pairs).toContainEqual({ portfolioId: 1002, reportType: 'index', loaded: 5, noData: 2, failed: 0, missing: 3, warned: 0 });
  });
});
