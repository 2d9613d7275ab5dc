import { ExportQueue } from '../queue/export-queue.js';
import { ensureNightlySchedule, nightlyPlanSettings } from '../queue/nightly-schedule.js';
import { createRedisConnector } from '../queue/redis-connection.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';
import { countOf } from '../text/count-of.js';

/**
 * `report-sync scheduler`: registers or updates the nightly job scheduler in Redis, carrying what
 * the night syncs so every worker fans out the same night. The id is fixed, so running it again or
 * from several places leaves one schedule; workers re-create it if Redis loses it.
 */
export async function schedulerCommand(options: CommonOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options);
  const { settings } = config;
  const logger = createCliLogger(config, io, { progressBar: false });
  const connector = createRedisConnector(config.redisUrl, logger, { clusterNodes: config.redisClusterNodes, prefix: settings.queue.prefix });
  const redis = connector.connect();
  let exportQueue: ExportQueue | undefined;
  try {
    await connector.waitUntilReady(redis, { timeoutMs: settings.startup.timeoutMs, signal: io.signal });
    exportQueue = new ExportQueue({ connection: redis, settings });
    const wanted = nightlyPlanSettings(settings);
    const check = await ensureNightlySchedule(exportQueue.queue, wanted, { mode: 'register', priority: settings.queue.nightlyPriority });
    const nextRun = check.nextRunAt ? new Date(check.nextRunAt).toISOString() : 'unknown';
    const verb = { created: 'registered', replaced: 'replaced', kept: 'already registered, unchanged' }[check.action];
    const lines = [
      `Nightly schedule "${wanted.cron}" (${wanted.timeZone}) ${verb} on queue ${settings.queue.name}; next run ${nextRun}.`,
      `Each night syncs yesterday and re-checks ${countOf(wanted.lookbackDays, 'day')} before it, for portfolios ${wanted.portfolios.join(', ')} × ${wanted.reportTypes.join(', ')}.`,
    ];
    if (check.action === 'replaced' && check.differences.length > 0) lines.push(`Changed: ${check.differences.join('; ')}.`);
    io.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  } finally {
    await exportQueue?.close();
    redis.disconnect();
  }
}
