import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI_BIN } from '../helpers/cli-bin.js';
import { startCliProcess } from '../helpers/cli-process.js';
import { seededWarehouse } from '../helpers/seeded-warehouse.js';
import { until } from '../helpers/until.js';

/*
 * URLs typed wrong on purpose, each with a password of three characters: too short for the
 * logger's net (which does not search for secrets under four), so only the URL's own censoring
 * keeps it out. Each is checked where it is printed: `report-sync config`, the error of the
 * command that uses it, a log line, the dashboard's /api/meta.
 */

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Upstream variables pointing where nothing answers: a command that got past its settings could reach nothing. */
const UPSTREAM = {
  REPORT_BASE_URL: 'http://127.0.0.1:9/',
  REPORT_AUTH_URL: 'http://127.0.0.1:9/',
  REPORT_REALM: 'realm',
  REPORT_TENANT_ID: 'tenant',
  REPORT_CLIENT_ID: 'client',
  REPORT_CLIENT_SECRET: 'client-secret-value',
  REPORT_USERNAME: 'sync-account',
  REPORT_PASSWORD: 'password-value',
  REPORT_SYNC_STARTUP__TIMEOUT_MS: '2500',
  REPORT_SYNC_METRICS__PORT: 'null',
};

function cli(args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  const cwd = mkdtempSync(join(tmpdir(), 'report-sync-mistyped-url-'));
  dirs.push(cwd);
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI_BIN, ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...UPSTREAM, ...env }, timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

const RUN = ['run', '--from', '2024-01-02', '--to', '2024-01-02'];
const BACKFILL = ['backfill', '--from', '2024-01-02', '--to', '2024-01-02'];

/** Variable, value (its password is "Zq" and a digit), what `config` shows, and the commands that refuse it naming the variable. */
const MISTYPED: [string, string, string, string[][]][] = [
  ['DATABASE_URL', 'postgres:/u:Zq1@db.example/warehouse', 'postgres:/u:[redacted]@db.example/warehouse', [RUN, ['dashboard', '--port', '0'], ['status']]],
  ['DATABASE_URL', 'u:Zq2@db.example:5432/warehouse', 'u:[redacted]@db.example:5432/warehouse', [RUN, ['dashboard', '--port', '0'], ['migrate']]],
  ['REDIS_URL', 'redis:/:Zq3@127.0.0.1:6379', 'redis:/:[redacted]@127.0.0.1:6379', [['worker'], BACKFILL]],
  ['REDIS_URL', 'default:Zq4@127.0.0.1:6379', 'default:[redacted]@127.0.0.1:6379', [['worker'], BACKFILL]],
  ['REPORT_BASE_URL', 'gw-user:Zq5@gw.example.com/prefix', 'gw-user:[redacted]@gw.example.com/prefix', [RUN]],
  ['REPORT_AUTH_URL', 'idp-user:Zq6@idp.example.com/auth', 'idp-user:[redacted]@idp.example.com/auth', [RUN]],
];

describe('a password in a URL typed wrong is printed nowhere', () => {
  it.each(MISTYPED)('%s=%s', { timeout: 60_000 }, async (variable, value, shown, commands) => {
    const password = /:(Zq\d)@/.exec(value)![1]!;
    const env = { [variable]: value };
    // Every command is a process of its own that reaches nothing: all of them at once.
    const [config, json, ...results] = await Promise.all([cli(['config'], env), cli(['config', '--json'], env), ...commands.map((command) => cli(command, env))]);
    expect(config.code).toBe(0);
    expect(config.output).toMatch(new RegExp(`${variable} +${shown.replace(/[[\]\\.?*+()]/g, '\\$&')} +environment`));
    expect((JSON.parse(json.output) as { environment: Record<string, { value: string }> }).environment[variable]!.value).toBe(shown);
    results.forEach((result, index) => {
      const command = commands[index]!.join(' ');
      expect(result.code, `${command}: ${result.output}`).toBe(2);
      expect(result.output, command).toContain(variable);
      expect(result.output, command).not.toContain(password);
    });
    for (const result of [config, json]) expect(result.output).not.toContain(password);
  });

  it('a well-formed REDIS_URL: the reconnect warnings show it with its password redacted', { timeout: 30_000 }, async () => {
    const result = await cli(BACKFILL, { REDIS_URL: 'redis://:Zq7@127.0.0.1:9' });
    expect(result.code).toBe(2);
    expect(result.output).toContain('"redis":"redis://:[redacted]@127.0.0.1:9"');
    expect(result.output).toContain('Redis connection trouble; reconnecting');
    expect(result.output).toContain('Redis at redis://:[redacted]@127.0.0.1:9 did not answer');
    expect(result.output).not.toContain('Zq7');
  });

  it('a well-formed DATABASE_URL: the dashboard shows its warehouse with the password redacted, in /api/meta and at start', { timeout: 30_000 }, async () => {
    const seeded = await seededWarehouse('postgres', []);
    // Postgres trusts local connections here, so any password is accepted and the dashboard starts.
    const databaseUrl = seeded.env.DATABASE_URL!.replace('://postgres@', '://postgres:Zq8@');
    expect(databaseUrl).toContain(':Zq8@');
    const dashboard = startCliProcess(['dashboard', '--port', '0'], { cwd: seeded.dir, env: { DATABASE_URL: databaseUrl } });
    try {
      await until(
        () => /at (http:\/\/\S+)/.test(dashboard.stdout()) || dashboard.child.exitCode !== null,
        15_000,
        () => `the dashboard to listen (output: ${dashboard.output()})`,
      );
      const url = /at (http:\/\/\S+)/.exec(dashboard.stdout())![1]!;
      const meta = (await (await fetch(`${url}api/meta`)).json()) as { warehouse: string };
      expect(meta.warehouse).toBe(databaseUrl.replace(':Zq8@', ':[redacted]@'));
      expect(dashboard.output()).toContain(`Dashboard of ${meta.warehouse} at`);
      expect(dashboard.output()).not.toContain('Zq8');
    } finally {
      dashboard.child.kill('SIGTERM');
      await dashboard.exited;
      await seeded.close();
    }
  });
});
