import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { EXPORT_SLICE_JOB } from '../../src/queue/slice-job.js';
import { TEST_REDIS_URL } from '../helpers/test-redis.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';
import { until } from '../helpers/until.js';

async function withQueue<T>(rig: QueueRig, use: (queue: Queue) => Promise<T>): Promise<T> {
  const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue('report-exports', { connection, prefix: rig.prefix });
  try {
    return await use(queue);
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

async function tableCounts(rig: QueueRig) {
  const warehouse = await rig.warehouse();
  const result = await sql<{ index_rows: string; constituent_rows: string; ledger_rows: string; retried: string; not_done: string }>`
    select (select count(*) from index_report) as index_rows,
           (select count(*) from constituent_report) as constituent_rows,
           (select count(*) from report_loads) as ledger_rows,
           (select count(*) from report_loads where attempts > 1) as retried,
           (select count(*) from report_loads where status not in ('loaded', 'no_data')) as not_done`.execute(warehouse.db);
  const row = result.rows[0]!;
  return {
    index: Number(row.index_rows),
    constituent: Number(row.constituent_rows),
    ledger: Number(row.ledger_rows),
    retried: Number(row.retried),
    notDone: Number(row.not_done),
  };
}

// 1 to 14 January 2024: 10 weekdays, 4 weekend days.
const TWO_WEEKS = ['--from', '2024-01-01', '--to', '2024-01-14'];

describe('queue mode: BullMQ workers on Redis, a Postgres warehouse unless a test names another', () => {
  let rig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('loads every slice once with two worker processes, and --only-missing then queues nothing', async () => {
    rig = await startQueueRig();
    const workers = [rig.startWorker(), rig.startWorker()];
    await Promise.all(workers.map((worker) => rig!.ready(worker)));
    const result = await rig.cli(['backfill', ...TWO_WEEKS, '--wait']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Queued 56 slices');
    expect(result.stdout).toMatch(/loaded\s+40/);
    expect(result.stdout).toMatch(/no_data\s+16/);
    expect(await tableCounts(rig)).toEqual({ index: 60, constituent: 500, ledger: 56, retried: 0, notDone: 0 });
    for (const worker of workers) expect(worker.output()).toContain('"status":"loaded"');
    expect(rig.simulator.counters.exportRequests).toBe(56);

    const again = await rig.cli(['backfill', ...TWO_WEEKS, '--only-missing']);
    expect(again.stdout).toContain('Queued 0 slices');
  });

  it('queues nothing twice when the same range is added twice', async () => {
    rig = await startQueueRig();
    await rig.cli(['backfill', ...TWO_WEEKS]);
    await rig.cli(['backfill', ...TWO_WEEKS]);
    const counts = await withQueue(rig, (queue) => queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active'));
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(56);
  });

  it('makes about one token request per lifetime with three worker processes × concurrency 8, warning of no listener leak', async () => {
    rig = await startQueueRig({ simulator: { tokenLifetimeSeconds: 2, latencyMs: 150 }, settings: { concurrency: 8 } });
    const workers = [rig.startWorker(), rig.startWorker(), rig.startWorker()];
    await Promise.all(workers.map((worker) => rig!.ready(worker)));
    const portfolios = Array.from({ length: 30 }, (_, i) => 1001 + i).join(',');
    const result = await rig.cli(['backfill', '--from', '2024-02-05', '--to', '2024-02-16', '--portfolios', portfolios, '--wait']);
    expect(result.code).toBe(0);
    const times = rig.simulator.exportRequestTimes;
    const seconds = (times[times.length - 1]! - times[0]!) / 1000;
    const { tokenRequests } = rig.simulator.counters;
    expect(seconds).toBeGreaterThan(4);
    // A 2 s token lives 1.8 s in the shared cache: one request per 1.8 s, plus the first.
    expect(tokenRequests).toBeLessThanOrEqual(Math.ceil(seconds / 1.8) + 1);
    expect(tokenRequests).toBeGreaterThanOrEqual(Math.floor(seconds / 2));
    // Each worker held 16 jobs, 8 downloading and 8 waiting for a download slot, all listening for
    // its shutdown: more than Node's ten listeners, which is no leak and must not be warned of as one.
    for (const worker of workers) expect(worker.output()).not.toContain('MaxListenersExceededWarning');
  });

  it.each(DIALECTS)('loses and duplicates nothing when a worker is killed with SIGKILL mid-backfill (%s)', async (dialect) => {
    rig = await startQueueRig({ simulator: { latencyMs: 150 }, settings: { concurrency: 4 }, dialect });
    const doomed = rig.startWorker();
    const survivor = rig.startWorker();
    await Promise.all([rig.ready(doomed), rig.ready(survivor)]);
    const portfolios = Array.from({ length: 10 }, (_, i) => 1001 + i).join(',');
    const backfill = rig.cli(['backfill', ...TWO_WEEKS, '--portfolios', portfolios, '--wait']);
    await until(() => rig!.simulator.counters.exportRequests >= 40, 30_000, '40 export requests', 50);
    doomed.child.kill('SIGKILL');
    expect(await doomed.exited).toBe('SIGKILL');
    const result = await backfill;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Queued 280 slices');
    // 10 weekdays × 10 portfolios: 3 index records and 25 constituent lines each, once.
    const counts = await tableCounts(rig);
    expect(counts).toMatchObject({ index: 300, constituent: 2500, ledger: 280, notDone: 0 });
    // The crash left a trace: the survivor says it took over the jobs the killed worker had.
    expect(survivor.output()).toContain('took over a stalled job');
    expect(survivor.output()).toMatch(/"portfolioId":10\d\d,"reportType":"[a-z.]+","reportDate":"2024-01-\d\d","jobId":"slice-[^"]+","previousAttempts":0/);
  });

  it('on SIGTERM puts back the jobs still waiting for their answer, with no attempt spent, and exits 0 at once', async () => {
    rig = await startQueueRig({ simulator: { latencyMs: 5_000 }, settings: { concurrency: 4 } });
    const worker = rig.startWorker();
    await rig.ready(worker);
    await rig.cli(['backfill', '--from', '2024-01-01', '--to', '2024-01-05', '--portfolios', '1001,1002']);
    await until(() => rig!.simulator.counters.exportRequests >= 4, 30_000, '4 export requests', 50);
    const signalledAt = Date.now();
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    // Well before the 5 s answers would have come.
    expect(Date.now() - signalledAt).toBeLessThan(3_500);
    const counts = await tableCounts(rig);
    expect(counts.ledger).toBe(0);
    const jobs = await withQueue(rig, (queue) => queue.getJobs(['waiting', 'prioritized', 'delayed', 'active']));
    const slices = jobs.filter((job) => job.name === EXPORT_SLICE_JOB);
    expect(slices).toHaveLength(20);
    expect(slices.every((job) => job.attemptsMade === 0)).toBe(true);
    expect(await withQueue(rig, (queue) => queue.getActiveCount())).toBe(0);
  });

  it('trims finished jobs from Redis by the keepCompleted settings', async () => {
    rig = await startQueueRig({ settings: { queue: { keepCompleted: { ageSeconds: 3_600, count: 5 } } } });
    const worker = rig.startWorker();
    await rig.ready(worker);
    const result = await rig.cli(['backfill', ...TWO_WEEKS, '--wait']);
    expect(result.code).toBe(0);
    const counts = await withQueue(rig, (queue) => queue.getJobCounts('completed', 'failed'));
    expect(counts.completed).toBeLessThanOrEqual(5);
    expect(counts.failed).toBe(0);
  });

  it('registers the nightly schedule once, however often the scheduler runs', async () => {
    rig = await startQueueRig();
    expect((await rig.cli(['scheduler'])).code).toBe(0);
    expect((await rig.cli(['scheduler'])).stdout).toContain('registered');
    const schedulers = await withQueue(rig, (queue) => queue.getJobSchedulers());
    expect(schedulers).toHaveLength(1);
    expect(schedulers[0]).toMatchObject({ key: 'nightly', pattern: '30 2 * * *', tz: 'UTC' });
  });

  it('fans out a nightly firing through the workers, exactly as nightly does in-process', async () => {
    rig = await startQueueRig({ settings: { schedule: { timeZone: 'UTC', lookbackDays: 2 } } });
    const worker = rig.startWorker();
    await rig.ready(worker);
    // What the job scheduler does at the cron time: add one nightly job.
    await withQueue(rig, (queue) => queue.add('nightly-fan-out', {}, { priority: 1 }));
    // Yesterday and the two days before it, for 2 portfolios × 2 report types.
    await until(async () => (await tableCounts(rig!)).ledger === 12, 30_000, 'the 12 slices of the night in the ledger', 50);
    expect(worker.output()).toContain('nightly fan-out queued its slices');
  });

  it('pauses the queue for a 429 Retry-After instead of spending an attempt', async () => {
    rig = await startQueueRig({ settings: { concurrency: 1 } });
    rig.simulator.script(1001, 'index', '2024-01-02', [{ status: 429, headers: { 'Retry-After': '2' } }]);
    const worker = rig.startWorker();
    await rig.ready(worker);
    const result = await rig.cli(['backfill', '--from', '2024-01-02', '--to', '2024-01-03', '--portfolios', '1001', '--report-types', 'index', '--wait']);
    expect(result.code).toBe(0);
    const warehouse = await rig.warehouse();
    const ledger = await warehouse.db.selectFrom('report_loads').select(['report_date', 'status', 'attempts']).orderBy('report_date').execute();
    expect(ledger).toEqual([
      { report_date: '2024-01-02', status: 'loaded', attempts: 1 },
      { report_date: '2024-01-03', status: 'loaded', attempts: 1 },
    ]);
    const times = rig.simulator.exportRequestTimes;
    expect(times).toHaveLength(3);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(1_900);
  });

  it('holds the global rate limit across workers', async () => {
    rig = await startQueueRig({ settings: { queue: { rateLimit: { max: 10, durationMs: 1_000 } } } });
    const workers = [rig.startWorker(), rig.startWorker()];
    await Promise.all(workers.map((worker) => rig!.ready(worker)));
    const result = await rig.cli(['backfill', '--from', '2024-01-01', '--to', '2024-01-12', '--portfolios', '1001,1002', '--wait']);
    expect(result.code).toBe(0);
    const times = rig.simulator.exportRequestTimes;
    expect(times).toHaveLength(48);
    // No one-second window (starting at any request) holds more than the limit.
    for (let i = 0; i < times.length; i += 1) {
      const inWindow = times.filter((t) => t >= times[i]! && t < times[i]! + 1_000).length;
      expect(inWindow).toBeLessThanOrEqual(10);
    }
  });
});
