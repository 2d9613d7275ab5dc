import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import type { BenchFacts, BenchResult, Benchmark } from './bench-result.js';
import { startSimulatorProcess } from './bench-simulator-process.js';
import { runProductWorkers } from './run-product-workers.js';
import { startSmallSliceSide, type SmallSliceSideName } from './small-slice-side.js';
import { runRawJsonSlices } from './raw-json-slices.js';
import { weekdayIndexSlices } from './weekday-index-slices.js';
import { createTempDatabase, createTempWarehouse } from '../helpers/temp-warehouse.js';
import type { Slice } from '../../src/slice/slice.js';
import { countSliceFactsAt } from './count-slice-facts.js';
import { takeCpuCensus } from './cpu-census.js';
import { emptyMysqlWarehouse } from './empty-mysql-warehouse.js';

const CONCURRENCY = 16;
const RECORDS_PER_SLICE = 50;
const SIZES = { indexRecords: RECORDS_PER_SLICE };

/** The settings both product sides run with: the issue's concurrency, index as JSON, quick retries. */
const SETTINGS: SettingsInput = {
  portfolios: [1001],
  reportTypes: ['index'],
  formats: { index: 'json' },
  concurrency: CONCURRENCY,
  retry: { attempts: 3, baseDelayMs: 50, maxDelayMs: 500 },
  log: { level: 'info' },
};

interface Measured {
  readonly perSecond: number;
  /** What the cores did (worker fleets only; see `describeCensus`). */
  readonly cores?: string;
  /** CPU ms per slice of the measured process(es). */
  readonly cpuPerSlice: number;
  /** CPU ms per slice of the database server (MySQL sides but the fleet's, which has `cores`). */
  readonly serverCpuPerSlice?: number;
  /** Share of one core the simulator used during the measured span. */
  readonly simulatorLoad: number;
  /** What the run left behind, counted after it (see `BenchFacts`). */
  readonly facts: BenchFacts;
  /** Worker fleets: CPU ms per slice over the warm-up slices each new worker process loaded first, unmeasured. */
  readonly warmUpCpuPerSlice?: number;
}

/** The runs of the two rows judged against the guarantees script, of one dialect. */
interface JudgedRuns {
  readonly raw: Measured[];
  readonly guaranteed: Measured[];
  readonly inProcess: Measured[];
  readonly oneWorker: Measured[];
}

/** The MySQL server's processes, by command name (`/proc/<pid>/comm`). */
const MYSQL_SERVER = { mysql: ['mariadbd', 'mysqld'] };

/** CPU time the MySQL server has spent so far, in ms (0 where /proc cannot tell). */
function mysqlServerCpuMs(): number {
  return takeCpuCensus(MYSQL_SERVER).groups.mysql ?? 0;
}

/**
 * Issue #5, benchmark 1: many small JSON slices from the simulator (its own process, no latency,
 * no faults), concurrency 16, into SQLite and into MySQL. The product runs as `run` in-process and
 * as BullMQ worker processes (SQLite: one, then two; Postgres: one, then two; MySQL: one). The
 * in-process and one-worker rows of SQLite and of MySQL are judged against the guarantees script
 * (guaranteed-json-slices.ts: the issue's guarantees and nothing else) writing to the same
 * dialect, by CPU per slice (issue 27); the raw baseline (undici + `JSON.parse` + one
 * prepared-statement transaction per slice) is reported beside it. Sides alternate and the best
 * round of each is kept, so a burst of load from elsewhere on the machine does not decide the ratio.
 * Every side is timed warm, in a process of its own (the scripts and `run` too, see
 * `small-slice-side.ts`), after warm-up slices of its own.
 */
