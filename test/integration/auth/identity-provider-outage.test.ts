import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutageWait } from '../../../src/auth/issue-through-outage.js';
import { RedisTokenSource } from '../../../src/auth/redis-token-source.js';
import { TokenRefresher } from '../../../src/auth/token-refresher.js';
import type { IssuedToken } from '../../../src/auth/token-source.js';
import { AuthError } from '../../../src/errors/sync-error.js';
import { TEST_REDIS_URL, testPrefix } from '../../helpers/test-redis.js';

/** A token endpoint that is unavailable until `downForMs` has passed since the first request. */
function provider(downForMs: number, options: { retryAfterMs?: number; afterwards?: 'token' | 'reject' } = {}) {
  const asked: number[] = [];
  const issue = async (): Promise<IssuedToken> => {
    asked.push(Date.now());
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (Date.now() - asked[0]! < downForMs) {
      throw new AuthError('AUTH_UNAVAILABLE', 'identity provider at http://idp answered 503', { retryAfterMs: options.retryAfterMs });
    }
    if (options.afterwards === 'reject') throw new AuthError('AUTH_REJECTED', 'identity provider refused the password grant: invalid_grant');
    return { accessToken: `token-${asked.length}`, expiresInSeconds: 60 };
  };
  return { issue, asked };
}

const QUICK = { unavailableBaseDelayMs: 50, unavailableMaxDelayMs: 200 };

describe('TokenRefresher while the identity provider is down', () => {
  it('lets 32 callers wait on one renewal that asks with backoff, then gives them all the token', async () => {
    const idp = provider(400);
    const waits: OutageWait[] = [];
    const refresher = new TokenRefresher({ issue: idp.issue, unavailableWaitMs: 5_000, ...QUICK, onUnavailable: (wait) => waits.push(wait) });
    const tokens = await Promise.all(Array.from({ length: 32 }, () => refresher.getToken()));
    expect(new Set(tokens).size).toBe(1);
    // 400 ms of outage at 25 to 200 ms between asks: a handful of requests, not 32 per step.
    expect(idp.asked.length).toBeGreaterThanOrEqual(3);
    expect(idp.asked.length).toBeLessThanOrEqual(12);
    expect(waits).toHaveLength(idp.asked.length - 1);
    expect(waits.every((wait) => wait.code === 'AUTH_UNAVAILABLE' && wait.delayMs <= 200)).toBe(true);
    // The gaps grow (exponential backoff), capped by the maximum.
    for (let i = 1; i < idp.asked.length; i += 1) expect(idp.asked[i]! - idp.asked[i - 1]!).toBeLessThan(400);
  });

  it('gives up after unavailableWaitMs with AUTH_UNAVAILABLE naming the setting, then fails at once without asking until the next backoff step', async () => {
    const idp = provider(60_000);
    const refresher = new TokenRefresher({ issue: idp.issue, unavailableWaitMs: 300, unavailableBaseDelayMs: 50, unavailableMaxDelayMs: 2_000 });
    const startedAt = Date.now();
    const error = (await refresher.getToken().catch((e: unknown) => e)) as AuthError;
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(290);
    expect(error.code).toBe('AUTH_UNAVAILABLE');
    expect(error.message).toMatch(/identity provider unavailable for [\d.]+ s, longer than token\.unavailableWaitMs \(0\.3 s\); last answer: .*answered 503/);
    const asked = idp.asked.length;
    // Slices retrying now fail at once: the provider is not asked once per attempt.
    const again = (await Promise.all(Array.from({ length: 20 }, () => refresher.getToken().catch((e: unknown) => e)))) as AuthError[];
    expect(again.every((e) => e.code === 'AUTH_UNAVAILABLE')).toBe(true);
    expect(idp.asked.length).toBe(asked);
  });

  it('stops at once on refused credentials, even during an outage', async () => {
    const idp = provider(150, { afterwards: 'reject' });
    const refresher = new TokenRefresher({ issue: idp.issue, unavailableWaitMs: 5_000, ...QUICK });
    const error = (await refresher.getToken().catch((e: unknown) => e)) as AuthError;
    expect(error.code).toBe('AUTH_REJECTED');
    expect(error.fatal).toBe(true);
  });

  it("honours the provider's Retry-After, within the backoff's ceiling", async () => {
    const idp = provider(100, { retryAfterMs: 150 });
    const refresher = new TokenRefresher({ issue: idp.issue, unavailableWaitMs: 5_000, unavailableBaseDelayMs: 10, unavailableMaxDelayMs: 1_000 });
    await refresher.getToken();
    expect(idp.asked).toHaveLength(2);
    expect(idp.asked[1]! - idp.asked[0]!).toBeGreaterThanOrEqual(145);
  });

  it('counts a request that hung until its deadline from when it was sent, so the wait stays within unavailableWaitMs', async () => {
    const asked: number[] = [];
    const refresher = new TokenRefresher({
      issue: async () => {
        asked.push(Date.now());
        await new Promise((resolve) => setTimeout(resolve, 300)); // token.requestTimeoutMs running out
        throw new AuthError('AUTH_UNAVAILABLE', 'identity provider at http://idp did not finish answering within token.requestTimeoutMs (0.3 s)');
      },
      unavailableWaitMs: 400,
      unavailableBaseDelayMs: 50,
      unavailableMaxDelayMs: 50,
    });
    const startedAt = Date.now();
    await expect(refresher.getToken()).rejects.toMatchObject({ code: 'AUTH_UNAVAILABLE' });
    // Asked at 0 and about 0.35 s; the second answer (0.65 s) is past 0.4 s since the first ask.
    // Counted from the first answer instead, it would ask a third time and end at about 1 s.
    expect(Date.now() - startedAt).toBeLessThan(850);
    expect(asked).toHaveLength(2);
  });

  it('with unavailableWaitMs 0, fails at the first unavailable answer', async () => {
    const idp = provider(60_000);
    const refresher = new TokenRefresher({ issue: idp.issue, unavailableWaitMs: 0 });
    await expect(refresher.getToken()).rejects.toMatchObject({ code: 'AUTH_UNAVAILABLE' });
    expect(idp.asked).toHaveLength(1);
  });
});

