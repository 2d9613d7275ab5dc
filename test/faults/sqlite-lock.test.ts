import { afterEach, describe, expect, it } from 'vitest';
import type { ReportType } from '../../src/reports/report-types.js';
import { lazySyntheticReport } from '../../src/simulator/synthetic-reports.js';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { holdSqliteLock } from '../helpers/hold-sqlite-lock.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { until } from '../helpers/until.js';
import { loggedErrorMessage } from '../helpers/logged-error.js';

/*
 * Another process holds the SQLite warehouse's write lock (BEGIN EXCLUSIVE). The loader waits
 * warehouse.busyTimeoutMs, gets SQLITE_BUSY, which is WAREHOUSE_UNAVAILABLE (retryable), and the
 * slice is retried with backoff. The lock is tried every few milliseconds with the event loop free
 * (better-sqlite3's own busy wait would block the process); slices queued behind the one waiting
 * each wait their own busy timeout in turn, as SQLite admits one writer.
 */

const PORTFOLIOS = [1001, 1002];
const REPORT_TYPES: ReportType[] = ['index', 'constituent.close'];

/** Rows the simulator serves for the slices of these weekdays. */
function servedRows(dates: string[]) {
  const rows = { index: 0, constituent: 0 };
  for (const date of dates)
    for (const portfolioId of PORTFOLIOS)
      for (const reportType of REPORT_TYPES) {
        const count = lazySyntheticReport({ portfolioId, reportType, reportDate: date }).rowCount;
        if (reportType === 'index') rows.index += count;
        else rows.constituent += count;
      }
  return rows;
}

async function warehouseCounts(rig: SyncRig) {
  return countWarehouse((await rig.warehouse()).db);
}

describe('SQLite warehouse locked by another process', () => {
  let rig: SyncRig | undefined;
  let lock: Awaited<ReturnType<typeof holdSqliteLock>> | undefined;
  afterEach(async () => {
    await lock?.release();
    await rig?.close();
    rig = lock = undefined;
  });

  it('waits the busy timeout, retries with backoff, and loads every slice once the lock is released', async () => {
    rig = await startSyncRig({
      settings: { warehouse: { busyTimeoutMs: 300 }, retry: { attempts: 8, baseDelayMs: 100, maxDelayMs: 400 } },
    });
    expect((await rig.cli(['migrate'])).code).toBe(0);
    // Released only once the run has met it: 1.5 s after the first download, its write has waited
    // the busy timeout at least once, however slow a busy machine was to start the run.
    lock = await holdSqliteLock(rig.databaseUrl.slice('sqlite:'.length), 60_000);
    const { simulator } = rig;
    const running = rig.cli(['run', '--from', '2024-01-01', '--to', '2024-01-02']);
    await until(() => simulator.counters.exportRequests > 0, 20_000, 'the run to download its first slice');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const releasedAt = Date.now();
    await lock.release();
    const result = await running;
    const finishedAt = Date.now();
    expect(await lock.released).toBe(0);

    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/loaded\s+8/);
    expect(result.stdout).toMatch(/failed\s+0/);
    // It finished after the lock was gone, having waited rather than given up.
    expect(finishedAt).toBeGreaterThanOrEqual(releasedAt);
    const retries = result.logLines.filter((line) => line.msg === 'attempt failed, will retry');
    expect(retries.length).toBeGreaterThan(0);
    for (const line of retries) {
      expect(line).toMatchObject({ code: 'WAREHOUSE_UNAVAILABLE' });
      expect(loggedErrorMessage(line)).toContain('SQLITE_BUSY');
      // Each attempt waited the busy timeout before giving up.
      expect(Number(line.durationMs)).toBeGreaterThanOrEqual(290);
    }

    const served = servedRows(['2024-01-01', '2024-01-02']);
    const counts = await warehouseCounts(rig);
    expect(counts).toMatchObject({ index: served.index, constituent: served.constituent, ledger: 8 });
    expect(counts.ledgerRowCount).toBe(served.index + served.constituent);
    expect(counts.retried).toBeGreaterThan(0);
  });

  it('a lock held past every attempt fails the slices with a clear error, saying the ledger could not record it', async () => {
    rig = await startSyncRig({
      settings: { warehouse: { busyTimeoutMs: 100 }, retry: { attempts: 3, baseDelayMs: 20, maxDelayMs: 50 } },
    });
    expect((await rig.cli(['migrate'])).code).toBe(0);
    lock = await holdSqliteLock(rig.databaseUrl.slice('sqlite:'.length), 60_000);
    const result = await rig.cli(['run', '--from', '2024-01-02', '--to', '2024-01-02']);

    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/failed\s+4/);
    // Grouped: one code, two portfolios of two slices, the reason once per group.
    expect(result.stdout).toContain('WAREHOUSE_UNAVAILABLE: 4 slices');
    expect(result.stdout).toContain('portfolio 1001: 2 slices, e.g. constituent.close 2024-01-02, index 2024-01-02');
    const failures = result.stdout.split('\n').filter((line) => line.startsWith('      WAREHOUSE_UNAVAILABLE: '));
    expect(failures).toHaveLength(2);
    for (const line of failures) {
      expect(line).toContain('WAREHOUSE_UNAVAILABLE: warehouse unavailable while loading');
      expect(line).toContain('database is locked (SQLITE_BUSY)');
      // The ledger is locked too: the console must not leave the operator believing it holds the failure.
      expect(line).toContain('this failure is NOT in the ledger');
      expect(line).toContain('re-run it');
    }
    const unrecorded = result.logLines.filter((line) => line.msg === 'could not record the failure in the ledger');
    expect(unrecorded).toHaveLength(4);
    expect(result.logLines.filter((line) => line.msg === 'slice failed')).toHaveLength(4);

    await lock.release();
    lock = undefined;
    // Nothing was written while locked: no half-loaded slice, no ledger row.
    expect(await warehouseCounts(rig)).toMatchObject({ index: 0, constituent: 0, ledger: 0 });
    const status = await rig.cli(['status', '--from', '2024-01-02', '--to', '2024-01-02', '--json']);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('"missing"');

    // Once the lock is gone, running again loads exactly what the simulator serves.
    const again = await rig.cli(['run', '--from', '2024-01-02', '--to', '2024-01-02']);
    expect(again.code).toBe(0);
    const served = servedRows(['2024-01-02']);
    expect(await warehouseCounts(rig)).toMatchObject({ index: served.index, constituent: served.constituent, ledger: 4, retried: 0 });
  });
});
