import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { sliceJobId } from '../../src/queue/slice-job.js';
import type { Slice } from '../../src/slice/slice.js';
import type { CliProcess } from '../helpers/cli-process.js';
import { CONSTITUENT_HEADER } from '../helpers/fault-rig.js';
import { makeZipBomb } from '../helpers/make-zip-bomb.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { TEST_REDIS_URL } from '../helpers/test-redis.js';
import { until } from '../helpers/until.js';
import { Receiver } from '../helpers/webhook-receiver.js';

/*
 * A job that takes its worker down with it, in a fleet of worker processes (the compiled CLI) on
 * real Redis and Postgres. Before, BullMQ handed such a job to the next worker, and the next, up to
 * three stalls: one poison slice stopped the fleet one worker after another, and ended as a failed
 * job in Redis while the ledger kept saying nothing. Now the stall past queue.maxStalledCount (2 by
 * default) fails the slice for good as WORKER_DIED (ledger, metric, alert) before any worker
 * touches it again; a job stalled once (a deploy's SIGKILL) is still taken over and loaded.
 */

/** Monday to Friday: 2 portfolios × 2 report types × 5 days, every one with data. */
const WEEK = ['--from', '2024-01-01', '--to', '2024-01-05'];
const SLICES = 20;
/** queue.maxStalledCount's default. */
const MAX_STALLS = 2;
const POISON: Slice = { portfolioId: 1002, reportType: 'constituent.close', reportDate: '2024-01-03' };

interface JobState {
  /** Times a worker took the job (BullMQ's attemptsStarted). */
  readonly starts: number;
  readonly stalls: number;
  /** The pid of the worker holding it now (the worker's name is host:pid), when one holds its lock. */
  readonly holder: number | undefined;
  readonly failedReason: string | undefined;
  readonly state: 'active' | 'failed' | 'completed' | 'other';
}

/** Peak and current resident memory of a process, in MiB, from /proc. */
function memoryOf(pid: number): { peakMiB: number; nowMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { peakMiB: kib('VmHWM') / 1024, nowMiB: kib('VmRSS') / 1024 };
}

