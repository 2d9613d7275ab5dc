import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RedisTokenSource } from '../../../src/auth/redis-token-source.js';
import type { IssuedToken } from '../../../src/auth/token-source.js';
import { TEST_REDIS_URL, testPrefix } from '../../helpers/test-redis.js';

describe('RedisTokenSource against a real Redis', () => {
  let scope: ReturnType<typeof testPrefix>;
  const connections: Redis[] = [];
  let issued = 0;
  const issue = async (): Promise<IssuedToken> => {
    issued += 1;
    await new Promise((resolve) => setTimeout(resolve, 30));
    return { accessToken: `token-${issued}`, expiresInSeconds: 2 };
  };

  /** One source per simulated process, each with its own connection. */
  function processes(count: number): RedisTokenSource[] {
    return Array.from({ length: count }, () => {
      const redis = new Redis(TEST_REDIS_URL);
      connections.push(redis);
      return new RedisTokenSource({ redis, prefix: scope.prefix, issue });
    });
  }

  beforeEach(() => {
    scope = testPrefix();
    issued = 0;
  });
  afterEach(async () => {
    for (const redis of connections.splice(0)) redis.disconnect();
    await scope.cleanup();
  });

  it('makes one token request for 3 processes × 8 concurrent jobs', async () => {
    const fleet = processes(3);
    const tokens = await Promise.all(fleet.flatMap((source) => Array.from({ length: 8 }, () => source.getToken())));
    expect(issued).toBe(1);
    expect(new Set(tokens)).toEqual(new Set(['token-1']));
  });

  it('renews once fleet-wide when every job reports the same rejected token', async () => {
    const fleet = processes(3);
    const first = await fleet[0]!.getToken();
    const renewed = await Promise.all(fleet.flatMap((source) => Array.from({ length: 8 }, () => source.renewAfterRejection(first))));
    expect(issued).toBe(2);
    expect(new Set(renewed)).toEqual(new Set(['token-2']));
    // A late 401 for the old token changes nothing.
    expect(await fleet[2]!.renewAfterRejection(first)).toBe('token-2');
    expect(issued).toBe(2);
  });

  it('asks for at most one token per minRenewalIntervalMs for the fleet while a gateway refuses every token', async () => {
    const fleet = [1, 2].map(() => {
      const redis = new Redis(TEST_REDIS_URL);
      connections.push(redis);
      return new RedisTokenSource({ redis, prefix: scope.prefix, issue, minRenewalIntervalMs: 1_000 });
    });
    const burst = async () => {
      const answers = await Promise.all(
        fleet.flatMap((source) =>
          Array.from({ length: 100 }, async () => {
            const token = await source.getToken();
            return { token, answer: await source.renewAfterRejection(token) };
          }),
        ),
      );
      return answers;
    };
    const startedAt = Date.now();
    const first = await burst();
    // token-1 was refused: one renewal for the fleet, and every caller retries with token-2.
    expect(new Set(first.map(({ answer }) => answer))).toEqual(new Set(['token-2']));
    for (let i = 0; i < 3; i += 1) {
      const again = await burst();
      // token-2 refused too, within the interval: handed back as it was, no grant.
      expect(again.every(({ token, answer }) => token === 'token-2' && answer === 'token-2')).toBe(true);
    }
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    expect(issued).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    const later = await burst();
    expect(new Set(later.map(({ answer }) => answer))).toEqual(new Set(['token-3']));
    expect(issued).toBe(3);
  });

  it('never hands Redis a TTL it refuses, whatever lifetime the token came with', async () => {
    const redis = new Redis(TEST_REDIS_URL);
    connections.push(redis);
    for (const expiresInSeconds of [1e300, Number.POSITIVE_INFINITY, Number.NaN, 0.0001]) {
      await redis.del(`${scope.prefix}:token:access`);
      const source = new RedisTokenSource({ redis, prefix: scope.prefix, issue: async () => ({ accessToken: `t-${expiresInSeconds}`, expiresInSeconds }) });
      expect(await source.getToken()).toBe(`t-${expiresInSeconds}`);
    }
  });

  it('keeps the token for its lifetime less the margin, then renews', async () => {
    const [source] = processes(1);
    await source!.getToken();
    const ttl = await connections[0]!.pttl(`${scope.prefix}:token:access`);
    // 2 s lifetime, margin a tenth of it: about 1.8 s.
    expect(ttl).toBeGreaterThan(1_600);
    expect(ttl).toBeLessThanOrEqual(1_800);
    await new Promise((resolve) => setTimeout(resolve, 1_850));
    expect(await source!.getToken()).toBe('token-2');
  });
});
