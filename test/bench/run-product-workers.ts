import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../src/config/load-config.js';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import { ExportQueue } from '../../src/queue/export-queue.js';
import { sliceJobId } from '../../src/queue/slice-job.js';
import { createRedisConnector } from '../../src/queue/redis-connection.js';
import { createLogger } from '../../src/logging/logger.js';
import type { Slice } from '../../src/slice/slice.js';
import { Ledger } from '../../src/warehouse/ledger/ledger.js';
import { migrateWarehouse } from '../../src/warehouse/schema/migrate-warehouse.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import { TEST_REDIS_URL, testPrefix } from '../helpers/test-redis.js';
import type { SyntheticSizes } from '../../src/simulator/synthetic-reports.js';
import type { BenchFacts } from './bench-result.js';
import { countSliceFacts } from './count-slice-facts.js';
import { describeCensus, takeCpuCensus } from './cpu-census.js';
import { CLI_BIN } from '../helpers/cli-bin.js';

/** Slices the fleet runs in one go, after growing to `workers` processes. */
export interface WorkerBatch {
  readonly slices: readonly Slice[];
  readonly workers: number;
}

export interface ProductWorkersOptions {
  /** The `REPORT_*` variables of the upstream. */
  readonly env: Record<string, string>;
  /** Run one after the other; the fleet only grows, so a batch asking for fewer workers gets the ones running. */
  readonly batches: readonly WorkerBatch[];
  /** An empty directory of its own: config/, the warehouse (if SQLite), the workers' logs. */
  readonly dir: string;
  /** `DATABASE_URL` of an empty database; a SQLite file in `dir` when omitted. */
  readonly databaseUrl?: string;
  /** Settings every worker reads (`concurrency` is per worker); the queue prefix is set here. */
  readonly settings: SettingsInput;
  /** Give up (and fail) after this long, for all batches together. */
  readonly timeoutMs: number;
  /** The CPU time the upstream's process has spent so far, for the census of each batch. */
  readonly upstreamCpuMs?: () => Promise<number>;
  /** The simulator's file sizes, for the rows each batch's slices should have (`facts.rowsExpected`). */
  readonly sizes?: SyntheticSizes;
}

export interface WorkerBatchResult {
  readonly workers: number;
  /** From the first job of the batch started to the last one finished, by BullMQ's own job timestamps. */
  readonly durationMs: number;
  readonly completed: number;
  readonly failed: number;
  /** Slices of the batch the ledger holds as loaded afterwards. */
  readonly loaded: number;
  /** CPU time the worker processes spent on the batch (start-up not included). */
  readonly workerCpuMs: number;
  /** What the machine's cores did during the batch: workers, simulator, Postgres, MySQL, Redis, idle (see `describeCensus`). */
  readonly cores: string;
  /** The batch's slices in the ledger and the report tables, counted after it finished. */
  readonly facts: BenchFacts;
}

/**
 * The product in queue mode: each batch of slices queued (as `backfill` queues them) on a paused
 * queue under a Redis prefix of its own, enough real worker processes (`report-sync worker`, logs
 * to files) started and ready, then the queue resumed and followed until every job of the batch
 * is finished. Everything it made is removed: the processes stopped, the prefix's keys deleted.
 */
