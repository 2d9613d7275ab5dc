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

  it('counts a request’s window from its send, so a sender delayed after admission cannot crowd the next window', async () => {
    const gate = new RedisRateGate({ redis, prefix: `${scope.prefix}:b`, max: 1, windowMs: 300 });
    const first = await gate.acquire();
    // The first request is slow to go out: it is sent 200 ms after its admission.
    await sleep(200);
    first.sending();
    const sentAt = Date.now();
    await first.answered();
    await gate.acquire();
    // From admission alone the second would pass about 300 ms after the first's admission (100 ms after
    // the send); counted from the send, it waits the whole window after it.
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(280);
  });

  it('does not count the service’s time to answer: the next request passes a window after the send, not after the answer', async () => {
    const gate = new RedisRateGate({ redis, prefix: `${scope.prefix}:c`, max: 1, windowMs: 300 });
    const first = await gate.acquire();
    first.sending();
    const sentAt = Date.now();
    // The service takes 200 ms to answer.
    await sleep(200);
    await first.answered();
    const answeredAt = Date.now();
    await gate.acquire();
    const passedAt = Date.now();
    expect(passedAt - sentAt).toBeGreaterThanOrEqual(280);
    // Counted from the answer it would wait until 300 ms after it; from the send, about 130 ms after
    // it (the window, its arrival slack, less the 200 ms the service took).
    expect(passedAt - answeredAt).toBeLessThan(250);
  });

  it('counts from the answer a request that never said it was sent', async () => {
    const gate = new RedisRateGate({ redis, prefix: `${scope.prefix}:d`, max: 1, windowMs: 300 });
    const first = await gate.acquire();
    await sleep(200);
    await first.answered();
    const answeredAt = Date.now();
    await gate.acquire();
    expect(Date.now() - answeredAt).toBeGreaterThanOrEqual(280);
  });
});
