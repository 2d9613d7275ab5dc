import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisRateGate } from '../../../src/queue/redis-rate-gate.js';
import { TEST_REDIS_URL, testPrefix } from '../../helpers/test-redis.js';

describe('RedisRateGate', () => {
  const scope = testPrefix();
  let redis: Redis;

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    redis.disconnect();
    await scope.cleanup();
  });

  it('admits at most max requests in any window, across gates sharing the prefix', async () => {
    const gates = [0, 1].map(() => new RedisRateGate({ redis, prefix: `${scope.prefix}:a`, max: 3, windowMs: 300 }));
    const admitted: number[] = [];
    await Promise.all(
      Array.from({ length: 9 }, async (_, i) => {
        const permit = await gates[i % 2]!.acquire();
        admitted.push(Date.now());
        await permit.answered();
      }),
    );
    admitted.sort((a, b) => a - b);
    for (const start of admitted) expect(admitted.filter((t) => t >= start && t < start + 300).length).toBeLessThanOrEqual(3);
    // Nine requests at three per 300 ms cannot all pass in under two windows.
    expect(admitted.at(-1)! - admitted[0]!).toBeGreaterThanOrEqual(600);
  });

  it('counts a request’s window from its answer, so a sender delayed after admission cannot crowd the next window', async () => {
    const gate = new RedisRateGate({ redis, prefix: `${scope.prefix}:b`, max: 1, windowMs: 300 });
    const first = await gate.acquire();
    // The first request is slow to go out: it is answered 200 ms after its admission.
    await sleep(200);
    await first.answered();
    const answeredAt = Date.now();
    await gate.acquire();
    // From admission alone the second would pass about 300 ms after the first's admission (100 ms after
    // the answer); counted from the answer, it waits the whole window after it.
    expect(Date.now() - answeredAt).toBeGreaterThanOrEqual(280);
  });
});
