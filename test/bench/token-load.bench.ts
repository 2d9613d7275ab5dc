import { setTimeout as sleep } from 'node:timers/promises';
import { startQueueRig, type WorkerProcess } from '../helpers/queue-rig.js';
import type { BenchResult, BenchSize, Benchmark } from './bench-result.js';

/** The shape: three worker processes × concurrency 8, a 3 s token, 30 s of steady demand. */
const WORKERS = 3;
const CONCURRENCY = 8;
const TOKEN_LIFETIME_SECONDS = 3;
// Long enough that the 24 jobs spend their time waiting on the service (not on this 2-core
// machine's CPU), so all of them keep asking for a token all the time.
const LATENCY_MS = 500;
/** `token.refreshMarginSeconds` is 30 by default, capped at a tenth of the lifetime the server gave. */
const MARGIN_SECONDS = TOKEN_LIFETIME_SECONDS / 10;

const SIZES = {
  full: { windowMs: 30_000, portfolios: 40, days: 30 },
  smoke: { windowMs: 3_000, portfolios: 8, days: 14 },
} as const;

/**
 * Identity-provider load: how many token requests a fleet makes per token lifetime. The product
 * side is three real `report-sync worker` processes sharing the Redis token cache, fed by a real
 * `backfill`, against the simulator; the baseline column is the ideal, one request per usable
 * lifetime (the refresher renews `margin` before expiry, so a token serves `lifetime − margin`).
 */
export const benchmark: Benchmark = {
  name: 'token-load',
  order: 4,
  async run(size: BenchSize): Promise<BenchResult[]> {
    const { windowMs, portfolios, days } = SIZES[size];
    const rig = await startQueueRig({
      simulator: { tokenLifetimeSeconds: TOKEN_LIFETIME_SECONDS, latencyMs: LATENCY_MS, indexRecords: 2, constituentRows: 5 },
      settings: { concurrency: CONCURRENCY, queue: { lockDurationMs: 30_000, stalledIntervalMs: 15_000 } },
    });
    const workers: WorkerProcess[] = [];
    try {
      for (let i = 0; i < WORKERS; i += 1) workers.push(rig.startWorker());
      await Promise.all(workers.map((worker) => rig.ready(worker, 60_000)));
      rig.simulator.resetCounters();

      const portfolioList = Array.from({ length: portfolios }, (_, i) => 2001 + i).join(',');
      const lastDay = new Date(Date.UTC(2024, 0, days)).toISOString().slice(0, 10);
      const startedAt = performance.now();
      // Not awaited: the workers start on the first batch while the rest is being queued.
      const backfill = rig.cli(['backfill', '--from', '2024-01-01', '--to', lastDay, '--portfolios', portfolioList]);

      // Sampled every 10 ms: when each token request arrived, to show the gaps between renewals.
      const tokenTimes: number[] = [];
      let seen = 0;
      while (performance.now() - startedAt < windowMs) {
        const now = rig.simulator.counters.tokenRequests;
        for (; seen < now; seen += 1) tokenTimes.push(performance.now() - startedAt);
        await sleep(10);
      }
      const durationMs = performance.now() - startedAt;
      const tokenRequests = rig.simulator.counters.tokenRequests;
      const exportRequests = rig.simulator.counters.exportRequests;
      const rejected = rig.simulator.counters.byStatus[401] ?? 0;
      const queued = await backfill;
      if (queued.code !== 0) throw new Error(`backfill failed (${queued.code}):\n${queued.stdout}${queued.stderr}${queued.logs}`);
      const planned = Number(/Queued (\d+) slices/.exec(queued.stdout)?.[1] ?? 0);

      // Stop the fleet the way an operator does: SIGTERM finishes the jobs in flight.
      for (const worker of workers) worker.child.kill('SIGTERM');
      const exits = await Promise.all(workers.map((worker) => worker.exited));
      if (exits.some((code) => code !== 0)) {
        throw new Error(`a worker did not stop cleanly (${exits.join(', ')}):\n${workers.map((w) => w.output().slice(-2_000)).join('\n')}`);
      }

      const seconds = durationMs / 1000;
      const usableSeconds = TOKEN_LIFETIME_SECONDS - MARGIN_SECONDS;
      // A token is renewed no sooner than `usable` seconds after the previous one was asked for,
      // so from the first request to the end of the window there are at most floor(that / usable) + 1
      // requests. The first one's time is sampled up to 10 ms late: counted as 10 ms earlier.
      const firstMs = Math.max(0, (tokenTimes[0] ?? 0) - 10);
      const ideal = Math.floor((durationMs - firstMs) / 1000 / usableSeconds) + 1;
      const lifetimes = seconds / TOKEN_LIFETIME_SECONDS;
      const gaps = tokenTimes.slice(1).map((time, i) => time - tokenTimes[i]!);
      const shortestGap = gaps.length > 0 ? Math.min(...gaps) / 1000 : Number.NaN;
      // Each export request holds its job at least LATENCY_MS: a lower bound on the jobs kept busy.
      const busyJobs = (exportRequests * LATENCY_MS) / durationMs;
      const busyAllWindow = exportRequests < planned;

      return [
        {
          benchmark: 'identity-provider load',
          product: `${tokenRequests} token requests in ${seconds.toFixed(1)} s (${lifetimes.toFixed(1)} lifetimes of ${TOKEN_LIFETIME_SECONDS} s)`,
          baseline: `ideal ${ideal}: 1 per ${usableSeconds.toFixed(1)} s of use, + the first`,
          ratio: tokenRequests / ideal,
          target: '= 1 per lifetime (≤ ideal)',
          pass: tokenRequests >= 1 && tokenRequests <= ideal && rejected === 0 && busyAllWindow,
          facts: {
            tokenRequests,
            tokenRequestsBound: ideal,
            export401s: rejected,
            exportRequests,
            jobsQueued: planned,
            nonZeroExits: exits.filter((code) => code !== 0).length + (queued.code === 0 ? 0 : 1),
          },
          note:
            `${WORKERS} worker processes × concurrency ${CONCURRENCY}, ${TOKEN_LIFETIME_SECONDS} s token renewed ${MARGIN_SECONDS.toFixed(1)} s early, ` +
            `${(tokenRequests / lifetimes).toFixed(2)} requests per ${TOKEN_LIFETIME_SECONDS} s lifetime, ` +
            `shortest gap between requests ${shortestGap.toFixed(2)} s, ${rejected} export 401s, ` +
            `first request ${(firstMs / 1000).toFixed(1)} s into the window, ` +
            `${exportRequests} export requests at ${LATENCY_MS} ms latency (on average ≥ ${busyJobs.toFixed(1)} of ${WORKERS * CONCURRENCY} jobs waiting on the service, ` +
            `${busyAllWindow ? 'the queue never ran dry' : 'the queue ran dry before the window ended'})`,
        },
      ];
    } finally {
      await rig.close();
    }
  },
};
