import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config/load-config.js';
import { countSlices, type SliceRange } from '../../src/slice/slice-range.js';
import { shiftIsoDate } from '../../src/dates/report-date.js';
import { REPORT_TYPES } from '../../src/reports/report-types.js';
import type { BenchResult, BenchSize, Benchmark } from './bench-result.js';
import { countQueuedJobs } from './count-queued-jobs.js';
import { drainExportQueue } from './drain-export-queue.js';
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
  /** A tenth of the range, run first, so peak RSS can be compared across sizes (full only). */
  readonly smallTo?: string;
  /** Days of ledger seeded for the `--only-missing` run, from `from`. */
  readonly ledgerDays: number;
  readonly timeoutMs: number;
}

const SIZES: Record<BenchSize, ScaleSize> = {
  // 3,653 days × 100 portfolios × 6 report types = 2,191,800 slices; the ledger: 1,667 days = 1,000,200 rows.
  full: { from: '2015-01-01', to: '2024-12-31', portfolios: 100, smallTo: '2015-12-31', ledgerDays: 1_667, timeoutMs: 60 * 60_000 },
  smoke: { from: '2024-01-01', to: '2024-01-31', portfolios: 10, ledgerDays: 10, timeoutMs: 60_000 },
};

interface Backfilled extends MeasuredChild {
  readonly queued: number;
  readonly slicesPerSecond: number;
}

const mb = (bytes: number) => `${(bytes / MB).toFixed(0)} MB`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const rate = (perSecond: number) => `${Math.round(perSecond).toLocaleString('en-US')}`;

/**
 * Scale of the plan: the real `report-sync backfill` of ten years × 100 portfolios × 6 report
 * types in a child process of its own (its peak RSS is its own) against a private redis-server
 * (its `used_memory` is ours alone), beside the raw baseline, BullMQ `Queue.addBulk` of the same
 * jobs in batches. Then Redis memory once the jobs are completed under the queue's trimming
 * settings, and `--only-missing` against a ledger of a million rows.
 */
