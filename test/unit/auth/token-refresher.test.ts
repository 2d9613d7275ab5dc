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

  it('never assumes 300 s: a 3 s token is renewed after about 2.7 s, not on every call', async () => {
    let now = 0;
    const { issue, count } = issuer(3);
    const refresher = new TokenRefresher({ issue, refreshMarginSeconds: 30, now: () => now });
    for (now = 0; now < 2_600; now += 100) await refresher.getToken();
    expect(count()).toBe(1);
    now = 2_700;
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

  it('asks for at most one token per minRenewalIntervalMs because of 401s: a fresh token refused comes back as it was', async () => {
    let now = 0;
    const { issue, count } = issuer(300);
    const refresher = new TokenRefresher({ issue, minRenewalIntervalMs: 60_000, now: () => now });
    // A gateway refusing every token: 400 slices in bursts over 50 s, each reporting the token it was refused.
    for (let burst = 0; burst < 10; burst += 1, now += 5_000) {
      const token = await refresher.getToken();
      const answers = await Promise.all(Array.from({ length: 40 }, () => refresher.renewAfterRejection(token)));
      if (burst === 0) expect(new Set(answers)).toEqual(new Set(['token-2']));
      else expect(new Set(answers)).toEqual(new Set([token]));
    }
    // The first token, and one renewal for the first 401: not a grant per burst.
    expect(count()).toBe(2);
    now = 60_000;
    expect(await refresher.renewAfterRejection('token-2')).toBe('token-3');
    expect(count()).toBe(3);
  });

  it('still renews a token revoked moments after it was issued (the first 401 of the interval)', async () => {
    let now = 0;
    const { issue, count } = issuer(300);
    const refresher = new TokenRefresher({ issue, now: () => now });
    const first = await refresher.getToken();
    now = 1_000;
    expect(await refresher.renewAfterRejection(first)).toBe('token-2');
    expect(count()).toBe(2);
  });

  it('renews a token refused once it is due anyway, whatever the interval: that 401 is its expiry', async () => {
    let now = 0;
    const { issue, count } = issuer(10);
    const refresher = new TokenRefresher({ issue, minRenewalIntervalMs: 60_000, now: () => now });
    await refresher.renewAfterRejection(await refresher.getToken()); // token-2, the interval starts
    now = 5_000;
    expect(await refresher.renewAfterRejection('token-2')).toBe('token-2');
    now = 9_500; // past 10 s less the margin (a tenth)
    expect(await refresher.renewAfterRejection('token-2')).toBe('token-3');
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
