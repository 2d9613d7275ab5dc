import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { EXPORT_SLICE_JOB } from '../../src/queue/slice-job.js';
import type { Warehouse } from '../../src/warehouse/engine/warehouse-schema.js';
import { startCliProcess } from '../helpers/cli-process.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { until } from '../helpers/until.js';

/*
 * The first SIGTERM stops a command promptly: a download still waiting for the service is cut
 * short (INTERRUPTED), nothing of it is written, and the slice is left as it was: in-process it is
 * reported as not attempted; in a worker its job goes back to the queue with no attempt spent.
 */

const SLOW = { portfolioId: 1001, reportType: 'index', reportDate: '2024-01-01' } as const;

async function ledgerRows(db: Kysely<Warehouse>) {
  const { rows } = await sql<{
    report_date: string;
    status: string;
    attempts: number;
  }>`select cast(report_date as text) as report_date, status, attempts from report_loads order by report_date`.execute(db);
  return rows.map((row) => ({ ...row, report_date: String(row.report_date).slice(0, 10) }));
}

describe('a shutdown while a download is in flight', () => {
  let rig: SyncRig | undefined;
  let queueRig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    await queueRig?.close();
    rig = queueRig = undefined;
  });

  it('run: ends within seconds of one SIGTERM, the slow slice untouched and not attempted', async () => {
    rig = await startSyncRig({ settings: { portfolios: [1001], reportTypes: ['index'] } });
    expect((await rig.cli(['migrate'])).code).toBe(0);
    rig.simulator.script(SLOW.portfolioId, SLOW.reportType, SLOW.reportDate, [{ delayMs: 60_000 }]);
    const run = startCliProcess(['run', '--from', '2024-01-01', '--to', '2024-01-02'], { cwd: rig.dir, env: rig.env });
    const db = (await rig.warehouse()).db;
    // The quick slice is loaded; the slow one is waiting for its answer.
    await until(async () => (await ledgerRows(db)).length === 1, 30_000, 'the quick slice to load');
    const signalledAt = Date.now();
    run.child.kill('SIGTERM');
    expect(await run.exited, run.output()).toBe(1);
    expect(Date.now() - signalledAt).toBeLessThan(3_000);
    expect(run.stdout()).toMatch(/not attempted\s+1/);
    expect(run.stdout()).toContain('Interrupted');
    expect(await ledgerRows(db)).toEqual([{ report_date: '2024-01-02', status: 'loaded', attempts: 1 }]);
  }, 60_000);

  it('worker: exits within seconds of one SIGTERM and puts the job back with no attempt spent; the next worker loads it', async () => {
    queueRig = await startQueueRig({ settings: { portfolios: [1001], reportTypes: ['index'] } });
    expect((await queueRig.cli(['migrate'])).code).toBe(0);
    queueRig.simulator.script(SLOW.portfolioId, SLOW.reportType, SLOW.reportDate, [{ delayMs: 60_000 }]);
    const worker = queueRig.startWorker();
    await queueRig.ready(worker);
    expect((await queueRig.cli(['backfill', '--from', '2024-01-01', '--to', '2024-01-01'])).code).toBe(0);
    await until(() => queueRig!.simulator.counters.exportRequests >= 1, 30_000, 'the worker to ask for the slow slice');
    const signalledAt = Date.now();
    worker.child.kill('SIGTERM');
    expect(await worker.exited, worker.output()).toBe(0);
    expect(Date.now() - signalledAt).toBeLessThan(3_000);

    const connection = new Redis(queueRig.env.REDIS_URL!, { maxRetriesPerRequest: null });
    const queue = new Queue('report-exports', { connection, prefix: queueRig.prefix });
    try {
      // The nightly schedule's next firing waits among the delayed jobs too.
      const job = (await queue.getJobs(['waiting', 'delayed', 'prioritized'])).find((queued) => queued.name === EXPORT_SLICE_JOB);
      expect(job?.data).toMatchObject(SLOW);
      expect(job?.attemptsMade).toBe(0);
    } finally {
      await queue.close();
      connection.disconnect();
    }
    const db = (await queueRig.warehouse()).db;
    expect(await ledgerRows(db)).toEqual([]);

    const next = queueRig.startWorker();
    await until(async () => (await ledgerRows(db)).length === 1, 30_000, 'the next worker to load the slice');
    expect(await ledgerRows(db)).toEqual([{ report_date: '2024-01-01', status: 'loaded', attempts: 1 }]);
    next.child.kill('SIGTERM');
    await next.exited;
  }, 90_000);
});