export const benchmark: Benchmark = {
  name: 'plan-scale',
  order: 5,
  async run(size: BenchSize): Promise<BenchResult[]> {
    const scale = SIZES[size];
    const portfolios = Array.from({ length: scale.portfolios }, (_, i) => 1001 + i);
    const range: SliceRange = { from: scale.from, to: scale.to, portfolios, reportTypes: REPORT_TYPES };
    const planned = countSlices(range);
    const redis = await startPrivateRedisServer();
    const dir = mkdtempSync(join(tmpdir(), 'report-sync-bench-plan-'));
    try {
      mkdirSync(join(dir, 'config'));
      writeFileSync(join(dir, 'config/default.json'), JSON.stringify({ portfolios, reportTypes: REPORT_TYPES, log: { level: 'warn' } }));
      const env = { REDIS_URL: redis.url, DATABASE_URL: `sqlite:${join(dir, 'warehouse.sqlite')}` };
      // The settings the command itself loads: the same queue name, prefix, batch size and trimming.
      const { settings } = loadConfig({ cwd: dir, env, readDotEnv: false });

      const backfill = async (to: string, extra: string[] = [], databaseUrl = env.DATABASE_URL): Promise<Backfilled> => {
        const child = await runMeasuredChild([CLI_BIN, 'backfill', '--from', scale.from, '--to', to, ...extra], {
          cwd: dir,
          env: { ...env, DATABASE_URL: databaseUrl },
          timeoutMs: scale.timeoutMs,
        });
        const queued = Number(/Queued (\d+) slices/.exec(child.stdout)?.[1] ?? Number.NaN);
        if (child.code !== 0 || !Number.isFinite(queued)) throw new Error(`backfill failed (${child.code}):\n${child.stdout}${child.stderr}`);
        return { ...child, queued, slicesPerSecond: (countSlices({ ...range, to }) * 1000) / child.wallMs };
      };

      const small = scale.smallTo ? await backfill(scale.smallTo) : undefined;
      await redis.flush();

      const emptyMemory = await redis.usedMemory();
      const productRedisCpuFrom = await redis.cpuMs();
      const product = await backfill(scale.to);
      const productRedisCpuMs = (await redis.cpuMs()) - productRedisCpuFrom;
      if (product.queued !== planned) throw new Error(`backfill queued ${product.queued} slices, expected ${planned}`);
      const queuedMemory = await redis.usedMemory();
      const productJobs = await countQueuedJobs(redis.url, settings);
      const drain = await drainExportQueue({ redisUrl: redis.url, settings, concurrency: 100, timeoutMs: scale.timeoutMs });
      const drainedMemory = await redis.usedMemory();
      await redis.flush();

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
      const rawRedisCpuFrom = await redis.cpuMs();
      const raw = await runMeasuredChild(['--import', 'tsx', RAW, JSON.stringify(rawOptions)], { cwd: PROJECT, timeoutMs: scale.timeoutMs });
      const rawRedisCpuMs = (await redis.cpuMs()) - rawRedisCpuFrom;
      if (raw.code !== 0 || raw.stdout.trim() !== `added ${planned}`) throw new Error(`raw addBulk failed (${raw.code}):\n${raw.stdout}${raw.stderr}`);
      const rawPerSecond = (planned * 1000) / raw.wallMs;
      const rawJobs = await countQueuedJobs(redis.url, settings);
      await redis.flush();

      const ledgerPath = join(dir, 'ledger.sqlite');
      const ledgerTo = shiftIsoDate(scale.from, scale.ledgerDays - 1);
      const seeded = await seedSqliteLedger(ledgerPath, { ...range, to: ledgerTo }, 100);
      const missing = await backfill(scale.to, ['--only-missing'], `sqlite:${ledgerPath}`);
      if (missing.queued !== planned - seeded.done) throw new Error(`--only-missing queued ${missing.queued} slices, expected ${planned - seeded.done}`);
      const missingJobs = await countQueuedJobs(redis.url, settings);

      const perQueuedJob = (queuedMemory - emptyMemory) / planned;
      const { keepCompleted, keepFailed } = settings.queue;
      // What trimming lets Redis keep: the kept jobs (a finished job's hash is somewhat larger
      // than a queued one's: counted twice) plus BullMQ's events stream (about 10,000 entries).
      const keptJobs = keepCompleted.count + keepFailed.count;
      const bound = emptyMemory + (2 * Math.min(keptJobs, planned) + 10_000) * perQueuedJob;
      const rssBound = small ? 1.25 * small.peakRssBytes : Number.POSITIVE_INFINITY;
      const sizeNote = `${scale.from} … ${scale.to} × ${scale.portfolios} portfolios × ${REPORT_TYPES.length} report types = ${planned.toLocaleString('en-US')} slices`;

      return [
        {
          benchmark: 'scale of the plan: backfill',
          product: `${rate(product.slicesPerSecond)} slices/s`,
          baseline: `${rate(rawPerSecond)} jobs/s raw addBulk`,
          ratio: product.slicesPerSecond / rawPerSecond,
          target: '≈ raw addBulk (≥ 0.8 ×)',
          pass: product.slicesPerSecond >= 0.8 * rawPerSecond,
          facts: { slicesPlanned: planned, jobsQueued: productJobs, baselineJobsQueued: rawJobs, nonZeroExits: [product, raw].filter((child) => child.code !== 0).length },
          note:
            `${sizeNote}, batches of ${settings.queue.addBatchSize}; wall time of each process, start to exit: ${seconds(product.wallMs)} vs ${seconds(raw.wallMs)}; ` +
            `CPU (less disturbed by other load): process ${seconds(product.cpuMs)} vs ${seconds(raw.cpuMs)}, Redis ${seconds(productRedisCpuMs)} vs ${seconds(rawRedisCpuMs)}`,
        },
        {
          benchmark: 'scale of the plan: backfill peak RSS',
          product: mb(product.peakRssBytes),
          baseline: small ? `${mb(small.peakRssBytes)} for 1 year` : '—',
          ratio: small ? product.peakRssBytes / small.peakRssBytes : null,
          target: 'bounded (10 years ≤ 1.25 × 1 year)',
          pass: product.peakRssBytes <= rssBound,
          note: `the backfill command's own peak RSS; raw addBulk's: ${mb(raw.peakRssBytes)}`,
        },
        {
          benchmark: 'scale of the plan: Redis used_memory',
          product: `${mb(drainedMemory)} after the jobs completed`,
          baseline: `${mb(bound)} kept-jobs bound`,
          ratio: drainedMemory / bound,
          target: 'bounded by keepCompleted / keepFailed',
          pass: drainedMemory <= bound && drain.keptCompleted <= keepCompleted.count && drain.keptFailed <= keepFailed.count,
          facts: { slicesPlanned: planned, jobsQueued: productJobs, jobsAttempted: drain.attempted, attemptsPerJob: drain.mostAttempts },
          note:
            `${mb(emptyMemory)} before queueing, ${mb(queuedMemory)} with ${planned.toLocaleString('en-US')} jobs queued (${Math.round(perQueuedJob)} B each); ` +
            `drained in ${(drain.ms / 1000).toFixed(0)} s by the product's worker with a no-op attempt, ${drain.keptCompleted.toLocaleString('en-US')} completed jobs kept ` +
            `(keepCompleted ${keepCompleted.count.toLocaleString('en-US')}, ${keepCompleted.ageSeconds} s)`,
        },
        {
          benchmark: 'scale of the plan: backfill --only-missing',
          product: `${rate(missing.slicesPerSecond)} slices/s, peak RSS ${mb(missing.peakRssBytes)}`,
          baseline: `plain backfill: peak RSS ${mb(product.peakRssBytes)}`,
          ratio: missing.peakRssBytes / product.peakRssBytes,
          target: 'bounded (≤ 1.25 × plain backfill)',
          pass: missing.peakRssBytes <= 1.25 * product.peakRssBytes,
          facts: { slicesPlanned: planned, slicesDone: seeded.done, jobsQueued: missingJobs, nonZeroExits: missing.code === 0 ? 0 : 1 },
          note: `SQLite ledger of ${seeded.rows.toLocaleString('en-US')} rows (1 in 100 failed); ${missing.queued.toLocaleString('en-US')} of ${planned.toLocaleString('en-US')} slices queued in ${(missing.wallMs / 1000).toFixed(1)} s`,
        },
      ];
    } finally {
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