export async function runProductWorkers(options: ProductWorkersOptions): Promise<WorkerBatchResult[]> {
  const redisScope = testPrefix();
  const databaseUrl = options.databaseUrl ?? `sqlite:${join(options.dir, 'warehouse.sqlite')}`;
  mkdirSync(join(options.dir, 'config'), { recursive: true });
  // Metrics on, as deployed, each worker on a free port of its own. Every job of every batch is
  // kept, so that each batch can be counted and timed from its jobs.
  const jobCount = options.batches.reduce((sum, batch) => sum + batch.slices.length, 0);
  const settings: SettingsInput = {
    metrics: { port: 0 },
    ...options.settings,
    queue: { ...options.settings.queue, prefix: redisScope.prefix, keepCompleted: { count: Math.max(jobCount, 10_000) } },
  };
  writeFileSync(join(options.dir, 'config/default.json'), JSON.stringify(settings));
  const env = { ...options.env, DATABASE_URL: databaseUrl, REDIS_URL: TEST_REDIS_URL };
  const config = loadConfig({ cwd: options.dir, env, readDotEnv: false });
  const deadline = Date.now() + options.timeoutMs;

  // Migrated before any worker starts, so the workers do not race each other to create the tables.
  const warehouse = await openWarehouse(databaseUrl, { cwd: options.dir });
  const redis = createRedisConnector(TEST_REDIS_URL, createLogger({ level: 'silent' })).connect();
  const exportQueue = new ExportQueue({ connection: redis, settings: config.settings });
  const children: { child: ChildProcess; log: string; exited: Promise<void> }[] = [];
  const fleetCpuMs = () => children.reduce((sum, { child }) => sum + processCpuMs(child.pid), 0);
  try {
    await migrateWarehouse(warehouse);
    const ledger = new Ledger(warehouse);
    const results: WorkerBatchResult[] = [];
    let finishedBefore = 0;
    for (const batch of options.batches) {
      await exportQueue.queue.pause();
      await exportQueue.addSlices(batch.slices, config.settings.queue.backfillPriority);
      while (children.length < batch.workers) {
        const log = join(options.dir, `worker-${children.length}.log`);
        const fd = openSync(log, 'w');
        const child = spawn(process.execPath, [CLI_BIN, 'worker'], { cwd: options.dir, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', fd, fd] });
        closeSync(fd);
        children.push({ child, log, exited: new Promise((resolve) => child.once('exit', () => resolve())) });
      }
      for (const { child, log } of children) {
        while (!readFileSync(log, 'utf8').includes('worker ready')) {
          if (child.exitCode !== null || Date.now() > deadline) throw new Error(`a worker did not get ready:\n${readFileSync(log, 'utf8').slice(-2000)}`);
          await sleep(50);
        }
      }

      const cpuAtStart = fleetCpuMs();
      const upstreamAtStart = (await options.upstreamCpuMs?.()) ?? 0;
      const censusAtStart = takeCpuCensus(SERVERS);
      await exportQueue.queue.resume();
      const resumedAt = performance.now();
      const expected = finishedBefore + batch.slices.length;
      let counts: Record<string, number> = {};
      for (;;) {
        counts = await exportQueue.queue.getJobCounts('completed', 'failed');
        if ((counts.completed ?? 0) + (counts.failed ?? 0) >= expected) break;
        if (Date.now() > deadline) throw new Error(`the workers did not finish in ${options.timeoutMs} ms: ${JSON.stringify(counts)}`);
        await sleep(100);
      }
      const workerCpuMs = fleetCpuMs() - cpuAtStart;
      const census = takeCpuCensus(SERVERS);
      const upstreamMs = ((await options.upstreamCpuMs?.()) ?? 0) - upstreamAtStart;
      finishedBefore = expected;

      const ids = new Set(batch.slices.map(sliceJobId));
      const jobs = (await exportQueue.queue.getJobs(['completed', 'failed'], 0, -1)).filter((job) => job.id !== undefined && ids.has(job.id));
      let first = Number.POSITIVE_INFINITY;
      let last = 0;
      for (const job of jobs) {
        if (job.processedOn !== undefined) first = Math.min(first, job.processedOn);
        if (job.finishedOn !== undefined) last = Math.max(last, job.finishedOn);
      }
      const dates = batch.slices.map((slice) => slice.reportDate).sort();
      const loaded = (await ledger.countByStatus({ from: dates[0]!, to: dates[dates.length - 1]! }))
        .filter((count) => count.status === 'loaded')
        .reduce((sum, count) => sum + count.slices, 0);
      const failed = jobs.filter((job) => job.finishedOn !== undefined && job.failedReason !== undefined && job.failedReason !== null).length;
      // The census spans resume to the last poll, a little longer than first job to last.
      const spanMs = performance.now() - resumedAt;
      const cores = describeCensus(censusAtStart, census, spanMs, cpus().length, { workers: workerCpuMs, simulator: upstreamMs });
      const facts = await countSliceFacts(warehouse.db, batch.slices, options.sizes ?? {});
      results.push({ workers: children.length, durationMs: last - first, completed: jobs.length - failed, failed, loaded, workerCpuMs, cores, facts });
    }
    await stopWorkers(children);
    return results;
  } finally {
    for (const { child } of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(children.map(({ exited }) => exited));
    await exportQueue.close();
    redis.disconnect();
    await warehouse.close();
    await redisScope.cleanup();
  }
}

/** The servers whose CPU a batch's census counts, by command name. */
const SERVERS = { postgres: ['postgres'], mysql: ['mariadbd', 'mysqld'], redis: ['redis-server'] };

/** Stops the workers with SIGTERM, as an operator does; whatever is still running after that is killed by the caller. */
async function stopWorkers(children: readonly { child: ChildProcess; exited: Promise<void> }[]): Promise<void> {
  for (const { child } of children) child.kill('SIGTERM');
  const patience = new AbortController();
  const givenUp = sleep(15_000, undefined, { signal: patience.signal }).catch(() => undefined);
  await Promise.race([Promise.all(children.map(({ exited }) => exited)), givenUp]);
  // The 15 s timer must not outlive the workers (the leak check would name it).
  patience.abort();
}

/** CPU a process has used so far (user + system, from /proc), in ms; 0 for one that is gone. */
export function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat (utime, stime), counted after the command name; clock ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}
