import { afterEach, describe, expect, it } from 'vitest';
import { lazySyntheticReport } from '../../src/simulator/synthetic-reports.js';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { until } from '../helpers/until.js';

/*
 * Redis killed (SIGKILL) in the middle of a backfill and started again on the same port, with a
 * redis-server of the test's own (never the shared one). Workers and the waiting `backfill`
 * reconnect by themselves. What survives depends on Redis persistence:
 *  - with AOF (the production recommendation, as in docker-compose.yml) the queue survives and
 *    the backfill simply completes;
 *  - without persistence the queue is gone: `backfill --wait` reports the slices it never saw
 *    finish, and `backfill --only-missing` re-queues exactly those, which the reconnected
 *    workers then load.
 * Either way every slice ends loaded exactly once: no row twice, none missing.
 */

const PORTFOLIOS = Array.from({ length: 5 }, (_, i) => 1001 + i);
// 1 to 14 January 2024: 10 weekdays and 4 weekend days, × 5 portfolios × 2 report types.
const RANGE = ['--from', '2024-01-01', '--to', '2024-01-14', '--portfolios', PORTFOLIOS.join(',')];
const SLICES = 140;
const WEEKDAYS = ['01', '02', '03', '04', '05', '08', '09', '10', '11', '12'].map((day) => `2024-01-${day}`);

/** Rows the simulator serves for the range. */
function servedRows() {
  const rows = { index: 0, constituent: 0 };
  for (const date of WEEKDAYS)
    for (const portfolioId of PORTFOLIOS) {
      rows.index += lazySyntheticReport({ portfolioId, reportType: 'index', reportDate: date }).rowCount;
      rows.constituent += lazySyntheticReport({ portfolioId, reportType: 'constituent.close', reportDate: date }).rowCount;
    }
  return rows;
}

async function warehouseCounts(rig: QueueRig) {
  const { retried: _retried, ...counts } = await countWarehouse((await rig.warehouse()).db);
  return counts;
}

/** The counts once the ledger has not changed for a second (in-flight jobs done). */
async function settledCounts(rig: QueueRig) {
  let last = await warehouseCounts(rig);
  const deadline = Date.now() + 20_000;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const now = await warehouseCounts(rig);
    if (now.ledger === last.ledger || Date.now() > deadline) return now;
    last = now;
  }
}

describe('Redis restarted during a backfill', () => {
  let redis: PrivateRedis | undefined;
  let rig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    await redis?.destroy();
    rig = redis = undefined;
  });

  async function startFleet(appendOnly: boolean, backfillWindow?: number) {
    redis = await startPrivateRedis({ appendOnly });
    rig = await startQueueRig({ simulator: { latencyMs: 100 }, settings: { concurrency: 4, queue: { backfillWindow } } });
    rig.env.REDIS_URL = redis.url;
    const workers = [rig.startWorker(), rig.startWorker()];
    // Generous: worker processes start slowly on a busy two-core machine.
    await Promise.all(workers.map((worker) => rig!.ready(worker, 45_000)));
    return { redis, rig, workers };
  }

  /** Kills Redis once a fifth of the slices were asked for, and starts it again a second later. */
  async function restartMidway(redis: PrivateRedis, rig: QueueRig) {
    await until(() => rig.simulator.counters.exportRequests >= SLICES / 5, 30_000, 'the backfill to get going', 20);
    await redis.crash();
    const killedAt = rig.simulator.counters.exportRequests;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await redis.start();
    return killedAt;
  }

  it('with AOF (the production recommendation): workers reconnect and the backfill plan completes, every slice loaded once', async () => {
    // A window of 30: the plan is still being queued, step by step, when Redis dies.
    const { redis, rig, workers } = await startFleet(true, 30);
    const backfill = rig.cli(['backfill', ...RANGE, '--wait']);
    const killedAt = await restartMidway(redis, rig);
    const result = await backfill;

    expect(killedAt).toBeLessThan(SLICES);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Queued 30 slices from 2024-01-01 to 2024-01-14`);
    expect(result.stdout).toContain(`${SLICES} slices planned`);
    expect(result.stdout).toMatch(/not attempted\s+0/);
    const served = servedRows();
    expect(await warehouseCounts(rig)).toEqual({
      index: served.index,
      constituent: served.constituent,
      ledger: SLICES,
      ledgerRowCount: served.index + served.constituent,
      notDone: 0,
    });
    // Both workers lived through it and went on working after the restart.
    for (const worker of workers) {
      expect(worker.child.exitCode).toBeNull();
      expect(worker.output()).toContain('Redis connection trouble; reconnecting');
    }
    const again = await rig.cli(['backfill', ...RANGE, '--only-missing']);
    expect(again.stdout).toContain('Queued 0 slices');
  }, 120_000);

  it('without persistence: the lost jobs are reported, and backfill --only-missing re-queues exactly those', async () => {
    const { redis, rig, workers } = await startFleet(false);
    const backfill = rig.cli(['backfill', ...RANGE, '--wait']);
    await restartMidway(redis, rig);
    const first = await backfill;

    // The queue was wiped: the waiting backfill stops when nothing is left, and says what is missing.
    expect(first.code).toBe(1);
    const notAttempted = Number(/not attempted\s+(\d+)/.exec(first.stdout)?.[1]);
    expect(notAttempted).toBeGreaterThan(0);
    // Named as lost, with the exact command that re-queues them.
    expect(first.stdout).toContain(`Not attempted: ${notAttempted} slices`);
    expect(first.stdout).toContain('their jobs were lost');
    expect(first.stdout).toMatch(/e\.g\. portfolio 100\d, (index|constituent\.close), 2024-01-\d\d/);
    expect(first.stdout).toContain(
      `report-sync backfill --from 2024-01-01 --to 2024-01-14 --portfolios ${PORTFOLIOS.join(',')} --report-types index,constituent.close --only-missing re-queues exactly`,
    );
    // Jobs the workers had in flight when Redis died still finish after it (loading needs no
    // Redis), possibly after the waiting backfill gave up: let the ledger settle before counting.
    const beforeRequeue = await settledCounts(rig);
    expect(beforeRequeue.ledger).toBeLessThan(SLICES);
    expect(beforeRequeue.notDone).toBe(0);
    expect(notAttempted).toBeGreaterThanOrEqual(SLICES - beforeRequeue.ledger);

    const requeued = await rig.cli(['backfill', ...RANGE, '--only-missing', '--wait']);
    expect(requeued.code).toBe(0);
    expect(requeued.stdout).toContain(`Queued ${SLICES - beforeRequeue.ledger} slices`);
    const served = servedRows();
    expect(await warehouseCounts(rig)).toEqual({
      index: served.index,
      constituent: served.constituent,
      ledger: SLICES,
      ledgerRowCount: served.index + served.constituent,
      notDone: 0,
    });
    for (const worker of workers) {
      expect(worker.child.exitCode).toBeNull();
      expect(worker.output()).toContain('Redis connection trouble; reconnecting');
    }
  }, 120_000);
});
