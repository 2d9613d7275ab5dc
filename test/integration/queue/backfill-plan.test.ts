import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handleRefillBackfill } from '../../../jobs/refill-backfill/handler.js';
import { settingsSchema, type Settings } from '../../../src/config/settings-schema.js';
import { SyncError } from '../../../src/errors/sync-error.js';
import { createLogger } from '../../../src/logging/logger.js';
import { backfillPlanId, type BackfillPlan } from '../../../src/queue/backfill-plan.js';
import { ExportQueue } from '../../../src/queue/export-queue.js';
import { refillBackfill, refillJobId } from '../../../src/queue/refill-backfill.js';
import { startBackfill } from '../../../src/queue/start-backfill.js';
import type { SliceSelection } from '../../../src/selection/slice-selection.js';
import { countSlices, type SliceRange } from '../../../src/slice/slice-range.js';
import { Ledger } from '../../../src/warehouse/ledger/ledger.js';
import { ledgerRow } from '../../helpers/ledger-row.js';
import { seededWarehouse, type SeededWarehouse } from '../../helpers/seeded-warehouse.js';
import { TEST_REDIS_URL, testPrefix } from '../../helpers/test-redis.js';

// 10 days × 3 portfolios × 2 report types: 60 slices.
const RANGE: SliceRange = { from: '2024-01-01', to: '2024-01-10', portfolios: [1, 2, 3], reportTypes: ['index', 'constituent.close'] };
const WINDOW = 25;
const SILENT = createLogger({ level: 'silent' });

