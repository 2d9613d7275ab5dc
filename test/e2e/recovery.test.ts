import { afterEach, describe, expect, it } from 'vitest';
import { shiftIsoDate, todayIn } from '../../src/dates/report-date.js';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';
import { until } from '../helpers/until.js';

/*
 * Summaries that tell the truth, and recovery paths that work: counts come from what the slices
 * did (the ledger and the jobs), a re-run of finished work is re-checked rather than silently
 * dropped as a duplicate, failed slices are requested again when asked (and by the nightly), and
 * rows deleted behind the ledger's back come back.
 */

// 1 to 14 January 2024: 10 weekdays and 4 weekend days, × 2 portfolios × 2 report types.
const TWO_WEEKS = ['--from', '2024-01-01', '--to', '2024-01-14'];

describe('backfill --wait in queue mode', () => {
  let rig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('a second identical backfill re-checks every slice, says nothing needed doing, and exits 0', async () => {
    rig = await startQueueRig();
    const worker = rig.startWorker();
    await rig.ready(worker);
    const first = await rig.cli(['backfill', ...TWO_WEEKS, '--wait']);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/rows written/);

    const second = await rig.cli(['backfill', ...TWO_WEEKS, '--wait']);
    expect(second.code, second.stdout).toBe(0);
    expect(second.stdout).toContain('Queued 56 slices');
    expect(second.stdout).toContain('0 new; 56 again');
    expect(second.stdout).toContain('0 already waiting or running');
    expect(second.stdout).toMatch(/loaded\s+40\n/);
    expect(second.stdout).toMatch(/of which unchanged\s+40\n/);
    expect(second.stdout).toMatch(/no_data\s+16\n/);
    expect(second.stdout).toMatch(/not attempted\s+0\n/);
    expect(second.stdout).toMatch(/index_report\s+0\n/);
    expect(second.stdout).toContain('Nothing needed doing');
    expect(second.stdout).toContain('(40 loaded from the same file, 16 still without data)');
    // Every slice was asked for again: re-checked, not dropped as a duplicate of its finished job.
    expect(rig.simulator.counters.exportRequests).toBe(112);
  }, 60_000);

  it('counts retries from the ledger, and groups a failure with the command that re-queues it; --only-missing then requests it again', async () => {
    rig = await startQueueRig();
    rig.simulator.script(1001, 'index', '2024-01-02', [{ status: 500 }, { status: 503 }]);
    rig.simulator.script(1002, 'index', '2024-01-03', [{ status: 403, body: '{"error":"Forbidden"}' }]);
    const worker = rig.startWorker();
    await rig.ready(worker);
    const range = ['--from', '2024-01-01', '--to', '2024-01-05', '--report-types', 'index'];
    const first = await rig.cli(['backfill', ...range, '--wait']);
    expect(first.code).toBe(1);
    expect(first.stdout).toContain('2 retries');
    expect(first.stdout).toMatch(/loaded\s+9\n/);
    expect(first.stdout).toMatch(/failed\s+1\n/);
    expect(first.stdout).toContain('EXPORT_FORBIDDEN: 1 slice\n    portfolio 1002: 1 slice, e.g. index 2024-01-03\n');
    // The retry command is what the user copies: checked whole.
    expect(first.stdout).toContain('Retry them: report-sync backfill --from 2024-01-03 --to 2024-01-03 --portfolios 1002 --report-types index --only-missing');

    const before = rig.simulator.counters.exportRequests;
    const retried = await rig.cli(['backfill', '--from', '2024-01-03', '--to', '2024-01-03', '--portfolios', '1002', '--report-types', 'index', '--only-missing', '--wait']);
    expect(retried.code, retried.stdout).toBe(0);
    expect(retried.stdout).toContain('Queued 1 slice from');
    expect(retried.stdout).toContain('0 new; 1 again after their earlier job had finished');
    expect(rig.simulator.counters.exportRequests).toBe(before + 1);
    expect((await countWarehouse((await rig.warehouse()).db)).notDone).toBe(0);
  }, 60_000);

  it('the scheduled nightly requests a failed slice of its lookback again', async () => {
    rig = await startQueueRig({ settings: { schedule: { timeZone: 'UTC', lookbackDays: 2 } } });
    const failedDay = shiftIsoDate(todayIn('UTC'), -2);
    rig.simulator.script(1001, 'index', failedDay, [{ status: 403 }]);
    const worker = rig.startWorker();
    await rig.ready(worker);
    const first = await rig.cli(['backfill', '--from', failedDay, '--to', failedDay, '--portfolios', '1001', '--report-types', 'index', '--wait']);
    expect(first.code).toBe(1);
    const warehouse = await rig.warehouse();
    const statusOf = async () =>
      (
        await warehouse.db
          .selectFrom('report_loads')
          .select('status')
          .where('portfolio_id', '=', 1001)
          .where('report_type', '=', 'index')
          .where('report_date', '=', failedDay)
          .executeTakeFirst()
      )?.status;
    expect(await statusOf()).toBe('failed');

    const before = rig.simulator.counters.exportRequests;
    // What the job scheduler does at the cron time.
    await rig.cli(['scheduler']);
    await rig.promoteNightly();
    await until(async () => (await statusOf()) !== 'failed', 20_000, 'the failed slice to be requested again');
    expect(rig.simulator.counters.exportRequests).toBeGreaterThan(before);
    expect(worker.output()).toMatch(/"requeued":1/);
  }, 60_000);
});

describe.each(DIALECTS)('in-process recovery (%s)', (dialect) => {
  let rig: SyncRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('rows deleted behind the ledger are restored by a plain re-run of the unchanged file', async () => {
    rig = await startSyncRig({ dialect });
    const range = ['--from', '2024-03-04', '--to', '2024-03-05'];
    expect((await rig.cli(['run', ...range])).code).toBe(0);
    const warehouse = await rig.warehouse();
    const before = await countWarehouse(warehouse.db);
    await warehouse.db.deleteFrom('constituent_report').where('portfolio_id', '=', 1001).where('report_date', '=', '2024-03-04').execute();
    expect((await countWarehouse(warehouse.db)).constituent).toBeLessThan(before.constituent);

    const again = await rig.cli(['run', ...range]);
    expect(again.code).toBe(0);
    expect(await countWarehouse(warehouse.db)).toEqual(before);
    // The other seven slices were unchanged; the emptied one was loaded again, and said so.
    expect(again.stdout).toMatch(/of which unchanged\s+7\n/);
    expect(again.logLines.filter((line) => 'heldRows' in line)).toEqual([expect.objectContaining({ level: 40, heldRows: 0, ledgerRows: expect.any(Number) })]);
  });

  it('run --force loads unchanged files again; run --only-missing asks only for what is not loaded or no_data', async () => {
    rig = await startSyncRig({ dialect });
    const range = ['--from', '2024-03-04', '--to', '2024-03-10'];
    rig.simulator.script(1002, 'constituent.close', '2024-03-06', [{ status: 404 }]);
    expect((await rig.cli(['run', ...range])).code).toBe(1);

    const forced = await rig.cli(['run', '--from', '2024-03-04', '--to', '2024-03-04', '--force']);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toMatch(/of which unchanged\s+0\n/);
    expect(forced.stdout).toMatch(/constituent_report\s+50\n/);

    const before = rig.simulator.counters.exportRequests;
    const missing = await rig.cli(['run', ...range, '--only-missing']);
    expect(missing.code, missing.stdout).toBe(0);
    expect(missing.stdout).toContain('1 slice planned');
    expect(rig.simulator.counters.exportRequests).toBe(before + 1);
  });
});
