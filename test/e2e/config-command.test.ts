import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { capturedIo } from '../helpers/captured-io.js';

interface ConfigJson {
  settings: Record<string, { value: unknown; source: string }>;
  environment: Record<string, { value: string; source: string | null }>;
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A working directory holding `files` (paths relative to it). */
function project(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-config-command-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

async function configCommand(cwd: string, args: string[] = [], env: Record<string, string> = {}) {
  const io = capturedIo(env, cwd);
  const code = await main(['config', ...args], io);
  return { code, stdout: io.stdout.text, stderr: io.stderr.text };
}

async function configJson(cwd: string, args: string[] = [], env: Record<string, string> = {}): Promise<ConfigJson> {
  const result = await configCommand(cwd, ['--json', ...args], env);
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as ConfigJson;
}

const layered = () =>
  project({
    'config/default.json': JSON.stringify({ retry: { attempts: 4 } }),
    'config/local.json': JSON.stringify({ concurrency: 3 }),
    'extra.json': JSON.stringify({ queue: { name: 'extra-queue' } }),
  });

describe('report-sync config', () => {
  it('names the layer of every setting: default, config/default.json, config/local.json, --config, LOG_LEVEL', async () => {
    const cwd = layered();
    const { settings } = await configJson(cwd, ['--config', 'extra.json'], { LOG_LEVEL: 'debug' });
    expect(settings['retry.baseDelayMs']).toEqual({ value: 1000, source: 'default' });
    expect(settings['retry.attempts']).toEqual({ value: 4, source: 'config/default.json' });
    expect(settings['concurrency']).toEqual({ value: 3, source: 'config/local.json' });
    expect(settings['queue.name']).toEqual({ value: 'extra-queue', source: 'extra.json (--config)' });
    expect(settings['log.level']).toEqual({ value: 'debug', source: 'LOG_LEVEL (environment)' });
    // A flag is the highest layer, over config/local.json.
    const flagged = await configJson(cwd, ['--config', 'extra.json', '--concurrency', '12']);
    expect(flagged.settings['concurrency']).toEqual({ value: 12, source: 'command-line flags' });
  });

  it('prints one aligned line per dotted key, then the environment', async () => {
    const cwd = layered();
    const { code, stdout } = await configCommand(cwd, ['--config', 'extra.json'], { LOG_LEVEL: 'debug' });
    expect(code).toBe(0);
    // The printed layer line is the product: checked whole.
    expect(stdout).toContain('layers, lowest first: default, config/default.json, config/local.json, extra.json (--config), LOG_LEVEL (environment)');
    expect(stdout).toMatch(/^retry\.attempts +4 +config\/default\.json$/m);
    expect(stdout).toMatch(/^concurrency +3 +config\/local\.json$/m);
    expect(stdout).toMatch(/^queue\.name +extra-queue +extra\.json \(--config\)$/m);
    expect(stdout).toMatch(/^log\.level +debug +LOG_LEVEL \(environment\)$/m);
    expect(stdout).toMatch(/^portfolios +\[1001,1002\] +default$/m);
    // Aligned: every setting's value starts in the same column.
    const settingLines = stdout.split('\n\n')[1]!.split('\n').slice(2);
    const valueColumns = new Set(settingLines.map((line) => /^\S+ +/.exec(line)![0].length));
    expect(valueColumns.size).toBe(1);
    expect(stdout.indexOf('REPORT_BASE_URL')).toBeGreaterThan(stdout.indexOf('log.level'));
  });

  it('names the file given by REPORT_SYNC_CONFIG, and LOG_LEVEL set in .env', async () => {
    const cwd = layered();
    writeFileSync(join(cwd, '.env'), 'REPORT_SYNC_CONFIG=extra.json\nLOG_LEVEL=warn\n');
    const { settings, environment } = await configJson(cwd);
    expect(settings['queue.name']!.source).toBe('extra.json (REPORT_SYNC_CONFIG)');
    expect(settings['log.level']).toEqual({ value: 'warn', source: 'LOG_LEVEL (.env line 2)' });
    expect(environment.REPORT_SYNC_CONFIG).toEqual({ value: 'extra.json', source: '.env' });
  });

  it('shows secrets as set or unset only, never their values', async () => {
    const cwd = project({ '.env': "REPORT_PASSWORD='pw-from-dotenv-7'\nREPORT_USERNAME=user-from-dotenv-7\n" });
    const env = { REPORT_CLIENT_SECRET: 'secret-from-env-7', REPORT_ALERT_WEBHOOK_URL: 'https://hooks.example/T0/B0/hook-token-7' };
    const text = await configCommand(cwd, [], env);
    const json = await configCommand(cwd, ['--json'], env);
    for (const output of [text.stdout, text.stderr, json.stdout, json.stderr]) {
      for (const secret of ['pw-from-dotenv-7', 'user-from-dotenv-7', 'secret-from-env-7', 'hook-token-7']) expect(output).not.toContain(secret);
    }
    expect(text.stdout).toMatch(/^REPORT_PASSWORD +set +\.env$/m);
    const { environment } = JSON.parse(json.stdout) as ConfigJson;
    expect(environment.REPORT_PASSWORD).toEqual({ value: 'set', source: '.env' });
    expect(environment.REPORT_USERNAME).toEqual({ value: 'set', source: '.env' });
    expect(environment.REPORT_CLIENT_SECRET).toEqual({ value: 'set', source: 'environment' });
    expect(environment.REPORT_ALERT_WEBHOOK_URL).toEqual({ value: 'set', source: 'environment' });
  });

  it('shows DATABASE_URL and REDIS_URL with their passwords redacted, and the identifiers as they are', async () => {
    const cwd = project({ '.env': 'DATABASE_URL=postgres://app:db-pass-123@db.example:5432/warehouse?password=db-pass-123\n' });
    const env = { REDIS_URL: 'redis://:redis-pass-456@cache.example:6379/0', REPORT_TENANT_ID: 'tenant-9', REPORT_CLIENT_ID: 'client-9' };
    const text = await configCommand(cwd, [], env);
    expect(text.stdout).not.toContain('db-pass-123');
    expect(text.stdout).not.toContain('redis-pass-456');
    expect(text.stdout).toMatch(/^DATABASE_URL +postgres:\/\/app:\[redacted\]@db\.example:5432\/warehouse\?password=\[redacted\] +\.env$/m);
    const { environment } = await configJson(cwd, [], env);
    expect(environment.DATABASE_URL).toEqual({ value: 'postgres://app:[redacted]@db.example:5432/warehouse?password=[redacted]', source: '.env' });
    expect(environment.REDIS_URL).toEqual({ value: 'redis://:[redacted]@cache.example:6379/0', source: 'environment' });
    expect(environment.REPORT_TENANT_ID).toEqual({ value: 'tenant-9', source: 'environment' });
    expect(environment.REPORT_CLIENT_ID).toEqual({ value: 'client-9', source: 'environment' });
  });

  it('works with no upstream variables at all, listing them as unset, and connects nowhere', async () => {
    const cwd = project();
    const warehouse = join(cwd, 'data/never.sqlite');
    const { code, stdout, stderr } = await configCommand(cwd, [], { DATABASE_URL: `sqlite:${warehouse}` });
    expect(code).toBe(0);
    expect(stderr).toBe('');
    for (const name of ['REPORT_BASE_URL', 'REPORT_TENANT_ID', 'REPORT_CLIENT_SECRET', 'REPORT_PASSWORD']) {
      expect(stdout).toMatch(new RegExp(`^${name} +unset$`, 'm'));
    }
    // `migrate` or any sync would have created the SQLite warehouse (and its directory).
    expect(existsSync(join(cwd, 'data'))).toBe(false);

    const { environment, settings } = await configJson(cwd, [], {});
    expect(environment.REPORT_BASE_URL).toEqual({ value: 'unset', source: null });
    expect(environment.DATABASE_URL).toEqual({ value: 'sqlite:./data/warehouse.sqlite', source: 'default' });
    expect(environment.REDIS_URL).toEqual({ value: 'redis://127.0.0.1:6379', source: 'default' });
    // No config/ here: the package's own config/default.json is the file layer.
    expect(settings['retry.attempts']!.source).toMatch(/config[\\/]default\.json$/);
  });

  it('says a blank variable is unset, and where the blank line is', async () => {
    const cwd = project({ '.env': 'REPORT_PASSWORD=\nREPORT_REALM=\n' });
    const { stdout } = await configCommand(cwd);
    expect(stdout).toMatch(/^REPORT_PASSWORD +unset +\.env \(blank\)$/m);
    const { environment } = await configJson(cwd);
    expect(environment.REPORT_REALM).toEqual({ value: 'unset', source: '.env' });
  });

  it('stops with exit 2 and the validation message on invalid settings', async () => {
    const cwd = project({ 'config/default.json': JSON.stringify({ retry: { attempts: -1 } }) });
    const result = await configCommand(cwd);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/invalid settings:\n {2}retry\.attempts \(from .*default\.json\)/);
  });

  it('names the REPORT_SYNC_ variable of a setting, from the environment or .env, over the files', async () => {
    const cwd = project({ 'config/local.json': JSON.stringify({ concurrency: 3 }), '.env': 'REPORT_SYNC_RETRY__ATTEMPTS=2\n' });
    const { settings } = await configJson(cwd, [], { REPORT_SYNC_CONCURRENCY: '5', REPORT_SYNC_QUEUE__RATE_LIMIT__MAX: '10' });
    expect(settings['concurrency']).toEqual({ value: 5, source: 'REPORT_SYNC_CONCURRENCY (environment)' });
    expect(settings['queue.rateLimit.max']).toEqual({ value: 10, source: 'REPORT_SYNC_QUEUE__RATE_LIMIT__MAX (environment)' });
    expect(settings['retry.attempts']).toEqual({ value: 2, source: 'REPORT_SYNC_RETRY__ATTEMPTS (.env line 1)' });
    const bad = await configCommand(cwd, [], { REPORT_SYNC_CONCURRENCY: 'lots' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('report-sync: invalid settings:\n  concurrency (from REPORT_SYNC_CONCURRENCY): "lots" is not a number\n');
  });
});
