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

  it('ends a wait on abort with its reason, holding nothing; the slot goes to the next waiter', async () => {
    const slots = new DownloadSlots(1);
    const release = await slots.acquire();
    const shutdown = new AbortController();
    const abandoned = slots.acquire(shutdown.signal);
    const next = slots.acquire();
    shutdown.abort(new Error('shutting down'));
    await expect(abandoned).rejects.toThrow('shutting down');
    release();
    expect(await settled(next)).toBe(true);
    await expect(slots.acquire(shutdown.signal)).rejects.toThrow('shutting down');
  });
});
