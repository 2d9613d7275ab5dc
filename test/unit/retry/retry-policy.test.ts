import { describe, expect, it } from 'vitest';
import { RetryPolicy } from '../../../src/retry/retry-policy.js';

const retry = { baseDelayMs: 1000, maxDelayMs: 10_000, maxRetryAfterMs: 60_000 };
const at = (random: number, options: Partial<ConstructorParameters<typeof RetryPolicy>[0]> = {}) => new RetryPolicy({ ...retry, ...options, random: () => random });

describe('RetryPolicy', () => {
  it('doubles per failure with equal jitter: half the step fixed, half random', () => {
    expect(at(0).delayMs(1)).toBe(500);
    expect(at(1).delayMs(1)).toBe(1000);
    expect(at(0).delayMs(3)).toBe(2000);
    expect(at(1).delayMs(3)).toBe(4000);
    expect(at(0.5).delayMs(2)).toBe(1500);
  });

  it('never waits longer than maxDelayMs, however many failures', () => {
    expect(at(1).delayMs(10)).toBe(10_000);
    expect(at(1).delayMs(200)).toBe(10_000);
    expect(at(0).delayMs(200)).toBe(5_000);
  });

  it('honours Retry-After with a little spread (10%, at most 1 s), capped at maxRetryAfterMs', () => {
    expect(at(0).delayMs(1, 5_000)).toBe(5_000);
    expect(at(1).delayMs(1, 5_000)).toBe(5_500);
    expect(at(1).delayMs(1, 30_000)).toBe(31_000);
    expect(at(0).delayMs(1, 600_000)).toBe(60_000);
    // Retry-After wins over the backoff in both directions: shorter than the step, and longer than maxDelayMs.
    expect(at(0).delayMs(5, 100)).toBe(100);
    expect(at(0).delayMs(1, 20_000)).toBe(20_000);
  });

  it('caps Retry-After at the backoff ceiling when no other cap is given, and can take it exactly', () => {
    const provider = (random: number) => new RetryPolicy({ baseDelayMs: 1000, maxDelayMs: 30_000, spreadRetryAfter: false, random: () => random });
    expect(provider(1).delayMs(1, 150)).toBe(150);
    expect(provider(1).delayMs(1, 120_000)).toBe(30_000);
    expect(provider(0).delayMs(2)).toBe(1000);
  });

  it('spreads a fleet told the same step over its random half', () => {
    const policy = new RetryPolicy(retry);
    const delays = Array.from({ length: 200 }, () => policy.delayMs(3));
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(2000);
    expect(Math.max(...delays)).toBeLessThanOrEqual(4000);
    expect(new Set(delays).size).toBeGreaterThan(50);
  });
});
