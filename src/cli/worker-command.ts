import { once } from 'node:events';
import { exportReport } from '../../jobs/export-report.js';
import { planNightly } from '../../jobs/nightly.js';
import { identityProviderWaitOptions } from '../auth/identity-provider-wait-options.js';
import { RedisTokenSource } from '../auth/redis-token-source.js';
import { resolveUpstreamConfig } from '../config/upstream-config.js';
import type { SyncError } from '../errors.js';
import { ExportQueue } from '../queue/export-queue.js';
import { createExportWorker } from '../queue/export-worker.js';
import { createRedisConnection } from '../queue/redis-connection.js';
import { RedisRateGate } from '../queue/redis-rate-gate.js';
import { createSyncServices } from '../sync-services.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';

/**
 * `report-sync worker`: processes export jobs from the queue until SIGTERM/SIGINT, then finishes
 * the jobs in flight and exits 0. Refused credentials stop it with exit 2 (every job would fail).
 */
export async function workerCommand(options: CommonOptions & { concurrency?: number }, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options, { concurrency: options.concurrency });
  const { settings } = config;
  const upstream = resolveUpstreamConfig(config.env);
  const logger = createCliLogger(config, io, { progressBar: false });
  const redis = createRedisConnection(config.redisUrl, logger);
  const workerRedis = createRedisConnection(config.redisUrl, logger);
  let fatal: SyncError | undefined;
  const stop = new AbortController();
  try {
    const services = await createSyncServices({
      config,
      upstream,
      logger,
      gate:
        settings.queue.rateLimit.max > 0
          ? new RedisRateGate({ redis, prefix: settings.queue.prefix, max: settings.queue.rateLimit.max, windowMs: settings.queue.rateLimit.durationMs })
          : undefined,
      tokens: (issue) =>
        new RedisTokenSource({
          redis,
          prefix: settings.queue.prefix,
          issue,
          refreshMarginSeconds: settings.token.refreshMarginSeconds,
          ...identityProviderWaitOptions(settings.token, logger),
        }),
    });
    const exportQueue = new ExportQueue({ connection: redis, settings });
    const worker = createExportWorker({
      connection: workerRedis,
      settings,
      concurrency: settings.concurrency,
      attemptSlice: (slice, attempt) => exportReport(slice, attempt, services),
      planNightly: async () =>
        (
          await planNightly({
            ledger: services.ledger,
            portfolios: settings.portfolios,
            reportTypes: settings.reportTypes,
            timeZone: settings.schedule.timeZone,
            lookbackDays: settings.schedule.lookbackDays,
          })
        ).slices,
      exportQueue,
      logger,
      onFatal: (error) => {
        fatal = error;
        logger.fatal({ code: error.code, error: error.message }, 'stopping the worker: every further job would fail the same way');
        stop.abort();
      },
    });
    worker.on('error', (error) => logger.error({ error: error.message }, 'worker error'));
    await worker.waitUntilReady();
    logger.info({ queue: settings.queue.name, concurrency: settings.concurrency, warehouse: services.warehouse.location }, 'worker ready');

    const signals = [io.signal, stop.signal].filter((signal): signal is AbortSignal => signal !== undefined);
    if (!signals.some((signal) => signal.aborted)) await once(AbortSignal.any(signals), 'abort');
    logger.info('closing the worker: finishing the jobs in flight');
    // close() waits for the active jobs to finish; their slices are then loaded or not, never half.
    await worker.close();
    await exportQueue.close();
    await services.close();
    logger.info('worker stopped');
    if (fatal) io.stderr.write(`report-sync: ${fatal.message}\n`);
    return fatal ? 2 : 0;
  } finally {
    redis.disconnect();
    workerRedis.disconnect();
  }
}
