import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** The Redis server the tests use: loopback (`.ci/run` makes sure it answers). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

/** A key prefix of its own (a hash tag, as in production) and a cleanup that deletes every key under it. */
export function testPrefix(): { prefix: string; cleanup(): Promise<void> } {
  const prefix = `{report-sync-test-${randomBytes(5).toString('hex')}}`;
  return {
    prefix,
    async cleanup() {
      const redis = new Redis(TEST_REDIS_URL);
      try {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length > 0) await redis.del(...keys);
        } while (cursor !== '0');
      } finally {
        redis.disconnect();
      }
    },
  };
}
