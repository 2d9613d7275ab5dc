import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors/sync-error.js';
import { createLogger } from '../../../src/logging/logger.js';
import { createRedisConnector } from '../../../src/queue/redis-connection.js';

const logger = createLogger({ level: 'silent' });

describe('createRedisConnector', () => {
  it.each([
    ['redis:/:pw-one-slash@cache:6379', 'redis:/:[redacted]@cache:6379'],
    ['redis:/:pw@cache:6379', 'redis:/:[redacted]@cache:6379'],
    ['default:pw-no-scheme@cache:6379', 'default:[redacted]@cache:6379'],
    ['cache:6379', 'cache:6379'],
    ['http://cache:6379', 'http://cache:6379/'],
  ])('refuses REDIS_URL=%s, showing it as %s', (url, shown) => {
    let caught: unknown;
    try {
      createRedisConnector(url, logger);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toBe(`REDIS_URL (${shown}) must look like redis://host:6379 (or rediss:// for TLS)`);
    expect((caught as Error).message).not.toMatch(/pw/);
  });

  it.each(['redis://:pw@cache:6379', 'redis://default:pw@cache:6379/1', 'rediss://cache.example:6380'])('takes REDIS_URL=%s, shown without its password', (url) => {
    const connector = createRedisConnector(url, logger);
    expect(connector.location).not.toContain('pw');
    expect(connector.location).toMatch(/^rediss?:\/\/.*cache/);
  });
});