describe('a backfill plan in Redis, queued a window at a time', () => {
  let scope: ReturnType<typeof testPrefix>;
  let redis: Redis;
  let exportQueue: ExportQueue;
  let settings: Settings;
  let seeded: SeededWarehouse | undefined;

  beforeEach(() => {
    scope = testPrefix();
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    settings = settingsSchema.parse({ queue: { prefix: scope.prefix, addBatchSize: 10, backfillWindow: WINDOW } });
    exportQueue = new ExportQueue({ connection: redis, settings });
  });
  afterEach(async () => {
    await exportQueue.close();
    redis.disconnect();
    await scope.cleanup();
    await seeded?.close();
    seeded = undefined;
  });

  async function start(ledgerRows: Parameters<typeof seededWarehouse>[1] = [], selection: SliceSelection = { kind: 'all' }, signal?: AbortSignal) {
    seeded = await seededWarehouse('sqlite', ledgerRows);
    const ledger = new Ledger(seeded.warehouse);
    const started = await startBackfill({ exportQueue, ledger, range: RANGE, selection, force: false, queue: settings.queue, since: new Date().toISOString(), signal });
    return { ledger, started };
  }

  /** Takes `count` jobs off the queue as a worker would, and finishes them. */
  async function finishJobs(count: number): Promise<string[]> {
    const workerRedis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    const worker = new Worker(settings.queue.name, null, { connection: workerRedis, prefix: scope.prefix });
    const ids: string[] = [];
    try {
      for (let i = 0; i < count; i += 1) {
        const job = await worker.getNextJob('token');
        if (!job) break;
        ids.push(job.id!);
        await job.moveToCompleted({ status: 'loaded' }, 'token', false);
      }
    } finally {
      await worker.close(true);
      workerRedis.disconnect();
    }
    return ids;
  }

  const sliceJobs = async () => (await exportQueue.queue.getJobs(['prioritized', 'waiting'])).filter((job) => job.name === 'export-slice');

  it('queues the first window at once and the rest step by step as jobs finish, each slice once, to the end of the range', async () => {
    const { ledger, started } = await start();
    expect(started.resumed).toBe(false);
    expect(started.plan).toMatchObject({ state: 'queueing', total: 60, step: 1, handed: { queued: WINDOW, requeued: 0, pending: 0, recovered: 0 } });
    expect(await sliceJobs()).toHaveLength(WINDOW);
    // The plan's next step waits in the queue as a job of its own, named for its step.
    expect((await exportQueue.queue.getJob(refillJobId(started.plan.id, 1)))?.name).toBe('refill-backfill');
    // A full queue: the step adds nothing and keeps its place.
    let plan = (await refillBackfill(started.plan, { exportQueue, ledger })).plan;
    expect(plan.cursor).toBe(started.plan.cursor);

    const seen = new Set<string>();
    for (const job of await sliceJobs()) seen.add(job.id!);
    while (plan.state === 'queueing') {
      await finishJobs(10);
      plan = (await refillBackfill(plan, { exportQueue, ledger })).plan;
      for (const job of await sliceJobs()) seen.add(job.id!);
      // The refill job is one more, and never more slices than the window.
      expect(await sliceJobs()).not.toHaveLength(WINDOW + 1);
      expect((await sliceJobs()).length).toBeLessThanOrEqual(WINDOW);
    }
    expect(seen.size).toBe(countSlices(RANGE));
    expect(plan).toMatchObject({ cursor: 60, state: 'queued', handed: { queued: 60, requeued: 0, pending: 0, recovered: 0 } });
    expect(await exportQueue.plans.get(plan.id)).toEqual(plan);
    // A finished plan expires on its own.
    expect(await redis.ttl(exportQueue.queue.toKey(`backfill-plan:${plan.id}`))).toBeGreaterThan(86_400);
  });

  it('takes the selection step by step too: --only-missing skips what the ledger has loaded, wherever the window ends', async () => {
    // Every slice of portfolio 2, and all of 2024-01-03, loaded: 60 - 20 - 4 = 36 missing.
    const loaded = [
      ...Array.from({ length: 10 }, (_, d) => `2024-01-${String(d + 1).padStart(2, '0')}`).flatMap((date) => [
        ledgerRow(2, 'index', date, 'loaded'),
        ledgerRow(2, 'constituent.close', date, 'loaded'),
      ]),
      ...[1, 3].flatMap((id) => [ledgerRow(id, 'index', '2024-01-03', 'loaded'), ledgerRow(id, 'constituent.close', '2024-01-03', 'loaded')]),
    ];
    const { ledger, started } = await start(loaded, { kind: 'missing' });
    let plan = started.plan;
    const queued: string[] = (await sliceJobs()).map((job) => job.id!);
    while (plan.state === 'queueing') {
      queued.push(...(await finishJobs(WINDOW)));
      plan = (await refillBackfill(plan, { exportQueue, ledger })).plan;
    }
    const all = new Set([...queued, ...(await sliceJobs()).map((job) => job.id!)]);
    expect(all.size).toBe(36);
    expect([...all].some((id) => id.startsWith('slice-2-') || id.endsWith('2024-01-03'))).toBe(false);
    expect(plan.handed.queued).toBe(36);
  });

  it('takes up a step a shutdown stopped: what was queued or done since the plan began is not queued again', async () => {
    const stop = new AbortController();
    seeded = await seededWarehouse('sqlite', []);
    const ledger = new Ledger(seeded.warehouse);
    // Stopped after the first batch of ten of the window's 25.
    const started = await startBackfill({
      exportQueue,
      ledger,
      range: RANGE,
      selection: { kind: 'all' },
      force: false,
      queue: settings.queue,
      since: new Date(Date.now() - 1_000).toISOString(),
      signal: stop.signal,
      onBatch: () => stop.abort(),
    });
    expect(started.step?.interrupted).toBe(true);
    expect(started.plan.unfinishedStep).toEqual({ from: 0, to: WINDOW });
    expect(started.plan.cursor).toBe(0);
    // The batch on its way when the signal came lands too (two are in flight at most).
    const handed = started.step!.handed;
    expect(handed).toBeGreaterThanOrEqual(10);
    expect(handed).toBeLessThan(WINDOW);
    expect(await sliceJobs()).toHaveLength(handed);
    // Meanwhile a worker finished three of the ten (their jobs kept), and one more is in the ledger
    // as loaded since the plan began (its job trimmed away).
    const finished = await finishJobs(3);
    const trimmed = (await sliceJobs())[0]!;
    await trimmed.remove();
    await seeded.warehouse.db
      .insertInto('report_loads')
      .values(ledgerRow(trimmed.data.portfolioId, trimmed.data.reportType, trimmed.data.reportDate, 'loaded', { at: new Date().toISOString() }))
      .execute();

    // The same command again: resumes the plan and takes the step up.
    const again = await startBackfill({ exportQueue, ledger, range: RANGE, selection: { kind: 'all' }, force: false, queue: settings.queue, since: new Date().toISOString() });
    expect(again.resumed).toBe(true);
    expect(again.plan.id).toBe(started.plan.id);
    expect(again.plan.unfinishedStep).toBeUndefined();
    // The step's 25 positions: those still waiting left alone, 3 finished and 1 loaded since
    // counted, the rest queued; then the 4 places the finished ones left in the window filled.
    expect(again.plan.handed).toEqual({ queued: WINDOW - handed + 4, requeued: 0, pending: handed - 4, recovered: 4 });
    expect(again.plan.cursor).toBe(WINDOW + 4);
    const waiting = (await sliceJobs()).map((job) => job.id!);
    expect(new Set(waiting).size).toBe(WINDOW);
    for (const id of [...finished, trimmed.id!]) expect(waiting).not.toContain(id);
  });

  it('lets one process at a time move a plan’s cursor; a step of a later one, or of a finished plan, does nothing', async () => {
    const { ledger, started } = await start();
    const deps = { exportQueue, ledger, logger: SILENT };
    // Held by another process: put back for later.
    const busy = await exportQueue.plans.withLease(started.plan.id, () => handleRefillBackfill({ planId: started.plan.id, step: 1, delayMs: 100 }, deps));
    expect(busy).toEqual({ ran: true, value: { kind: 'busy' } });
    // Step 0 ran already (in the command): its job is stale.
    expect(await handleRefillBackfill({ planId: started.plan.id, step: 0, delayMs: 100 }, deps)).toEqual({ kind: 'stale' });
    expect(await sliceJobs()).toHaveLength(WINDOW);
    // Step 1 runs, and schedules step 2 before saving that it did.
    await finishJobs(20);
    const ran = await handleRefillBackfill({ planId: started.plan.id, step: 1, delayMs: 100 }, deps);
    // The window counts every unfinished job, the step's own among them.
    expect(ran).toMatchObject({ kind: 'scheduled', handed: 19 });
    expect((await exportQueue.plans.get(started.plan.id))?.step).toBe(2);
    expect(await exportQueue.queue.getJob(refillJobId(started.plan.id, 2))).toBeDefined();
    expect(await handleRefillBackfill({ planId: 'ffffffffffffffff', step: 1, delayMs: 100 }, deps)).toEqual({ kind: 'stale' });
  });

  it('names the same backfill with the same plan id, and a different one with another', () => {
    const request = { queueName: 'report-exports', range: RANGE, selection: { kind: 'all' } as const, force: false };
    expect(backfillPlanId(request)).toBe(backfillPlanId({ ...request, range: { ...RANGE } }));
    expect(backfillPlanId(request)).toMatch(/^[0-9a-f]{16}$/);
    for (const other of [
      { ...request, force: true },
      { ...request, selection: { kind: 'missing' } as const },
      { ...request, range: { ...RANGE, to: '2024-01-11' } },
      { ...request, queueName: 'other' },
    ])
      expect(backfillPlanId(other)).not.toBe(backfillPlanId(request));
  });

  it('refuses a damaged plan in Redis, naming the field and what to do', async () => {
    const { started } = await start();
    const key = exportQueue.queue.toKey(`backfill-plan:${started.plan.id}`);
    const damaged: Record<string, unknown> = { ...(started.plan as BackfillPlan), cursor: -5 };
    await redis.set(key, JSON.stringify(damaged));
    const error = await exportQueue.plans.get(started.plan.id).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SyncError);
    expect((error as SyncError).code).toBe('USAGE_INVALID');
    expect((error as SyncError).message).toMatch(/^backfill plan [0-9a-f]{16} in Redis is damaged \(cursor: .*\): delete its key and run the backfill command again/);
    await redis.set(key, '{not json');
    expect(((await exportQueue.plans.get(started.plan.id).catch((caught: unknown) => caught)) as SyncError).message).toContain('is damaged (not JSON)');
  });
});
