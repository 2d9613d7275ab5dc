import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RedisTokenSource } from '../../../src/auth/redis-token-source.js';
import type { IssuedToken } from '../../../src/auth/token-source.js';
import { TEST_REDIS_URL, testPrefix } from '../../helpers/test-redis.js';
import { until } from '../../helpers/until.js';

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
  function processes(count: number, issueToken: () => Promise<IssuedToken> = issue): RedisTokenSource[] {
    return Array.from({ length: count }, () => {
      const redis = new Redis(TEST_REDIS_URL);
      connections.push(redis);
      return new RedisTokenSource({ redis, prefix: scope.prefix, issue: issueToken });
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

  it('hands back a token refused right after a 401 asked for it (configuration), asking for no token per slice, then about one per lifetime', async () => {
    const fleet = processes(2);
    // A gateway refusing every token: each of 200 slices gets a token and reports it refused.
    const burst = () =>
      Promise.all(
        fleet.flatMap((source) =>
          Array.from({ length: 100 }, async () => {
            const token = await source.getToken();
            return { token, answer: await source.renewAfterRejection(token) };
          }),
        ),
      );
    const startedAt = Date.now();
    const first = await burst();
    // token-1 was refused: one renewal for the fleet, and every caller retries with token-2.
    expect(new Set(first.map(({ answer }) => answer))).toEqual(new Set(['token-2']));
    // token-2 refused too, while fresh (the first half of its 2 s): handed back, no grant.
    for (let i = 0; i < 3; i += 1) {
      const again = await burst();
      expect(again.every(({ token, answer }) => token === 'token-2' && answer === 'token-2')).toBe(true);
    }
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    expect(issued).toBe(2);
    // Once token-2 is due (its key gone), its renewal is refused at once, and one more 401 renews it; that one is fresh.
    await until(async () => (await connections[0]!.exists(`${scope.prefix}:token:access`)) === 0, 3_000, 'token-2 to be due', 10);
    const later = await burst();
    expect(new Set(later.map(({ answer }) => answer))).toEqual(new Set(['token-4']));
    expect(issued).toBe(4);
  });

  it.each([2, 3])('renews a %i s token before its stated lifetime runs out, about once per lifetime for the fleet', async (seconds) => {
    const askedAt = new Map<string, number>();
    const fleet = processes(3, async () => {
      issued += 1;
      const token = `token-${issued}`;
      askedAt.set(token, Date.now());
      await new Promise((resolve) => setTimeout(resolve, 30));
      return { accessToken: token, expiresInSeconds: seconds };
    });
    // Three processes asking every 20 ms for two lifetimes and a half.
    const startedAt = Date.now();
    const handedOut: { token: string; at: number }[] = [];
    await Promise.all(
      fleet.map(async (source) => {
        while (Date.now() - startedAt < 2.5 * seconds * 1000) {
          const token = await source.getToken();
          handedOut.push({ token, at: Date.now() });
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }),
    );
    // No token handed out once its lifetime (counted from its ask) was over.
    for (const { token, at } of handedOut) expect(at - askedAt.get(token)!).toBeLessThan(seconds * 1000);
    // Renewed a little before each lifetime ends: the first token, then one per lifetime at most.
    expect(issued).toBeGreaterThanOrEqual(2);
    expect(issued).toBeLessThanOrEqual(3);
  });

  it.each([0.001, 0])('keeps a token whose expires_in is %d for 1 s less the margin (10 ms), not a few milliseconds', async (expiresInSeconds) => {
    const [source] = processes(1, async () => {
      issued += 1;
      return { accessToken: `token-${issued}`, expiresInSeconds };
    });
    await source!.getToken();
    const ttl = await connections[0]!.pttl(`${scope.prefix}:token:access`);
    expect(ttl).toBeGreaterThan(890);
    expect(ttl).toBeLessThanOrEqual(990);
    const startedAt = Date.now();
    while (Date.now() - startedAt < 1_500) {
      await source!.getToken();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(issued).toBeLessThanOrEqual(3);
  });

  it('keeps a normal 300 s token for 270 s, and renews it on its first 401 (revoked)', async () => {
    const fleet = processes(2, async () => {
      issued += 1;
      return { accessToken: `token-${issued}`, expiresInSeconds: 300 };
    });
    const first = await fleet[0]!.getToken();
    const ttl = await connections[0]!.pttl(`${scope.prefix}:token:access`);
    expect(ttl).toBeGreaterThan(269_000);
    expect(ttl).toBeLessThanOrEqual(270_000);
    expect(await fleet[1]!.renewAfterRejection(first)).toBe('token-2');
    // The other process still hands out token-1 within its hold; its own 401 finds the fleet's token-2, asking for none.
    expect(await fleet[0]!.getToken()).toBe('token-1');
    expect(await fleet[0]!.renewAfterRejection('token-1')).toBe('token-2');
    expect(await fleet[0]!.getToken()).toBe('token-2');
    expect(issued).toBe(2);
  });

  it('reads the fleet token from Redis about once a second per process, however many downloads ask', async () => {
    const reads: number[] = [0, 0];
    const fleet = [0, 1].map((index) => {
      const redis = new Redis(TEST_REDIS_URL);
      connections.push(redis);
      // Counts this process's reads of the token key (the real client underneath).
      const counted = new Proxy(redis, {
        get: (target, property, receiver) => {
          const value = Reflect.get(target, property, receiver) as unknown;
          if (property !== 'eval' && property !== 'get') return typeof value === 'function' ? value.bind(target) : value;
          return (...args: unknown[]) => {
            if (args.includes(`${scope.prefix}:token:access`)) reads[index]! += 1;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      return new RedisTokenSource({ redis: counted, prefix: scope.prefix, issue: async () => ({ accessToken: `token-${(issued += 1)}`, expiresInSeconds: 300 }) });
    });
    const startedAt = Date.now();
    let handedOut = 0;
    await Promise.all(
      fleet.map(async (source) => {
        while (Date.now() - startedAt < 2_500) {
          await Promise.all(Array.from({ length: 16 }, () => source.getToken()));
          handedOut += 16;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }),
    );
    expect(issued).toBe(1);
    expect(handedOut).toBeGreaterThan(1_000);
    // 2.5 s: the first read (and the renewal's two for the one that asked), then one a second.
    for (const count of reads) expect(count).toBeLessThanOrEqual(6);
  });

  it('renews a token refused once its stated lifetime has passed, even one a 401 asked for: that 401 is its expiry', async () => {
    const [a, b] = processes(2);
    // token-1 revoked at once: token-2 is asked for because of a 401.
    expect(await a!.renewAfterRejection(await a!.getToken())).toBe('token-2');
    expect(await b!.renewAfterRejection('token-2')).toBe('token-2');
    // A request sent with token-2 just before it was due, answered after: renewed, never called configuration.
    await until(async () => (await connections[0]!.exists(`${scope.prefix}:token:access`)) === 0, 3_000, 'token-2 to be due', 10);
    expect(await b!.renewAfterRejection('token-2')).toBe('token-3');
    // The fleet had replaced it: another late 401 to token-2 asks for nothing.
    expect(await a!.renewAfterRejection('token-2')).toBe('token-3');
    expect(issued).toBe(3);
  });

  it('renews a token a 401 asked for when it is refused after its first half-life: not fresh any more', async () => {
    const [source] = processes(1);
    expect(await source!.renewAfterRejection(await source!.getToken())).toBe('token-2');
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    expect(await source!.renewAfterRejection('token-2')).toBe('token-3');
    // token-3 was asked for because of that 401: refused at once, it is fresh.
    expect(await source!.renewAfterRejection('token-3')).toBe('token-3');
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
    // 2 s lifetime less a 40 ms margin (a tenth, shrunk in proportion under 10 s).
    expect(ttl).toBeGreaterThan(1_760);
    expect(ttl).toBeLessThanOrEqual(1_960);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await source!.getToken()).toBe('token-2');
  });
});