export const benchmark: Benchmark = {
  name: 'small-slices',
  order: 1,
  async run(size) {
    const full = size === 'full';
    // A multiple of the 20 portfolios per date, so the worker batches cover whole dates of their own.
    const count = full ? 5_000 : 100;
    // MySQL's sides at smoke size: one date's portfolios, enough to check what they leave behind.
    const mysqlCount = full ? count : 20;
    const rounds = full ? 2 : 1;
    // Slices each new process (a side's, a worker's) loads first, unmeasured (see `side`, `fleet`); whole dates too.
    const warmUpCount = full ? 10_000 : 20;
    const allSlices = weekdayIndexSlices(2 * count + 2 * warmUpCount);
    const slices = allSlices.slice(0, count);
    const warmUps = [allSlices.slice(2 * count, 2 * count + warmUpCount), allSlices.slice(2 * count + warmUpCount)] as const;
    const dir = mkdtempSync(join(tmpdir(), 'report-sync-bench-small-'));
    const simulator = await startSimulatorProcess(SIZES);
    let closed = false;
    try {
      let runs = 0;
      const fresh = () => {
        runs += 1;
        return mkdtempSync(join(dir, `run-${runs}-`));
      };
      const sqliteUrl = (name: string) => `sqlite:${join(fresh(), `${name}.sqlite`)}`;
      type Work = { durationMs: number; cpuMs: number; serverCpuMs?: number; facts: () => Promise<BenchFacts> };
      const measure = async (sliceCount: number, work: () => Promise<Work>): Promise<Measured> => {
        await simulator.reset();
        const { durationMs, cpuMs, serverCpuMs, facts } = await work();
        // The simulator idles outside the measured span (worker start-up), so its busy share is of that span.
        const usage = await simulator.usage();
        const { exportRequests, tokenRequests, byStatus } = usage.counters;
        const counted = { ...(await facts()), exportRequests, exportAnswered200: byStatus[200] ?? 0, tokenRequests };
        return {
          perSecond: (sliceCount * 1000) / durationMs,
          cpuPerSlice: cpuMs / sliceCount,
          serverCpuPerSlice: serverCpuMs === undefined ? undefined : serverCpuMs / sliceCount,
          simulatorLoad: usage.cpuMs / durationMs,
          facts: counted,
        };
      };
      /** The MySQL server's CPU over `work` (MySQL sides only). */
      const withServerCpu = async (databaseUrl: string, work: () => Promise<Work>): Promise<Work> => {
        if (!databaseUrl.startsWith('mysql:')) return work();
        const serverAtStart = mysqlServerCpuMs();
        const done = await work();
        return { ...done, serverCpuMs: mysqlServerCpuMs() - serverAtStart };
      };

      // Each side in a process of its own, warmed up on slices of its own first, as the workers are.
      const side =
        (name: SmallSliceSideName) =>
        async (slices: readonly Slice[], databaseUrl?: string): Promise<Measured> => {
          const run = (url: string | undefined, label: string) => {
            const runDir = fresh();
            return { dir: runDir, databaseUrl: url ?? `sqlite:${join(runDir, `${label}.sqlite`)}` };
          };
          const measuredRun = { slices, ...run(databaseUrl, name) };
          const warm = await startSmallSliceSide(size, {
            side: name,
            upstream: simulator.upstream,
            env: simulator.env,
            settings: SETTINGS,
            concurrency: CONCURRENCY,
            // A MySQL warehouse is shared: the side empties it after its warm-up.
            warmUp: { slices: warmUps[0], ...run(databaseUrl, `${name}-warm-up`) },
            measured: measuredRun,
          });
          return measure(slices.length, () =>
            withServerCpu(measuredRun.databaseUrl, async () => {
              const result = await warm.measure();
              const rows = slices.length * RECORDS_PER_SLICE;
              if (result.exitCode !== 0 || result.loaded !== slices.length || result.rows !== rows) {
                const why = name === 'product' ? errorLines(join(measuredRun.dir, 'run.log')) : '';
                throw new Error(
                  `the ${name} side did not load every slice: exit ${result.exitCode}, ${result.loaded} loaded, ${result.failed} failed, ${result.rows} rows of ${rows}${why}`,
                );
              }
              return {
                durationMs: result.durationMs,
                cpuMs: result.cpuMs,
                facts: async () =>
                  name === 'product'
                    ? { ...(await countSliceFactsAt(measuredRun.databaseUrl, slices, SIZES)), nonZeroExits: 0 }
                    : { slicesPlanned: result.loaded, rowsLoaded: result.rows },
              };
            }),
          );
        };
      const raw = side('raw');
      const guaranteed = side('guaranteed');
      const inProcess = side('product');
      // One fleet per round: one worker runs the benchmark's slices, then (with `later`) a second joins
      // for as many later dates (the same kind of slices, into the same warehouse, which by then holds the first batch).
      // Each new worker process first loads warm-up slices of its own, unmeasured, as each `side`
      // does: a worker runs for days, its start is measured by the start-up rows, and a fresh
      // process's first seconds go on compiling its hot code.
      const fleet = async (slices: readonly Slice[], databaseUrl: string | undefined, later: readonly Slice[]): Promise<Measured[]> => {
        await simulator.reset();
        const batches = [
          { slices: warmUps[0], workers: 1, measured: false },
          { slices, workers: 1, measured: true },
          ...(later.length === 0
            ? []
            : [
                { slices: warmUps[1], workers: 2, measured: false },
                { slices: later, workers: 2, measured: true },
              ]),
        ];
        const results = await runProductWorkers({
          env: simulator.env,
          batches,
          dir: fresh(),
          databaseUrl,
          settings: SETTINGS,
          sizes: SIZES,
          timeoutMs: full ? 600_000 : 60_000,
          upstreamCpuMs: async () => (await simulator.usage()).cpuMs,
        });
        const usage = await simulator.usage();
        const simulatorCpuMs = usage.cpuMs;
        results.forEach((batch, index) => {
          const expected = batches[index]!.slices.length;
          if (batch.loaded !== expected || batch.failed > 0) {
            throw new Error(`${batch.workers} worker(s) did not load every slice: ${batch.loaded} of ${expected} loaded, ${batch.failed} failed`);
          }
        });
        const fleetMs = results.reduce((sum, batch) => sum + batch.durationMs, 0);
        // A warm-up batch's CPU over its slices: the first warms one process, the second the process that joins.
        const warmUpCpuPerSlice = (index: number) => results[index]!.workerCpuMs / batches[index]!.slices.length;
        return results.flatMap((batch, index) =>
          batches[index]!.measured
            ? [
                {
                  perSecond: (batches[index]!.slices.length * 1000) / batch.durationMs,
                  cpuPerSlice: batch.workerCpuMs / batches[index]!.slices.length,
                  // All batches together: the simulator process cannot tell them apart.
                  simulatorLoad: simulatorCpuMs / fleetMs,
                  cores: batch.cores,
                  // The simulator's counters cover every batch; the token requests are the fleet's, bounded by its processes.
                  facts: { ...batch.facts, tokenRequests: usage.counters.tokenRequests },
                  warmUpCpuPerSlice: warmUpCpuPerSlice(index - 1),
                },
              ]
            : [],
        );
      };
      const later = allSlices.slice(count, 2 * count);
      const postgresFleet = async (): Promise<Measured[]> => {
        const database = await createTempDatabase('postgres');
        try {
          return await fleet(slices, database.databaseUrl, later);
        } finally {
          await database.drop();
        }
      };
      /** The MySQL sides of a round, taking turns on one migrated warehouse: raw (a table of its own), the script, `run`, one worker. */
      const mysqlSlices = slices.slice(0, mysqlCount);
      const mysqlRound = async (into: JudgedRuns): Promise<void> => {
        // Migrated here, so no side's span holds the migration; each side opens the warehouse itself.
        const warehouse = await createTempWarehouse('mysql');
        try {
          into.raw.push(await raw(mysqlSlices, warehouse.databaseUrl));
          into.guaranteed.push(await guaranteed(mysqlSlices, warehouse.databaseUrl));
          await emptyMysqlWarehouse(warehouse.databaseUrl);
          into.inProcess.push(await inProcess(mysqlSlices, warehouse.databaseUrl));
          await emptyMysqlWarehouse(warehouse.databaseUrl);
          into.oneWorker.push(...(await fleet(mysqlSlices, warehouse.databaseUrl, [])));
        } finally {
          await warehouse.close();
        }
      };

      // JIT warm-up of the simulator, on a part of the same work.
      if (full) await runRawJsonSlices({ upstream: simulator.upstream, slices: slices.slice(0, 1_000), concurrency: CONCURRENCY, databaseUrl: sqliteUrl('warm') });
      const sqlite: JudgedRuns = { raw: [], guaranteed: [], inProcess: [], oneWorker: [] };
      const mysql: JudgedRuns = { raw: [], guaranteed: [], inProcess: [], oneWorker: [] };
      const twoWorkerRuns: Measured[] = [];
      const onePostgresRuns: Measured[] = [];
      const twoPostgresRuns: Measured[] = [];
      for (let round = 0; round < rounds; round += 1) {
        sqlite.raw.push(await raw(slices));
        sqlite.guaranteed.push(await guaranteed(slices));
        sqlite.inProcess.push(await inProcess(slices));
        const [one, two] = await fleet(slices, undefined, later);
        sqlite.oneWorker.push(one!);
        twoWorkerRuns.push(two!);
        const [onePostgres, twoPostgres] = await postgresFleet();
        onePostgresRuns.push(onePostgres!);
        twoPostgresRuns.push(twoPostgres!);
        await mysqlRound(mysql);
      }
      closed = true;
      await simulator.close();

      const oneBest = best(sqlite.oneWorker);
      const twoBest = best(twoWorkerRuns);
      const onePostgresBest = best(onePostgresRuns);
      const twoPostgresBest = best(twoPostgresRuns);
      const twoPostgresRatio = twoPostgresBest.perSecond / onePostgresBest.perSecond;
      const twoRatio = twoBest.perSecond / oneBest.perSecond;
      const sizeNote = (store: string, sliceCount: number) =>
        `${sliceCount.toLocaleString('en-US')} index slices × ${RECORDS_PER_SLICE} records (JSON), concurrency ${CONCURRENCY}, ${store}, simulator in its own process; best of ${rounds}`;
      return [
        ...judgedRows(sqlite, {
          inProcess: 'small slices: run, in-process',
          oneWorker: 'small slices: BullMQ, 1 worker',
          store: 'SQLite',
          sizeNote: sizeNote('SQLite', count),
          warmUpSlices: warmUpCount,
        }),
        {
          benchmark: 'small slices: BullMQ, 2 workers',
          product: rate(twoBest),
          baseline: `${rate(oneBest)} (1 worker)`,
          ratio: twoRatio,
          target: '> 1 × one worker',
          pass: twoRatio > 1,
          facts: twoBest.facts,
          note: `the 1-worker fleet joined by a second worker process (each concurrency ${CONCURRENCY}; the two first share ${warmUpCount.toLocaleString('en-US')} warm-up slices), ${count.toLocaleString('en-US')} slices of later dates into the same SQLite file (WAL, busy timeout). Worker CPU per slice ${cpu(twoBest)}. One worker: ${oneBest.cores}; two: ${twoBest.cores}`,
        },
        {
          benchmark: 'small slices: BullMQ on Postgres, 2 workers',
          product: rate(twoPostgresBest),
          baseline: `${rate(onePostgresBest)} (1 worker)`,
          ratio: twoPostgresRatio,
          target: '≥ 1.6 × one worker',
          pass: twoPostgresRatio >= 1.6,
          facts: twoPostgresBest.facts,
          note: `the same fleets into a Postgres database on this machine. Worker CPU per slice: one worker ${cpu(onePostgresBest)}, two ${cpu(twoPostgresBest)}. One worker: ${onePostgresBest.cores}; two: ${twoPostgresBest.cores}`,
        },
        ...judgedRows(mysql, {
          inProcess: 'small slices: run, in-process, MySQL',
          oneWorker: 'small slices: BullMQ on MySQL, 1 worker',
          store: 'MySQL',
          warmUpSlices: warmUpCount,
          sizeNote: `${sizeNote('MySQL (the MariaDB on this machine)', mysqlCount)}; the sides take turns on one migrated warehouse, emptied between them (the raw baseline in a table of its own)`,
        }),
      ] satisfies BenchResult[];
    } finally {
      if (!closed) await simulator.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/**
 * The two rows of a dialect judged against its guarantees script: in-process and one worker. Each
 * side's least CPU per slice over the rounds of the same run is compared: on a shared machine a
 * side's slices/s depends on what else ran at that moment, its CPU per slice much less. Slices/s
 * and the raw baseline's figures stay beside it, as a report.
 */
function judgedRows(runs: JudgedRuns, names: { inProcess: string; oneWorker: string; store: string; sizeNote: string; warmUpSlices: number }): BenchResult[] {
  const rawBest = best(runs.raw);
  const guaranteedBest = best(runs.guaranteed);
  const inProcessBest = best(runs.inProcess);
  const oneBest = best(runs.oneWorker);
  const rawCpu = leastCpu(runs.raw);
  const guaranteedCpu = leastCpu(runs.guaranteed);
  const inProcessCpu = leastCpu(runs.inProcess);
  const oneCpu = leastCpu(runs.oneWorker);
  const inProcessFloorRatio = guaranteedCpu / inProcessCpu;
  const oneFloorRatio = guaranteedCpu / oneCpu;
  const floor = `${ms(guaranteedCpu)} CPU a slice, ${rate(guaranteedBest)} (guarantees script)`;
  const asReport = (measured: Measured, cpuMs: number) =>
    `Raw baseline, as a report: ${ms(rawCpu)} CPU a slice, ${rate(rawBest)}; the product ${(rawCpu / cpuMs).toFixed(2)} × raw by CPU, ${(measured.perSecond / rawBest.perSecond).toFixed(2)} by slices/s; the guarantees script ${(rawCpu / guaranteedCpu).toFixed(2)} and ${(guaranteedBest.perSecond / rawBest.perSecond).toFixed(2)}`;
  // The server's work is not in the judged CPU (a process of its own): reported, least over the rounds.
  const server =
    inProcessBest.serverCpuPerSlice === undefined
      ? ''
      : ` The server's CPU a slice (shared with whatever else uses it): product ${ms(leastServerCpu(runs.inProcess))}, script ${ms(leastServerCpu(runs.guaranteed))}, raw ${ms(leastServerCpu(runs.raw))}.`;
  return [
    {
      benchmark: names.inProcess,
      product: `${ms(inProcessCpu)} CPU a slice, ${rate(inProcessBest)}`,
      baseline: floor,
      ratio: inProcessFloorRatio,
      target: '≥ 0.9 × the guarantees script (CPU a slice)',
      pass: inProcessFloorRatio >= 0.9,
      facts: { ...inProcessBest.facts, baselineRows: { raw: rawBest.facts.rowsLoaded ?? 0, guaranteed: guaranteedBest.facts.rowsLoaded ?? 0 } },
      note: `${names.sizeNote}. Ratio: the guarantees script's CPU per slice over the product's (least of the rounds, each side); by slices/s ${(inProcessBest.perSecond / guaranteedBest.perSecond).toFixed(2)}; simulator busy ${load(inProcessBest)} of a core (script's run: ${load(guaranteedBest)}).${server} ${asReport(inProcessBest, inProcessCpu)}`,
    },
    {
      benchmark: names.oneWorker,
      product: `${ms(oneCpu)} CPU a slice, ${rate(oneBest)}`,
      baseline: floor,
      ratio: oneFloorRatio,
      target: '≥ 0.75 × the guarantees script (CPU a slice)',
      pass: oneFloorRatio >= 0.75,
      facts: oneBest.facts,
      note: `worker process, concurrency ${CONCURRENCY}, ${names.store}; the worker process's CPU over the batch, slices/s from first job started to last finished (BullMQ timestamps), after ${names.warmUpSlices.toLocaleString('en-US')} warm-up slices of its own (its CPU a slice over those, its first after start-up: ${ms(leastWarmUpCpu(runs.oneWorker))}). By slices/s ${(oneBest.perSecond / guaranteedBest.perSecond).toFixed(2)} × the script; simulator busy ${load(oneBest)}; ${oneBest.cores}. ${asReport(oneBest, oneCpu)}`,
    },
  ];
}

function best(runs: readonly Measured[]): Measured {
  return runs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
}

function leastWarmUpCpu(runs: readonly Measured[]): number {
  return Math.min(...runs.map((run) => run.warmUpCpuPerSlice ?? Number.NaN));
}

function leastCpu(runs: readonly Measured[]): number {
  return Math.min(...runs.map((run) => run.cpuPerSlice));
}

function leastServerCpu(runs: readonly Measured[]): number {
  return Math.min(...runs.map((run) => run.serverCpuPerSlice ?? Number.NaN));
}

function rate(measured: Measured): string {
  return `${Math.round(measured.perSecond).toLocaleString('en-US')} slices/s`;
}

function cpu(measured: Measured): string {
  return ms(measured.cpuPerSlice);
}

function ms(value: number): string {
  return `${value.toFixed(2)} ms`;
}

function load(measured: Measured): string {
  return `${Math.round(measured.simulatorLoad * 100)}%`;
}

/** The first warning and error lines of a run's log, to say why a run the benchmark needed whole was not. */
function errorLines(logFile: string): string {
  const lines = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('"level":40') || line.includes('"level":50'))
    .slice(0, 3);
  return lines.length === 0 ? '' : `; the first warnings and errors logged:\n${lines.map((line) => line.slice(0, 600)).join('\n')}`;
}
