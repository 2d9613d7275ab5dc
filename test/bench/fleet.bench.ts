import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import { shiftIsoDate, weekdayOf } from '../../src/dates/report-date.js';
import type { Slice } from '../../src/slice/slice.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import { CLI_BIN } from '../helpers/cli-bin.js';
import { createTempDatabase } from '../helpers/temp-warehouse.js';
import type { BenchFacts, BenchResult, BenchSize, Benchmark } from './bench-result.js';
import { startSimulatorProcess, type SimulatorProcess } from './bench-simulator-process.js';
import { countSliceFacts } from './count-slice-facts.js';
import { takeCpuCensus } from './cpu-census.js';
import { startPrivateRedisServer, type PrivateRedisServer } from './private-redis-server.js';
import { busiestWindow, steadyRate } from './request-rate.js';
import { processCpuMs } from './run-product-workers.js';

const WORKERS = 4;
const CONCURRENCY = 16;
const LATENCY_MS = 100;
/** The simulator's own default size of an index file: this benchmark is about waiting, not parsing. */
const RECORDS_PER_SLICE = 3;
const RATE_LIMIT = { max: 200, durationMs: 1_000 };
/** The first and last tenth of the requests are the fleet growing to speed and draining: not steady. */
const TRIM = 0.1;
const FIRST_DATE = '2024-01-01';

/** Portfolios × days of each row's backfill (weekends included, as a backfill plans them). */
const SIZES = {
  full: { open: { portfolios: 100, days: 600 }, limited: { portfolios: 100, days: 100 } },
  smoke: { open: { portfolios: 20, days: 30 }, limited: { portfolios: 20, days: 15 } },
} as const;

/**
 * Issue #27, the fleet measured against the ideal: four `report-sync worker` processes ×
 * concurrency 16 against the simulator (its own process) answering every export after 100 ms,
 * into Postgres, fed by a real `backfill`. With 64 downloads in flight the best any fleet can do is
 * 64 / 0.1 s = 640 slices/s; with `queue.rateLimit` at 200 a second it is 200, and the service
 * must never see more than 200 in any second. Rates are counted from the simulator's own arrival
 * times over the steady part of the run; each part's CPU time is read from /proc (workers,
 * Postgres backends of the run's database) or from the server itself (simulator, Redis), so a
 * miss can be told apart: cores all busy (this machine) or cores idle under the ideal (the product).
 */
export const benchmark: Benchmark = {
  name: 'fleet',
  order: 7,
  async run(size: BenchSize): Promise<BenchResult[]> {
    const simulator = await startSimulatorProcess({ indexRecords: RECORDS_PER_SLICE, latencyMs: LATENCY_MS });
    const redis = await startPrivateRedisServer();
    try {
      const ideal = (WORKERS * CONCURRENCY) / (LATENCY_MS / 1000);
      const open = await runFleet({ simulator, redis, ...SIZES[size].open, settings: {} });
      const limited = await runFleet({ simulator, redis, ...SIZES[size].limited, settings: { queue: { rateLimit: RATE_LIMIT } } });
      const openRatio = open.steady.perSecond / ideal;
      const limitedRatio = limited.steady.perSecond / RATE_LIMIT.max;
      return [
        {
          benchmark: 'fleet: 4 workers × 16 → Postgres',
          product: `${Math.round(open.steady.perSecond).toLocaleString('en-US')} slices/s`,
          baseline: `${ideal} slices/s (ideal)`,
          ratio: openRatio,
          target: '≥ 0.9 × ideal',
          pass: openRatio >= 0.9 && open.clean,
          facts: open.facts,
          note: `${describeRun(open)}; busiest 1 s at the service: ${open.busiest} requests`,
        },
        {
          benchmark: 'fleet: 4 workers × 16, queue.rateLimit 200/s',
          product: `${Math.round(limited.steady.perSecond).toLocaleString('en-US')} slices/s, busiest 1 s ${limited.busiest}`,
          baseline: `${RATE_LIMIT.max} slices/s (limit)`,
          ratio: limitedRatio,
          target: '≥ 0.95 × limit, ≤ limit in every 1 s',
          pass: limitedRatio >= 0.95 && limited.busiest <= RATE_LIMIT.max && limited.clean,
          facts: limited.facts,
          note: `${describeRun(limited)}; most requests the service saw in any 1 s window (every window, whole run): ${limited.busiest}`,
        },
      ] satisfies BenchResult[];
    } finally {
      await redis.stop().catch(() => undefined);
      await simulator.close().catch(() => undefined);
    }
  },
};

interface FleetRunOptions {
  readonly simulator: SimulatorProcess;
  readonly redis: PrivateRedisServer;
  readonly portfolios: number;
  readonly days: number;
  /** Added to the fleet's settings (the rate limit). */
  readonly settings: SettingsInput;
}

