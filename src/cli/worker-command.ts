import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'bullmq';
import { exportReport } from '../../jobs/export-report.js';
import { planNightlyJob } from '../../jobs/nightly.js';
import { identityProviderWaitOptions } from '../auth/identity-provider-wait-options.js';
import { RedisTokenSource } from '../auth/redis-token-source.js';
import { resolveUpstreamConfig } from '../config/upstream-config.js';
import { SyncError } from '../errors.js';
import type { Settings } from '../config/settings-schema.js';
import { ExportQueue } from '../queue/export-queue.js';
import { ensureNightlySchedule, nightlyPlanSettings, type NightlyPlanSettings } from '../queue/nightly-schedule.js';
import { CredentialsPause } from '../queue/credentials-pause.js';
import { createExportWorker } from '../queue/export-worker.js';
import { createRedisConnector, type RedisConnector } from '../queue/redis-connection.js';
import type { Logger } from '../logger.js';
import { RedisRateGate } from '../queue/redis-rate-gate.js';
import { createSyncServices, type SyncServices } from '../sync-services.js';
import { lastSuccessfulNight } from '../queue/night-record.js';
import { followNight } from '../queue/follow-night.js';
import { warehouseNow } from '../warehouse/warehouse-now.js';
import { alertWebhookFromEnvironment, type AlertWebhook } from '../alerts/alert-webhook.js';
import { startMetrics, warehouseReadiness } from './start-metrics.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';

/**
 * `report-sync worker`: processes export jobs from the queue until SIGTERM/SIGINT, then finishes
 * the jobs in flight and exits 0. Refused credentials pause it (see {@link CredentialsPause});
 * other configuration errors stop it with exit 2 (every job would fail).
 */
export async function workerCommand(options: CommonOptions & { concurrency?: number; metricsPort?: number }, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options, { concurrency: options.concurrency });
  const { settings } = config;
  const upstream = resolveUpstreamConfig(config.env);
  const logger = createCliLogger(config, io, { progressBar: false });
  const connector = createRedisConnector(config.redisUrl, logger);
  const redis = connector.connect();
  const workerRedis = connector.connect();
  let fatal: SyncError | undefined;
  const stop = new AbortController();
  const shutdown = AbortSignal.any([io.signal, stop.signal].filter((signal): signal is AbortSignal => signal !== undefined));
  // Up before anything else, so that /readyz says what the worker is waiting for.
  const opened: { services?: SyncServices; credentials?: CredentialsPause } = {};
  const exposed = await startMetrics(config, logger, options.metricsPort ?? settings.metrics.port, [
    {
      name: 'redis',
      check: async () => {
        if (connector.down || redis.status !== 'ready') return `Redis at ${connector.location} is unreachable (reconnecting)`;
        await redis.ping();
        return undefined;
      },
    },
    warehouseReadiness(() => opened.services?.warehouse),
    { name: 'credentials', check: async () => opened.credentials?.refusal },
  ]);
  const metrics = exposed?.metrics;
  let webhook: AlertWebhook | undefined;
  try {
    // Made at start, so that a bad REPORT_ALERT_WEBHOOK_URL stops the worker at once (exit 2).
    webhook = alertWebhookFromEnvironment(config.env, { logger, signal: shutdown, onResult: (result) => metrics?.alertSent(result) });
    try {
      await connector.waitUntilReady(redis, { signal: shutdown });
    } catch (error) {
      if (!(error instanceof SyncError) || error.code !== 'INTERRUPTED') throw error;
      logger.info({ redis: connector.location }, 'worker stopped before Redis answered');
      return 0;
    }
    // A worker started (again) is how an operator says the credentials were fixed: ask once more
    // now instead of waiting out the refusal the fleet remembers (see token.rejectedRetryMs).
    if ((await redis.del(`${settings.queue.prefix}:token:credentials-refused`)) > 0) {
      logger.info('forgot the credentials refusal the fleet remembered: this start asks the identity provider again');
    }
    const services = await createSyncServices({
      config,
      upstream,
      logger,
      signal: shutdown,
      metrics,
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
          rejectedRetryMs: settings.token.rejectedRetryMs,
          ...identityProviderWaitOptions(settings.token, logger, shutdown, metrics),
        }),
    });
    opened.services = services;
    const credentials = new CredentialsPause({ worker: () => worker, tokens: services.tokens, retryMs: settings.token.rejectedRetryMs, logger, shutdown });
    opened.credentials = credentials;
    const exportQueue = new ExportQueue({ connection: redis, settings });
    metrics?.setQueueDepthSource(() => exportQueue.queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'));
    metrics?.setLastSuccessfulNightSource(() => lastSuccessfulNight(redis, settings.queue.prefix));
    const ownNightly = nightlyPlanSettings(settings);
    const worker = createExportWorker({
      connection: workerRedis,
      settings,
      concurrency: settings.concurrency,
      attemptSlice: (slice, attempt, options) => exportReport(slice, attempt, services, options),
      planNightly: (nightly) => planNightlyJob(services.ledger, nightly),
      warehouseNow: () => warehouseNow(services.warehouse.db),
      followNight: (night) => followNight({ night, ledger: services.ledger, exportQueue, redis, prefix: settings.queue.prefix, logger, webhook, metrics, shutdown }),
      ownNightly,
      exportQueue,
      logger,
      onCredentialsRefused: (error) => credentials.refused(error),
      onStalledTakeover: () => metrics?.stalledJobTaken(),
      credentialsRetryMs: settings.token.rejectedRetryMs,
      onFatal: (error) => {
        fatal = error;
        logger.fatal({ code: error.code, err: error }, 'stopping the worker: every further job would fail the same way');
        stop.abort();
      },
    });
    let lastWorkerError = 0;
    worker.on('error', (error) => {
      // While Redis is down, BullMQ reports every failed command; the connector already says Redis is down.
      if (connector.down || Date.now() - lastWorkerError < 10_000) return;
      lastWorkerError = Date.now();
      logger.error({ err: error }, 'worker error');
    });
    await worker.waitUntilReady();
    const healing = keepNightlyScheduleAlive(exportQueue, ownNightly, settings, logger, shutdown, () => connector.down);
    logger.info({ queue: settings.queue.name, concurrency: settings.concurrency, warehouse: services.warehouse.location }, 'worker ready');

    if (!shutdown.aborted) await once(shutdown, 'abort');
    logger.info('closing the worker: finishing the jobs in flight');
    // close() waits for the active jobs to finish; their slices are then loaded or not, never half.
    await closeWorker(worker, connector, logger);
    await healing;
    await credentials.stopped();
    await exportQueue.close();
    await services.close();
    logger.info('worker stopped');
    if (fatal) io.stderr.write(`report-sync: ${fatal.message}\n`);
    return fatal ? 2 : 0;
  } finally {
    await webhook?.close();
    await exposed?.server.close();
    redis.disconnect();
    workerRedis.disconnect();
  }
}

