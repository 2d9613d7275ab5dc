import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors/sync-error.js';
import { parseClusterNodes } from '../../../src/queue/redis-cluster-nodes.js';

describe('parseClusterNodes (REDIS_CLUSTER_NODES)', () => {
  it('reads host:port entries separated by commas, blanks around them ignored, 6379 when the port is left out', () => {
    expect(parseClusterNodes(' 10.0.0.5:7000, redis-b.internal:7001 ,[::1]:7002,redis-c,')).toEqual([
      { host: '10.0.0.5', port: 7000 },
      { host: 'redis-b.internal', port: 7001 },
      { host: '::1', port: 7002 },
      { host: 'redis-c', port: 6379 },
    ]);
  });

  it('refuses a list that names no node', () => {
    expect(() => parseClusterNodes(' , ')).toThrow(new ConfigError('REDIS_CLUSTER_NODES names no node: list the cluster’s nodes as host:port, separated by commas'));
  });

  it.each(['cache:0', 'cache:65536', 'cache:70o0', 'cache:7000:1', '::1:7000', 'two words:7000'])('refuses %s, naming the entry', (entry) => {
    expect(() => parseClusterNodes(`cache:7000,${entry}`)).toThrow(`REDIS_CLUSTER_NODES entry "${entry}" must look like host:port (e.g. 10.0.0.5:7000, or [::1]:7000 for IPv6)`);
  });

  it.each(['redis://:pw-in-url@cache:7000', 'user:pw-in-entry@cache:7000', 'cache:7000/0'])('refuses %s without quoting it: the password and TLS go in REDIS_URL', (entry) => {
    let caught: unknown;
    try {
      parseClusterNodes(entry);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toBe(
      'REDIS_CLUSTER_NODES holds an entry that is not host:port (a URL, a password or a path): list only host:port; the password and rediss:// for TLS go in REDIS_URL',
    );
  });
});
