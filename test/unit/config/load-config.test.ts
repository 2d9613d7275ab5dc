import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { resolveUpstreamConfig } from '../../../src/config/upstream-config.js';
import { ConfigError } from '../../../src/errors/sync-error.js';

function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-config-'));
  mkdirSync(join(dir, 'config'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const upstreamEnv = {
  REPORT_BASE_URL: 'https://gw.example.com/prefix/',
  REPORT_AUTH_URL: 'https://idp.example.com/auth',
  REPORT_REALM: 'my realm',
  REPORT_CLIENT_ID: 'client',
  REPORT_CLIENT_SECRET: 's3cret-value',
  REPORT_USERNAME: 'user',
  REPORT_PASSWORD: 'hunter2-password',
  REPORT_TENANT_ID: 'tenant-1',
};

describe('loadConfig', () => {
  it('layers defaults, config/default.json, config/local.json and flags', () => {
    const cwd = project({
      'config/default.json': JSON.stringify({ portfolios: [1], concurrency: 4, retry: { attempts: 3 } }),
      'config/local.json': JSON.stringify({ concurrency: 6 }),
    });
    const config = loadConfig({ cwd, env: {}, overrides: { concurrency: 9 } });
    expect(config.settings.portfolios).toEqual([1]);
    expect(config.settings.concurrency).toBe(9);
    expect(config.settings.retry).toMatchObject({ attempts: 3, baseDelayMs: 1000 });
    expect(config.databaseUrl).toBe('sqlite:./data/warehouse.sqlite');
  });

  it('defaults REDIS_URL to the local Redis, or to the first node of REDIS_CLUSTER_NODES when that is set', () => {
    const cwd = project({});
    expect(loadConfig({ cwd, env: {} })).toMatchObject({ redisUrl: 'redis://127.0.0.1:6379', redisClusterNodes: undefined });
    expect(loadConfig({ cwd, env: { REDIS_CLUSTER_NODES: ' , 10.0.0.5:7000,10.0.0.6:7000 ' } })).toMatchObject({
      redisUrl: 'redis://10.0.0.5:7000',
      redisClusterNodes: ', 10.0.0.5:7000,10.0.0.6:7000',
    });
    expect(loadConfig({ cwd, env: { REDIS_URL: 'rediss://:pw@10.0.0.9:7000', REDIS_CLUSTER_NODES: '10.0.0.5:7000' } }).redisUrl).toBe('rediss://:pw@10.0.0.9:7000');
  });

  it('names the bad key and the file it came from', () => {
    const cwd = project({
      'config/default.json': JSON.stringify({ retry: { attempts: 0 } }),
    });
    expect(() => loadConfig({ cwd, env: {} })).toThrowError(/retry\.attempts \(from .*default\.json\)/);
  });

  it('rejects unknown keys, unknown report types and bad time zones', () => {
    const cwd = project({
      'config/default.json': JSON.stringify({ concurency: 3, reportTypes: ['index;drop'], schedule: { timeZone: 'Mars/Base' } }),
    });
    let message = '';
    try {
      loadConfig({ cwd, env: {} });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      message = (error as Error).message;
    }
    expect(message).toContain('concurency');
    expect(message).toContain('reportTypes.0');
    expect(message).toContain('schedule.timeZone');
    // One problem per line (line breaks of report-sync's own list are kept), controls in values still escaped.
    expect(message.split('\n')).toHaveLength(4);
    expect(message).not.toContain('\\x0a');
  });

  it('blames the layer that set a bad value, not the flags the command leaves unset', () => {
    // Commands pass every flag they know, undefined when not given.
    const overrides = { concurrency: undefined };
    const messageOf = (files: Record<string, string>, env: Record<string, string>): string => {
      try {
        loadConfig({ cwd: project(files), env, overrides });
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error('loadConfig accepted the settings');
    };
    expect(messageOf({}, { REPORT_SYNC_CONCURRENCY: '0' })).toMatch(/concurrency \(from REPORT_SYNC_CONCURRENCY\): Too small/);
    expect(messageOf({ 'config/local.json': '{"concurrency":0}' }, {})).toMatch(/concurrency \(from .*local\.json\): Too small/);
    // A .env value is named by its line, which the environment's name alone would not find.
    expect(messageOf({ '.env': '# workers\n\nREPORT_SYNC_CONCURRENCY=0\n' }, {})).toMatch(/concurrency \(from \.env line 3: REPORT_SYNC_CONCURRENCY\): Too small/);
    expect(messageOf({ '.env': 'LOG_LEVEL=loud\n' }, {})).toMatch(/log\.level \(from \.env line 1: LOG_LEVEL\): "loud" is not allowed/);
    expect(messageOf({ '.env': 'REPORT_SYNC_RETRY__ATTEMPTS=three\n' }, {})).toContain('retry.attempts (from .env line 1: REPORT_SYNC_RETRY__ATTEMPTS): "three" is not a number');
    // A .env of REPORT_SYNC_CONFIG_DIR, outside the working directory, is named by its whole path.
    const mounted = project({ '.env': 'A=1\nREPORT_SYNC_CONCURRENCY=0\n' });
    expect(messageOf({}, { REPORT_SYNC_CONFIG_DIR: mounted })).toContain(`concurrency (from ${join(mounted, '.env')} line 2: REPORT_SYNC_CONCURRENCY): Too small`);
    // The real environment wins over .env, and is named as such.
    expect(messageOf({ '.env': 'REPORT_SYNC_CONCURRENCY=4\n' }, { REPORT_SYNC_CONCURRENCY: '0' })).toMatch(/concurrency \(from REPORT_SYNC_CONCURRENCY\): Too small/);
    // A flag that was given is still the one blamed.
    let message = '';
    try {
      loadConfig({ cwd: project({}), env: { REPORT_SYNC_CONCURRENCY: '4' }, overrides: { concurrency: 0 } });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/concurrency \(from command-line flags\): Too small/);
  });

  it('suggests the key a typo in a settings file most likely meant, and lists the keys when none is close', () => {
    const messageOf = (settings: unknown): string => {
      const cwd = project({ 'config/local.json': JSON.stringify(settings) });
      try {
        loadConfig({ cwd, env: {} });
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error('loadConfig accepted the settings');
    };
    expect(messageOf({ concurency: 3 })).toMatch(/\(top level\) \(from .*local\.json\): unknown key "concurency"; did you mean "concurrency"\?/);
    expect(messageOf({ retry: { atempts: 3 } })).toMatch(/retry \(from .*local\.json\): unknown key "atempts"; did you mean "attempts"\?/);
    expect(messageOf({ checks: { weightSum: { severity: 'warn' } } })).toContain('did you mean "weightsSum"?');
    // Nothing close: the keys that are allowed there, as before.
    expect(messageOf({ retry: { colour: 'red' } })).toContain('unknown key "colour"; use one of attempts, baseDelayMs, maxDelayMs, maxRetryAfterMs');
  });

  it('escapes control characters a settings value carries into the message', () => {
    const cwd = project({ 'config/default.json': JSON.stringify({ schedule: { timeZone: 'Mars\u001b]0;x\u0007' } }) });
    let message = '';
    try {
      loadConfig({ cwd, env: {} });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('schedule.timeZone');
    expect(message).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  });

  it('reads .env, with the real environment winning', () => {
    const cwd = project({ 'config/default.json': '{}', '.env': 'DATABASE_URL=sqlite:./from-file.sqlite\nREPORT_TENANT_ID=file\n' });
    const config = loadConfig({ cwd, env: { REPORT_TENANT_ID: 'env' } });
    expect(config.databaseUrl).toBe('sqlite:./from-file.sqlite');
    expect(config.env.REPORT_TENANT_ID).toBe('env');
  });

  it('reads a .env saved with a byte-order mark and CRLF line ends, first variable included', () => {
    const cwd = project({ 'config/default.json': '{}', '.env': '\uFEFFREPORT_BASE_URL=https://gw.example.com\r\nREPORT_REALM=r\r\n' });
    const config = loadConfig({ cwd, env: {} });
    expect(config.env.REPORT_BASE_URL).toBe('https://gw.example.com');
    expect(config.env.REPORT_REALM).toBe('r');
    expect(config.dotEnvNotes).toEqual([]);
  });

  it('notes a .env value cut at an unquoted #, unless the real environment sets the variable', () => {
    const cwd = project({ 'config/default.json': '{}', '.env': 'REPORT_USERNAME=u#1\nREPORT_PASSWORD=abc#123\n' });
    const config = loadConfig({ cwd, env: { REPORT_USERNAME: 'from-env', REPORT_REALM: undefined } });
    expect(config.env.REPORT_PASSWORD).toBe('abc');
    expect(config.dotEnvNotes).toEqual([{ line: 2, variable: 'REPORT_PASSWORD', rule: 'comment' }]);
    expect(loadConfig({ cwd, env: {}, readDotEnv: false }).dotEnvNotes).toEqual([]);
  });

  it('says which file is not JSON', () => {
    const cwd = project({ 'config/default.json': '{ nope' });
    expect(() => loadConfig({ cwd, env: {} })).toThrowError(/default\.json is not valid JSON/);
  });
});

describe('resolveUpstreamConfig', () => {
  it('builds the token URL under the auth URL path, realm encoded', () => {
    const upstream = resolveUpstreamConfig(upstreamEnv);
    expect(upstream.tokenUrl.href).toBe('https://idp.example.com/auth/realms/my%20realm/protocol/openid-connect/token');
    expect(upstream.baseUrl.href).toBe('https://gw.example.com/prefix/');
  });

  it('lets REPORT_TOKEN_URL override auth URL and realm', () => {
    const upstream = resolveUpstreamConfig({
      ...upstreamEnv,
      REPORT_AUTH_URL: undefined,
      REPORT_REALM: undefined,
      REPORT_TOKEN_URL: 'https://idp.example.com/token',
    });
    expect(upstream.tokenUrl.href).toBe('https://idp.example.com/token');
  });

  it('lists every missing variable and never prints a secret', () => {
    let message = '';
    try {
      resolveUpstreamConfig({ REPORT_PASSWORD: 'hunter2-password', REPORT_CLIENT_SECRET: 's3cret-value', REPORT_BASE_URL: 'ftp://x' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('REPORT_TENANT_ID');
    expect(message).toContain('REPORT_AUTH_URL');
    expect(message).not.toContain('hunter2');
    expect(message).not.toContain('s3cret');
  });

  it('refuses a URL with credentials in it', () => {
    expect(() => resolveUpstreamConfig({ ...upstreamEnv, REPORT_BASE_URL: 'https://u:pw@gw.example.com' })).toThrowError(/must not carry credentials/);
  });
});
