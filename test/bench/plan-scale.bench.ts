import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config/load-config.js';
import { countSlices, type SliceRange } from '../../src/slice/slice-range.js';
import { shiftIsoDate } from '../../src/dates/report-date.js';
import { REPORT_TYPES } from '../../src/reports/report-types.js';
import type { BenchResult, BenchSize, Benchmark } from './bench-result.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { countQueuedJobs } from './count-queued-jobs.js';
import { drainExportQueue, type DrainResult } from './drain-export-queue.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import { migrateWarehouse } from '../../src/warehouse/schema/migrate-warehouse.js';
import { Ledger } from '../../src/warehouse/ledger/ledger.js';
import type { WarehouseHandle } from '../../src/warehouse/engine/warehouse-engine.js';
import { startPrivateRedisServer } from './private-redis-server.js';
import type { RawAddBulkOptions } from './raw-add-bulk.js';
import { runMeasuredChild, type MeasuredChild } from './run-measured-child.js';
import { seedSqliteLedger } from './seed-sqlite-ledger.js';
import { CLI_BIN } from '../helpers/cli-bin.js';

const PROJECT = fileURLToPath(new URL('../../', import.meta.url));
const RAW = fileURLToPath(new URL('./raw-add-bulk.ts', import.meta.url));
const MB = 2 ** 20;

interface ScaleSize {
  readonly from: string;
  readonly to: string;
  readonly portfolios: number;
  /** `queue.backfillWindow`: the most jobs the queue holds while the plan is queued. */
  readonly window: number;
  /** A tenth of the range, run first, so peak RSS can be compared across sizes (full only). */
  readonly smallTo?: string;
  /** Days of ledger seeded for the `--only-missing` run, from `from`. */
  readonly ledgerDays: number;
  readonly timeoutMs: number;
}

const SIZES: Record<BenchSize, ScaleSize> = {
  // 3,653 days × 100 portfolios × 6 report types = 2,191,800 slices; the ledger: 1,667 days = 1,000,200 rows.
  full: { from: '2015-01-01', to: '2024-12-31', portfolios: 100, window: 10_000, smallTo: '2015-12-31', ledgerDays: 1_667, timeoutMs: 60 * 60_000 },
  // 31 days × 10 portfolios × 6 report types = 1,860 slices, through a window of 200.
  smoke: { from: '2024-01-01', to: '2024-01-31', portfolios: 10, window: 200, ledgerDays: 10, timeoutMs: 60_000 },
};

/** Redis memory the issue allows a backfill of any size while it is queued and worked off. */
const REDIS_PEAK_TARGET_BYTES = 150 * 2 ** 20;

interface Backfilled extends MeasuredChild {
  readonly queued: number;
}

/** Slices queued and worked off end to end, with the most Redis memory it took. */
interface Worked {
  readonly ms: number;
  readonly slicesPerSecond: number;
  readonly peakMemory: number;
  readonly drain: DrainResult;
  /** CPU of this process (the worker) and of Redis while it ran, in ms. */
  readonly workerCpuMs: number;
  readonly redisCpuMs: number;
}

const mb = (bytes: number) => `${(bytes / MB).toFixed(0)} MB`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const rate = (perSecond: number) => `${Math.round(perSecond).toLocaleString('en-US')}`;

/**
 * Scale of the plan: the real `report-sync backfill` of ten years × 100 portfolios × 6 report
 * types against a private redis-server (its `used_memory` is ours alone), worked off by the
 * product's own worker with an attempt that returns at once (which also runs the plan's refill
 * steps), beside today's full enqueue: raw BullMQ `Queue.addBulk` of every job in batches, in a
 * process of its own, worked off by the same worker at the same time. Both end to end: slices/s
 * and Redis's peak. Then the command's peak RSS across sizes, Redis memory once the jobs are
 * completed under the queue's trimming settings, and `--only-missing` against a million-row ledger.
 */
