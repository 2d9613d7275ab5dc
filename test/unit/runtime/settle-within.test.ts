import { describe, expect, it } from 'vitest';
import { settleWithin } from '../../../src/runtime/settle-within.js';

const after = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('settleWithin', () => {
  it('gives what the work settles to when it settles in time, and never calls late', async () => {
    let lateCalled = false;
    expect(await settleWithin(after(5, 'answer'), 1_000, () => (lateCalled = true))).toBe('answer');
    await expect(settleWithin(Promise.reject(new Error('refused')), 1_000, () => 'late')).rejects.toThrow('refused');
    expect(lateCalled).toBe(false);
  });

  it('gives what late gives, or throws what it throws, once the time is up, without waiting for the work', async () => {
    const started = performance.now();
    expect(await settleWithin(after(2_000, 'answer'), 20, () => 'no answer within 20 ms')).toBe('no answer within 20 ms');
    await expect(
      settleWithin(after(2_000, 'answer'), 20, () => {
        throw new Error('Redis did not answer within 20 ms');
      }),
    ).rejects.toThrow('Redis did not answer within 20 ms');
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('leaves a work that rejects after the time is up handled', async () => {
    const unhandled: unknown[] = [];
    const listen = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listen);
    try {
      const rejectsLate = new Promise((_, reject) => setTimeout(() => reject(new Error('too late')), 30));
      expect(await settleWithin(rejectsLate, 5, () => 'late')).toBe('late');
      await after(60, undefined);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', listen);
    }
  });
});