interface FleetRun {
  readonly slices: number;
  readonly weekdaySlices: number;
  readonly steady: ReturnType<typeof steadyRate>;
  /** Most export requests the simulator saw in any 1 s window of the whole run. */
  readonly busiest: number;
  /** From the first export request to the last, ms. */
  readonly spanMs: number;
  /** CPU ms of each part over the run, and the machine's busy and idle ms (all of its cores, other load included). */
  readonly cpu: Readonly<Record<'workers' | 'simulator' | 'postgres' | 'redis' | 'postgresAll', number>>;
  readonly machine: { readonly busyMs: number; readonly idleMs: number; readonly wallMs: number };
  /** The workers' Postgres connections, sampled every 250 ms: open and busy (not idle) on average, and the most busy at once. */
  readonly connections: { readonly open: number; readonly busy: number; readonly mostBusy: number };
  /** Mean time a worker waited for an export's answer (its own histogram), in s. */
  readonly requestSeconds: number;
  /** How late the simulator's event loop ran, in ms. */
  readonly simulatorLoopDelayMs: { readonly p99: number; readonly max: number };
  /** The worst worker's event-loop delay p99 (prom-client's), in ms. */
  readonly loopLagP99Ms: number;
  readonly facts: BenchFacts;
  /** Every slice recorded once and every command exited 0. */
  readonly clean: boolean;
}

/**
 * One fleet from nothing: an empty Postgres database migrated by `report-sync migrate`, four
 * workers ready, then `backfill` of `portfolios` × `days` index slices, followed until the ledger
 * holds every slice; the workers stopped with SIGTERM, the database dropped, the Redis emptied.
 */
