import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../../src/runner/backoff-delay.js';

const retry = { attempts: 5, baseDelayMs: 1000, maxDelayMs: 10_000, maxRetryAfterMs: 60_000 };

describe('backoffDelay', () => {
  it('doubles per attempt with equal jitter', () => {
    expect(backoffDelay(1, retry, undefined, () => 0)).toBe(500);
    expect(backoffDelay(1, retry, undefined, () => 1)).toBe(1000);
    expect(backoffDelay(3, retry, undefined, () => 0)).toBe(2000);
    expect(backoffDelay(3, retry, undefined, () => 1)).toBe(4000);
  });
  it('caps at maxDelayMs', () => {
    expect(backoffDelay(10, retry, undefined, () => 1)).toBe(10_000);
  });
  it('honours Retry-After, capped', () => {
    expect(backoffDelay(1, retry, 5_000, () => 0)).toBe(5_000);
    expect(backoffDelay(1, retry, 5_000, () => 1)).toBe(5_500);
    expect(backoffDelay(1, retry, 600_000, () => 0)).toBe(60_000);
  });
});
