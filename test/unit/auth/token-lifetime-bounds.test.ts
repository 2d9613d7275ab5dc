import { describe, expect, it } from 'vitest';
import { TokenLifetimeBounds, type TokenLifetimeAdjustment } from '../../../src/auth/token-lifetime-bounds.js';

describe('TokenLifetimeBounds', () => {
  it.each([
    [300, 300, false],
    [299.5, 299.5, false],
    ['300', 300, false],
    [' 120 ', 120, false],
    [2, 2, false],
    [3, 3, false],
    [1, 1, false],
    [0.001, 1, true],
    [0, 1, true],
    [-5, 1, true],
    ['-5', 1, true],
    [1e300, 86_400, true],
    ['1e300', 86_400, true],
    [Number.POSITIVE_INFINITY, 86_400, true],
    ['abc', 300, true],
    ['0x12c', 300, true],
    ['', 300, true],
    [null, 300, true],
    [undefined, 300, true],
    [{ seconds: 300 }, 300, true],
  ])('reads expires_in %j as %d s (adjusted: %s)', (given, seconds, adjusted) => {
    const adjustments: TokenLifetimeAdjustment[] = [];
    const bounds = new TokenLifetimeBounds({ maxSeconds: 86_400, onAdjusted: (adjustment) => adjustments.push(adjustment) });
    expect(bounds.lifetimeOf(given)).toBe(seconds);
    expect(adjustments).toHaveLength(adjusted ? 1 : 0);
    if (adjusted) expect(adjustments[0]!.usedSeconds).toBe(seconds);
  });

  it('says so once per odd value, not once per token', () => {
    const messages: string[] = [];
    const bounds = new TokenLifetimeBounds({ onAdjusted: ({ message }) => messages.push(message) });
    for (let i = 0; i < 50; i += 1) expect(bounds.lifetimeOf(0.001)).toBe(1);
    expect(messages).toEqual(["the token answer's expires_in (0.001) is under 1 s: the token is used as lasting 1 s"]);
    expect(bounds.lifetimeOf(1e300)).toBe(86_400);
    expect(messages[1]).toBe("the token answer's expires_in (1e+300) is over token.maxLifetimeSeconds: the token is renewed after 86400 s at the latest");
  });

  it('quotes an unreadable value escaped and short, and assumes the spec’s 300 s within the bounds', () => {
    const messages: string[] = [];
    const bounds = new TokenLifetimeBounds({ maxSeconds: 120, onAdjusted: ({ message }) => messages.push(message) });
    expect(bounds.lifetimeOf(`\u001b[2J${'x'.repeat(100)}`)).toBe(120);
    expect(messages[0]).toContain('("\\u001b[2J'); // JSON's own escape
    expect(messages[0]).not.toContain('\u001b');
    expect(messages[0]).toContain('…) is not a number of seconds: assumed 120 s');
  });
});
