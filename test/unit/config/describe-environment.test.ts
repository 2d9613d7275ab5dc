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

  it('shows a URL whose password the parser would split as written, its password cut out', () => {
    const entries = describeOnly({
      DATABASE_URL: 'postgres://app:12/34@db.example/warehouse',
      REDIS_URL: 'redis://:p#ss@cache:6379',
      REPORT_BASE_URL: 'not a url at all',
    });
    expect(entries.DATABASE_URL!.value).toBe('postgres://app:[redacted]@db.example/warehouse');
    expect(entries.REDIS_URL!.value).toBe('set (not a URL, so not shown)');
    expect(entries.REPORT_BASE_URL!.value).toBe('set (not a URL, so not shown)');
  });

  // URLs typed wrong: one slash, no scheme, a user taken for a scheme. None may show its password.
  const MISTYPED: [string, string][] = [
    ['DATABASE_URL', 'postgres:/app:pw-one-slash@db.example/warehouse'],
    ['DATABASE_URL', 'app:pw-no-scheme@db.example:5432/warehouse'],
    ['REDIS_URL', 'redis:/:pw-redis-one-slash@cache:6379'],
    ['REDIS_URL', 'default:pw-default-user@cache:6379'],
    ['REPORT_BASE_URL', 'gw-user:pw-base-no-scheme@gw.example.com/prefix'],
    ['REPORT_AUTH_URL', 'idp-user:pw-auth-no-scheme@idp.example.com/auth'],
  ];

  it.each(MISTYPED)('shows %s = %s without its password', (name, value) => {
    const password = /:(pw-[a-z-]+)@/.exec(value)![1]!;
    const shown = describeOnly({ [name]: value })[name]!.value;
    expect(shown).not.toContain(password);
  });

  it('still shows well-formed URLs whole but for their password, marked [redacted]', () => {
    const entries = describeOnly({
      DATABASE_URL: 'postgres://app:pw-good@db.example:5432/warehouse',
      REDIS_URL: 'redis://default:pw-good-redis@cache:6379/1',
      REPORT_BASE_URL: 'https://gw.example.com/prefix/',
      REPORT_AUTH_URL: 'https://user@idp.example.com/auth',
    });
    expect(entries.DATABASE_URL!.value).toBe('postgres://app:[redacted]@db.example:5432/warehouse');
    expect(entries.REDIS_URL!.value).toBe('redis://default:[redacted]@cache:6379/1');
    expect(entries.REPORT_BASE_URL!.value).toBe('https://gw.example.com/prefix/');
    expect(entries.REPORT_AUTH_URL!.value).toBe('https://user@idp.example.com/auth');
  });

  it('shows the TLS parameters of a well-formed URL, and a parameter named like a secret as [redacted]', () => {
    const entries = describeOnly({
      DATABASE_URL: 'mysql://app:pw-good@db.example:3306/warehouse?ssl-mode=VERIFY_IDENTITY&ssl-ca=%2Fetc%2Fssl%2Fca.pem',
      REDIS_URL: 'rediss://:pw-redis@cache:6380',
    });
    expect(entries.DATABASE_URL!.value).toBe('mysql://app:[redacted]@db.example:3306/warehouse?ssl-mode=VERIFY_IDENTITY&ssl-ca=/etc/ssl/ca.pem');
    expect(entries.REDIS_URL!.value).toBe('rediss://:[redacted]@cache:6380');
    const postgres = describeOnly({ DATABASE_URL: 'postgres://app@db.example/warehouse?sslmode=verify-full&password=pw-query&sslpassword=pw-key' });
    expect(postgres.DATABASE_URL!.value).toBe('postgres://app@db.example/warehouse?sslmode=verify-full&password=[redacted]&sslpassword=[redacted]');
  });

  it('shows no parameters of a URL whose password the parser would split: they may be the password’s tail', () => {
    const shown = describeOnly({ DATABASE_URL: 'postgres://app:12?pw-tail@db.example/warehouse' }).DATABASE_URL!.value;
    expect(shown).not.toContain('pw-tail');
    expect(shown).not.toContain('?');
  });

  it('shows a sqlite: path whole, and a percent-encoded password nowhere', () => {
    const entries = describeOnly({ DATABASE_URL: 'sqlite:./data/a#b.sqlite', REDIS_URL: 'redis://u:p%40ss-word@cache:6379/1' });
    expect(entries.DATABASE_URL!.value).toBe('sqlite:./data/a#b.sqlite');
    expect(entries.REDIS_URL!.value).toBe('redis://u:[redacted]@cache:6379/1');
  });

  it('shows REDIS_CLUSTER_NODES as set, and the REDIS_URL its first node gives by default', () => {
    const env = { REDIS_CLUSTER_NODES: '10.0.0.5:7000,10.0.0.6:7000' };
    const entries = Object.fromEntries(
      describeEnvironment({ env, dotEnvVariables: new Set(), databaseUrl: 'sqlite:./data/warehouse.sqlite', redisUrl: 'redis://10.0.0.5:7000' }).map((entry) => [
        entry.name,
        entry,
      ]),
    );
    expect(entries.REDIS_CLUSTER_NODES).toMatchObject({ value: '10.0.0.5:7000,10.0.0.6:7000', secret: false, source: 'environment' });
    expect(entries.REDIS_URL).toMatchObject({ value: 'redis://10.0.0.5:7000', source: 'default' });
  });

  it('censors a credential that turns up in another variable', () => {
    const entries = describeOnly({ REPORT_PASSWORD: 'pasted-twice-pw', REPORT_REALM: 'pasted-twice-pw' });
    expect(entries.REPORT_REALM!.value).not.toContain('pasted-twice-pw');
  });
});
