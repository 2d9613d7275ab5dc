import { describe, expect, it } from 'vitest';
import { describeEnvironment } from '../../../src/config/describe-environment.js';
import { SECRET_VARIABLES } from '../../../src/config/secret-values.js';

function describeOnly(env: Record<string, string | undefined>, fromDotEnv: string[] = []) {
  const entries = describeEnvironment({
    env,
    dotEnvVariables: new Set(fromDotEnv),
    databaseUrl: env.DATABASE_URL?.trim() || 'sqlite:./data/warehouse.sqlite',
    redisUrl: env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379',
  });
  return Object.fromEntries(entries.map((entry) => [entry.name, entry]));
}

describe('describeEnvironment', () => {
  it('shows every variable secret-values censors as set or unset only', () => {
    const env = Object.fromEntries(SECRET_VARIABLES.map((name) => [name, `value-of-${name}`]));
    const entries = describeOnly(env, ['REPORT_PASSWORD']);
    for (const name of SECRET_VARIABLES) {
      expect(entries[name]).toMatchObject({ value: 'set', secret: true });
    }
    expect(entries.REPORT_PASSWORD!.source).toBe('.env');
    expect(entries.REPORT_CLIENT_SECRET!.source).toBe('environment');
    expect(describeOnly({}).REPORT_PASSWORD).toMatchObject({ value: 'unset', source: null });
  });

  it('does not show a URL whose password the parser would split', () => {
    const entries = describeOnly({
      DATABASE_URL: 'postgres://app:12/34@db.example/warehouse',
      REDIS_URL: 'redis://:p#ss@cache:6379',
      REPORT_BASE_URL: 'not a url at all',
    });
    expect(entries.DATABASE_URL!.value).toBe('set (not a URL, so not shown)');
    expect(entries.REDIS_URL!.value).toBe('set (not a URL, so not shown)');
    expect(entries.REPORT_BASE_URL!.value).toBe('set (not a URL, so not shown)');
  });

  it('shows a sqlite: path whole, and a percent-encoded password nowhere', () => {
    const entries = describeOnly({ DATABASE_URL: 'sqlite:./data/a#b.sqlite', REDIS_URL: 'redis://u:p%40ss-word@cache:6379/1' });
    expect(entries.DATABASE_URL!.value).toBe('sqlite:./data/a#b.sqlite');
    expect(entries.REDIS_URL!.value).toBe('redis://u@cache:6379/1');
  });

  it('censors a credential that turns up in another variable', () => {
    const entries = describeOnly({ REPORT_PASSWORD: 'pasted-twice-pw', REPORT_REALM: 'pasted-twice-pw' });
    expect(entries.REPORT_REALM!.value).not.toContain('pasted-twice-pw');
  });
});
