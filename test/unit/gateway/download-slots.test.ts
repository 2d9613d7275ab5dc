import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { DownloadSlots } from '../../../src/gateway/download-slots.js';

/** Whether the promise has settled by the time the pending callbacks have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('DownloadSlots', () => {
  it('admits as many as it has at once, without waiting', async () => {
    const slots = new DownloadSlots(3);
    const taken = [slots.acquire(), slots.acquire(), slots.acquire()];
    for (const slot of taken) expect(await settled(slot)).toBe(true);
    expect(await settled(slots.acquire())).toBe(false);
  });

  it('hands a released slot to the longest waiter, first come first served', async () => {
    const slots = new DownloadSlots(1);
    const release = await slots.acquire();
    const order: string[] = [];
    const first = slots.acquire().then((next) => (order.push('first'), next));
    const second = slots.acquire().then((next) => (order.push('second'), next));
    release();
    (await first)();
    (await second)();
    expect(order).toEqual(['first', 'second']);
  });

  it('gives a slot back once however often it is released', async () => {
    const slots = new DownloadSlots(1);
    const release = await slots.acquire();
    release();
    release();
    await slots.acquire();
    expect(await settled(slots.acquire())).toBe(false);
  });

  it('ends every wait on abort with its reason, holding nothing, and refuses waits after it', async () => {
    const shutdown = new AbortController();
    const slots = new DownloadSlots(1, { signal: shutdown.signal });
    const release = await slots.acquire();
    const waits = [slots.acquire(), slots.acquire()];
    shutdown.abort(new Error('shutting down'));
    for (const wait of waits) await expect(wait).rejects.toThrow('shutting down');
    release();
    await expect(slots.acquire()).rejects.toThrow('shutting down');
  });

  it('listens to its signal once however many wait, so a worker holding dozens of jobs trips no leak warning', async () => {
    const shutdown = new AbortController();
    const slots = new DownloadSlots(2, { signal: shutdown.signal });
    const held = [await slots.acquire(), await slots.acquire()];
    const waits = Array.from({ length: 30 }, () => slots.acquire());
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1);
    // The ordinary case beside it: every waiter still gets a slot, in turn.
    for (const release of held) release();
    for (const wait of waits) (await wait)();
    expect(await settled(slots.acquire())).toBe(true);
  });
});
