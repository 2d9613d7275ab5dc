import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { main } from '../../src/cli/main.js';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import { createLogger } from '../../src/logging/logger.js';
import { createRedisConnector } from '../../src/queue/redis-connection.js';
import { createGatewaySimulator, simulatorEnvironment, type GatewaySimulatorOptions } from '../../src/simulator/gateway-simulator.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../src/warehouse/engine/warehouse-engine.js';
import type { WarehouseDialect } from '../../src/warehouse/open-warehouse.js';
import { capturedIo } from './captured-io.js';
import { startCliProcess, type CliProcess } from './cli-process.js';
import { FAST_SETTINGS, type CliResult } from './sync-rig.js';
import { createTempDatabase } from './temp-warehouse.js';
import { TEST_REDIS_URL, testPrefix } from './test-redis.js';
import { settleWithin } from '../../src/runtime/settle-within.js';

/** A worker process started with `node dist/src/cli/bin.js worker`. */
export type WorkerProcess = CliProcess;

/**
 * The distributed shape on one machine: the simulator in this process, a warehouse (Postgres
 * unless told otherwise) and a Redis key prefix of their own, worker processes started by hand,
 * and the CLI for the rest.
 */
export async function startQueueRig(
  options: {
    simulator?: GatewaySimulatorOptions;
    settings?: SettingsInput;
    /**
     * REDIS_URL (and REDIS_CLUSTER_NODES) of a Redis of the test's own, a cluster say, which its
     * owner empties or destroys. @defaultValue the shared test Redis, under a prefix of the rig's
     */
    redisEnv?: Record<string, string>;
    /** @defaultValue 'postgres' */
    dialect?: WarehouseDialect;
  } = {},
) {
  const simulator = await createGatewaySimulator({ port: 0, ...options.simulator });
  const database = await createTempDatabase(options.dialect ?? 'postgres');
  const redisScope = testPrefix();
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-queue-'));
  mkdirSync(join(dir, 'config'));
  const settings: SettingsInput = {
    ...FAST_SETTINGS,
    ...options.settings,
    queue: { prefix: redisScope.prefix, lockDurationMs: 3_000, stalledIntervalMs: 1_000, ...options.settings?.queue },
    // Any free port: several workers run side by side. Each logs where it serves.
    metrics: { port: 0, ...options.settings?.metrics },
  };
  writeFileSync(join(dir, 'config/default.json'), JSON.stringify(settings));
  const env: Record<string, string> = {
    ...simulatorEnvironment(simulator),
    DATABASE_URL: database.databaseUrl,
    ...(options.redisEnv ?? { REDIS_URL: TEST_REDIS_URL }),
  };
  /** The queue, on a connection made as the product makes it (to a cluster too). */
  const withQueue = async <T>(use: (queue: Queue) => Promise<T>): Promise<T> => {
    const connector = createRedisConnector(env.REDIS_URL!, createLogger({ level: 'silent' }), { clusterNodes: env.REDIS_CLUSTER_NODES, prefix: redisScope.prefix });
    const queue = new Queue('report-exports', { connection: connector.connect(), prefix: redisScope.prefix });
    try {
      return await use(queue);
    } finally {
      await queue.close();
      connector.disconnectAll();
    }
  };
  /** The queue's jobs in each state, every state present. */
  const readJobCounts = async (): Promise<Record<'waiting' | 'prioritized' | 'delayed' | 'active' | 'completed' | 'failed', number>> => {
    const counts = await withQueue((queue) => queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'));
    return { waiting: 0, prioritized: 0, delayed: 0, active: 0, completed: 0, failed: 0, ...counts };
  };
  /** The queue's job counts, for a report of a hang: Redis may be what hangs, so within `ms`, or why not. */
  const jobCountsWithin = async (ms: number): Promise<string> => {
    const counts = readJobCounts().then(
      (read) => JSON.stringify(read),
      (error: unknown) => `unreadable: ${error instanceof Error ? error.message : String(error)}`,
    );
    return settleWithin(counts, ms, () => `no answer from Redis within ${ms} ms`);
  };
  const workers: WorkerProcess[] = [];
  const warehouses: WarehouseHandle[] = [];

  return {
    simulator,
    dir,
    env,
    prefix: redisScope.prefix,
    withQueue,
    /** Starts a worker process; `extraEnv` adds variables to the rig's (NODE_OPTIONS, say). */
    startWorker(args: string[] = [], extraEnv: Record<string, string> = {}): WorkerProcess {
      const worker = startCliProcess(['worker', ...args], { cwd: dir, env: { ...env, ...extraEnv } });
      workers.push(worker);
      return worker;
    },
    /** Waits until the worker logs that it is ready. */
    async ready(worker: WorkerProcess, timeoutMs = 15_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!worker.output().includes('worker ready')) {
        if (Date.now() > deadline) throw new Error(`worker not ready:\n${worker.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    /**
     * Runs `report-sync <args>` in this process. Given `withinMs`, a command still running then
     * fails the test with what it and every worker printed so far, so a hang says where it hung;
     * the command is told to stop, as by Ctrl-C.
     */
    async cli(args: string[], options: { withinMs?: number } = {}): Promise<CliResult & { logLines: Record<string, unknown>[] }> {
      const stop = new AbortController();
      const io = { ...capturedIo(env, dir), signal: stop.signal };
      const finished = main(args, io);
      // Left running when it overruns: its end then has no one to hear it.
      finished.catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const overrun = new Promise<'overran'>((resolve) => {
        if (options.withinMs !== undefined) timer = setTimeout(() => resolve('overran'), options.withinMs);
      });
      try {
        const code = await Promise.race([finished, overrun]);
        if (code === 'overran') {
          stop.abort();
          const printed = [
            `report-sync ${args.join(' ')} was still running after ${options.withinMs} ms.`,
            `export requests ${simulator.counters.exportRequests}, token requests ${simulator.counters.tokenRequests}`,
            `the queue's jobs: ${await jobCountsWithin(5_000)}`,
            `its output:\n${io.stdout.text}${io.stderr.text}${withoutSliceLines(io.logs.text)}`,
            ...workers.map(
              (worker, i) => `worker ${i} (pid ${worker.child.pid}, exit ${worker.child.exitCode ?? worker.child.signalCode ?? 'none'}):\n${withoutSliceLines(worker.output())}`,
            ),
          ];
          throw new Error(printed.join('\n\n'));
        }
        return { code, stdout: io.stdout.text, stderr: io.stderr.text, logs: io.logs.text, logLines: [] };
      } finally {
        clearTimeout(timer);
      }
    },
    /** Where the worker said it serves /metrics, /healthz and /readyz (it logs the address once, at start). */
    metricsUrl(worker: WorkerProcess): string {
      const url = /"metrics":"(http:\/\/[^"]+)\/metrics"/.exec(worker.output())?.[1];
      if (!url) throw new Error(`the worker did not say where it serves metrics:\n${worker.output()}`);
      return url;
    },
    /** The queue's jobs by state. */
    queueCounts: readJobCounts,
    /** Fires the nightly job now, as the job scheduler would at its cron time: its delayed job is promoted. */
    async promoteNightly(): Promise<void> {
      await withQueue(async (queue) => {
        const delayed = await queue.getDelayed();
        const nightly = delayed.find((job) => job.name === 'nightly-fan-out');
        if (!nightly) throw new Error(`no nightly job is scheduled (delayed: ${delayed.map((job) => job.name).join(', ')})`);
        await nightly.promote();
      });
    },
    async warehouse(): Promise<WarehouseHandle> {
      const warehouse = await openWarehouse(database.databaseUrl);
      warehouses.push(warehouse);
      return warehouse;
    },
    async close(): Promise<void> {
      for (const worker of workers) if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
      await Promise.all(workers.map((worker) => worker.exited));
      for (const warehouse of warehouses) await warehouse.close();
      await simulator.close();
      await database.drop();
      if (!options.redisEnv) await redisScope.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type QueueRig = Awaited<ReturnType<typeof startQueueRig>>;

/** A process's output with its routine line per slice left out (counted, with the last one's time): what is left tells a hang. */
function withoutSliceLines(output: string): string {
  const rest: string[] = [];
  let routine = 0;
  let lastRoutine = '';
  for (const line of output.split('\n')) {
    if (line.startsWith('{"level":30') && line.includes('"status":')) {
      routine += 1;
      lastRoutine = line;
    } else rest.push(line);
  }
  const last = routine > 0 ? new Date(Number(/"time":(\d+)/.exec(lastRoutine)?.[1])).toISOString() : 'none';
  return `${routine} slice lines, the last at ${last}; the other lines:\n${rest.join('\n').slice(-6_000)}`;
}