export const benchmark: Benchmark = {
  name: 'plan-scale',
  order: 5,
  async run(size: BenchSize): Promise<BenchResult[]> {
    const scale = SIZES[size];
    const portfolios = Array.from({ length: scale.portfolios }, (_, i) => 1001 + i);
    const range: SliceRange = { from: scale.from, to: scale.to, portfolios, reportTypes: REPORT_TYPES };
    const planned = countSlices(range);
    /** CPU time spread over the slices: µs a slice. */
    const micros = (cpuMs: number) => `${((cpuMs * 1000) / planned).toFixed(0)} µs`;
    const redis = await startPrivateRedisServer();
    const dir = mkdtempSync(join(tmpdir(), 'report-sync-bench-plan-'));
    let warehouse: WarehouseHandle | undefined;
    try {
      mkdirSync(join(dir, 'config'));
      writeFileSync(join(dir, 'config/default.json'), JSON.stringify({ portfolios, reportTypes: REPORT_TYPES, log: { level: 'warn' }, queue: { backfillWindow: scale.window } }));
      const env = { REDIS_URL: redis.url, DATABASE_URL: `sqlite:${join(dir, 'warehouse.sqlite')}` };
      // The settings the command itself loads: the same queue name, prefix, window, batch size and trimming.
      const { settings } = loadConfig({ cwd: dir, env, readDotEnv: false });
      warehouse = await openWarehouse(env.DATABASE_URL);
      await migrateWarehouse(warehouse);
      const ledger = new Ledger(warehouse);

      const backfill = async (to: string, extra: string[] = [], databaseUrl = env.DATABASE_URL): Promise<Backfilled> => {
        const child = await runMeasuredChild([CLI_BIN, 'backfill', '--from', scale.from, '--to', to, ...extra], {
          cwd: dir,
          env: { ...env, DATABASE_URL: databaseUrl },
          timeoutMs: scale.timeoutMs,
        });
        const queued = Number(/Queued (\d+) slices?/.exec(child.stdout)?.[1] ?? Number.NaN);
        if (child.code !== 0 || !Number.isFinite(queued)) throw new Error(`backfill failed (${child.code}):\n${child.stdout}${child.stderr}`);
        return { ...child, queued };
      };

      /**
       * Works the queue off with the product's worker, watching Redis's memory, until every slice
       * was attempted: while `queue` runs (the plan: the workers queue most of it themselves), or
       * after it finished (`queuedFirst`: today's full enqueue, then the workers' own pace).
       */
      const workOff = async <T>(queue: () => Promise<T>, options: { readonly queuedFirst?: boolean } = {}): Promise<Worked & { readonly queued: T }> => {
        await redis.flush();
        let peakMemory = await redis.usedMemory();
        let watching = true;
        const watcher = (async () => {
          while (watching) {
            peakMemory = Math.max(peakMemory, await redis.usedMemory());
            await sleep(100);
          }
        })();
        try {
          const queuedFirst = options.queuedFirst ? await queue() : undefined;
          const redisCpuBefore = await redis.cpuMs();
          const cpuBefore = process.cpuUsage();
          const startedAt = performance.now();
          const draining = drainExportQueue({ redisUrl: redis.url, settings, concurrency: 100, timeoutMs: scale.timeoutMs, ledger, expected: planned });
          const [queued, drain] = await Promise.all([options.queuedFirst ? queuedFirst! : queue(), draining]);
          const ms = performance.now() - startedAt;
          const cpu = process.cpuUsage(cpuBefore);
          const redisCpuMs = (await redis.cpuMs()) - redisCpuBefore;
          return { ms, slicesPerSecond: (planned * 1000) / ms, peakMemory, drain, queued, workerCpuMs: (cpu.user + cpu.system) / 1000, redisCpuMs };
        } finally {
          watching = false;
          await watcher;
        }
      };

      const small = scale.smallTo ? await backfill(scale.smallTo) : undefined;

      const rawOptions: RawAddBulkOptions = {
        redisUrl: redis.url,
        prefix: settings.queue.prefix,
        queueName: settings.queue.name,
        from: scale.from,
        to: scale.to,
        portfolios,
        reportTypes: REPORT_TYPES,
        priority: settings.queue.backfillPriority,
        batchSize: settings.queue.addBatchSize,
      };
      const rawAddBulk = async () => {
        const raw = await runMeasuredChild(['--import', 'tsx', RAW, JSON.stringify(rawOptions)], { cwd: PROJECT, timeoutMs: scale.timeoutMs });
        if (raw.code !== 0 || raw.stdout.trim() !== `added ${planned}`) throw new Error(`raw addBulk failed (${raw.code}):\n${raw.stdout}${raw.stderr}`);
        return raw;
      };
      // The workers' own pace with nothing queued meanwhile: a report, not the baseline (every
      // backfill has to add its jobs, and adding one costs Redis about what working it off does).
      const queuedFirst = await workOff(rawAddBulk, { queuedFirst: true });
      // Today's full enqueue as users run it: every job added by one process while the workers
      // work them off, timed from its start, like the plan.
      const full = await workOff(rawAddBulk);
      const emptyMemory = (await redis.flush(), await redis.usedMemory());
      const plan = await workOff(() => backfill(scale.to));
      const product = plan.queued;
      const drainedMemory = await redis.usedMemory();
      await redis.flush();

      const ledgerPath = join(dir, 'ledger.sqlite');
      const ledgerTo = shiftIsoDate(scale.from, scale.ledgerDays - 1);
      const seeded = await seedSqliteLedger(ledgerPath, { ...range, to: ledgerTo }, 100);
      const missing = await backfill(scale.to, ['--only-missing'], `sqlite:${ledgerPath}`);
      const missingJobs = await countQueuedJobs(redis.url, settings);

      // Bytes a queued job takes, from today's full enqueue: the bound of what trimming keeps.
      const perQueuedJob = (queuedFirst.peakMemory - emptyMemory) / planned;
      const { keepCompleted, keepFailed } = settings.queue;
      // What trimming lets Redis keep: the kept jobs (a finished job's hash is somewhat larger
      // than a queued one's: counted twice) plus BullMQ's events stream (about 10,000 entries).
      const keptJobs = keepCompleted.count + keepFailed.count;
      const bound = emptyMemory + (2 * Math.min(keptJobs, planned) + 10_000) * perQueuedJob;
      const rssBound = small ? 1.25 * small.peakRssBytes : Number.POSITIVE_INFINITY;
      const sizeNote = `${scale.from} … ${scale.to} × ${scale.portfolios} portfolios × ${REPORT_TYPES.length} report types = ${planned.toLocaleString('en-US')} slices`;
      const workedFacts = (worked: Worked) => ({ jobsAttempted: worked.drain.attempted, attemptsPerJob: worked.drain.mostAttempts });

      return [
        {
          benchmark: 'scale of the plan: backfill worked off',
          product: `${rate(plan.slicesPerSecond)} slices/s`,
          baseline: `${rate(full.slicesPerSecond)} slices/s with today's full enqueue`,
          ratio: plan.slicesPerSecond / full.slicesPerSecond,
          target: '≥ 0.9 × full enqueue',
          pass: plan.slicesPerSecond >= 0.9 * full.slicesPerSecond,
          facts: {
            slicesPlanned: planned,
            ...workedFacts(plan),
            baselineJobsQueued: full.drain.attempted,
            queuedFirstJobsQueued: queuedFirst.drain.attempted,
            nonZeroExits: [product, full.queued, queuedFirst.queued].filter((child) => child.code !== 0).length,
          },
          note:
            `${sizeNote}; a window of ${scale.window.toLocaleString('en-US')} jobs, queued by the command then topped up by the worker as it goes, against today's full enqueue: every job ` +
            `added by raw addBulk (batches of ${settings.queue.addBatchSize}) in a process of its own while the worker works them off; both timed from the queueing process's start to the last attempt ` +
            `by the product's worker (concurrency 100, an attempt that returns at once): ${seconds(plan.ms)} vs ${seconds(full.ms)}. CPU a slice: worker ${micros(plan.workerCpuMs)} vs ${micros(full.workerCpuMs)}, ` +
            `Redis ${micros(plan.redisCpuMs)} vs ${micros(full.redisCpuMs)}, the queueing process ${micros(plan.queued.cpuMs)} vs ${micros(full.queued.cpuMs)}. ` +
            `The worker alone on a queue filled first (adding not timed): ${rate(queuedFirst.slicesPerSecond)} slices/s, Redis ${micros(queuedFirst.redisCpuMs)} a slice`,
        },
        {
          benchmark: 'scale of the plan: Redis used_memory peak',
          product: mb(plan.peakMemory),
          baseline: `${mb(queuedFirst.peakMemory)} with every job queued first`,
          ratio: plan.peakMemory / REDIS_PEAK_TARGET_BYTES,
          target: '≤ 150 MB',
          pass: plan.peakMemory <= REDIS_PEAK_TARGET_BYTES,
          note: `sampled every 100 ms while the backfill was queued and worked off; ${mb(emptyMemory)} empty, about ${Math.round(perQueuedJob)} B per queued job`,
        },
        {
          benchmark: 'scale of the plan: backfill peak RSS',
          product: mb(product.peakRssBytes),
          baseline: small ? `${mb(small.peakRssBytes)} for 1 year` : '—',
          ratio: small ? product.peakRssBytes / small.peakRssBytes : null,
          target: 'bounded (10 years ≤ 1.25 × 1 year)',
          pass: product.peakRssBytes <= rssBound,
          note: `the backfill command's own peak RSS (it queues the first window); raw addBulk's: ${mb(full.queued.peakRssBytes)}`,
        },
        {
          benchmark: 'scale of the plan: Redis used_memory',
          product: `${mb(drainedMemory)} after the jobs completed`,
          baseline: `${mb(bound)} kept-jobs bound`,
          ratio: drainedMemory / bound,
          target: 'bounded by keepCompleted / keepFailed',
          pass: drainedMemory <= bound && plan.drain.keptCompleted <= keepCompleted.count && plan.drain.keptFailed <= keepFailed.count,
          facts: { slicesPlanned: planned, ...workedFacts(plan) },
          note: `${plan.drain.keptCompleted.toLocaleString('en-US')} completed jobs kept (keepCompleted ${keepCompleted.count.toLocaleString('en-US')}, ${keepCompleted.ageSeconds} s)`,
        },
        {
          benchmark: 'scale of the plan: backfill --only-missing',
          product: `peak RSS ${mb(missing.peakRssBytes)}`,
          baseline: `plain backfill: peak RSS ${mb(product.peakRssBytes)}`,
          ratio: missing.peakRssBytes / product.peakRssBytes,
          target: 'bounded (≤ 1.25 × plain backfill)',
          pass: missing.peakRssBytes <= 1.25 * product.peakRssBytes,
          facts: { slicesPlanned: planned, slicesDone: seeded.done, jobsQueued: missingJobs, nonZeroExits: missing.code === 0 ? 0 : 1 },
          note:
            `SQLite ledger of ${seeded.rows.toLocaleString('en-US')} rows (1 in 100 failed); the first ${missing.queued.toLocaleString('en-US')} ` +
            `of the ${(planned - seeded.done).toLocaleString('en-US')} missing slices queued in ${(missing.wallMs / 1000).toFixed(1)} s`,
        },
      ];
    } finally {
      await warehouse?.close();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
