import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { capturedIo } from '../helpers/captured-io.js';
import { freePort } from '../helpers/free-port.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { TEST_POSTGRES_URL } from '../helpers/temp-warehouse.js';
import { untilSaid } from '../helpers/until.js';
import { CLI_BIN } from '../helpers/cli-bin.js';

/*
 * Commands that cannot start must say so at once, naming what to fix, with exit 2; none of them
 * hangs on a service that does not answer, and a worker waiting for Redis stops on one SIGTERM.
 */

const dir = mkdtempSync(join(tmpdir(), 'report-sync-fail-fast-'));
mkdirSync(join(dir, 'config'));
writeFileSync(join(dir, 'config/default.json'), JSON.stringify({ startup: { timeoutMs: 1_500 }, metrics: { port: 0 }, log: { level: 'info' } }));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const UPSTREAM = {
  REPORT_BASE_URL: 'http://127.0.0.1:9',
  REPORT_TOKEN_URL: 'http://127.0.0.1:9/token',
  REPORT_TENANT_ID: 'tenant',
  REPORT_CLIENT_ID: 'client',
  REPORT_CLIENT_SECRET: 'client-secret-value',
  REPORT_USERNAME: 'user',
  REPORT_PASSWORD: 'password-value',
};

async function cli(args: string[], env: Record<string, string> = {}, cwd = dir) {
  const io = capturedIo({ DATABASE_URL: `sqlite:${join(dir, 'warehouse.sqlite')}`, ...env }, cwd);
  const startedAt = Date.now();
  const code = await main(args, io);
  return { code, stdout: io.stdout.text, stderr: io.stderr.text, logs: io.logs.text, elapsedMs: Date.now() - startedAt };
}

/** A redis:// URL where nothing listens. */
async function deadRedisUrl(): Promise<string> {
  return `redis://127.0.0.1:${await freePort()}`;
}

describe('configuration errors that used to pass start-up', () => {
  it('a cron pattern the scheduler cannot use stops every command with exit 2, naming the key and the file', async () => {
    const project = mkdtempSync(join(tmpdir(), 'report-sync-cron-'));
    mkdirSync(join(project, 'config'));
    writeFileSync(join(project, 'config/default.json'), '{}');
    writeFileSync(join(project, 'config/local.json'), JSON.stringify({ schedule: { cron: '61 * * * *' } }));
    try {
      for (const command of ['scheduler', 'status', 'nightly']) {
        // A dead Redis, so that a regression cannot register a schedule on the shared server.
        const result = await cli([command], { REDIS_URL: await deadRedisUrl() }, project);
        expect(result.code, command).toBe(2);
        expect(result.stderr).toMatch(/schedule\.cron \(from .*local\.json\): not a cron pattern \(.*59.*\)/);
        expect(result.stderr).not.toContain('    at ');
      }
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });

  it('a Postgres database that does not exist is bad configuration (exit 2), for migrate and for run', async () => {
    const url = `${TEST_POSTGRES_URL}/report_sync_no_such_database`;
    const migrate = await cli(['migrate'], { DATABASE_URL: url });
    expect(migrate.code).toBe(2);
    expect(migrate.stderr).toMatch(/database "report_sync_no_such_database" does not exist \(3D000\); create it with createdb, or fix the database name in DATABASE_URL/);
    const run = await cli(['run', '--from', '2024-01-02', '--to', '2024-01-02'], { ...UPSTREAM, DATABASE_URL: url });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('3D000');
  });

  it('status on a mistyped SQLite path says there is no warehouse there and creates nothing', async () => {
    const typo = join(dir, 'no-such-dir', 'typo.sqlite');
    const result = await cli(['status', '--from', '2024-01-01', '--to', '2024-01-07'], { DATABASE_URL: `sqlite:${typo}` });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`there is no warehouse at ${typo} (DATABASE_URL)`);
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);
  });

  it('status on a SQLite file without the tables says to migrate, and leaves it without them', async () => {
    const empty = join(dir, 'empty.sqlite');
    writeFileSync(empty, '');
    const result = await cli(['status'], { DATABASE_URL: `sqlite:${empty}` });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('has no report-sync tables');
    const again = await cli(['status'], { DATABASE_URL: `sqlite:${empty}` });
    expect(again.stderr).toContain('has no report-sync tables');
  });
});

describe('one-shot commands against an unreachable Redis', () => {
  it.each([
    ['backfill', ['backfill', '--from', '2024-01-01', '--to', '2024-01-02']],
    ['backfill --wait', ['backfill', '--from', '2024-01-01', '--to', '2024-01-02', '--wait']],
    ['scheduler', ['scheduler']],
  ])('%s exits 2 within startup.timeoutMs, naming REDIS_URL', async (_name, args) => {
    const redisUrl = await deadRedisUrl();
    const result = await cli(args, { REDIS_URL: redisUrl });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`Redis at ${redisUrl} did not answer within startup.timeoutMs (1500 ms`);
    expect(result.stderr).toContain('check REDIS_URL');
    expect(result.elapsedMs).toBeLessThan(5_000);
  });
});

