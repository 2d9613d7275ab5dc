import { describe, expect, it } from 'vitest';
import { secretValues } from '../../../src/config/secret-values.js';
import { createLogger } from '../../../src/logging/logger.js';
import { redactSecrets } from '../../../src/redaction/redact.js';
import { CapturedStream } from '../../helpers/captured-io.js';

const PASSWORD = 'pa"ss\\wo/rd&=+ 1';
const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';

describe('redactSecrets', () => {
  it('cuts a secret out in every encoding it travels in', () => {
    const forms = [PASSWORD, encodeURIComponent(PASSWORD), new URLSearchParams({ p: PASSWORD }).toString().slice(2), JSON.stringify(PASSWORD).slice(1, -1)];
    for (const form of forms) expect(redactSecrets(`before ${form} after`, [PASSWORD])).toBe('before [redacted] after');
  });

  it('cuts Bearer values and labelled credentials it was not told about', () => {
    expect(redactSecrets(`Authorization: Bearer ${TOKEN}`)).toBe('Authorization: Bearer [redacted]');
    expect(redactSecrets('{"access_token":"abc123","password":"hunter2x"}')).toBe('{"access_token":"[redacted]","password":"[redacted]"}');
    expect(redactSecrets('client_secret=s3cr3t&username=x')).toBe('client_secret=[redacted]&username=x');
  });

  it('leaves prose and short values alone', () => {
    const text = 'export endpoint answered 401 to a Bearer token: check REPORT_PASSWORD';
    expect(redactSecrets(text, ['abc', undefined, ''])).toBe(text);
  });
});

describe('secretValues', () => {
  it('collects the credentials and the passwords inside connection URLs', () => {
    const values = secretValues({
      REPORT_CLIENT_SECRET: 'client-secret-1',
      REPORT_PASSWORD: 'password-2',
      DATABASE_URL: 'postgres://u:db%23pass@host/db',
      REDIS_URL: 'redis://:redis-pass@host:6379?password=other-pass',
      REPORT_TENANT_ID: 'tenant-not-secret',
    });
    expect(values).toEqual(expect.arrayContaining(['client-secret-1', 'password-2', 'db%23pass', 'db#pass', 'redis-pass', 'other-pass']));
    expect(values).not.toContain('tenant-not-secret');
  });

  it('finds a password pasted into REDIS_CLUSTER_NODES, which holds addresses only', () => {
    expect(secretValues({ REDIS_CLUSTER_NODES: '10.0.0.5:7000, redis://:pw-in-node@10.0.0.6:7000' })).toContain('pw-in-node');
    expect(secretValues({ REDIS_CLUSTER_NODES: '10.0.0.5:7000,10.0.0.6:7000' })).toEqual([]);
  });

  it('finds the password of a URL typed with one slash, no scheme, or a user where the scheme goes', () => {
    expect(secretValues({ DATABASE_URL: 'postgres:/u:pw-one@host/db' })).toContain('pw-one');
    expect(secretValues({ DATABASE_URL: 'u:pw-two@host:5432/db' })).toContain('pw-two');
    expect(secretValues({ REDIS_URL: 'redis:/:pw-three@host:6379' })).toContain('pw-three');
    expect(secretValues({ REDIS_URL: 'default:pw-four@host:6379' })).toContain('pw-four');
    expect(secretValues({ REPORT_BASE_URL: 'u:pw-five@gw.example.com/prefix' })).toContain('pw-five');
    expect(secretValues({ REPORT_AUTH_URL: 'u:pw-six@idp.example.com/auth' })).toContain('pw-six');
    // The webhook URL is a secret whole, and its password alone too: it travels alone as Basic authorization.
    expect(secretValues({ REPORT_ALERT_WEBHOOK_URL: 'https://hook:pw-seven%21@hooks.example/x' })).toEqual(expect.arrayContaining(['pw-seven%21', 'pw-seven!']));
    // Nothing taken from URLs without userinfo, or with a user and no password.
    expect(secretValues({ REPORT_BASE_URL: 'https://gw.example.com:8443/a', REDIS_URL: 'redis://cache:6379', DATABASE_URL: 'postgres://app@db/w' })).toEqual([]);
  });
});

describe('the logger’s net', () => {
  const hostile = () => {
    const error = new Error(`upstream said: Authorization: Bearer ${TOKEN}, password ${PASSWORD}`);
    return { err: error, detail: `echo ${JSON.stringify(PASSWORD)}`, headers: { authorization: `Bearer ${TOKEN}` } };
  };

  it.each([false, true])('censors secrets in messages, fields and stacks (pretty: %s)', (pretty) => {
    const out = new CapturedStream();
    const logger = createLogger({ level: 'trace', pretty, destination: out, secrets: [PASSWORD] });
    logger.error(hostile(), `failed with password ${PASSWORD}`);
    logger.trace({ url: `https://x/?access_token=${TOKEN}` }, 'trace line');
    logger.flush();
    expect(out.text).toContain('failed with password [redacted]');
    expect(out.text).toContain('trace line');
    expect(out.text).not.toContain(TOKEN);
    for (const form of [PASSWORD, JSON.stringify(PASSWORD).slice(1, -1)]) expect(out.text).not.toContain(form);
    if (pretty) expect(out.text).not.toMatch(/^\{"level"/m);
    else for (const line of out.text.trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
  });
});
