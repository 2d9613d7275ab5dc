import { Redis } from 'ioredis';
import type { Logger } from '../logger.js';

/**
 * A Redis connection for BullMQ. `maxRetriesPerRequest: null` is what BullMQ workers need to keep
 * waiting through a Redis restart instead of failing commands; reconnection backs off to 2 s.
 */
export function createRedisConnection(redisUrl: string, logger: Logger): Redis {
  const redis = new Redis(redisUrl, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
  let lastReport = 0;
  redis.on('error', (error: Error) => {
    // ioredis reports every failed reconnect; one line per 10 s is enough to see Redis is down.
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now();
      logger.warn({ code: (error as { code?: string }).code, error: error.message }, 'Redis connection trouble; reconnecting');
    }
  });
  return redis;
}
