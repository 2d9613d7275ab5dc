import { once } from 'node:events';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { exportReport } from '../../jobs/export-report.js';
import { planNightlyJob } from '../../jobs/nightly.js';
import { identityProviderWaitOptions } from '../auth/identity-provider-wait-options.js';
import { RedisTokenSource } from '../auth/redis-token-source.js';
import type { AppConfig } from '../config/load-config.js';
import type { UpstreamConfig } from '../config/upstream-config.js';
import { SyncError } from '../errors/sync-error.js';
import type { Settings } from '../config/settings-schema.js';
import type { SyncMetrics } from '../metrics/sync-metrics.js';
import { ExportQueue } from '../queue/export-queue.js';
import { ensureNightlySchedule, nightlyPlanSettings, type NightlyPlanSettings } from '../queue/nightly-schedule.js';
import { CredentialsPause } from '../queue/credentials-pause.js';
import { createExportWorker } from '../queue/export-worker.js';
import type { RedisConnector } from '../queue/redis-connection.js';
import type { Logger } from '../logging/logger.js';
import type { Slice } from '../slice/slice.js';
import { RedisRateGate } from '../queue/redis-rate-gate.js';
import { createSyncServices, type SyncServices } from './sync-services.js';
import { lastSuccessfulNight } from '../queue/night-record.js';
import { followNight } from '../queue/follow-night.js';
import { warehouseNow } from '../warehouse/warehouse-now.js';
import { alertWebhookFromEnvironment, type AlertWebhook } from '../alerts/alert-webhook.js';
import { recordWorkerDeath } from '../export/record-worker-death.js';
import { WorkerDeathAlerts } from '../queue/worker-death-alerts.js';
import type { CliIo } from './cli-io.js';

/** What a worker has opened so far: its readiness checks look here, and its close closes all of it. */
export interface WorkerParts {
  redis?: Redis;
  workerRedis?: Redis;
  services?: SyncServices;
  credentials?: CredentialsPause;
  exportQueue?: ExportQueue;
}

export interface ServeWorkerOptions {
  readonly config: AppConfig;
  readonly upstream: UpstreamConfig;
  readonly logger: Logger;
  readonly connector: RedisConnector;
  /** Filled in as the parts are opened, for the caller's readiness checks. */
  readonly opened: WorkerParts;
  /** Where the worker counts, when it serves metrics. */
  readonly metrics: SyncMetrics | undefined;
  /** SIGTERM/SIGINT. */
  readonly signal: AbortSignal | undefined;
  readonly stderr: CliIo['stderr'];
}

/**
 * The worker once its metrics port is held: connects to Redis, opens the warehouse and the export
 * client, and processes export jobs until the signal, then finishes the jobs in flight. Resolves to
 * the exit code; closes everything it opened, also when it fails.
 */
