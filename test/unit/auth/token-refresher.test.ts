import { describe, expect, it } from 'vitest';
import { TokenRefresher } from '../../../src/auth/token-refresher.js';
import type { IssuedToken } from '../../../src/auth/token-source.js';

function issuer(expiresInSeconds: number) {
  let issued = 0;
  const issue = async (): Promise<IssuedToken> => {
    issued += 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
    return { accessToken: `token-${issued}`, expiresInSeconds };
  };
  return { issue, count: () => issued };
}

describe('TokenRefresher', () => {
  it('makes one token request for 32 concurrent callers', async () => {
    const { issue, count } = issuer(300);
    const refresher = new TokenRefresher({ issue });
    const tokens = await Promise.all(Array.from({ length: 32 }, () => refresher.getToken()));
    expect(count()).toBe(1);
    expect(new Set(tokens)).toEqual(new Set(['token-1']));
  });

  it('renews before expiry using the expires_in the server gave, with a margin of at most a tenth of it', async () => {
    let now = 0;
    const { issue, count } = issuer(300);
    const refresher = new TokenRefresher({ issue, refreshMarginSeconds: 30, now: () => now });
    await refresher.getToken();
    now = 269_000;
    expect(await refresher.getToken()).toBe('token-1');
    now = 270_000;
    expect(await refresher.getToken()).toBe('token-2');
    expect(count()).toBe(2);
  });

  it('never assumes 300 s: a 3 s token is renewed a little before 3 s (90 ms), not on every call', async () => {
    let now = 0;
    const { issue, count } = issuer(3);
    const refresher = new TokenRefresher({ issue, refreshMarginSeconds: 30, now: () => now });
    for (now = 0; now < 2_910; now += 10) await refresher.getToken();
    expect(count()).toBe(1);
    now = 2_910;
    await refresher.getToken();
    expect(count()).toBe(2);
  });

  it('renews once when many callers report the same rejected token', async () => {
    const { issue, count } = issuer(300);
    const refresher = new TokenRefresher({ issue });
    const first = await refresher.getToken();
    const renewed = await Promise.all(Array.from({ length: 40 }, () => refresher.renewAfterRejection(first)));
    expect(count()).toBe(2);
    expect(new Set(renewed)).toEqual(new Set(['token-2']));
    // A late 401 for the old token does not renew again.
    expect(await refresher.renewAfterRejection(first)).toBe('token-2');
    expect(count()).toBe(2);
  });

  it.each([
    [2, 1_960],
    [3, 2_910],
  ])('renews a %i s token before its stated lifetime runs out (after %i ms), and once per lifetime', async (seconds, renewAfterMs) => {
    let now = 0;
    const { issue, count } = issuer(seconds);
    const refresher = new TokenRefresher({ issue, refreshMarginSeconds: 30, now: () => now });
    // Every 10 ms over four lifetimes, each token handed out only within its own lifetime.
    const askedAt = new Map<string, number>();
    for (now = 0; now < 4 * seconds * 1000; now += 10) {
      const before = count();
      const token = await refresher.getToken();
      if (count() > before) askedAt.set(token, now);
      expect(now - askedAt.get(token)!).toBeLessThan(seconds * 1000);
    }
    // Renewed a little before each lifetime ends: four lifetimes take five tokens, not one per call.
    expect(count()).toBe(5);
    expect([...askedAt.values()].slice(0, 2)).toEqual([0, renewAfterMs]);
  });

  it('counts the lifetime from when the token was asked for, not from when the answer came', async () => {
    let now = 0;
    let issued = 0;
    const refresher = new TokenRefresher({
      issue: async () => {
        issued += 1;
        now += 500; // a slow identity provider: the token's lifetime started before this
        return { accessToken: `slow-${issued}`, expiresInSeconds: 2 };
      },
      now: () => now,
    });
    await refresher.getToken();
    now = 1_959;
    expect(await refresher.getToken()).toBe('slow-1');
    now = 1_960;
    expect(await refresher.getToken()).toBe('slow-2');
  });

  it.each([0.001, 0, -5])('uses a token whose expires_in is %d as lasting 1 s: renewed after 0.99 s, not on every call', async (expiresInSeconds) => {
    let now = 0;
    const { issue, count } = issuer(expiresInSeconds);
    const refresher = new TokenRefresher({ issue, now: () => now });
    for (now = 0; now < 990; now += 5) await refresher.getToken();
    expect(count()).toBe(1);
    now = 990;
    await refresher.getToken();
    expect(count()).toBe(2);
  });

  it('renews a token refused once its stated lifetime has passed, even one a 401 asked for: that 401 is its expiry', async () => {
    let now = 0;
    const { issue, count } = issuer(2);
    const refresher = new TokenRefresher({ issue, now: () => now });
    // token-1 revoked at once: token-2 is asked for because of a 401, and fresh for a second.
    expect(await refresher.renewAfterRejection(await refresher.getToken())).toBe('token-2');
    for (const at of [1_960, 2_000, 2_500]) {
      now = at;
      // A request sent with token-2 before it was due, answered after: renewed, never called configuration.
      const renewed = await refresher.renewAfterRejection('token-2');
      expect(renewed).not.toBe('token-2');
    }
    // One renewal for the lifetime that passed: the later 401s to token-2 found it replaced.
    expect(count()).toBe(3);
  });

  it('answers a 401 to a token already replaced with the current one, asking for none', async () => {
    let now = 0;
    const { issue, count } = issuer(2);
    const refresher = new TokenRefresher({ issue, now: () => now });
    await refresher.getToken();
    now = 1_960;
    expect(await refresher.getToken()).toBe('token-2');
    now = 2_100; // a request sent with token-1 just before it was due
    expect(await refresher.renewAfterRejection('token-1')).toBe('token-2');
    expect(count()).toBe(2);
  });

  it.each([2, 300])('hands back a %i s token refused right after a 401 asked for it (configuration), and asks for no token per slice', async (seconds) => {
    let now = 0;
    const { issue, count } = issuer(seconds);
    const refresher = new TokenRefresher({ issue, now: () => now });
    // A gateway refusing every token: 400 slices in bursts while the renewed token is fresh
    // (the first half of its lifetime, at most 30 s).
    const steps = 10;
    const stepMs = Math.min(seconds * 500, 30_000) / steps - 1;
    for (let burst = 0; burst < steps; burst += 1, now += stepMs) {
      const token = await refresher.getToken();
      const answers = await Promise.all(Array.from({ length: 40 }, () => refresher.renewAfterRejection(token)));
      if (burst === 0) expect(new Set(answers)).toEqual(new Set(['token-2']));
      else expect(new Set(answers)).toEqual(new Set([token]));
    }
    // The first token, and one renewal for the first 401: not a grant per burst.
    expect(count()).toBe(2);
  });

  it('renews a normal 300 s token revoked moments after it was issued (its first 401)', async () => {
    let now = 0;
    const { issue, count } = issuer(300);
    const refresher = new TokenRefresher({ issue, now: () => now });
    const first = await refresher.getToken();
    now = 1_000;
    expect(await refresher.renewAfterRejection(first)).toBe('token-2');
    expect(count()).toBe(2);
  });

  it('renews a token a 401 asked for when it is refused later in its life: revoked, not configuration', async () => {
    let now = 0;
    const { issue, count } = issuer(300);
    const refresher = new TokenRefresher({ issue, now: () => now });
    now = 100_000; // revoked mid-life
    await refresher.getToken();
    expect(await refresher.renewAfterRejection('token-1')).toBe('token-2');
    now = 130_000; // token-2 worked for 30 s, then was revoked too
    expect(await refresher.renewAfterRejection('token-2')).toBe('token-3');
    now = 130_500; // token-3 refused moments after a 401 asked for it
    expect(await refresher.renewAfterRejection('token-3')).toBe('token-3');
    expect(count()).toBe(3);
  });

  it('passes a failed request to every waiter and tries again on the next call', async () => {
    let calls = 0;
    const refresher = new TokenRefresher({
      issue: async () => {
        calls += 1;
        if (calls === 1) throw new Error('idp down');
        return { accessToken: 'ok', expiresInSeconds: 60 };
      },
    });
    const results = await Promise.allSettled([refresher.getToken(), refresher.getToken()]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(calls).toBe(1);
    expect(await refresher.getToken()).toBe('ok');
  });
});
