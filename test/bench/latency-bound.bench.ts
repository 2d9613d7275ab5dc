import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { BenchResult, Benchmark } from './bench-result.js';
import { startSimulatorProcess } from './bench-simulator-process.js';
import { runProductInProcess } from './run-product-in-process.js';
import { runRawJsonSlices } from './raw-json-slices.js';
import { watchUndiciInFlight } from './undici-in-flight.js';
import { weekdayIndexSlices } from './weekday-index-slices.js';
import { countSliceFactsAt } from './count-slice-facts.js';

const CONCURRENCY = 64;
const LATENCY_MS = 100;
/** The simulator's own default size of an index file: this benchmark is about waiting, not parsing. */
const RECORDS_PER_SLICE = 3;

/**
 * Issue #5, benchmark 3: every export answer takes 100 ms, so with 64 slices in flight the best
 * any client can do is 64 / 0.1 s = 640 slices/s. The product (`run` in-process, 64 keep-alive
 * connections, concurrency 64) is divided by that ideal; the raw baseline is run the same way as
 * a reference, to tell the product's losses from the machine's.
 */
export const benchmark: Benchmark = {
  name: 'latency-bound',
  order: 3,
  async run(size) {
    const count = size === 'full' ? 2_000 : 192;
    const slices = weekdayIndexSlices(count, 40);
    const ideal = CONCURRENCY / (LATENCY_MS / 1000);
    const dir = mkdtempSync(join(tmpdir(), 'report-sync-bench-latency-'));
    const simulator = await startSimulatorProcess({ indexRecords: RECORDS_PER_SLICE, latencyMs: LATENCY_MS });
    try {
      // Counters and the CPU clock from here, so the simulator's CPU per slice compares between the runs.
      await simulator.reset();
      const rawWatch = watchUndiciInFlight();
      const rawLoop = watchEventLoop();
      const rawCpuAtStart = process.cpuUsage();
      const raw = await runRawJsonSlices({
        upstream: simulator.upstream,
        slices,
        concurrency: CONCURRENCY,
        connections: CONCURRENCY,
        databaseUrl: `sqlite:${join(mkdtempSync(join(dir, 'raw-')), 'raw.sqlite')}`,
      });
      const rawCpu = process.cpuUsage(rawCpuAtStart);
      const rawLoopDelay = rawLoop.stop();
      const rawInFlight = rawWatch.stop();
      const rawUsage = await simulator.usage();
      if (raw.rows !== count * RECORDS_PER_SLICE) throw new Error(`raw baseline loaded ${raw.rows} rows, expected ${count * RECORDS_PER_SLICE}`);

      await simulator.reset();
      const productWatch = watchUndiciInFlight();
      const productLoop = watchEventLoop();
      const productDir = mkdtempSync(join(dir, 'product-'));
      const product = await runProductInProcess({
        env: simulator.env,
        slices,
        dir: productDir,
        settings: {
          portfolios: [1001],
          reportTypes: ['index'],
          formats: { index: 'json' },
          concurrency: CONCURRENCY,
          http: { connections: CONCURRENCY },
          retry: { attempts: 3, baseDelayMs: 50, maxDelayMs: 500 },
          log: { level: 'info' },
        },
      });
      const productLoopDelay = productLoop.stop();
      const productInFlight = productWatch.stop();
      const usage = await simulator.usage();
      const { report } = product;
      if (product.exitCode !== 0 || report.loaded !== count || usage.counters.exportRequests !== count) {
        throw new Error(`the run did not load every slice with one request each: exit ${product.exitCode}, ${report.loaded} loaded, ${usage.counters.exportRequests} requests`);
      }

      const warehouseFacts = await countSliceFactsAt(`sqlite:${join(productDir, 'warehouse.sqlite')}`, slices, { indexRecords: RECORDS_PER_SLICE });

      const productRate = (count * 1000) / report.durationMs;
      const rawRate = (count * 1000) / raw.durationMs;
      const ratio = productRate / ideal;
      return [
        {
          benchmark: 'latency-bound: run, in-process',
          product: `${Math.round(productRate).toLocaleString('en-US')} slices/s`,
          baseline: `${ideal} slices/s (ideal)`,
          ratio,
          target: '≥ 0.85 × ideal',
          pass: ratio >= 0.85,
          facts: {
            ...warehouseFacts,
            baselineRows: { raw: raw.rows },
            exportRequests: usage.counters.exportRequests,
            exportAnswered200: usage.counters.byStatus[200] ?? 0,
            tokenRequests: usage.counters.tokenRequests,
            nonZeroExits: product.exitCode === 0 ? 0 : 1,
          },
          note: `${count.toLocaleString('en-US')} index slices × ${RECORDS_PER_SLICE} records, simulator latency ${LATENCY_MS} ms, concurrency ${CONCURRENCY}, http.connections ${CONCURRENCY}, SQLite; raw baseline the same way: ${Math.round(rawRate)} slices/s (${(rawRate / ideal).toFixed(2)} × ideal). Requests waiting for their answer: product mean ${productInFlight.mean.toFixed(1)}, max ${productInFlight.max}; raw mean ${rawInFlight.mean.toFixed(1)}, max ${rawInFlight.max}. Request time (Little's law: in flight / rate): product ${((productInFlight.mean / productRate) * 1000).toFixed(0)} ms, raw ${((rawInFlight.mean / rawRate) * 1000).toFixed(0)} ms. CPU per slice: product ${(product.cpuMs / count).toFixed(2)} ms, raw ${((rawCpu.user + rawCpu.system) / 1000 / count).toFixed(2)} ms; simulator ${(usage.cpuMs / count).toFixed(2)} ms (product), ${(rawUsage.cpuMs / count).toFixed(2)} ms (raw). Event-loop delay p99: product ${productLoopDelay.p99.toFixed(1)} ms, raw ${rawLoopDelay.p99.toFixed(1)} ms`,
        },
      ] satisfies BenchResult[];
    } finally {
      await simulator.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/** The event-loop delay of this process while watched (timer lateness: how long ready I/O waits behind running code). */
function watchEventLoop(): { stop(): { readonly p99: number; readonly mean: number } } {
  const histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  return {
    stop() {
      histogram.disable();
      return { p99: histogram.percentile(99) / 1e6, mean: histogram.mean / 1e6 };
    },
  };
}