export async function serveWorker(options: ServeWorkerOptions): Promise<number> {
  const { config, upstream, logger, connector, opened, metrics } = options;
  const { settings } = config;
  let fatal: SyncError | undefined;
  const stop = new AbortController();
  const shutdown = AbortSignal.any([options.signal, stop.signal].filter((signal): signal is AbortSignal => signal !== undefined));
  let webhook: AlertWebhook | undefined;
  let deathAlerts: WorkerDeathAlerts | undefined;
  try {
    // Made at start, so that a bad REPORT_ALERT_WEBHOOK_URL stops the worker at once (exit 2).
    webhook = alertWebhookFromEnvironment(config.env, { logger, signal: shutdown, onResult: (result) => metrics?.alertSent(result) });
    const redis = (opened.redis = connector.connect());
    const workerRedis = (opened.workerRedis = connector.connect());
    try {
      await connector.waitUntilReady(redis, { signal: shutdown });
    } catch (error) {
      if (!(error instanceof SyncError) || error.code !== 'INTERRUPTED') throw error;
      logger.info({ redis: connector.location }, 'worker stopped before Redis answered');
      return 0;
    }
    // A worker started (again) is how an operator says the credentials were fixed: ask once more
    // now instead of waiting out the refusal the fleet remembers (see token.rejectedRetryMs).
    if ((await CredentialsPause.forgetRefusals(redis, settings.queue.prefix)) > 0) {
      logger.info('forgot the credentials refusal the fleet remembered: this start asks the upstream again');
    }
    const services = (opened.services = await createSyncServices({
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
    }));
    const credentials = (opened.credentials = new CredentialsPause({
      worker: () => worker,
      tokens: services.tokens,
      probeExport: (slice) => probeExport(services, slice),
      redis,
      prefix: settings.queue.prefix,
      retryMs: settings.token.rejectedRetryMs,
      logger,
      shutdown,
    }));
    const exportQueue = (opened.exportQueue = new ExportQueue({ connection: redis, settings }));
    metrics?.setQueueDepthSource(() => exportQueue.queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'));
    metrics?.setLastSuccessfulNightSource(() => lastSuccessfulNight(redis, settings.queue.prefix));
    const ownNightly = nightlyPlanSettings(settings);
    const alerts = webhook;
    const dead = (deathAlerts = new WorkerDeathAlerts({ send: async (alert) => alerts?.send(alert), queueName: settings.queue.name }));
    const worker = createExportWorker({
      connection: workerRedis,
      settings,
      name: `${hostname()}:${process.pid}`,
      concurrency: settings.concurrency,
      attemptSlice: (slice, attempt, options) => exportReport(slice, attempt, services, options),
      planNightly: (nightly) => planNightlyJob(services.ledger, nightly),
      warehouseNow: () => warehouseNow(services.warehouse.db),
      followNight: (night) => followNight({ night, ledger: services.ledger, exportQueue, redis, prefix: settings.queue.prefix, logger, webhook, metrics, shutdown }),
      ownNightly,
      exportQueue,
      logger,
      onCredentialsRefused: (error, slice) => credentials.refused(error, slice),
      onStalledTakeover: () => metrics?.stalledJobTaken(),
      failDeadSlice: async (slice, deaths) => {
        const outcome = await recordWorkerDeath(slice, { ...deaths, maxStalledCount: settings.queue.maxStalledCount }, services);
        dead.add(slice, outcome.error);
        return outcome.error;
      },
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
    let healing: Promise<void> | undefined;
    try {
      await worker.waitUntilReady();
      healing = keepNightlyScheduleAlive(exportQueue, ownNightly, settings, logger, shutdown, () => connector.down);
      logger.info({ queue: settings.queue.name, concurrency: settings.concurrency, warehouse: services.warehouse.location }, 'worker ready');
      if (!shutdown.aborted) await once(shutdown, 'abort');
      logger.info('closing the worker: finishing the jobs in flight');
    } finally {
      // close() waits for the active jobs to finish; their slices are then loaded or not, never half.
      // Also when the worker never got ready: its connections must not keep the process up.
      await closeWorker(worker, connector, logger);
      await healing;
    }
    logger.info('worker stopped');
    if (fatal) options.stderr.write(`report-sync: ${fatal.message}\n`);
    return fatal ? 2 : 0;
  } finally {
    stop.abort();
    await opened.credentials?.stopped();
    await opened.exportQueue?.close().catch(() => undefined);
    await opened.services?.close();
    await deathAlerts?.close();
    await webhook?.close();
    opened.redis?.disconnect();
    opened.workerRedis?.disconnect();
  }
}

/**
 * One export request for `slice`, its answer discarded: whether the export endpoint accepts the
 * fleet's token again (see {@link CredentialsPause}). Throws what a job would have met.
 */
async function probeExport(services: SyncServices, slice: Slice): Promise<void> {
  const format = services.settings.formats[slice.reportType] ?? services.settings.defaultFormat;
  const download = await services.client.download(slice, format);
  if (download.kind === 'file') await download.body.dispose();
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
  // Whether this worker has seen the schedule in Redis: only then is a schedule gone a schedule lost.
  let seen = false;
  while (!shutdown.aborted) {
    try {
      const check = await ensureNightlySchedule(exportQueue.queue, own, { mode: 'heal', priority: settings.queue.nightlyPriority });
      const schedule = { cron: own.cron, timeZone: own.timeZone, nextRunAt: check.nextRunAt ? new Date(check.nextRunAt).toISOString() : undefined };
      if (check.action !== 'kept' && seen) {
        logger.warn(schedule, "the nightly schedule was missing from Redis (flushed, or restarted without persistence): re-created it from this worker's settings");
      } else if (check.action !== 'kept') {
        // A new install, or a Redis that lost its data before this worker started: nothing tells them apart.
        logger.info(schedule, `registered the nightly schedule, which queue ${exportQueue.queue.name} did not have yet, from this worker's settings`);
      }
      seen = true;
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
