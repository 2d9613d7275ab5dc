import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { countSlices } from '../../src/slice/slice-range.js';
import { capturedIo } from '../helpers/captured-io.js';
import { startCliProcess } from '../helpers/cli-process.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { until, untilSaid } from '../helpers/until.js';

/*
 * Queueing a long range takes a while and holds Redis memory: a signal stops it at the next batch,
 * and a Redis that reaches its maxmemory stops it with a clear message, both saying how many slices
 * were queued (and that the same command queues the rest).
 */

const PORTFOLIOS = Array.from({ length: 10 }, (_, i) => 2001 + i);

/** Jobs the queue holds for slices (the nightly schedule keeps no job until a worker registers it). */
async function queuedJobs(rig: QueueRig): Promise<number> {
  const counts = await rig.queueCounts();
  return counts.waiting + counts.prioritized + counts.delayed;
}

describe('backfill while it is queueing', () => {
  let rig: QueueRig | undefined;
  let redis: PrivateRedis | undefined;
  afterEach(async () => {
    await rig?.close();
    await redis?.destroy();
    rig = redis = undefined;
  });

  it('stops at the next batch on SIGTERM, says how many were queued, and the same command goes on with its plan', async () => {
    rig = await startQueueRig({ settings: { portfolios: PORTFOLIOS } });
    expect((await rig.cli(['migrate'])).code).toBe(0);
    // 10 portfolios × 2 report types × ten years: 73,040 slices.
    const range = ['--from', '2010-01-01', '--to', '2019-12-31'];
    const total = countSlices({ from: '2010-01-01', to: '2019-12-31', portfolios: PORTFOLIOS, reportTypes: ['index', 'constituent.close'] });
    const backfill = startCliProcess(['backfill', ...range], { cwd: rig.dir, env: rig.env });
    await until(async () => (await queuedJobs(rig!)) > 0, 30_000, 'the first batch in Redis', 20);
    const signalledAt = Date.now();
    backfill.child.kill('SIGTERM');
    expect(await backfill.exited, backfill.output()).toBe(1);
    expect(Date.now() - signalledAt).toBeLessThan(3_000);
    const said = /Stopped by the signal before queueing the whole range: (\d+) slices were queued/.exec(backfill.output());
    expect(said, backfill.output()).not.toBeNull();
    const queued = Number(said![1]);
    expect(queued).toBeLessThan(total);
    expect(await queuedJobs(rig)).toBe(queued);

    // The same command goes on with the plan: the step the signal stopped is taken up, the queue
    // filled to the window (queue.backfillWindow, 10,000 by default) and the rest left to the workers.
    const again = await rig.cli(['backfill', ...range]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^Resumed backfill plan [0-9a-f]{16} /);
    expect(again.stdout).toContain(`${queued} already waiting or running, left as they are`);
    expect(again.stdout).toContain(`the workers queue the rest of the range's ${total} slices 10000 at a time`);
    const counts = await rig.queueCounts();
    expect(counts.prioritized).toBe(10_000);
    // The plan's next step, for the first worker to take.
    expect(counts.delayed).toBe(1);
  }, 120_000);

  it('stops waiting on the first SIGTERM under --wait, within a look at the ledger, saying the queued slices go on in the workers', async () => {
    rig = await startQueueRig({ settings: { portfolios: PORTFOLIOS } });
    expect((await rig.cli(['migrate'])).code).toBe(0);
    // No worker: nothing finishes, so only the signal ends the wait.
    const backfill = startCliProcess(['backfill', '--from', '2024-03-04', '--to', '2024-03-06', '--wait'], { cwd: rig.dir, env: rig.env });
    await untilSaid(backfill, 'Queued 60 slices', 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const signalledAt = Date.now();
    backfill.child.kill('SIGTERM');
    const code = await backfill.exited;
    expect(Date.now() - signalledAt).toBeLessThan(3_000);
    expect(code, backfill.output()).toBe(1);
    expect(backfill.output()).toContain('stopped waiting; the queued slices go on in the workers');
    // The whole range fitted in the first window: no refill step is left in the queue.
    expect(await queuedJobs(rig)).toBe(60);
  }, 120_000);

  it('reports a Redis full at its maxmemory with the slices queued so far and what to do (exit 2)', async () => {
    rig = await startQueueRig();
    expect((await rig.cli(['migrate'])).code).toBe(0);
    redis = await startPrivateRedis();
    const client = new Redis(redis.url);
    await client.config('SET', 'maxmemory', '3mb');
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    try {
      const io = capturedIo({ ...rig.env, REDIS_URL: redis.url }, rig.dir);
      const code = await main(['backfill', '--from', '2015-01-01', '--to', '2019-12-31'], io);
      expect(code, io.stderr.text).toBe(2);
      expect(io.stderr.text).toMatch(/Redis refused to store more jobs: it reached its maxmemory/);
      expect(io.stderr.text).toContain('run the same command again');
      expect(io.stderr.text).not.toMatch(/\n\s+at /);
      const queued = Number(/; (\d+) slices were queued before it/.exec(io.stderr.text)?.[1]);
      const queue = new Queue('report-exports', { connection: client, prefix: rig.prefix });
      const counts = await queue.getJobCounts('waiting', 'prioritized');
      await queue.close();
      const held = (counts.waiting ?? 0) + (counts.prioritized ?? 0);
      expect(queued).toBeGreaterThan(0);
      expect(queued).toBeLessThan(7_304);
      expect(held).toBe(queued);
    } finally {
      client.disconnect();
    }
  }, 120_000);
});