function sample(text: string, name: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

describe('a poison job in a fleet of two workers', () => {
  let rig: QueueRig | undefined;
  let redis: Redis | undefined;
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
    redis?.disconnect();
    redis = undefined;
    await receiver?.close();
    receiver = undefined;
  });

  async function jobState(slice: Slice): Promise<JobState> {
    const queueKey = `${rig!.prefix}:report-exports`;
    const id = sliceJobId(slice);
    const [hash, locked, active, failed, completed] = await Promise.all([
      redis!.hgetall(`${queueKey}:${id}`),
      redis!.exists(`${queueKey}:${id}:lock`),
      redis!.lpos(`${queueKey}:active`, id),
      redis!.zscore(`${queueKey}:failed`, id),
      redis!.zscore(`${queueKey}:completed`, id),
    ]);
    const state = failed !== null ? 'failed' : completed !== null ? 'completed' : active !== null ? 'active' : 'other';
    return {
      starts: Number(hash.ats ?? 0),
      stalls: Number(hash.stc ?? 0),
      holder: state === 'active' && locked === 1 && hash.pb ? Number(hash.pb.split(':').pop()) : undefined,
      failedReason: hash.failedReason,
      state,
    };
  }

  /** The fleet's workers by pid: a supervisor's view, which restarts whatever dies. */
  const fleet = new Map<number, CliProcess>();
  async function startWorker(env: Record<string, string> = {}): Promise<CliProcess> {
    const worker = rig!.startWorker([], env);
    await rig!.ready(worker);
    fleet.set(worker.child.pid!, worker);
    return worker;
  }

  /**
   * Waits until a worker of the fleet holds the slice's job for its `start`th time and is
   * downloading it (its request is at the simulator), and kills it with SIGKILL, as the OOM killer would.
   */
  async function killHolder(slice: Slice, start: number): Promise<number> {
    let holder: number | undefined;
    await until(
      async () => {
        const state = await jobState(slice);
        holder = state.starts === start ? state.holder : undefined;
        return holder !== undefined && fleet.has(holder) && rig!.simulator.requestsFor(slice.portfolioId, slice.reportType, slice.reportDate) === start;
      },
      30_000,
      `a worker to take the job of ${sliceJobId(slice)} for the ${start}th time and ask for its file`,
      50,
    );
    const worker = fleet.get(holder!)!;
    fleet.delete(holder!);
    worker.child.kill('SIGKILL');
    expect(await worker.exited).toBe('SIGKILL');
    return Date.now();
  }

  async function ledgerRows() {
    const warehouse = await rig!.warehouse();
    return warehouse.db.selectFrom('report_loads').select(['portfolio_id', 'report_type', 'report_date', 'status', 'error_code', 'error', 'attempts']).execute();
  }

  async function expectFleetAlive(): Promise<void> {
    expect(fleet.size).toBe(2);
    for (const worker of fleet.values()) {
      expect(worker.child.exitCode, worker.output()).toBeNull();
      expect(worker.child.signalCode).toBeNull();
      expect((await fetch(`${rig!.metricsUrl(worker)}/readyz`)).status).toBe(200);
    }
  }

  it('fails a slice whose worker dies every time as WORKER_DIED after queue.maxStalledCount stalls: ledger, metric, alert; never handed on again', async () => {
    fleet.clear();
    rig = await startQueueRig();
    redis = new Redis(TEST_REDIS_URL);
    receiver = await Receiver.start();
    // One job per worker (one download, none taken ahead): a job held beside the poison job on the
    // worker killed with it would stall as often and be failed with it (as documented); here only
    // the poison job may.
    const alerting = { REPORT_ALERT_WEBHOOK_URL: receiver.url.href, REPORT_ALERT_WEBHOOK_FORMAT: 'json', REPORT_SYNC_CONCURRENCY: '1', REPORT_SYNC_QUEUE__PREFETCH: '0' };
    await Promise.all([startWorker(alerting), startWorker(alerting)]);
    // The poison slice's first allowed + 1 downloads hang: whichever worker takes it is killed while
    // it waits. A download after those would be answered with the file, and the slice loaded.
    rig.simulator.script(
      POISON.portfolioId,
      POISON.reportType,
      POISON.reportDate,
      Array.from({ length: MAX_STALLS + 1 }, () => ({ delayMs: 120_000 })),
    );

    const startedAt = Date.now();
    const backfill = rig.cli(['backfill', ...WEEK, '--wait']);
    const kills: number[] = [];
    for (let start = 1; start <= MAX_STALLS; start += 1) {
      kills.push(await killHolder(POISON, start));
      // The supervisor (compose's restart policy, Kubernetes) starts another.
      await startWorker(alerting);
    }
    // The last death takes the whole fleet down (both workers), so no worker is up when the job's
    // lock runs out: the stall is found, and the slice failed, by the fleet's next start.
    kills.push(await killHolder(POISON, MAX_STALLS + 1));
    for (const [pid, worker] of fleet) {
      fleet.delete(pid);
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    expect((await jobState(POISON)).state).toBe('active');
    await Promise.all([startWorker(alerting), startWorker(alerting)]);
    await until(async () => (await jobState(POISON)).state === 'failed', 60_000, 'the poison job to fail');
    const failedAt = Date.now();
    const result = await backfill;
    expect(result.code, result.stdout).toBe(1);

    // Failed for good at its next start, without another attempt: started allowed + 2 times, attempted allowed + 1.
    const job = await jobState(POISON);
    expect(job).toMatchObject({ starts: MAX_STALLS + 2, stalls: MAX_STALLS + 1, state: 'failed' });
    expect(rig.simulator.requestsFor(POISON.portfolioId, POISON.reportType, POISON.reportDate)).toBe(MAX_STALLS + 1);
    expect(job.failedReason).toMatch(/^WORKER_DIED: the worker running this slice stopped without finishing it/);

    const rows = await ledgerRows();
    expect(rows).toHaveLength(SLICES);
    const poisonRow = rows.find((row) => row.portfolio_id === POISON.portfolioId && row.report_type === POISON.reportType && row.report_date === POISON.reportDate);
    expect(poisonRow).toMatchObject({ status: 'failed', error_code: 'WORKER_DIED', attempts: MAX_STALLS + 1 });
    expect(poisonRow!.error).toContain(`${MAX_STALLS + 1} times, more than queue.maxStalledCount (${MAX_STALLS}) allows`);
    // The command is what the user copies: checked whole.
    expect(poisonRow!.error).toContain(
      'retry it with: report-sync backfill --from 2024-01-03 --to 2024-01-03 --portfolios 1002 --report-types constituent.close --failed --code WORKER_DIED',
    );
    expect(rows.filter((row) => row !== poisonRow && row.status !== 'loaded')).toEqual([]);
    // The waited backfill says so too, and so does status, with the code and the command.
    expect(result.stdout).toContain('WORKER_DIED');
    const status = await rig.cli(['status', ...WEEK, '--failed']);
    expect(status.stdout).toContain('WORKER_DIED');
    // The retry command is what the user copies: checked whole.
    expect(status.stdout).toContain('Retry them: report-sync run --from 2024-01-03 --to 2024-01-03 --portfolios 1002 --report-types constituent.close');

    await expectFleetAlive();
    // Counted once, by the worker that failed it.
    let counted = 0;
    for (const worker of fleet.values()) {
      counted += sample(await (await fetch(`${rig.metricsUrl(worker)}/metrics`)).text(), 'report_sync_slice_failures_total{code="WORKER_DIED"}');
    }
    expect(counted).toBe(1);
    // One alert, from the worker, naming the slice and the retry command.
    await until(() => receiver!.requests.some((request) => request.body.kind === 'worker'), 10_000, 'the worker alert');
    const alerts = receiver.requests.filter((request) => request.body.kind === 'worker');
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.body).toMatchObject({
      title: expect.stringContaining('died running a slice: failed for good, not handed to another worker') as unknown,
      counts: { failed: 1 },
      failures: { total: 1, groups: [{ code: 'WORKER_DIED', portfolioId: 1002, slices: 1 }] },
      retryCommand: 'report-sync backfill --from 2024-01-03 --to 2024-01-03 --portfolios 1002 --report-types constituent.close --failed --code WORKER_DIED',
    });

    // `backfill --failed` queues it again as a new job (its stalls forgotten); this time the file is served.
    const retry = await rig.cli(['backfill', ...WEEK, '--failed', '--code', 'WORKER_DIED', '--wait']);
    expect(retry.code, retry.stdout).toBe(0);
    expect(retry.stdout).toMatch(/Queued 1 slice\b/);
    const retried = (await ledgerRows()).find((row) => row.portfolio_id === POISON.portfolioId && row.report_type === POISON.reportType && row.report_date === POISON.reportDate);
    expect(retried).toMatchObject({ status: 'loaded', error_code: null });

    console.info(
      `poison job: ${MAX_STALLS + 1} holders killed (the last with the whole fleet), started ${job.starts} times, failed ${((failedAt - kills.at(-1)!) / 1000).toFixed(1)} s after the last kill (4 s of it with no worker up), ` +
        `${((failedAt - startedAt) / 1000).toFixed(1)} s after the backfill began (lockDurationMs 3000, stalledIntervalMs 1000)`,
    );
  }, 180_000);

  it('takes over and loads a job whose worker was killed once (a deploy), without failing it', async () => {
    fleet.clear();
    rig = await startQueueRig();
    redis = new Redis(TEST_REDIS_URL);
    await Promise.all([startWorker(), startWorker()]);
    // Only the first download hangs; the worker that takes the job over gets the file.
    rig.simulator.script(POISON.portfolioId, POISON.reportType, POISON.reportDate, [{ delayMs: 120_000 }]);

    const backfill = rig.cli(['backfill', ...WEEK, '--wait']);
    const killedAt = await killHolder(POISON, 1);
    const replacement = await startWorker();
    const result = await backfill;
    const loadedAt = Date.now();
    expect(result.code, result.stdout).toBe(0);

    expect(await jobState(POISON)).toMatchObject({ starts: 2, stalls: 1, state: 'completed' });
    const rows = await ledgerRows();
    expect(rows).toHaveLength(SLICES);
    expect(rows.every((row) => row.status === 'loaded' && row.error_code === null)).toBe(true);
    const taker = [...fleet.values()].find((worker) => worker.output().includes('took over a stalled job'));
    expect(taker, 'a worker says it took the stalled job over').toBeDefined();
    expect([...fleet.values()].some((worker) => worker.output().includes('WORKER_DIED'))).toBe(false);
    expect(replacement.child.exitCode).toBeNull();
    await expectFleetAlive();
    console.info(`a job killed once: taken over and loaded ${((loadedAt - killedAt) / 1000).toFixed(1)} s after the kill`);
  }, 120_000);

  it('fails a ZIP holding one CSV line of 300 million commas as FILE_INVALID; both workers stay up and load every other slice', async () => {
    fleet.clear();
    rig = await startQueueRig();
    redis = new Redis(TEST_REDIS_URL);
    const workers = await Promise.all([startWorker(), startWorker()]);
    const idle = workers.map((worker) => memoryOf(worker.child.pid!).nowMiB);
    const commas = Buffer.alloc(1024 * 1024, ',');
    const poison = makeZipBomb({ entryName: 'constituents.csv', head: Buffer.from(`${CONSTITUENT_HEADER}\r\n`), unit: commas, repeats: Math.ceil(300e6 / commas.length) });
    expect(poison.inflatedBytes).toBeGreaterThan(300e6);
    expect(poison.zip.length).toBeLessThan(400 * 1024);
    rig.simulator.script(
      POISON.portfolioId,
      POISON.reportType,
      POISON.reportDate,
      Array.from({ length: 3 }, () => ({
        status: 200,
        body: poison.zip,
        headers: { 'Content-Type': 'application/zip', 'Content-Disposition': 'attachment; filename="poison.zip"' },
      })),
    );

    const result = await rig.cli(['backfill', ...WEEK, '--wait']);
    expect(result.code, result.stdout).toBe(1);
    const job = await jobState(POISON);
    expect(job).toMatchObject({ starts: 1, stalls: 0, state: 'failed' });
    expect(job.failedReason).toMatch(/^FILE_INVALID: .*longer than limits\.maxRecordBytes/);
    const rows = await ledgerRows();
    expect(rows).toHaveLength(SLICES);
    const poisonRow = rows.find((row) => row.portfolio_id === POISON.portfolioId && row.report_type === POISON.reportType && row.report_date === POISON.reportDate);
    expect(poisonRow).toMatchObject({ status: 'failed', error_code: 'FILE_INVALID', attempts: 1 });
    expect(poisonRow!.error).toMatch(/poison\.zip.* line 2: the record is longer than limits\.maxRecordBytes \(1048576 characters\)/);
    expect(rows.filter((row) => row !== poisonRow && row.status !== 'loaded')).toEqual([]);

    for (const worker of workers) expect(fleet.get(worker.child.pid!)).toBe(worker);
    await expectFleetAlive();
    const grown = workers.map((worker, i) => memoryOf(worker.child.pid!).peakMiB - idle[i]!);
    for (const growth of grown) expect(growth).toBeLessThan(300);
    console.info(
      `poison file: ${(poison.zip.length / 1024).toFixed(0)} KiB ZIP of ${(poison.inflatedBytes / 1e6).toFixed(0)} MB; ` +
        `workers' peak RSS above idle: ${grown.map((mib) => `${mib.toFixed(0)} MiB`).join(', ')}`,
    );
  }, 120_000);
});
