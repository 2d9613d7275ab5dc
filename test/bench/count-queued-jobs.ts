import { Redis } from 'ioredis';
import type { Settings } from '../../src/config/settings-schema.js';
import { ExportQueue } from '../../src/queue/export-queue.js';

/**
 * Jobs the export queue of `settings` holds in Redis and has not finished (waiting, prioritized,
 * delayed, active): what a backfill (or the raw baseline) really queued, counted in Redis rather
 * than taken from the command's own summary.
 */
export async function countQueuedJobs(redisUrl: string, settings: Settings): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const exportQueue = new ExportQueue({ connection: redis, settings });
  try {
    return await exportQueue.unfinished();
  } finally {
    await exportQueue.close();
    redis.disconnect();
  }
}
