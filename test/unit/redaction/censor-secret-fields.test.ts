import { describe, expect, it } from 'vitest';
import { censorSecretFields } from '../../../src/redaction/redact.js';
import { createLogger } from '../../../src/logging/logger.js';
import { CapturedStream } from '../../helpers/captured-io.js';

describe('censorSecretFields', () => {
  it('censors secret fields at the top, one level down, and in headers one level down', () => {
    const input = {
      password: 'p1',
      token: 't1',
      status: 'loaded',
      options: { clientSecret: 'c1', Authorization: 'Bearer x', credentials: { user: 'u' }, url: 'https://x' },
      headers: { authorization: 'Bearer y', accept: '*/*' },
      request: { headers: { Authorization: 'Bearer z', 'x-client-id': 'tenant' } },
    };
    expect(censorSecretFields(input)).toEqual({
      password: '[redacted]',
      token: '[redacted]',
      status: 'loaded',
      options: { clientSecret: '[redacted]', Authorization: '[redacted]', credentials: '[redacted]', url: 'https://x' },
      headers: { authorization: '[redacted]', accept: '*/*' },
      request: { headers: { Authorization: '[redacted]', 'x-client-id': 'tenant' } },
    });
    // The caller's object is left as it was.
    expect(input.password).toBe('p1');
    expect(input.request.headers.Authorization).toBe('Bearer z');
  });

  it('returns the very object when there is nothing to censor', () => {
    const line = { status: 'loaded', rows: 50, nested: { deeper: { password: 'beyond the net' } } };
    expect(censorSecretFields(line)).toBe(line);
    expect(censorSecretFields('text')).toBe('text');
    expect(censorSecretFields(null)).toBe(null);
  });

  it('keeps an error an error, with its message and stack, when one of its fields is censored', () => {
    const error = Object.assign(new Error('refused'), { password: 'p2', code: 'E' });
    const { err } = censorSecretFields({ err: error });
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toBe('refused');
    expect(err.stack).toBe(error.stack);
    expect(err.password).toBe('[redacted]');
    expect(err.code).toBe('E');
    expect(error.password).toBe('p2');
  });

  it('keeps a stack its error reads through an accessor bound to itself, as Node 22 and later make them', () => {
    // V8's own `stack` accessor (Node 22 on) answers only for the error it was made on; this one does the same on every Node.
    const stacks = new WeakMap<object, string>();
    const error = Object.assign(new Error('refused'), { password: 'p3' });
    stacks.set(error, 'Error: refused\n    at the caller');
    Object.defineProperty(error, 'stack', {
      get(this: object) {
        return stacks.get(this);
      },
      configurable: true,
      enumerable: false,
    });
    const { err } = censorSecretFields({ err: error });
    expect(err.stack).toBe('Error: refused\n    at the caller');
    expect(Object.keys(err)).toEqual(['password']);
    expect(err.password).toBe('[redacted]');
    // The ordinary case beside it: a stack kept as a plain value (Node 20) is copied as it is.
    const plain = Object.assign(new Error('plain'), { password: 'p4' });
    expect(censorSecretFields({ err: plain }).err.stack).toBe(plain.stack);
  });
});

describe('the logger’s field-name net', () => {
  it('censors fields of log objects, interpolated objects and child bindings', () => {
    const out = new CapturedStream();
    const logger = createLogger({ level: 'info', pretty: false, destination: out });
    const child = logger.child({ portfolioId: 1, token: 'child-token-1', request: { headers: { authorization: 'opaque-1' } } }).child({ attempt: 1, password: 'opaque-5' });
    child.info({ err: Object.assign(new Error('boom'), { accessToken: 'opaque-2' }), headers: { Authorization: 'opaque-3' } }, 'first');
    logger.info('second %j', { credentials: 'opaque-4' });
    logger.flush();
    for (const secret of ['child-token-1', 'opaque-1', 'opaque-2', 'opaque-3', 'opaque-4', 'opaque-5']) expect(out.text).not.toContain(secret);
    const [first] = out.text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(first).toMatchObject({ portfolioId: 1, token: '[redacted]', attempt: 1, password: '[redacted]', msg: 'first', err: { message: 'boom', accessToken: '[redacted]' } });
  });
});
