import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../../src/http/parse-retry-after.js';
import { joinUrl } from '../../../src/http/join-url.js';

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('7')).toBe(7000);
  });
  it('reads an HTTP-date relative to now', () => {
    const now = Date.parse('Sun, 22 Nov 2026 10:00:00 GMT');
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});

describe('joinUrl', () => {
  it('keeps the path of the base', () => {
    expect(joinUrl('https://idp/auth', 'realms/r/x').href).toBe('https://idp/auth/realms/r/x');
    expect(joinUrl('https://idp/auth/', '/realms/r/x').href).toBe('https://idp/auth/realms/r/x');
    expect(joinUrl('https://gw', 'api/v1').href).toBe('https://gw/api/v1');
  });
});
