import { describe, expect, it } from 'vitest';
import { scheduleToken } from '../../../src/auth/token-schedule.js';

describe('scheduleToken', () => {
  it.each([
    // expires_in, renewed after (ms), fresh for (ms)
    [300, 270_000, 30_000],
    [60, 54_000, 30_000],
    [10, 9_000, 5_000],
    [3, 2_910, 1_500],
    [2, 1_960, 1_000],
    [1, 990, 500],
    [0.001, 990, 500],
    [0, 990, 500],
    [-5, 990, 500],
    [Number.NaN, 990, 500],
  ])('plans a token of expires_in %d: renewed after %i ms, fresh for %i ms, counted from the ask', (expiresInSeconds, renewAfterMs, freshForMs) => {
    const askedAt = 1_000_000;
    const schedule = scheduleToken({ askedAt, expiresInSeconds, refreshMarginSeconds: 30 });
    expect(schedule.renewAt - askedAt).toBe(renewAfterMs);
    expect(schedule.freshUntil - askedAt).toBe(freshForMs);
    expect(schedule.expiresAt - askedAt).toBe(Math.max(1, Number.isNaN(expiresInSeconds) ? 1 : expiresInSeconds) * 1000);
  });

  it('uses token.refreshMarginSeconds when it is under a tenth of the lifetime', () => {
    expect(scheduleToken({ askedAt: 0, expiresInSeconds: 3_600, refreshMarginSeconds: 30 }).renewAt).toBe(3_570_000);
    expect(scheduleToken({ askedAt: 0, expiresInSeconds: 2, refreshMarginSeconds: 0 }).renewAt).toBe(2_000);
  });

  it('plans an absurdly long lifetime as a year at most', () => {
    for (const expiresInSeconds of [1e300, Number.POSITIVE_INFINITY]) {
      const schedule = scheduleToken({ askedAt: 0, expiresInSeconds, refreshMarginSeconds: 30 });
      expect(schedule.lifetimeMs).toBe(31_536_000_000);
      expect(Number.isFinite(schedule.renewAt)).toBe(true);
    }
  });
});
