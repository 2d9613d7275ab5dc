import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { settingSources } from '../../../src/config/setting-sources.js';
import { settingVariables } from '../../../src/config/setting-variables.js';
import { ConfigError } from '../../../src/errors/sync-error.js';
import { packageFile } from '../../../src/runtime/package-file.js';

/** A working directory with the given files (paths relative to it). */
function directory(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-env-settings-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

function configError(load: () => unknown): string {
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('settings from REPORT_SYNC_* variables', () => {
  it('reads one of each type: number, boolean, text, choice, number list, text list, record key, null, nested', () => {
    const config = loadConfig({
      cwd: directory(),
      env: {
        REPORT_SYNC_RETRY__ATTEMPTS: '3',
        REPORT_SYNC_HTTP__VERIFY_TLS: 'false',
        REPORT_SYNC_SCHEDULE__CRON: ' 0 3 * * 1-5 ',
        REPORT_SYNC_LOG__LEVEL: 'debug',
        REPORT_SYNC_PORTFOLIOS: '7, 8,9',
        REPORT_SYNC_REPORT_TYPES: '["index","constituent.open"]',
        REPORT_SYNC_FORMATS__CONSTITUENT_OPEN: 'json',
        REPORT_SYNC_METRICS__PORT: 'null',
        REPORT_SYNC_QUEUE__RATE_LIMIT__MAX: '5',
        REPORT_SYNC_SCHEDULE__GRACE_HOURS: '1.5',
        REPORT_SYNC_WAREHOUSE__ACCEPT_EMPTY_RESTATEMENTS: 'YES',
      },
    });
    const { settings } = config;
    expect(settings.retry.attempts).toBe(3);
    expect(settings.http.verifyTls).toBe(false);
    expect(settings.schedule.cron).toBe('0 3 * * 1-5');
    expect(settings.log.level).toBe('debug');
    expect(settings.portfolios).toEqual([7, 8, 9]);
    expect(settings.reportTypes).toEqual(['index', 'constituent.open']);
    expect(settings.formats).toEqual({ index: 'json', 'constituent.open': 'json' });
    expect(settings.metrics.port).toBeNull();
    expect(settings.queue.rateLimit).toEqual({ max: 5, durationMs: 1000 });
    expect(settings.schedule.graceHours).toBe(1.5);
    expect(settings.warehouse.acceptEmptyRestatements).toBe(true);
    // Each setting says which variable decided it.
    const sources = Object.fromEntries(settingSources(config).map((setting) => [setting.key, setting.source]));
    expect(sources['retry.attempts']).toBe('REPORT_SYNC_RETRY__ATTEMPTS');
    expect(sources['queue.rateLimit.max']).toBe('REPORT_SYNC_QUEUE__RATE_LIMIT__MAX');
    expect(sources['queue.rateLimit.durationMs']).toBe('default');
  });

  it('sits above the settings files and below command-line flags; a blank variable is unset', () => {
    const cwd = directory({ 'config/local.json': JSON.stringify({ concurrency: 4, retry: { attempts: 2, baseDelayMs: 5 } }) });
    const config = loadConfig({
      cwd,
      env: { REPORT_SYNC_CONCURRENCY: '6', REPORT_SYNC_RETRY__ATTEMPTS: '9', REPORT_SYNC_RETRY__BASE_DELAY_MS: '  ' },
      overrides: { concurrency: 12 },
    });
    expect(config.settings.concurrency).toBe(12);
    expect(config.settings.retry.attempts).toBe(9);
    expect(config.settings.retry.baseDelayMs).toBe(5);
  });

  it('reads them from .env too, where the real environment wins', () => {
    const cwd = directory({ '.env': 'REPORT_SYNC_CONCURRENCY=3\nREPORT_SYNC_RETRY__ATTEMPTS=4\n' });
    const config = loadConfig({ cwd, env: { REPORT_SYNC_RETRY__ATTEMPTS: '7' } });
    expect(config.settings.concurrency).toBe(3);
    expect(config.settings.retry.attempts).toBe(7);
    expect(config.dotEnvVariables.has('REPORT_SYNC_CONCURRENCY')).toBe(true);
  });

  it('names the variable of a value that is not of its type, every bad one at once', () => {
    const message = configError(() =>
      loadConfig({
        cwd: directory(),
        env: { REPORT_SYNC_RETRY__ATTEMPTS: 'three', REPORT_SYNC_HTTP__VERIFY_TLS: 'maybe', REPORT_SYNC_PORTFOLIOS: '1001,x' },
      }),
    );
    expect(message).toContain('retry.attempts (from REPORT_SYNC_RETRY__ATTEMPTS): "three" is not a number');
    expect(message).toContain('http.verifyTls (from REPORT_SYNC_HTTP__VERIFY_TLS): "maybe" is not true or false');
    expect(message).toContain('portfolios (from REPORT_SYNC_PORTFOLIOS): "x" is not a number');
  });

  it('names the variable of a value the schema refuses (out of range, not a choice, not a cron pattern)', () => {
    const message = configError(() =>
      loadConfig({
        cwd: directory(),
        env: { REPORT_SYNC_RETRY__ATTEMPTS: '0', REPORT_SYNC_LOG__LEVEL: 'loud', REPORT_SYNC_SCHEDULE__CRON: 'nightly' },
      }),
    );
    expect(message).toMatch(/retry\.attempts \(from REPORT_SYNC_RETRY__ATTEMPTS\): .*(>=1|at least 1)/);
    expect(message).toContain('log.level (from REPORT_SYNC_LOG__LEVEL): "loud" is not allowed; use one of fatal, error, warn, info, debug, trace, silent');
    expect(message).toContain('schedule.cron (from REPORT_SYNC_SCHEDULE__CRON): not a cron pattern');
  });

  it('refuses an unknown REPORT_SYNC_ variable, naming the one meant', () => {
    const message = configError(() => loadConfig({ cwd: directory(), env: { REPORT_SYNC_SCHEDULE__CRN: '0 3 * * *', REPORT_SYNC_CONFIG_DIR: undefined } }));
    expect(message).toContain('REPORT_SYNC_SCHEDULE__CRN: not a setting variable');
    expect(message).toContain('did you mean REPORT_SYNC_SCHEDULE__CRON?');
    // The suggestion is the product: checked whole.
    expect(configError(() => loadConfig({ cwd: directory(), env: { REPORT_SYNC_CONCURENCY: '4' } }))).toContain(
      'REPORT_SYNC_CONCURENCY: not a setting variable; did you mean REPORT_SYNC_CONCURRENCY?',
    );
    // The suggestion is the product: checked whole.
    expect(configError(() => loadConfig({ cwd: directory(), env: { REPORT_SYNC_LIMITS__NOTHING_LIKE_IT: '4' } }))).toContain(
      'REPORT_SYNC_LIMITS__NOTHING_LIKE_IT: not a setting variable; run report-sync config',
    );
    // The two variables that name files are not settings, and are no typo; nor are the variables
    // Kubernetes gives every pod of a namespace with a Service named report-sync.
    const cwd = directory({ 'config/extra.json': '{}' });
    const kubernetes = {
      REPORT_SYNC_SERVICE_HOST: '10.0.0.7',
      REPORT_SYNC_SERVICE_PORT: '9464',
      REPORT_SYNC_PORT: 'tcp://10.0.0.7:9464',
      REPORT_SYNC_PORT_9464_TCP_ADDR: '10.0.0.7',
    };
    expect(loadConfig({ cwd, env: { REPORT_SYNC_CONFIG: 'config/extra.json', ...kubernetes } }).settings.concurrency).toBe(8);
  });

  it('has a variable for every key of the schema, each name unique', () => {
    const variables = settingVariables();
    const names = variables.map((variable) => variable.name);
    expect(new Set(names).size).toBe(names.length);
    const keys = settingSources(loadConfig({ cwd: directory(), env: {} })).map((setting) => setting.key);
    for (const key of keys) expect(variables.some((variable) => variable.path.join('.') === key || key.startsWith(`${variable.path.join('.')}.`))).toBe(true);
    expect(names).toContain('REPORT_SYNC_QUEUE__KEEP_FAILED__AGE_SECONDS');
    expect(names).toContain('REPORT_SYNC_FORMATS__CONSTITUENT_PROFORMACORPORATEACTIONS');
  });
});

describe('the configuration folder', () => {
  it('is config/ of the working directory: its local.json is read over the shipped defaults', () => {
    const cwd = directory({ 'config/local.json': JSON.stringify({ portfolios: [42] }) });
    const config = loadConfig({ cwd, env: {} });
    expect(config.settings.portfolios).toEqual([42]);
    // The folder has no default.json: the shipped one is the first layer.
    expect(config.layers.map((layer) => layer.source)).toEqual([packageFile('config/default.json'), join(cwd, 'config', 'local.json')]);
  });

  it('is REPORT_SYNC_CONFIG_DIR when set: local.json and .env are read from it, the working directory .env over it', () => {
    const mounted = directory({
      'local.json': JSON.stringify({ portfolios: [5], concurrency: 2 }),
      '.env': 'REPORT_TENANT_ID=from-mounted\nREPORT_REALM=mounted-realm\n',
    });
    const cwd = directory({ 'config/local.json': JSON.stringify({ portfolios: [6] }), '.env': 'REPORT_REALM=cwd-realm\n' });
    const config = loadConfig({ cwd, env: { REPORT_SYNC_CONFIG_DIR: mounted } });
    expect(config.settings.portfolios).toEqual([5]);
    expect(config.settings.concurrency).toBe(2);
    expect(config.env.REPORT_TENANT_ID).toBe('from-mounted');
    expect(config.env.REPORT_REALM).toBe('cwd-realm');
  });

  it('stops with a message naming REPORT_SYNC_CONFIG_DIR when it is not a directory', () => {
    const cwd = directory();
    const message = configError(() => loadConfig({ cwd, env: { REPORT_SYNC_CONFIG_DIR: 'no-such-folder' } }));
    expect(message).toContain(`REPORT_SYNC_CONFIG_DIR names ${join(cwd, 'no-such-folder')}, which is not a directory`);
  });
});
