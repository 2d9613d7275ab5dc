import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { ExportClient } from '../../../src/gateway/export-client.js';
import { RedisRateGate } from '../../../src/queue/redis-rate-gate.js';
import type { Slice } from '../../../src/slice/slice.js';
import { busiestWindow } from '../../bench/request-rate.js';
import { startHttpServer } from '../../helpers/http-server.js';
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

  it('counts a request’s window from its end when the service never answered, so a sender delayed after admission cannot crowd the next window', async () => {
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

  it('counts a request’s window from its answer less the fastest round trip this process has had, never from before its admission', async () => {
    // Trusting the first answer: the start-up guard has a test of its own below.
    const gate = new RedisRateGate({ redis, prefix: `${scope.prefix}:c`, max: 1, windowMs: 300, answersBeforeBackdating: 1 });
    // The ordinary case: the service takes 100 ms to answer. The request surely arrived 100 ms before its answer.
    const first = await gate.acquire();
    await sleep(150);
    await first.answered({ roundTripMs: 100 });
    let answeredAt = Date.now();
    await gate.acquire().then((permit) => permit.answered({ roundTripMs: 100 }));
    const waited = Date.now() - answeredAt;
    // The window (300 ms and its 30 ms slack) counted from 100 ms before the answer, not from the answer.
    expect(waited).toBeGreaterThanOrEqual(200);
    expect(waited).toBeLessThan(300);
    // A slow answer after it is backdated only by the fastest round trip yet (100 ms), not by its own 250.
    const slow = await gate.acquire();
    await sleep(250);
    await slow.answered({ roundTripMs: 250 });
    answeredAt = Date.now();
    await gate.acquire();
    expect(Date.now() - answeredAt).toBeGreaterThanOrEqual(200);
  });

  it('counts windows from the answer itself until the process has had 100 answers, then from the fastest round trip before it', async () => {
    const prefix = `${scope.prefix}:e`;
    const gate = new RedisRateGate({ redis, prefix, max: 1_000, windowMs: 60_000, answersBeforeBackdating: 100 });
    // How far before Redis's now the newest stamp in the log lies.
    const newestStampAge = async () => {
      const [, newest] = await redis.zrange(`${prefix}:rate-limit:export-requests`, -1, -1, 'WITHSCORES');
      const [seconds, micros] = await redis.time();
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - Number(newest);
    };
    // The first answers of a process are slow (500 ms); none is backdated by its own round trip.
    for (let i = 0; i < 99; i += 1) await (await gate.acquire()).answered({ roundTripMs: 500 });
    expect(await newestStampAge()).toBeLessThan(50);
    await (await gate.acquire()).answered({ roundTripMs: 400 });
    // The hundredth: its window counts from the fastest round trip yet (400 ms) before its answer, and
    // never from before its admission, which was moments ago: so from its admission.
    expect(await newestStampAge()).toBeLessThan(50);
    const permit = await gate.acquire();
    await sleep(450);
    await permit.answered({ roundTripMs: 450 });
    const age = await newestStampAge();
    expect(age).toBeGreaterThanOrEqual(400);
    expect(age).toBeLessThan(450);
  });

  /**
   * Awkward but legal services: each counts a request only after a queue of 0–80 ms. The first
   * answers 300 ms later; the second answers every third request at once (an empty day, say),
   * which leaves the gate no time it may take off an answer; both with backdating asked for. The
   * third queues every request 60–140 ms, longer than the window's slack, which backdating would
   * let crowd a window (11 at a limit of 10): the gate as the product makes it, counting from
   * each answer, keeps it within the limit.
   */
  it.each([
    { service: 'answers after 300 ms', quickEvery: 0, within: 5_800, queueMs: 0, answersBeforeBackdating: 10 },
    { service: 'answers every third request at once', quickEvery: 3, within: 8_000, queueMs: 0, answersBeforeBackdating: 10 },
    { service: 'queues every request 60 ms before it counts it', quickEvery: 0, within: 9_000, queueMs: 60, answersBeforeBackdating: undefined },
  ])('keeps a service that stamps arrivals late and $service within the limit in every window of its own', async ({ quickEvery, within, queueMs, answersBeforeBackdating }) => {
    const max = 10;
    const windowMs = 500;
    const arrivals: number[] = [];
    let served = 0;
    const server = await startHttpServer((_req, res) => {
      served += 1;
      const quick = quickEvery > 0 && served % quickEvery === 0;
      setTimeout(
        () => {
          arrivals.push(Date.now());
          setTimeout(() => res.writeHead(200).end(), quick ? 0 : 300);
        },
        queueMs + Math.random() * 80,
      );
    });
    const agent = new Agent({ connections: 16 });
    try {
      const client = new ExportClient({
        baseUrl: new URL(server.url),
        tenantId: 'tenant-9',
        tokens: { getToken: async () => 'tok-1', renewAfterRejection: async (rejected) => rejected },
        // Where asked for, the start-up guard lowered, so that these 80 requests show backdating in its steady state.
        gate: new RedisRateGate({ redis, prefix: `${scope.prefix}:d${quickEvery}-${queueMs}`, max, windowMs, answersBeforeBackdating }),
        dispatcher: agent,
        maxDownloadBytes: 1 << 20,
        spoolMemoryBytes: 16,
      });
      const slice: Slice = { portfolioId: 42, reportType: 'index', reportDate: '2024-03-01' };
      const senders = Array.from({ length: 16 }, async () => {
        for (let i = 0; i < 5; i += 1) expect(await client.download(slice, 'json')).toEqual({ kind: 'no_data' });
      });
      await Promise.all(senders);
    } finally {
      await agent.close();
      await server.close();
    }
    expect(arrivals).toHaveLength(80);
    expect(busiestWindow(arrivals, windowMs)).toBeLessThanOrEqual(max);
    // 80 requests at 10 per 500 ms (and the 30 ms slack), each counted 0–80 ms after it was sent:
    // counted from each answer, 7 × (530 + 300 + 40) ms = 6.1 s (6.5 s after a 60 ms queue);
    // counted from when the fastest answer says the service surely had it, 7 × (530 + 40) ms = 4.0 s.
    expect(arrivals.at(-1)! - arrivals[0]!).toBeLessThan(within);
  });
});
