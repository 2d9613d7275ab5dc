import { once } from 'node:events';
import { hostname } from 'node:os';
import type { RedisClient } from '../queue/redis-connection.js';
import { exportSliceJob } from '../../jobs/export-slice/export-slice-job.js';
import { attemptExportSlice, deadSliceRecorder, probeExportEndpoint } from '../../jobs/export-slice/handler.js';
import { planNightJob } from '../../jobs/plan-night/plan-night-job.js';
import { refillBackfillJob } from '../../jobs/refill-backfill/refill-backfill-job.js';
import { identityProviderWaitOptions } from '../auth/identity-provider-wait-options.js';
import { RedisTokenSource } from '../auth/redis-token-source.js';
import type { AppConfig } from '../config/load-config.js';
import type { UpstreamConfig } from '../config/upstream-config.js';
import { SyncError } from '../errors/sync-error.js';
import type { SyncMetrics } from '../metrics/sync-metrics.js';
import { ExportQueue } from '../queue/export-queue.js';
import { nightlyPlanSettings } from '../queue/nightly-schedule.js';
import { keepNightlySchedule } from '../queue/keep-nightly-schedule.js';
import { closeWorker } from '../queue/close-worker.js';
import { CredentialsPause } from '../queue/credentials-pause.js';
import { createExportWorker } from '../queue/export-worker.js';
import { JobsInFlight } from '../queue/jobs-in-flight.js';
import type { RedisConnector } from '../queue/redis-connection.js';
import type { Logger } from '../logging/logger.js';
import { RedisRateGate } from '../queue/redis-rate-gate.js';
import { createSyncServices, type SyncServices } from './sync-services.js';
import { lastSuccessfulNight } from '../queue/night-record.js';
import { followNight } from '../queue/follow-night.js';
import { warehouseNow } from '../warehouse/warehouse-now.js';
import { alertWebhookFromEnvironment, type AlertWebhook } from '../alerts/alert-webhook.js';
import { WorkerDeathAlerts } from '../queue/worker-death-alerts.js';
import type { CliIo } from './cli-io.js';
import { jobsAtOnce } from '../queue/jobs-at-once.js';
import { workerErrorLog } from '../queue/worker-error-log.js';

/** What a worker has opened so far: its readiness checks look here, and its close closes all of it. */
export interface WorkerParts {
  redis?: RedisClient;
  workerRedis?: RedisClient;
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
          ? new RedisRateGate({
              redis,
              prefix: settings.queue.prefix,
              max: settings.queue.rateLimit.max,
              windowMs: settings.queue.rateLimit.durationMs,
              requestTimeoutMs: settings.http.connectTimeoutMs + settings.http.headersTimeoutMs,
            })
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
      probeExport: (slice) => probeExportEndpoint(slice, services),
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
    // `concurrency` downloads at once (the export client's slots), and `queue.prefetch` jobs more, written meanwhile.
    const takenAtOnce = jobsAtOnce({ concurrency: settings.concurrency, prefetch: settings.queue.prefetch });
    const inFlight = new JobsInFlight();
    const worker = createExportWorker({
      connection: workerRedis,
      settings,
      name: `${hostname()}:${process.pid}`,
      concurrency: takenAtOnce,
      jobs: [
        exportSliceJob({
          attemptSlice: (slice, attempt, options) => attemptExportSlice(slice, attempt, services, options),
          failDeadSlice: deadSliceRecorder({ deps: services, maxStalledCount: settings.queue.maxStalledCount, onDeath: (slice, error) => dead.add(slice, error) }),
          maxStalledCount: settings.queue.maxStalledCount,
          onStalledTakeover: () => metrics?.stalledJobTaken(),
          limits: { maxRetryAfterMs: settings.retry.maxRetryAfterMs, credentialsRetryMs: settings.token.rejectedRetryMs },
          logger,
        }),
        planNightJob({
          ledger: services.ledger,
          exportQueue,
          priority: settings.queue.nightlyPriority,
          warehouseNow: () => warehouseNow(services.warehouse),
          ownNightly,
          followNight: (night) => followNight({ night, ledger: services.ledger, exportQueue, redis, prefix: settings.queue.prefix, logger, webhook, metrics, shutdown }),
          logger,
        }),
        refillBackfillJob({ exportQueue, ledger: services.ledger, shutdown, logger }),
      ],
      exportQueue,
      logger,
      onCredentialsRefused: (error, slice) => credentials.refused(error, slice),
      inFlight,
      onFatal: (error) => {
        fatal = error;
        logger.fatal({ code: error.code, err: error }, 'stopping the worker: every further job would fail the same way');
        stop.abort();
      },
    });
    worker.on('error', workerErrorLog({ logger, redisDown: () => connector.down }));
    let healing: Promise<void> | undefined;
    try {
      await worker.waitUntilReady();
      healing = keepNightlySchedule({ exportQueue, own: ownNightly, settings, logger, shutdown, redisDown: () => connector.down });
      logger.info({ queue: settings.queue.name, concurrency: settings.concurrency, jobsAtOnce: takenAtOnce, warehouse: services.warehouse.location }, 'worker ready');
      if (!shutdown.aborted) await once(shutdown, 'abort');
      logger.info('closing the worker: finishing the jobs in flight');
    } finally {
      // close() waits for the active jobs to finish; their slices are then loaded or not, never half.
      // Also when the worker never got ready: its connections must not keep the process up.
      await closeWorker({ worker, connector, inFlight, logger });
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
