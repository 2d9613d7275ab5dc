import { UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { settingsSchema, type Settings } from '../../../src/config/settings-schema.js';
import { planSlices, type SliceRange } from '../../../src/slice/slice-range.js';
import { ExportQueue } from '../../../src/queue/export-queue.js';
import { ensureNightlySchedule, nightlyPlanSettings } from '../../../src/queue/nightly-schedule.js';
import type { Slice } from '../../../src/slice/slice.js';
import { TEST_REDIS_URL, testPrefix } from '../../helpers/test-redis.js';

// 40 days × 7 portfolios × 2 report types = 560 slices: six batches of 100, the last one short.
const RANGE: SliceRange = { from: '2024-01-01', to: '2024-02-09', portfolios: [1, 2, 3, 4, 5, 6, 7], reportTypes: ['index', 'constituent.close'] };

async function* lazily(slices: Iterable<Slice>): AsyncGenerator<Slice> {
  for (const slice of slices) {
    await Promise.resolve();
    yield slice;
  }
}

describe('ExportQueue.addSlices against a real Redis', () => {
  let scope: ReturnType<typeof testPrefix>;
  let redis: Redis;
  let exportQueue: ExportQueue;
  let settings: Settings;

  beforeEach(() => {
    scope = testPrefix();
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    settings = settingsSchema.parse({ queue: { prefix: scope.prefix, addBatchSize: 100, keepCompleted: { ageSeconds: 60, count: 7 } } });
    exportQueue = new ExportQueue({ connection: redis, settings });
  });
  afterEach(async () => {
    await exportQueue.close();
    redis.disconnect();
    await scope.cleanup();
  });

  it('queues every slice of a plain generator once, in batches, with the job options of one slice', async () => {
    const handed: number[] = [];
    expect(await exportQueue.addSlices(planSlices(RANGE), 10, { onBatch: (count) => handed.push(count) })).toEqual({ queued: 560, requeued: 0, pending: 0, finishedSince: 0 });
    expect(handed).toEqual([100, 200, 300, 400, 500, 560]);
    expect(await exportQueue.queue.getPrioritizedCount()).toBe(560);

    const job = await exportQueue.queue.getJob('slice-3-constituent.close-2024-01-20');
    expect(job?.data).toEqual({ portfolioId: 3, reportType: 'constituent.close', reportDate: '2024-01-20' });
    expect(job?.opts).toMatchObject({ priority: 10, attempts: settings.retry.attempts, backoff: { type: 'report-sync' } });
    // Trimming is the workers' option (queue.keepCompleted / keepFailed), not stored with every job.
    expect(job?.opts.removeOnComplete).toBeUndefined();
    expect(job?.opts.removeOnFail).toBeUndefined();
  });

  it('queues an async source the same way, and nothing twice when the range is added again', async () => {
    expect(await exportQueue.addSlices(lazily(planSlices(RANGE)), 10)).toEqual({ queued: 560, requeued: 0, pending: 0, finishedSince: 0 });
    expect(await exportQueue.addSlices(planSlices(RANGE), 10)).toEqual({ queued: 0, requeued: 0, pending: 560, finishedSince: 0 });
    expect(await exportQueue.unfinished()).toBe(560);
  });

  it('queues again a slice whose kept job has finished, completed or failed, and leaves pending ones alone', async () => {
    const small: SliceRange = { from: '2024-03-01', to: '2024-03-03', portfolios: [1], reportTypes: ['index'] };
    const queuedAtMs = Date.now();
    expect(await exportQueue.addSlices(planSlices(small), 10)).toEqual({ queued: 3, requeued: 0, pending: 0, finishedSince: 0 });
    // A worker finishes two of the three, oldest first: one completes, one fails for good; the third stays waiting.
    const workerRedis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    const worker = new Worker(settings.queue.name, null, { connection: workerRedis, prefix: scope.prefix });
    try {
      const first = await worker.getNextJob('token');
      expect(first?.id).toBe('slice-1-index-2024-03-01');
      await first!.moveToCompleted({ status: 'loaded' }, 'token', false);
      const second = await worker.getNextJob('token');
      expect(second?.id).toBe('slice-1-index-2024-03-02');
      await second!.moveToFailed(new UnrecoverableError('FILE_INVALID: bad'), 'token', false);
      expect([await first!.getState(), await second!.getState()]).toEqual(['completed', 'failed']);
    } finally {
      await worker.close(true);
      workerRedis.disconnect();
    }
    // A plan taking up a step it was stopped in: jobs finished since it began are its own, done.
    expect(await exportQueue.addSlices(planSlices(small), 10, { finishedSinceMs: queuedAtMs })).toEqual({ queued: 0, requeued: 0, pending: 1, finishedSince: 2 });
    expect([await exportQueue.queue.getJobState('slice-1-index-2024-03-01'), await exportQueue.queue.getJobState('slice-1-index-2024-03-02')]).toEqual(['completed', 'failed']);
    // Jobs that finished before that time are queued again, as without it.
    expect(await exportQueue.addSlices(planSlices(small), 10, { force: true, finishedSinceMs: Date.now() + 1 })).toEqual({ queued: 0, requeued: 2, pending: 1, finishedSince: 0 });
    for (const date of ['2024-03-01', '2024-03-02']) {
      const job = await exportQueue.queue.getJob(`slice-1-index-${date}`);
      expect(await job?.getState()).toBe('prioritized');
      expect(job?.data).toEqual({ portfolioId: 1, reportType: 'index', reportDate: date, force: true });
      expect(job?.attemptsMade).toBe(0);
    }
    expect(await exportQueue.unfinished()).toBe(3);
  });

  it('rejects with the failure of a batch that was in flight while the next was planned', async () => {
    // BullMQ refuses priorities above 2,097,152 when the batch is sent.
    await expect(exportQueue.addSlices(planSlices(RANGE), 3_000_000)).rejects.toThrow(/priority/i);
    expect(await exportQueue.unfinished()).toBe(0);
  });

  it('stops at the first failing batch and still rethrows an error of the source itself', async () => {
    async function* failing(): AsyncGenerator<Slice> {
      yield* lazily([...planSlices(RANGE)].slice(0, 250));
      throw new Error('ledger unreachable');
    }
    await expect(exportQueue.addSlices(failing(), 10)).rejects.toThrow('ledger unreachable');
    // The two full batches were sent before the source failed; the partial third was not.
    expect(await exportQueue.unfinished()).toBe(200);
  });
});

describe('ExportQueue.unfinished', () => {
  it("does not count the nightly schedule's next firing as unfinished work", async () => {
    const scope = testPrefix();
    const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    const settings = settingsSchema.parse({ queue: { prefix: scope.prefix } });
    const exportQueue = new ExportQueue({ connection: redis, settings });
    try {
      await ensureNightlySchedule(exportQueue.queue, nightlyPlanSettings(settings), { mode: 'register', priority: 1 });
      expect(await exportQueue.queue.getDelayedCount()).toBe(1);
      expect(await exportQueue.unfinished()).toBe(0);
      await exportQueue.addSlices(planSlices({ ...RANGE, to: '2024-01-01' }), 10);
      expect(await exportQueue.unfinished()).toBe(14);
    } finally {
      await exportQueue.close();
      redis.disconnect();
      await scope.cleanup();
    }
  });
});
