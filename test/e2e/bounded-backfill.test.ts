import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { countSlices } from '../../src/slice/slice-range.js';
import type { BackfillPlan } from '../../src/queue/backfill-plan.js';
import { ExportQueue } from '../../src/queue/export-queue.js';
import { loadConfig } from '../../src/config/load-config.js';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { until } from '../helpers/until.js';
import { jobsAtOnce } from '../../src/queue/jobs-at-once.js';

/*
 * A backfill is a plan in Redis, not all its jobs at once: the queue holds at most
 * queue.backfillWindow of its slices, and the workers queue the next ones as they finish them. The
 * command that started it may exit at once, a worker may die on the way, and still every slice is
 * loaded, none queued twice, and Redis holds no more jobs than the window and the kept ones.
 */

const PORTFOLIOS = Array.from({ length: 10 }, (_, i) => 4001 + i);
/** 200 days × 10 portfolios of index reports: 2,000 slices. */
const RANGE = { from: '2024-01-01', to: '2024-07-18' };
const WINDOW = 50;
const KEPT_COMPLETED = 100;
const CONCURRENCY = 8;

describe('a backfill kept as a plan, queued a window at a time', () => {
  let rig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('loads 2,000 slices through a window of 50 after the command exited and a worker died, each once, within the window', async () => {
    const slices = countSlices({ ...RANGE, portfolios: PORTFOLIOS, reportTypes: ['index'] });
    expect(slices).toBe(2_000);
    rig = await startQueueRig({
      simulator: { latencyMs: 10 },
      settings: {
        portfolios: PORTFOLIOS,
        reportTypes: ['index'],
        concurrency: CONCURRENCY,
        queue: { backfillWindow: WINDOW, keepCompleted: { ageSeconds: 3_600, count: KEPT_COMPLETED } },
      },
    });
    expect((await rig.cli(['migrate'])).code).toBe(0);
    const doomed = rig.startWorker();
    const survivor = rig.startWorker();
    await Promise.all([rig.ready(doomed), rig.ready(survivor)]);

    // Redis watched from the side all along: jobs not finished, and job hashes kept at all.
    const connection = new Redis(rig.env.REDIS_URL!, { maxRetriesPerRequest: null });
    const queue = new Queue('report-exports', { connection, prefix: rig.prefix });
    const peak = { unfinished: 0, jobs: 0 };
    let plan: BackfillPlan | undefined;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const counts = await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed');
        const unfinished = (counts.waiting ?? 0) + (counts.prioritized ?? 0) + (counts.delayed ?? 0) + (counts.active ?? 0);
        peak.unfinished = Math.max(peak.unfinished, unfinished);
        peak.jobs = Math.max(peak.jobs, unfinished + (counts.completed ?? 0) + (counts.failed ?? 0));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    try {
      const started = await rig.cli(['backfill', '--from', RANGE.from, '--to', RANGE.to]);
      expect(started.code, started.stderr).toBe(0);
      expect(started.stdout).toContain(`Queued ${WINDOW} slices from ${RANGE.from} to ${RANGE.to}`);
      expect(started.stdout).toContain(`the workers queue the rest of the range's ${slices} slices ${WINDOW} at a time`);
      const planId = /backfill plan ([0-9a-f]{16})/.exec(started.stdout)?.[1];
      expect(planId, started.stdout).toBeDefined();

      const { settings } = loadConfig({ cwd: rig.dir, env: rig.env, readDotEnv: false });
      const exportQueue = new ExportQueue({ connection, settings });
      const warehouse = await rig.warehouse();
      try {
        await until(async () => (await countWarehouse(warehouse.db)).ledger >= 600, 60_000, 'a third of the slices loaded');
        doomed.child.kill('SIGKILL');
        expect(await doomed.exited).toBe('SIGKILL');
        await until(
          async () => (await exportQueue.plans.get(planId!))?.state === 'queued' && (await exportQueue.unfinished()) === 0,
          60_000,
          'the plan queued to its end and every job finished',
        );
        plan = await exportQueue.plans.get(planId!);
      } finally {
        await exportQueue.close();
      }
      const counts = await countWarehouse(warehouse.db);
      expect(counts.ledger).toBe(slices);
      expect(counts.notDone).toBe(0);
      // Each slice asked for once, but those the killed worker had taken (downloading, or downloaded and
      // not yet written): nothing queued twice.
      expect(rig.simulator.counters.exportRequests).toBeGreaterThanOrEqual(slices);
      expect(rig.simulator.counters.exportRequests).toBeLessThanOrEqual(slices + jobsAtOnce({ concurrency: CONCURRENCY }));

      expect(plan?.state).toBe('queued');
      expect(plan?.cursor).toBe(slices);
      const { queued, requeued, pending, recovered } = plan!.handed;
      expect(queued + requeued + pending + recovered).toBe(slices);

      // Done: nothing is missing, so the same range with --only-missing queues nothing.
      const again = await rig.cli(['backfill', '--from', RANGE.from, '--to', RANGE.to, '--only-missing']);
      expect(again.stdout).toContain('Queued 0 slices');

      // --force --wait through the window: the summary counts the whole plan, not its first window.
      const forced = await rig.cli(['backfill', '--from', '2024-01-01', '--to', '2024-01-20', '--force', '--wait']);
      expect(forced.code, forced.stderr).toBe(0);
      expect(forced.stdout).toContain(`Queued ${WINDOW} slices from 2024-01-01 to 2024-01-20`);
      expect(forced.stdout).toContain('Run finished in');
      expect(forced.stdout).toContain('200 slices planned');
      // 20 days, 15 of them weekdays, × 10 portfolios.
      expect(forced.stdout).toMatch(/^loaded +150$/m);
      expect(forced.stdout).toMatch(/^no_data +50$/m);
      expect(forced.stdout).toMatch(/^not attempted +0$/m);
    } finally {
      watching = false;
      await watcher;
      await queue.close();
      connection.disconnect();
    }
    // The window, plus the plan's next step (scheduled while a step still runs) and the nightly
    // schedule's next firing, which the workers keep delayed.
    console.info(
      `window ${WINDOW}: at most ${peak.unfinished} jobs unfinished, ${peak.jobs} kept in all; ${rig.simulator.counters.exportRequests} export requests for ${slices} slices`,
    );
    expect(peak.unfinished).toBeLessThanOrEqual(WINDOW + 2);
    expect(peak.jobs).toBeLessThanOrEqual(WINDOW + 2 + KEPT_COMPLETED);
    expect(survivor.child.exitCode).toBeNull();
  }, 150_000);
});