async function runFleet(options: FleetRunOptions): Promise<FleetRun> {
  const { simulator, redis } = options;
  const database = await createTempDatabase('postgres');
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-bench-fleet-'));
  const children: { child: ChildProcess; exited: Promise<number> }[] = [];
  const admin = new pg.Client({ connectionString: database.databaseUrl });
  await admin.connect();
  try {
    mkdirSync(join(dir, 'config'));
    const portfolioIds = Array.from({ length: options.portfolios }, (_, i) => 1001 + i);
    const lastDay = shiftIsoDate(FIRST_DATE, options.days - 1);
    const settings: SettingsInput = {
      portfolios: portfolioIds,
      reportTypes: ['index'],
      formats: { index: 'json' },
      concurrency: CONCURRENCY,
      http: { connections: CONCURRENCY },
      retry: { attempts: 3, baseDelayMs: 50, maxDelayMs: 500 },
      metrics: { port: 0 },
      ...options.settings,
    };
    writeFileSync(join(dir, 'config/default.json'), JSON.stringify(settings));
    const env = { PATH: process.env.PATH ?? '', ...simulator.env, DATABASE_URL: database.databaseUrl, REDIS_URL: redis.url };
    const command = (args: string[], log: string) => {
      const fd = openSync(join(dir, log), 'w');
      const child = spawn(process.execPath, [CLI_BIN, ...args], { cwd: dir, env, stdio: ['ignore', fd, fd] });
      closeSync(fd);
      const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)));
      return { child, exited, log: () => readFileSync(join(dir, log), 'utf8') };
    };

    const migrate = command(['migrate'], 'migrate.log');
    if ((await migrate.exited) !== 0) throw new Error(`migrate failed:\n${migrate.log()}`);
    const workers = Array.from({ length: WORKERS }, (_, i) => command(['worker'], `worker-${i}.log`));
    children.push(...workers);
    const deadline = Date.now() + 60_000;
    for (const worker of workers) {
      while (!worker.log().includes('worker ready')) {
        if (worker.child.exitCode !== null || Date.now() > deadline) throw new Error(`a worker did not get ready:\n${worker.log().slice(-2_000)}`);
        await sleep(50);
      }
    }

    await simulator.reset();
    const redisCpuAtStart = await redis.cpuMs();
    const workerCpuAtStart = workers.map(({ child }) => processCpuMs(child.pid));
    const census = takeCpuCensus({ postgres: ['postgres'] });
    const backendsAtStart = await backendCpuMs(admin);
    const startedAt = performance.now();

    const backfill = command(['backfill', '--from', FIRST_DATE, '--to', lastDay], 'backfill.log');
    const backfillExit = await backfill.exited;
    if (backfillExit !== 0) throw new Error(`backfill failed (${backfillExit}):\n${backfill.log()}`);
    const slices = options.portfolios * options.days;
    // A full run takes about slices / 640 s; a fleet a tenth as fast still finishes well inside this.
    const runDeadline = Date.now() + 60_000 + slices * 20;
    let backends = backendsAtStart;
    const connectionSamples: { open: number; busy: number }[] = [];
    for (;;) {
      // Read while the workers' connections are open: a backend's CPU is gone once it ends.
      backends = await backendCpuMs(admin, backends);
      connectionSamples.push(await workerConnections(admin));
      const { rows } = await admin.query<{ n: string }>('select count(*) as n from report_loads');
      if (Number(rows[0]!.n) >= slices) break;
      if (Date.now() > runDeadline) throw new Error(`the fleet did not finish in time: ${rows[0]!.n} of ${slices} slices recorded`);
      await sleep(250);
    }
    const wallMs = performance.now() - startedAt;
    const workerCpuMs = workers.reduce((sum, { child }, i) => sum + processCpuMs(child.pid) - workerCpuAtStart[i]!, 0);
    const censusAfter = takeCpuCensus({ postgres: ['postgres'] });
    const redisCpuMs = (await redis.cpuMs()) - redisCpuAtStart;
    const usage = await simulator.usage();
    const times = await simulator.exportRequestTimes();
    const scraped = await Promise.all(workers.map((worker) => scrapeWorker(worker.log())));

    for (const { child } of workers) child.kill('SIGTERM');
    const exits = await Promise.all(workers.map(({ exited }) => exited));

    const allSlices = planSlices(portfolioIds, options.days);
    const weekdays = allSlices.filter((slice) => !isWeekend(slice.reportDate));
    const warehouse = await openWarehouse(database.databaseUrl);
    let facts: BenchFacts;
    let noData: number;
    try {
      // Every slice of the backfill has its ledger row; rows come from weekdays only (the simulator
      // answers weekends with an empty body, recorded `no_data`).
      const counted = await countSliceFacts(warehouse.db, allSlices, { indexRecords: RECORDS_PER_SLICE });
      const { rowsExpected } = await countSliceFacts(warehouse.db, weekdays, { indexRecords: RECORDS_PER_SLICE });
      const { rows } = await admin.query<{ n: string }>("select count(*) as n from report_loads where status = 'no_data'");
      noData = Number(rows[0]!.n);
      facts = {
        ...counted,
        rowsExpected,
        exportRequests: usage.counters.exportRequests,
        exportAnswered200: usage.counters.byStatus[200] ?? 0,
        tokenRequests: usage.counters.tokenRequests,
        nonZeroExits: exits.filter((code) => code !== 0).length,
      };
    } finally {
      await warehouse.close();
    }
    const clean =
      facts.slicesRecorded === slices &&
      facts.ledgerRowsPerSlice === 1 &&
      facts.ledgerRowsUnplanned === 0 &&
      facts.slicesLoaded === weekdays.length &&
      noData === slices - weekdays.length &&
      facts.rowsLoaded === facts.rowsExpected &&
      facts.nonZeroExits === 0 &&
      facts.exportRequests === slices;

    const sorted = [...times].sort((a, b) => a - b);
    return {
      slices,
      weekdaySlices: weekdays.length,
      steady: steadyRate(sorted, TRIM),
      busiest: busiestWindow(sorted, 1_000),
      spanMs: sorted.length > 1 ? sorted[sorted.length - 1]! - sorted[0]! : 0,
      cpu: {
        workers: workerCpuMs,
        simulator: usage.cpuMs,
        postgres: sumChange(backendsAtStart, backends),
        redis: redisCpuMs,
        postgresAll: censusAfter.groups.postgres! - census.groups.postgres!,
      },
      machine: { busyMs: censusAfter.machineBusyMs - census.machineBusyMs, idleMs: censusAfter.machineIdleMs - census.machineIdleMs, wallMs },
      connections: {
        open: mean(connectionSamples.map((sample) => sample.open)),
        busy: mean(connectionSamples.map((sample) => sample.busy)),
        mostBusy: Math.max(0, ...connectionSamples.map((sample) => sample.busy)),
      },
      requestSeconds: sumOf(scraped.map((one) => one.requestSeconds)) / Math.max(1, sumOf(scraped.map((one) => one.requests))),
      simulatorLoopDelayMs: usage.loopDelayMs,
      loopLagP99Ms: Math.max(...scraped.map((one) => one.loopLagP99Ms)),
      facts,
      clean,
    };
  } finally {
    for (const { child } of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(children.map(({ exited }) => exited));
    await admin.end();
    await database.drop();
    await redis.flush().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

function sumOf(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0);
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : sumOf(values) / values.length;
}

/** The slices `backfill` plans for the range: every date, every portfolio, `index` only. */
function planSlices(portfolioIds: readonly number[], days: number): Slice[] {
  const slices: Slice[] = [];
  for (let day = 0; day < days; day += 1) {
    const reportDate = shiftIsoDate(FIRST_DATE, day);
    for (const portfolioId of portfolioIds) slices.push({ portfolioId, reportType: 'index', reportDate });
  }
  return slices;
}

function isWeekend(reportDate: string): boolean {
  const weekday = weekdayOf(reportDate);
  return weekday === 0 || weekday === 6;
}

/** One line of what the run did and where the machine's time went. */
function describeRun(run: FleetRun): string {
  const { cpu, machine, slices } = run;
  const perSlice = (ms: number) => (ms / slices).toFixed(2);
  const cores = (ms: number) => (ms / machine.wallMs).toFixed(2);
  const total = cpu.workers + cpu.simulator + cpu.postgres + cpu.redis;
  return (
    `${slices.toLocaleString('en-US')} index slices × ${RECORDS_PER_SLICE} records (${run.weekdaySlices.toLocaleString('en-US')} weekdays loaded, weekends no_data), ` +
    `one backfill, simulator latency ${LATENCY_MS} ms in its own process, private Redis; steady window ${(run.steady.durationMs / 1000).toFixed(1)} s ` +
    `(${(run.steady.fromMs / 1000).toFixed(1)}–${(run.steady.toMs / 1000).toFixed(1)} s of ${(run.spanMs / 1000).toFixed(1)}; first and last tenth of the requests left out), ` +
    `whole run ${((slices * 1000) / run.spanMs).toFixed(0)} slices/s. A download slot's time per slice (Little's law: ${WORKERS * CONCURRENCY} downloads at once / steady rate) ` +
    `${((WORKERS * CONCURRENCY * 1000) / run.steady.perSecond).toFixed(0)} ms, of which waiting for the answer ${(run.requestSeconds * 1000).toFixed(0)} ms (the workers' histogram); ` +
    `worst worker's event-loop delay p99 ${run.loopLagP99Ms.toFixed(0)} ms; the workers' Postgres connections (sampled every 250 ms) ${run.connections.open.toFixed(1)} open, ` +
    `${run.connections.busy.toFixed(1)} busy on average, at most ${run.connections.mostBusy} (pools of 10 each, 2 transactions at once each). CPU per slice: workers ${perSlice(cpu.workers)} ms, simulator ${perSlice(cpu.simulator)}, ` +
    `Postgres (the run's backends) ${perSlice(cpu.postgres)}, Redis ${perSlice(cpu.redis)}: ${perSlice(total)} ms, so ${cpus().length} cores allow about ${Math.round((cpus().length * 1000 * slices) / total)} slices/s. ` +
    `Cores busy ${cores(machine.busyMs)} of ${cpus().length} over the run (workers ${cores(cpu.workers)}, simulator ${cores(cpu.simulator)}, ` +
    `Postgres ${cores(cpu.postgres)} (all Postgres processes ${cores(cpu.postgresAll)}), Redis ${cores(cpu.redis)}; the rest is other load on the machine). ` +
    `The simulator's event loop ran late by up to ${run.simulatorLoopDelayMs.max.toFixed(0)} ms (p99 ${run.simulatorLoopDelayMs.p99.toFixed(0)} ms), stamping arrivals that late`
  );
}

/** From a worker's /metrics (where its log says it serves them): its export requests' time, and its event-loop delay. */
async function scrapeWorker(log: string): Promise<{ requests: number; requestSeconds: number; loopLagP99Ms: number }> {
  const url = /"metrics":"(http:\/\/[^"]+)"/.exec(log)?.[1];
  if (url === undefined) throw new Error(`a worker did not say where it serves metrics:\n${log.slice(0, 2_000)}`);
  const text = await (await fetch(url)).text();
  const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? 0);
  return {
    requests: value(/^report_sync_export_request_duration_seconds_count\{status_class="2xx"\} (\S+)$/m),
    requestSeconds: value(/^report_sync_export_request_duration_seconds_sum\{status_class="2xx"\} (\S+)$/m),
    loopLagP99Ms: value(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m) * 1000,
  };
}

/** The connections to the run's database other than this one: how many, and how many are not idle. */
async function workerConnections(admin: pg.Client): Promise<{ open: number; busy: number }> {
  const { rows } = await admin.query<{ open: string; busy: string }>(
    "select count(*) as open, count(*) filter (where state <> 'idle') as busy from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()",
  );
  return { open: Number(rows[0]!.open), busy: Number(rows[0]!.busy) };
}

/** CPU ms so far of each backend of the connection's database, by pid; `seen` keeps the last reading of backends since gone. */
async function backendCpuMs(admin: pg.Client, seen: ReadonlyMap<number, number> = new Map()): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
  const next = new Map(seen);
  // A backend that ended between the listing and the read keeps its last reading.
  for (const { pid } of rows) next.set(pid, Math.max(next.get(pid) ?? 0, processCpuMs(pid)));
  return next;
}

/** How much the readings grew from `before` to `after`; a backend new in `after` counts whole. */
function sumChange(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let sum = 0;
  for (const [pid, ms] of after) sum += ms - (before.get(pid) ?? 0);
  return sum;
}
