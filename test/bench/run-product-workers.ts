import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config/load-config.js';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import { ExportQueue } from '../../src/queue/export-queue.js';
import { createRedisConnection } from '../../src/queue/redis-connection.js';
import { createLogger } from '../../src/logger.js';
import type { Slice } from '../../src/slice.js';
import { Ledger } from '../../src/warehouse/ledger.js';
import { migrateWarehouse } from '../../src/warehouse/migrate-warehouse.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import { TEST_REDIS_URL, testPrefix } from '../helpers/test-redis.js';

const BIN = fileURLToPath(new URL('../../src/cli/bin.mjs', import.meta.url));

export interface ProductWorkersOptions {
  /** The `REPORT_*` variables of the upstream. */
  readonly env: Record<string, string>;
  readonly slices: readonly Slice[];
  /** Worker processes to start. */
  readonly workers: number;
  /** An empty directory of its own: config/, the warehouse (if SQLite), the workers' logs. */
  readonly dir: string;
  /** `DATABASE_URL` of an empty database; a SQLite file in `dir` when omitted. */
  readonly databaseUrl?: string;
  /** Settings every worker reads (`concurrency` is per worker); the queue prefix is set here. */
  readonly settings: SettingsInput;
  /** Give up (and fail) after this long. */
  readonly timeoutMs: number;
}

export interface ProductWorkersResult {
  /** From the first job a worker started to the last one finished, by BullMQ's own job timestamps. */
  readonly durationMs: number;
  readonly completed: number;
  readonly failed: number;
  /** Slices the ledger holds as loaded afterwards. */
  readonly loaded: number;
  /** CPU time of all the worker processes together, start-up included. */
  readonly workerCpuMs: number;
}

/**
 * The product in queue mode: the slices queued (as `backfill` queues them) on a paused queue
 * under a Redis prefix of its own, `workers` real worker processes (`report-sync worker`, logs to
 * a file) started and ready, then the queue resumed and followed until every job is finished.
 * Everything it made is removed: the processes stopped, the prefix's keys deleted.
 */
export async function runProductWorkers(options: ProductWorkersOptions): Promise<ProductWorkersResult> {
  const redisScope = testPrefix();
  const databaseUrl = options.databaseUrl ?? `sqlite:${join(options.dir, 'warehouse.sqlite')}`;
  mkdirSync(join(options.dir, 'config'), { recursive: true });
  const settings: SettingsInput = { ...options.settings, queue: { ...options.settings.queue, prefix: redisScope.prefix } };
  writeFileSync(join(options.dir, 'config/default.json'), JSON.stringify(settings));
  const env = { ...options.env, DATABASE_URL: databaseUrl, REDIS_URL: TEST_REDIS_URL };
  const config = loadConfig({ cwd: options.dir, env, readDotEnv: false });

  // Migrated before any worker starts, so the workers do not race each other to create the tables.
  const warehouse = await openWarehouse(databaseUrl, { cwd: options.dir });
  const redis = createRedisConnection(TEST_REDIS_URL, createLogger({ level: 'silent' }));
  const exportQueue = new ExportQueue({ connection: redis, settings: config.settings });
  const children: { child: ChildProcess; log: string; exited: Promise<void> }[] = [];
  try {
    await migrateWarehouse(warehouse);
    await exportQueue.queue.pause();
    await exportQueue.addSlices(options.slices, config.settings.queue.backfillPriority);

    for (let n = 0; n < options.workers; n += 1) {
      const log = join(options.dir, `worker-${n}.log`);
      const fd = openSync(log, 'w');
      const child = spawn(process.execPath, [BIN, 'worker'], { cwd: options.dir, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', fd, fd] });
      closeSync(fd);
      children.push({ child, log, exited: new Promise((resolve) => child.once('exit', () => resolve())) });
    }
    const deadline = Date.now() + options.timeoutMs;
    for (const { child, log } of children) {
      while (!readFileSync(log, 'utf8').includes('worker ready')) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`a worker did not get ready:\n${readFileSync(log, 'utf8').slice(-2000)}`);
        await sleep(50);
      }
    }

    await exportQueue.queue.resume();
    let counts: Record<string, number> = {};
    for (;;) {
      counts = await exportQueue.queue.getJobCounts('completed', 'failed');
      if ((counts.completed ?? 0) + (counts.failed ?? 0) >= options.slices.length) break;
      if (Date.now() > deadline) throw new Error(`the workers did not finish in ${options.timeoutMs} ms: ${JSON.stringify(counts)}`);
      await sleep(100);
    }

    const jobs = await exportQueue.queue.getJobs(['completed', 'failed'], 0, -1);
    let first = Number.POSITIVE_INFINITY;
    let last = 0;
    for (const job of jobs) {
      if (job.processedOn !== undefined) first = Math.min(first, job.processedOn);
      if (job.finishedOn !== undefined) last = Math.max(last, job.finishedOn);
    }

    const workerCpuMs = await stopWorkers(children);
    const loaded = (await new Ledger(warehouse.db).countByStatus({ from: '0000-01-01', to: '9999-12-31' }))
      .filter((count) => count.status === 'loaded')
      .reduce((sum, count) => sum + count.slices, 0);
    return { durationMs: last - first, completed: counts.completed ?? 0, failed: counts.failed ?? 0, loaded, workerCpuMs };
  } finally {
    for (const { child } of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(children.map(({ exited }) => exited));
    await exportQueue.close();
    redis.disconnect();
    await warehouse.close();
    await redisScope.cleanup();
  }
}

/**
 * Stops the workers with SIGTERM, as an operator does. Their CPU time is read from /proc first,
 * while they still run (a worker does not report its own).
 * @returns the workers' CPU time together, in ms
 */
async function stopWorkers(children: readonly { child: ChildProcess; exited: Promise<void> }[]): Promise<number> {
  let cpuMs = 0;
  for (const { child } of children) cpuMs += processCpuMs(child.pid);
  for (const { child } of children) child.kill('SIGTERM');
  await Promise.race([Promise.all(children.map(({ exited }) => exited)), sleep(15_000)]);
  return cpuMs;
}

/** utime + stime of a process from /proc (Linux); 0 where there is no /proc. */
function processCpuMs(pid: number | undefined): number {
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
