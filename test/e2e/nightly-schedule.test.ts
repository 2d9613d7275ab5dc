import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { until, untilSaid } from '../helpers/until.js';

/*
 * The nightly schedule in queue mode: it survives Redis losing its data (every worker re-creates it),
 * the night syncs what `scheduler` registered (not whatever each worker's settings say), and firing
 * it trims finished jobs by the documented queue.keepCompleted, not by a count of its own.
 */

async function withQueue<T>(redisUrl: string, prefix: string, use: (queue: Queue) => Promise<T>): Promise<T> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('report-exports', { connection, prefix });
  try {
    return await use(queue);
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

describe('the nightly schedule in queue mode', () => {
  let rig: QueueRig | undefined;
  let redis: PrivateRedis | undefined;
  afterEach(async () => {
    await rig?.close();
    await redis?.destroy();
    rig = redis = undefined;
  });

  it('is re-created by a running worker after FLUSHALL, and the worker says so', async () => {
    redis = await startPrivateRedis();
    rig = await startQueueRig({ settings: { schedule: { cron: '15 3 * * *', timeZone: 'Europe/Paris', checkIntervalMs: 1_000 } } });
    rig.env.REDIS_URL = redis.url;
    expect((await rig.cli(['scheduler'])).code).toBe(0);
    const worker = rig.startWorker();
    await rig.ready(worker);

    const flusher = new Redis(redis.url);
    await flusher.flushall();
    flusher.disconnect();
    expect(await withQueue(redis.url, rig.prefix, (queue) => queue.getJobSchedulers())).toHaveLength(0);

    await until(async () => (await withQueue(redis!.url, rig!.prefix, (queue) => queue.getJobSchedulers())).length === 1, 10_000, 'the schedule to come back');
    const [scheduler] = await withQueue(redis.url, rig.prefix, (queue) => queue.getJobSchedulers());
    expect(scheduler).toMatchObject({ key: 'nightly', pattern: '15 3 * * *', tz: 'Europe/Paris' });
    await untilSaid(worker, 're-created it', 5_000);
    expect(worker.output()).toContain('the nightly schedule was missing from Redis');
    // One line for the one re-creation, not one per check.
    expect(worker.output().split('the nightly schedule was missing').length - 1).toBe(1);
  }, 60_000);

  it("registers the schedule on a new install's first worker and says so, without calling it lost", async () => {
    rig = await startQueueRig({ settings: { schedule: { checkIntervalMs: 1_000 } } });
    const worker = rig.startWorker();
    await rig.ready(worker);
    await untilSaid(worker, 'registered the nightly schedule', 10_000);
    expect(await withQueue(rig.env.REDIS_URL!, rig.prefix, (queue) => queue.getJobSchedulers())).toHaveLength(1);
    // Checked again every second: still one line, and never the warning of a schedule lost.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(worker.output().split('registered the nightly schedule').length - 1).toBe(1);
    expect(worker.output()).not.toContain('was missing from Redis');
  }, 60_000);

  it("syncs what `scheduler --config` registered, not the worker's lookback, and reports the difference", async () => {
    rig = await startQueueRig({ settings: { queue: { keepCompleted: { ageSeconds: 3_600, count: 1_000 } } } });
    const schedulerSettings = join(rig.dir, 'scheduler.json');
    writeFileSync(schedulerSettings, JSON.stringify({ portfolios: [1001], schedule: { lookbackDays: 2 } }));
    const registered = await rig.cli(['scheduler', '--config', schedulerSettings]);
    expect(registered.code).toBe(0);
    expect(registered.stdout).toContain('re-checks 2 days before it, for portfolios 1001');

    const worker = rig.startWorker();
    await rig.ready(worker);
    // 56 finished jobs first, so that the night's trimming can be seen.
    expect((await rig.cli(['backfill', '--from', '2024-01-01', '--to', '2024-01-14', '--wait'])).code).toBe(0);
    await rig.promoteNightly();

    // Yesterday and the two days before it, for 1 portfolio × 2 report types: 6 slices, not 2 × 2 × 8.
    await untilSaid(worker, 'nightly fan-out queued its slices', 20_000);
    await until(async () => (await countWarehouse((await rig!.warehouse()).db)).ledger === 56 + 6, 20_000, 'the night to load');
    expect(worker.output()).toContain('"lookbackDays":2');
    expect(worker.output()).toContain("the registered nightly schedule's settings differ from this worker's");
    expect(worker.output()).toContain('schedule.lookbackDays 2 → 7');

    // Every finished job is kept up to queue.keepCompleted.count (1,000), the fan-out's own included
    // (it completes once it has told the night).
    await untilSaid(worker, 'the night finished', 20_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const counts = await withQueue(TEST_REDIS(rig), rig.prefix, (queue) => queue.getJobCounts('completed'));
    expect(counts.completed).toBe(56 + 6 + 1);
  }, 90_000);

  it('scheduler says what it changed when run again with other settings', async () => {
    rig = await startQueueRig();
    expect((await rig.cli(['scheduler'])).stdout).toContain('registered on queue');
    const other = join(rig.dir, 'other.json');
    writeFileSync(other, JSON.stringify({ schedule: { cron: '0 4 * * 1-5', lookbackDays: 3 } }));
    const again = await rig.cli(['scheduler', '--config', other]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('replaced');
    expect(again.stdout).toContain('schedule.cron "30 2 * * *" → "0 4 * * 1-5"');
    expect(again.stdout).toContain('schedule.lookbackDays 7 → 3');
    const same = await rig.cli(['scheduler', '--config', other]);
    expect(same.stdout).toContain('already registered, unchanged');
  });
});

function TEST_REDIS(rig: QueueRig): string {
  return rig.env.REDIS_URL!;
}
