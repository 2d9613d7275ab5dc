import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { ExportClient } from '../../../src/gateway/export-client.js';
import { RedisRateGate, type RedisRateGateOptions } from '../../../src/queue/redis-rate-gate.js';
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

  /** A gate on the test's prefix plus `name`, as a worker's would be; gates of one name share a window. */
  const gateOn = (name: string, options: Omit<RedisRateGateOptions, 'redis' | 'prefix'> & { redis?: Redis }) =>
    new RedisRateGate({ redis, prefix: `${scope.prefix}:${name}`, ...options });
  /** Two workers' gates sharing one window. */
  const twoGatesOn = (name: string, options: Omit<RedisRateGateOptions, 'redis' | 'prefix'>) => [gateOn(name, options), gateOn(name, options)] as const;

  it('admits at most max requests in any window, across gates sharing the prefix', async () => {
    const gates = twoGatesOn('a', { max: 3, windowMs: 300, requestTimeoutMs: 10_000 });
    const admitted: number[] = [];
    await Promise.all(
      Array.from({ length: 9 }, async (_, i) => {
        const permit = await gates[i % 2]!.acquire();
        admitted.push(Date.now());
        await permit.sending();
        await permit.answered();
      }),
    );
    admitted.sort((a, b) => a - b);
    for (const start of admitted) expect(admitted.filter((t) => t >= start && t < start + 300).length).toBeLessThanOrEqual(3);
    // Nine requests at three per 300 ms cannot all pass in under two windows.
    expect(admitted.at(-1)! - admitted[0]!).toBeGreaterThanOrEqual(600);
  });

  it('counts a request’s window from its answer, so a sender delayed after admission cannot crowd the next window', async () => {
    const gate = gateOn('b', { max: 1, windowMs: 300, requestTimeoutMs: 10_000 });
    const first = await gate.acquire();
    // The first request is slow to go out: it is answered 200 ms after its admission.
    await sleep(200);
    await first.sending();
    // Taken before the answer is stamped in Redis, so a late turn of the event loop cannot shorten the wait measured.
    const answeredAt = Date.now();
    await first.answered();
    await gate.acquire();
    // From admission alone the second would pass about 300 ms after the first's admission (100 ms after
    // the answer); counted from the answer, it waits the whole window after it.
    expect(Date.now() - answeredAt).toBeGreaterThanOrEqual(280);
  });

  it('holds the place of a request in flight longer than the window until its answer, then a window more', async () => {
    const gates = twoGatesOn('e', { max: 1, windowMs: 200, requestTimeoutMs: 10_000 });
    const slow = await gates[0].acquire();
    await slow.sending();
    // The service may count the request as late as its answer, 400 ms on: nothing else may pass meanwhile.
    const next = gates[1].acquire().then(() => Date.now());
    await sleep(400);
    const answeredAt = Date.now();
    await slow.answered();
    expect((await next) - answeredAt).toBeGreaterThanOrEqual(180);
  });

  it('frees the place of a request never answered (its worker died) once its lease runs out', async () => {
    // The lease: 100 ms to send, then 300 ms for the request; the place is free a window after it.
    const gates = twoGatesOn('f', { max: 1, windowMs: 200, requestTimeoutMs: 300, sendWithinMs: 100 });
    const startedAt = Date.now();
    await (await gates[0].acquire()).sending();
    await gates[1].acquire();
    const waitedMs = Date.now() - startedAt;
    expect(waitedMs).toBeGreaterThanOrEqual(550);
    expect(waitedMs).toBeLessThan(2_000);
  });

  it('admits a request again when it is sent long after its admission, so its place holds through the request', async () => {
    const key = `${scope.prefix}:g:rate-limit:export-requests`;
    const gates = twoGatesOn('g', { max: 1, windowMs: 200, requestTimeoutMs: 300, sendWithinMs: 100 });
    const scoreOfTheOne = async () => Number((await redis.zrange(key, 0, -1, 'WITHSCORES'))[1]);
    // The ordinary case: a request sent at once keeps its admission.
    const prompt = await gates[0].acquire();
    const admitted = await scoreOfTheOne();
    expect(await prompt.sending()).toBe(false);
    expect(await scoreOfTheOne()).toBe(admitted);
    await prompt.answered();
    await sleep(250);

    // A long wait for a token: sent 350 ms after its admission, when its first lease (400 ms) nearly ran out.
    const late = await gates[0].acquire();
    await sleep(350);
    expect(await late.sending()).toBe(true);
    const next = gates[1].acquire().then(() => Date.now());
    await sleep(350);
    const answeredAt = Date.now();
    await late.answered();
    // Without the second admission the late request's place would have been free 600 ms after its first.
    expect((await next) - answeredAt).toBeGreaterThanOrEqual(180);
  });

  it('counts a request answered after its lease ran out again from its answer', async () => {
    const gates = twoGatesOn('c', { max: 2, windowMs: 200, requestTimeoutMs: 100, sendWithinMs: 50 });
    // A slow request: admitted, then answered 450 ms later, after its lease and the window after it.
    const slow = await gates[0].acquire();
    await slow.sending();
    await sleep(400);
    // Another worker's request is admitted meanwhile (the slow one's place has run out) and answered at once.
    const other = await gates[1].acquire();
    await other.sending();
    const otherAnsweredAt = Date.now();
    await other.answered();
    await sleep(50);
    await slow.answered();
    // The service may have counted the slow request as late as its answer: with both in the window,
    // a third waits for the older of the two, a window after its answer, where it would have passed at once.
    await gates[1].acquire();
    expect(Date.now() - otherAnsweredAt).toBeGreaterThanOrEqual(180);
  });

  it('asks Redis about once per request admitted however many wait in one process, and admits them as fast as the window allows', async () => {
    let asked = 0;
    const counting = { eval: (...args: Parameters<Redis['eval']>) => ((asked += 1), redis.eval(...args)) } as unknown as Redis;
    const gate = gateOn('g', { redis: counting, max: 5, windowMs: 200, requestTimeoutMs: 10_000 });
    const admitted: number[] = [];
    const startedAt = Date.now();
    await Promise.all(
      Array.from({ length: 40 }, async () => {
        const permit = await gate.acquire();
        admitted.push(Date.now());
        await permit.answered();
      }),
    );
    // The ordinary case the line must not slow: 40 requests at 5 per 200 ms are 8 windows, each
    // place held from its admission to a window after its answer.
    expect(Date.now() - startedAt).toBeLessThan(2_600);
    admitted.sort((a, b) => a - b);
    for (const start of admitted) expect(admitted.filter((t) => t >= start && t < start + 200).length).toBeLessThanOrEqual(5);
    // Each admission and answer asks once; a waiter asks again only when a place it was told of was taken first.
    // The gate before the line, where every waiter asked at every freed place, made 5.5 calls a request here.
    expect(asked / admitted.length, `${asked} calls to Redis for ${admitted.length} requests`).toBeLessThan(4);
  });

  /**
   * Awkward but legal services: each counts a request only after a queue of 0–80 ms. The first
   * answers 300 ms later; the second answers every third request at once (an empty day, say); the
   * third queues every request 60–140 ms before it counts it (a proxy, a load balancer); the fourth
   * queues it longer than the window (a busy service, or a sender stalled as long) and answers at once.
   * Each must be done within its bound: 80 requests at 10 per 500 ms, each place held from its
   * admission to a window after its answer, take about 7 such cycles from the first request to the
   * last (7 × 900 ms for the first three). Much longer would mean the gate held requests it had room for.
   */
  it.each([
    { service: 'answers after 300 ms', quickEvery: 0, queueMs: 0, withinMs: 9_000 },
    { service: 'answers every third request at once', quickEvery: 3, queueMs: 0, withinMs: 9_000 },
    { service: 'queues every request 60 ms before it counts it', quickEvery: 0, queueMs: 60, withinMs: 9_000 },
    { service: 'queues every request longer than the window before it counts it', quickEvery: 1, queueMs: 520, withinMs: 12_000 },
  ])('keeps a service that stamps arrivals late and $service within the limit in every window of its own', async ({ quickEvery, queueMs, withinMs }) => {
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
        gate: gateOn(`d${quickEvery}-${queueMs}`, { max, windowMs, requestTimeoutMs: 10_000 }),
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
    expect(arrivals.at(-1)! - arrivals[0]!).toBeLessThan(withinMs);
  });
});
