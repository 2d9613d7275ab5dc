import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestGate } from '../../../src/dashboard/request-gate.js';

/*
 * The gate in front of the dashboard's costly routes: two at once, two more waiting, the rest 503
 * with Retry-After; a route outside it answers meanwhile, and a freed place goes to who waited.
 */

describe('RequestGate, on a real HTTP server', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  /**
   * Serves `/costly` behind `gate` (beside the routes `app` has already): each request that gets
   * through waits in `held` until the test answers it; `most()` is the most held at once.
   */
  async function serveBehind(gate: RequestGate, app = express()) {
    const held: (() => void)[] = [];
    let most = 0;
    app.get('/costly', gate.handler, (_req, res) => {
      held.push(() => res.json({ ok: true }));
      most = Math.max(most, held.length);
    });
    server = createServer(app);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, held, most: () => most };
  }

  it('lets two through, queues two, refuses the rest with Retry-After, and keeps other routes answered', async () => {
    const gate = new RequestGate({ concurrent: 2, waiting: 2, maxWaitMs: 60_000, retryAfterSeconds: 3 });
    const app = express();
    app.get('/cheap', (_req, res) => {
      res.json({ cheap: true });
    });
    const { url, held, most } = await serveBehind(gate, app);

    const answers = [fetch(`${url}/costly`), fetch(`${url}/costly`)];
    await expect.poll(() => held.length).toBe(2);
    answers.push(fetch(`${url}/costly`), fetch(`${url}/costly`));
    await expect.poll(() => gate.waiting).toBe(2);
    answers.push(fetch(`${url}/costly`), fetch(`${url}/costly`));
    const refused = await Promise.all(answers.slice(4));
    for (const response of refused) {
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('3');
      expect(((await response.json()) as { error: string }).error).toMatch(/^the dashboard is busy with 4 other requests of this kind; try again in 3 s$/);
    }
    expect(held).toHaveLength(2);
    expect((await fetch(`${url}/cheap`)).status).toBe(200);

    // Each answer lets one who waited in, never more than two at once.
    held.shift()!();
    await expect.poll(() => held.length).toBe(2);
    held.shift()!();
    held.shift()!();
    await expect.poll(() => held.length).toBe(1);
    held.shift()!();
    const served = await Promise.all(answers.slice(0, 4));
    expect(served.map((response) => response.status)).toEqual([200, 200, 200, 200]);
    expect(most()).toBe(2);
  });

  it('gives the place of a client that left while waiting to the next', async () => {
    const gate = new RequestGate({ concurrent: 1, waiting: 1, maxWaitMs: 60_000, retryAfterSeconds: 1 });
    const { url, held } = await serveBehind(gate);

    const first = fetch(`${url}/costly`);
    await expect.poll(() => held.length).toBe(1);
    const leaving = new AbortController();
    const gone = fetch(`${url}/costly`, { signal: leaving.signal }).catch((error: unknown) => error);
    await expect.poll(() => gate.waiting).toBe(1);
    leaving.abort();
    expect(await gone).toBeInstanceOf(Error);
    // The waiting place is free again: the next is queued, not refused.
    await expect.poll(() => gate.waiting).toBe(0);
    const next = fetch(`${url}/costly`);
    held.shift()!();
    expect((await first).status).toBe(200);
    await expect.poll(() => held.length).toBe(1);
    held.shift()!();
    expect((await next).status).toBe(200);
  });

  it('answers 503 to a request that waited its longest, so no answer waits behind a long queue', async () => {
    const gate = new RequestGate({ concurrent: 1, waiting: 5, maxWaitMs: 300, retryAfterSeconds: 2 });
    const { url, held } = await serveBehind(gate);

    const first = fetch(`${url}/costly`);
    await expect.poll(() => held.length).toBe(1);
    const started = performance.now();
    const waited = await fetch(`${url}/costly`);
    expect(waited.status).toBe(503);
    expect(waited.headers.get('retry-after')).toBe('2');
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    expect(gate.waiting).toBe(0);
    held.shift()!();
    expect((await first).status).toBe(200);
  });
});
