import type { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exportSliceJob } from '../../../jobs/export-slice/export-slice-job.js';
import type { AlertSummary } from '../../../src/alerts/alert-summary.js';
import { settingsSchema, type Settings } from '../../../src/config/settings-schema.js';
import { SyncError } from '../../../src/errors/sync-error.js';
import { createLogger } from '../../../src/logging/logger.js';
import { ExportQueue } from '../../../src/queue/export-queue.js';
import { createExportWorker } from '../../../src/queue/export-worker.js';
import { sliceJobId } from '../../../src/queue/slice-job.js';
import { WorkerDeathAlerts } from '../../../src/queue/worker-death-alerts.js';
import type { Slice } from '../../../src/slice/slice.js';
import { TEST_REDIS_URL, testPrefix } from '../../helpers/test-redis.js';
import { until } from '../../helpers/until.js';

const SLICE: Slice = { portfolioId: 1001, reportType: 'index', reportDate: '2024-01-03' };

/*
 * How the export worker treats a job by the stalls Redis counted for it (BullMQ's `stc`, which a
 * stalled check raises each time the worker holding the job stopped renewing its lock): up to
 * queue.maxStalledCount it is attempted as usual; past it, it is failed as WORKER_DIED without an
 * attempt, by the processor, or (one stall later, when even that worker died) by the 'failed' event
 * of the job BullMQ failed itself. The stalls are written into Redis as a stalled check would.
 */
describe('the export worker and a job that stalled', () => {
  let scope: ReturnType<typeof testPrefix>;
  let redis: Redis;
  let workerRedis: Redis;
  let exportQueue: ExportQueue;
  let settings: Settings;
  let worker: Worker | undefined;
  const attempted: Slice[] = [];
  const failedDead: { slice: Slice; stalls: number; starts: number }[] = [];

  beforeEach(() => {
    scope = testPrefix();
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    workerRedis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    settings = settingsSchema.parse({ queue: { prefix: scope.prefix } });
    exportQueue = new ExportQueue({ connection: redis, settings });
    attempted.length = 0;
    failedDead.length = 0;
  });
  afterEach(async () => {
    await worker?.close();
    worker = undefined;
    await exportQueue.close();
    redis.disconnect();
    workerRedis.disconnect();
    await scope.cleanup();
  });

  /** Queues the slice's job as stalled `stalls` times (and started as often), with `fields` besides. */
  async function queueStalled(stalls: number, fields: Record<string, string> = {}): Promise<string> {
    await exportQueue.addSlices([SLICE], 10);
    const key = exportQueue.queue.toKey(sliceJobId(SLICE));
    await redis.hset(key, { stc: String(stalls), ats: String(stalls), ...fields });
    return key;
  }

  function startWorker(): Worker {
    const logger = createLogger({ level: 'silent' });
    worker = createExportWorker({
      connection: workerRedis,
      settings,
      name: 'test-host:1',
      concurrency: 1,
      jobs: [
        exportSliceJob({
          attemptSlice: async (slice, attempt) => {
            attempted.push(slice);
            return { status: 'no_data', final: true, slice, attempt: attempt.number, durationMs: 1, unchanged: false };
          },
          failDeadSlice: async (slice, deaths) => {
            failedDead.push({ slice, ...deaths });
            return new SyncError('WORKER_DIED', 'the worker running this slice stopped without finishing it');
          },
          maxStalledCount: settings.queue.maxStalledCount,
          limits: { maxRetryAfterMs: settings.retry.maxRetryAfterMs, credentialsRetryMs: settings.token.rejectedRetryMs },
          logger,
        }),
      ],
      exportQueue,
      logger,
    });
    return worker;
  }

  async function settled(): Promise<{ state: string; failedReason: string | undefined; processedBy: string | undefined }> {
    const id = sliceJobId(SLICE);
    await until(async () => ['completed', 'failed'].includes(await exportQueue.queue.getJobState(id)), 10_000, 'the job to finish');
    const job = await exportQueue.queue.getJob(id);
    return { state: await exportQueue.queue.getJobState(id), failedReason: job?.failedReason, processedBy: job?.processedBy };
  }

  it(`attempts a job stalled queue.maxStalledCount times (2 by default), as a deploy's SIGKILL leaves it`, async () => {
    expect(settings.queue.maxStalledCount).toBe(2);
    await queueStalled(2);
    startWorker();
    expect(await settled()).toMatchObject({ state: 'completed', processedBy: 'test-host:1' });
    expect(attempted).toEqual([SLICE]);
    expect(failedDead).toEqual([]);
  });

  it('fails a job stalled once more without attempting it, once, as WORKER_DIED', async () => {
    await queueStalled(3);
    startWorker();
    const job = await settled();
    expect(job).toMatchObject({ state: 'failed', failedReason: 'WORKER_DIED: the worker running this slice stopped without finishing it' });
    expect(attempted).toEqual([]);
    // Started three times before this start, each ended by a dead worker.
    expect(failedDead).toEqual([{ slice: SLICE, stalls: 3, starts: 3 }]);
  });

  it("records a job BullMQ failed itself one stall later (the worker failing it died too), from the 'failed' event", async () => {
    // What BullMQ's stalled check leaves once a job stalls past the worker's maxStalledCount (ours + 1).
    await queueStalled(4, { defa: 'job stalled more than allowable limit' });
    startWorker();
    expect(await settled()).toMatchObject({ state: 'failed', failedReason: 'job stalled more than allowable limit' });
    await until(() => failedDead.length > 0, 5_000, 'the failure to be recorded');
    expect(attempted).toEqual([]);
    expect(failedDead).toEqual([{ slice: SLICE, stalls: 4, starts: 4 }]);
  });
});

describe('WorkerDeathAlerts', () => {
  const error = new SyncError('WORKER_DIED', 'the worker running this slice stopped without finishing it');

  it('tells slices failed within gatherMs of each other in one alert, grouped, with the retry command', async () => {
    const sent: AlertSummary[] = [];
    const alerts = new WorkerDeathAlerts({ send: async (alert) => sent.push(alert), queueName: 'report-exports', gatherMs: 200 });
    alerts.add(SLICE, error);
    alerts.add({ ...SLICE, reportDate: '2024-01-04' }, error);
    expect(sent).toEqual([]);
    await until(() => sent.length > 0, 5_000, 'the alert');
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      kind: 'worker',
      title: 'report-sync workers (queue report-exports) died running 2 slices: failed for good, not handed to another worker',
      counts: { failed: 2 },
      failures: { total: 2, groups: [{ code: 'WORKER_DIED', portfolioId: 1001, slices: 2 }] },
      retryCommand: 'report-sync backfill --from 2024-01-03 --to 2024-01-04 --portfolios 1001 --report-types index --failed --code WORKER_DIED',
    });

    // A later one is an alert of its own, sent at once on close.
    alerts.add({ ...SLICE, portfolioId: 1002 }, error);
    await alerts.close();
    expect(sent).toHaveLength(2);
    expect(sent[1]).toMatchObject({ counts: { failed: 1 }, title: expect.stringContaining('died running a slice') as unknown });
    await alerts.close();
    expect(sent).toHaveLength(2);
  });
});
