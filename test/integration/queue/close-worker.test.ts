import type { Worker } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { settingsSchema, type Settings } from '../../../src/config/settings-schema.js';
import { createLogger, type Logger } from '../../../src/logging/logger.js';
import { closeWorker } from '../../../src/queue/close-worker.js';
import { ExportQueue } from '../../../src/queue/export-queue.js';
import { createExportWorker } from '../../../src/queue/export-worker.js';
import { JobsInFlight } from '../../../src/queue/jobs-in-flight.js';
import { createRedisConnector, type RedisConnector } from '../../../src/queue/redis-connection.js';
import { planSlices } from '../../../src/slice/slice-range.js';
import type { Slice } from '../../../src/slice/slice.js';
import { noOpExportSliceJob } from '../../helpers/no-op-export-job.js';
import { TEST_REDIS_URL, testPrefix } from '../../helpers/test-redis.js';
import { until } from '../../helpers/until.js';

/** A logger whose warnings the test reads. */
function recordingLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const logger = createLogger({ level: 'warn', pretty: false, destination: { write: (line: string) => void warnings.push(String(JSON.parse(line).msg)) } });
  return { logger, warnings };
}

describe('closeWorker', () => {
  let scope: ReturnType<typeof testPrefix>;
  let connector: RedisConnector;
  let settings: Settings;
  let exportQueue: ExportQueue;
  let inFlight: JobsInFlight;
  const workers: Worker[] = [];

  beforeEach(() => {
    scope = testPrefix();
    connector = createRedisConnector(TEST_REDIS_URL, createLogger({ level: 'silent' }), { prefix: scope.prefix });
    settings = settingsSchema.parse({ queue: { prefix: scope.prefix } });
    exportQueue = new ExportQueue({ connection: connector.connect(), settings });
    inFlight = new JobsInFlight();
  });
  afterEach(async () => {
    for (const worker of workers.splice(0)) await worker.close(true).catch(() => undefined);
    await exportQueue.close();
    connector.disconnectAll();
    await scope.cleanup();
  });

  function startWorker(seen: (slice: Slice) => Promise<void>, logger: Logger): Worker {
    const worker = createExportWorker({
      connection: connector.connect(),
      settings,
      concurrency: 2,
      jobs: [noOpExportSliceJob({ settings, logger, seen })],
      exportQueue,
      logger,
      inFlight,
    });
    workers.push(worker);
    return worker;
  }

  it('waits for a job in flight however long past settleMs it runs, records it, and forces nothing', async () => {
    const { logger, warnings } = recordingLogger();
    let release = (): void => undefined;
    const started: Slice[] = [];
    const worker = startWorker(async (slice) => {
      started.push(slice);
      await new Promise<void>((resolve) => (release = resolve));
    }, logger);
    await exportQueue.addSlices(planSlices({ from: '2024-01-02', to: '2024-01-02', portfolios: [1], reportTypes: ['index'] }), 10);
    await until(() => started.length === 1, 10_000, 'the job to start');
    expect(inFlight.count).toBe(1);

    const closed = closeWorker({ worker, connector, inFlight, logger, settleMs: 300 });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    release();
    await closed;

    expect(inFlight.count).toBe(0);
    expect(await exportQueue.queue.getJobCounts('completed', 'active')).toEqual({ completed: 1, active: 0 });
    expect(warnings).toEqual([]);
  });

  it('closes an idle worker at once, forcing nothing', async () => {
    const { logger, warnings } = recordingLogger();
    const worker = startWorker(async () => undefined, logger);
    await worker.waitUntilReady();
    const startedAt = Date.now();
    await closeWorker({ worker, connector, inFlight, logger, settleMs: 5_000 });
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    expect(worker.isRunning()).toBe(false);
    expect(warnings).toEqual([]);
  });

  it('drops the connections and says so when the close goes on settleMs after the last job ended', async () => {
    const { logger, warnings } = recordingLogger();
    const worker = startWorker(async () => undefined, logger);
    await worker.waitUntilReady();
    // BullMQ's close runs, but its promise never says so, as when it waits on a connection that
    // never ends (after a cluster master's crash).
    const close = worker.close.bind(worker);
    let closed = false;
    worker.close = () => {
      void close().then(() => (closed = true));
      return new Promise<void>(() => undefined);
    };
    const startedAt = Date.now();
    await closeWorker({ worker, connector, inFlight, logger, settleMs: 600 });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(600);
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    expect(closed).toBe(true);
    expect(warnings).toEqual(["the worker's close went on after its last job ended: dropping the Redis connections (a job whose end was not recorded is retaken as stalled)"]);
    // Every connection of the process was dropped.
    await expect(exportQueue.queue.getJobCounts()).rejects.toThrow('Connection is closed');
    worker.close = close;
  });
});
