import { ExportQueue } from '../queue/export-queue.js';
import { createRedisConnection } from '../queue/redis-connection.js';
import { NIGHTLY_JOB, NIGHTLY_SCHEDULER_ID } from '../queue/slice-job.js';
import { createCliLogger, loadCliConfig, type CliIo, type CommonOptions } from './cli-io.js';

/**
 * `report-sync scheduler`: registers (or updates) the nightly job scheduler in Redis with the
 * configured cron pattern and time zone, then exits. The id is fixed, so running it again, or
 * from several places, leaves exactly one schedule; the workers fire it and fan out the night.
 */
export async function schedulerCommand(options: CommonOptions, io: CliIo): Promise<number> {
  const config = loadCliConfig(io, options);
  const { settings } = config;
  const logger = createCliLogger(config, io, { progressBar: false });
  const redis = createRedisConnection(config.redisUrl, logger);
  const exportQueue = new ExportQueue({ connection: redis, settings });
  try {
    await exportQueue.queue.upsertJobScheduler(
      NIGHTLY_SCHEDULER_ID,
      { pattern: settings.schedule.cron, tz: settings.schedule.timeZone },
      { name: NIGHTLY_JOB, data: {}, opts: { priority: settings.queue.nightlyPriority, removeOnComplete: { count: 30 }, removeOnFail: { count: 30 } } },
    );
    const next = await exportQueue.queue.getJobScheduler(NIGHTLY_SCHEDULER_ID);
    const nextRun = next?.next ? new Date(next.next).toISOString() : 'unknown';
    io.stdout.write(
      `Nightly schedule "${settings.schedule.cron}" (${settings.schedule.timeZone}) registered on queue ${settings.queue.name}; next run ${nextRun}.\n`,
    );
    return 0;
  } finally {
    await exportQueue.close();
    redis.disconnect();
  }
}