describe('a Redis that refuses the password', () => {
  let redis: PrivateRedis | undefined;
  afterEach(async () => {
    await redis?.destroy();
    redis = undefined;
  });

  it.each([
    ['none given', (port: number) => `redis://127.0.0.1:${port}`, 'refused a connection without a password (NOAUTH'],
    ['a wrong one', (port: number) => `redis://:wrong@127.0.0.1:${port}`, 'refused the password in REDIS_URL (WRONGPASS'],
  ])('stops backfill at once with exit 2 when %s, saying to put it in REDIS_URL; the right one queues', async (_name, urlOf, said) => {
    redis = await startPrivateRedis({ password: 's3cret' });
    const range = ['backfill', '--from', '2024-01-01', '--to', '2024-01-02'];
    const refused = await cli(range, { ...UPSTREAM, REDIS_URL: urlOf(redis.port) });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(said);
    expect(refused.stderr).toContain('in REDIS_URL, as redis://:PASSWORD@host:6379');
    expect(refused.stderr).not.toContain('s3cret');
    // Not the wait for a Redis that does not answer: the answer was a refusal.
    expect(refused.elapsedMs).toBeLessThan(1_500);
    const queued = await cli(range, { ...UPSTREAM, REDIS_URL: redis.url });
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.stdout).toContain('Queued');
  });

  it('connects as before when REDIS_URL gives a password to a Redis that asks for none', async () => {
    redis = await startPrivateRedis();
    const queued = await cli(['backfill', '--from', '2024-01-01', '--to', '2024-01-02'], { ...UPSTREAM, REDIS_URL: `redis://:unneeded@127.0.0.1:${redis.port}` });
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.stdout).toContain('Queued');
  });
});

describe('a worker whose Redis is down', () => {
  let redis: PrivateRedis | undefined;
  afterEach(async () => {
    await redis?.destroy();
    redis = undefined;
  });

  function startWorker(redisUrl: string) {
    const child = spawn(process.execPath, [CLI_BIN, 'worker'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', ...UPSTREAM, REDIS_URL: redisUrl, DATABASE_URL: `sqlite:${join(dir, 'worker.sqlite')}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    return { child, exited, output: () => output };
  }

  async function stopWithin(worker: ReturnType<typeof startWorker>, ms: number) {
    const stoppedAt = Date.now();
    worker.child.kill('SIGTERM');
    const timer = setTimeout(() => worker.child.kill('SIGKILL'), ms);
    const exit = await worker.exited;
    clearTimeout(timer);
    return { exit, stoppedInMs: Date.now() - stoppedAt };
  }

  it('refused its password at start: exits 2 at once, saying to correct it in REDIS_URL, where a Redis that is down is waited for', async () => {
    redis = await startPrivateRedis({ password: 's3cret' });
    const worker = startWorker(`redis://:wrong@127.0.0.1:${redis.port}`);
    const timer = setTimeout(() => worker.child.kill('SIGKILL'), 15_000);
    const exit = await worker.exited;
    clearTimeout(timer);
    expect(exit, worker.output()).toBe(2);
    expect(worker.output()).toContain('refused the password in REDIS_URL (WRONGPASS');
  });

  it('from the start: keeps retrying with a bounded number of lines, and exits 0 on one SIGTERM', async () => {
    const worker = startWorker(await deadRedisUrl());
    // Timed from the first trouble line, not from the spawn: on a busy machine starting the worker
    // alone can take seconds. The next backoff steps (1 and 2 s after it) each add one line.
    await untilSaid(worker, 'Redis connection trouble', 15_000);
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    const { exit, stoppedInMs } = await stopWithin(worker, 5_000);
    expect(exit).toBe(0);
    expect(stoppedInMs).toBeLessThan(3_000);
    const troubleLines = worker
      .output()
      .split('\n')
      .filter((line) => line.includes('Redis connection trouble'));
    // One line per backoff step (0, 1, 2, 4 s… since the outage began), not one per failed command.
    expect(troubleLines.length).toBeGreaterThanOrEqual(2);
    expect(troubleLines.length).toBeLessThanOrEqual(6);
    expect(worker.output()).toContain('worker stopped before Redis answered');
    expect(worker.output()).not.toContain('worker error');
  }, 20_000);

  it('after it was running: exits 0 on one SIGTERM while Redis is gone', async () => {
    redis = await startPrivateRedis();
    const worker = startWorker(redis.url);
    const deadline = Date.now() + 20_000;
    while (!worker.output().includes('worker ready')) {
      if (Date.now() > deadline) throw new Error(`worker not ready:\n${worker.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await redis.crash();
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const { exit, stoppedInMs } = await stopWithin(worker, 8_000);
    expect(exit).toBe(0);
    expect(stoppedInMs).toBeLessThan(5_000);
    const lines = worker
      .output()
      .split('\n')
      .filter((line) => line.trim() !== '');
    expect(lines.length).toBeLessThan(20);
  }, 40_000);
});
