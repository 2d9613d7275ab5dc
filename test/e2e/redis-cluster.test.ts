import { afterEach, describe, expect, it } from 'vitest';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { startRedisCluster, type RedisCluster } from '../helpers/redis-cluster.js';
import { until } from '../helpers/until.js';

// 1 to 21 January 2024: 15 weekdays, 6 weekend days; × 10 portfolios × 2 report types = 420 slices.
const THREE_WEEKS = ['--from', '2024-01-01', '--to', '2024-01-21'];
const PORTFOLIOS = Array.from({ length: 10 }, (_, i) => 1001 + i).join(',');
const SLICES = 420;
// The test's own limit. A hang must be reported by the backfill's `withinMs`, with what the command
// and the workers printed, before this strikes, however long the cluster took to start.
const TEST_MS = 180_000;

describe('queue mode on a Redis Cluster (three masters with a replica each)', () => {
  let cluster: RedisCluster | undefined;
  let rig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
    await cluster?.destroy();
    cluster = undefined;
  });

  it('loses and duplicates nothing when the master holding the queue fails over mid-backfill, and goes on after a failover while idle', { timeout: TEST_MS }, async () => {
    const started = Date.now();
    /** What is left of the test's limit, less `reserveMs` for the report of a hang. */
    const leftMs = (reserveMs: number) => TEST_MS - (Date.now() - started) - reserveMs;
    cluster = await startRedisCluster();
    rig = await startQueueRig({
      simulator: { latencyMs: 100 },
      // The fleet-wide rate gate runs its scripts on every request, and the backfill plan refills
      // its window of jobs, through the failover too.
      settings: { concurrency: 4, queue: { rateLimit: { max: 500, durationMs: 1_000 }, backfillWindow: 100 } },
      redisEnv: cluster.env,
    });
    expect((await rig.cli(['scheduler'])).code).toBe(0);
    const workers = [rig.startWorker(), rig.startWorker()];
    await Promise.all(workers.map((worker) => rig!.ready(worker)));
    // Done in about 10 s; a hang fails the test with what the command and the workers printed.
    const withinMs = leftMs(20_000);
    console.info(`cluster, rig and workers ready in ${Date.now() - started} ms; the backfill has ${withinMs} ms`);
    const backfill = rig.cli(['backfill', ...THREE_WEEKS, '--portfolios', PORTFOLIOS, '--wait'], { withinMs });

    await until(() => rig!.simulator.counters.exportRequests >= 80, 20_000, 'the backfill to be under way');
    const before = rig.simulator.counters.exportRequests;
    const failover = await cluster.failOver(rig.prefix);
    const after = rig.simulator.counters.exportRequests;
    // Mid-backfill: slices were still to come when the replica had taken over.
    expect(after).toBeLessThan(SLICES);
    console.info(`failover ${failover.from} → ${failover.to} with ${before} of ${SLICES} export requests made; ${after} once every node saw it`);

    const result = await backfill;
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`the workers queue the rest of the range's ${SLICES} slices 100 at a time`);
    expect(result.stdout).toContain(`Run finished`);
    expect(result.stdout).toContain(`${SLICES} slices planned, 0 retries`);
    expect(result.stdout).toMatch(/loaded\s+300/);
    expect(result.stdout).toMatch(/no_data\s+120/);
    // Every slice once in the ledger, each loaded by one attempt: 15 weekdays × 10 portfolios of
    // 3 index records and 25 constituent lines.
    const warehouse = await rig.warehouse();
    expect(await countWarehouse(warehouse.db)).toMatchObject({ index: 450, constituent: 3_750, ledger: SLICES, ledgerRowCount: 4_200, retried: 0, notDone: 0 });
    expect(rig.simulator.counters.exportRequests).toBe(SLICES);
    expect(rig.simulator.counters.tokenRequests).toBe(1);
    expect(await rig.queueCounts()).toMatchObject({ waiting: 0, prioritized: 0, active: 0, failed: 0 });
    // The schedule's next firing is still there, on the new master.
    expect(await rig.withQueue((queue) => queue.getJobSchedulers())).toHaveLength(1);

    // Health and metrics read the cluster too: ready, and the queue's depths from the new master.
    const base = rig.metricsUrl(workers[0]!);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^report_sync_queue_jobs\{state="failed"\} 0$/m);
    for (const worker of workers) {
      expect(worker.child.exitCode).toBeNull();
      expect(worker.output()).not.toMatch(/"code":"EXPORT_|"level":(50|60)/);
    }

    // Idle, a worker waits for jobs in a blocking command, which a master turning replica cuts
    // off: a warning, not an error, and the workers take the next backfill from the new master.
    const back = await cluster.failOver(rig.prefix);
    console.info(`idle failover ${back.from} → ${back.to}`);
    await until(() => workers.some((worker) => worker.output().includes("the queue's Redis master was replaced (a failover)")), 15_000, 'a waiting worker to note the failover');
    const monday = await rig.cli(['backfill', '--from', '2024-01-22', '--to', '2024-01-22', '--portfolios', PORTFOLIOS, '--wait'], { withinMs: Math.min(30_000, leftMs(5_000)) });
    expect(monday.code, monday.stdout + monday.stderr).toBe(0);
    expect(monday.stdout).toMatch(/loaded\s+20/);
    expect(rig.simulator.counters.exportRequests).toBe(SLICES + 20);
    for (const worker of workers) expect(worker.output()).not.toMatch(/"level":(50|60)/);
    for (const worker of workers) worker.child.kill('SIGTERM');
    expect(await Promise.all(workers.map((worker) => worker.exited))).toEqual([0, 0]);
  });
});
