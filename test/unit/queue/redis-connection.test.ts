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

describe('createRedisConnector with REDIS_CLUSTER_NODES', () => {
  it('refuses a queue.prefix without a hash tag: the queue’s keys would land in different slots', () => {
    expect(() => createRedisConnector('redis://127.0.0.1:7000', logger, { clusterNodes: '127.0.0.1:7001', prefix: 'report-sync' })).toThrow(
      new ConfigError(
        "queue.prefix (report-sync) holds no hash tag, so on a Redis Cluster the queue's keys would land in different slots and BullMQ's scripts would fail: " +
          'put braces around it, e.g. {report-sync} (REPORT_SYNC_QUEUE__PREFIX or queue.prefix in the settings file)',
      ),
    );
  });

  it('refuses a database other than 0, which a cluster does not have', () => {
    expect(() => createRedisConnector('redis://:pw@127.0.0.1:7000/3', logger, { clusterNodes: '127.0.0.1:7001', prefix: '{report-sync}' })).toThrow(
      new ConfigError('REDIS_URL (redis://:[redacted]@127.0.0.1:7000/3) selects database 3, but a Redis Cluster has only database 0: remove /3 from REDIS_URL'),
    );
  });

  it('says what is wrong with REDIS_CLUSTER_NODES before REDIS_URL, whose default is its first node', () => {
    expect(() => createRedisConnector('redis://redis://cache:7000', logger, { clusterNodes: 'redis://cache:7000', prefix: '{report-sync}' })).toThrow(
      /^REDIS_CLUSTER_NODES holds an entry that is not host:port/,
    );
  });
});