describe('RedisTokenSource while the identity provider is down', () => {
  const scope = testPrefix();
  const connections: Redis[] = [];
  afterEach(async () => {
    for (const redis of connections.splice(0)) redis.disconnect();
    await scope.cleanup();
  });

  function fleet(count: number, issue: () => Promise<IssuedToken>, options: { unavailableWaitMs: number; lockTimeoutMs?: number }) {
    return Array.from({ length: count }, () => {
      const redis = new Redis(TEST_REDIS_URL);
      connections.push(redis);
      return new RedisTokenSource({ redis, prefix: scope.prefix, issue, ...QUICK, ...options });
    });
  }

  it('3 processes × 8 jobs wait on the lock holder, which keeps its lock alive past lockTimeoutMs, and the provider is asked once per step', async () => {
    const idp = provider(600);
    // The outage outlasts the renewal lock: the holder must extend it, or the others would take over and ask too.
    const sources = fleet(3, idp.issue, { unavailableWaitMs: 5_000, lockTimeoutMs: 150 });
    const tokens = await Promise.all(sources.flatMap((source) => Array.from({ length: 8 }, () => source.getToken())));
    expect(new Set(tokens).size).toBe(1);
    expect(idp.asked.length).toBeGreaterThanOrEqual(4);
    expect(idp.asked.length).toBeLessThanOrEqual(14);
    // Never two asks at once: one holder at a time.
    for (let i = 1; i < idp.asked.length; i += 1) expect(idp.asked[i]! - idp.asked[i - 1]!).toBeGreaterThanOrEqual(20);
    const outageKey = await connections[0]!.exists(`${scope.prefix}:token:provider-outage`);
    expect(outageKey).toBe(0);
  });

  it('gives up fleet-wide after unavailableWaitMs: other processes then fail at once, without asking', async () => {
    const idp = provider(60_000);
    const [first, second, third] = fleet(3, idp.issue, { unavailableWaitMs: 300 });
    const results = (await Promise.all([first!, second!].flatMap((source) => Array.from({ length: 4 }, () => source.getToken().catch((e: unknown) => e))))) as AuthError[];
    expect(results.every((error) => error.code === 'AUTH_UNAVAILABLE' && /token\.unavailableWaitMs/.test(error.message))).toBe(true);
    const asked = idp.asked.length;
    expect(asked).toBeLessThanOrEqual(10);
    // A third process learns of the outage from Redis and does not start a wait of its own.
    const startedAt = Date.now();
    await expect(third!.getToken()).rejects.toMatchObject({ code: 'AUTH_UNAVAILABLE' });
    expect(Date.now() - startedAt).toBeLessThan(250);
    expect(idp.asked.length).toBeLessThanOrEqual(asked + 1);
  });
});
