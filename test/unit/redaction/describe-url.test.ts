import { describe, expect, it } from 'vitest';
import { describeUrl } from '../../../src/redaction/redact.js';

describe('describeUrl', () => {
  // Short passwords on purpose: the logger's net does not search for secrets under 4 characters,
  // so only the URL's own censoring keeps these out.
  it.each([
    ['postgres:/u:Zq9@host/db', 'postgres:/u:[redacted]@host/db'],
    ['u:Zq9@host:5432/db', 'u:[redacted]@host:5432/db'],
    ['redis:/:Zq9@host:6379', 'redis:/:[redacted]@host:6379'],
    ['default:Zq9@host:6379', 'default:[redacted]@host:6379'],
    ['gw-user:Zq9@gw.example.com/prefix', 'gw-user:[redacted]@gw.example.com/prefix'],
    ['postgres://u:1/Zq9@host/db', 'postgres://u:[redacted]@host/db'],
    ['postgres:/u:Zq9@host/db?password=Zq9#Zq9', 'postgres:/u:[redacted]@host/db'],
    ['postgres://u:p@ss@Zq9@host/db', 'postgres://u:[redacted]@host/db'],
  ])('shows the mistyped %s without its password, as written', (raw, shown) => {
    expect(describeUrl(raw)).toBe(shown);
  });

  it('shows a well-formed URL as URL reads it, its password as [redacted], without query or fragment', () => {
    expect(describeUrl('postgres://u:Zq9@host:5432/db?password=Zq9#x')).toBe('postgres://u:[redacted]@host:5432/db');
    expect(describeUrl('redis://:Zq9@cache:6379/1')).toBe('redis://:[redacted]@cache:6379/1');
    expect(describeUrl('rediss://default:Zq9@cache:6380')).toBe('rediss://default:[redacted]@cache:6380');
    expect(describeUrl('https://user:Zq9@idp.example.com/auth')).toBe('https://user:[redacted]@idp.example.com/auth');
    expect(describeUrl('mysql://u:p%40ss@[::1]:3306/db')).toBe('mysql://u:[redacted]@[::1]:3306/db');
    // No password, nothing marked: the ordinary case.
    expect(describeUrl('postgres://u@host:5432/db')).toBe('postgres://u@host:5432/db');
    expect(describeUrl('redis://cache:6379')).toBe('redis://cache:6379');
    expect(describeUrl('https://gw.example.com/a@b')).toBe('https://gw.example.com/a@b');
  });

  it('says nothing of text that is not a URL', () => {
    expect(describeUrl(':Zq9@host')).toBeUndefined();
    expect(describeUrl('redis://:p#Zq9@cache:6379')).toBeUndefined();
    expect(describeUrl('not a url at all')).toBeUndefined();
  });
});