/**
 * Makes sure the nightly schedule exists, now and every `schedule.checkIntervalMs` until the
 * shutdown: a Redis restarted without persistence loses it, and nothing else would bring it back.
 * Says so when it had to re-create it, and (once per difference) when the registered schedule's
 * settings are not this worker's: the schedule's own are used, never silently replaced.
 */
async function keepNightlyScheduleAlive(
  exportQueue: ExportQueue,
  own: NightlyPlanSettings,
  settings: Settings,
  logger: Logger,
  shutdown: AbortSignal,
  redisDown: () => boolean,
): Promise<void> {
  let reported = '';
  while (!shutdown.aborted) {
    try {
      const check = await ensureNightlySchedule(exportQueue.queue, own, { mode: 'heal', priority: settings.queue.nightlyPriority });
      if (check.action !== 'kept') {
        logger.warn(
          { cron: own.cron, timeZone: own.timeZone, nextRunAt: check.nextRunAt ? new Date(check.nextRunAt).toISOString() : undefined },
          "the nightly schedule was missing from Redis (flushed, or restarted without persistence): re-created it from this worker's settings",
        );
      }
      const differences = check.differences.join('; ');
      if (differences !== '' && differences !== reported) {
        logger.warn(
          { differences: check.differences },
          "the registered nightly schedule's settings differ from this worker's: the schedule's are used; run report-sync scheduler with the settings you want",
        );
      }
      reported = differences;
    } catch (error) {
      // Redis trouble is already reported by the connector; the next round tries again.
      if (!redisDown() && !shutdown.aborted) logger.error({ err: error }, 'could not check the nightly schedule');
    }
    await sleep(settings.schedule.checkIntervalMs, undefined, { signal: shutdown }).catch(() => undefined);
  }
}

/**
 * Closes the BullMQ worker, letting the jobs in flight finish. BullMQ records each finished job
 * in Redis and says goodbye to it: while Redis is down both would wait for it forever, so then the
 * connections are dropped and the close forced. The slices of those jobs are in the warehouse
 * either way; their jobs count as stalled and are taken again (unchanged) once Redis is back.
 */
async function closeWorker(worker: Worker, connector: RedisConnector, logger: Logger): Promise<void> {
  const closing = worker.close();
  for (;;) {
    const finished = await Promise.race([closing.then(() => true), sleep(500).then(() => false)]);
    if (finished) return;
    if (connector.down) {
      logger.warn({ redis: connector.location }, 'Redis is down: not waiting for it to record the jobs in flight');
      // BullMQ's own close would wait for Redis forever; dropping every connection abandons it
      // and leaves nothing behind to keep the process alive.
      closing.catch(() => undefined);
      connector.disconnectAll();
      return;
    }
  }
}
