import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCliProcess, type CliProcess } from '../helpers/cli-process.js';
import { ledgerRow } from '../helpers/ledger-row.js';
import { seededWarehouse, type SeededWarehouse } from '../helpers/seeded-warehouse.js';
import { TEST_REDIS_URL, testPrefix } from '../helpers/test-redis.js';
import { until } from '../helpers/until.js';

/*
 * Who may read the dashboard: without dashboard.token, loopback only and no login (as before);
 * with it, every route asks for it, as a Bearer token or a Basic password; beyond loopback it
 * will not start without one; and another site's page gets nothing from the API.
 */

const TOKEN = 'dashboard-token-7f3e9b2c41d8a6e5';
const COVERAGE = '/api/coverage?from=2024-03-04&to=2024-03-05';

/** A GET with the headers given (fetch may drop Sec-Fetch-*), to 127.0.0.1 at the port of `url`. */
function get(url: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const port = new URL(url).port;
  return new Promise((resolve, reject) => {
    const req = request(`http://127.0.0.1:${port}${path}`, { headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

async function startDashboard(seeded: SeededWarehouse, args: string[], env: Record<string, string> = {}): Promise<{ process: CliProcess; url: string }> {
  const process = startCliProcess(['dashboard', '--port', '0', ...args], { cwd: seeded.dir, env: { ...seeded.env, ...env } });
  await until(
    () => /at (http:\/\/\S+)/.test(process.stdout()) || process.child.exitCode !== null,
    15_000,
    () => `the dashboard to listen (output: ${process.output()})`,
  );
  const url = /at (http:\/\/\S+)/.exec(process.stdout())?.[1];
  if (!url) throw new Error(`the dashboard did not start: ${process.output()}`);
  return { process, url };
}

async function stop(process: CliProcess): Promise<void> {
  process.child.kill('SIGTERM');
  expect(await process.exited).toBe(0);
}

describe('dashboard access', () => {
  let seeded: SeededWarehouse;
  const redis = testPrefix();

  beforeAll(async () => {
    seeded = await seededWarehouse('sqlite', [ledgerRow(1001, 'index', '2024-03-04', 'loaded')]);
  });
  afterAll(async () => {
    await seeded?.close();
    await redis.cleanup();
  });

  it('without a token: loopback answers as before, with no login; a cross-site API request gets 403', async () => {
    const { process, url } = await startDashboard(seeded, []);
    try {
      for (const path of ['/', '/api/meta', COVERAGE]) {
        const answer = await get(url, path);
        expect(answer.status, path).toBe(200);
        expect(answer.headers['www-authenticate'], path).toBeUndefined();
      }
      // A page on another site may send this GET (to 127.0.0.1, with a Host that passes), not read it.
      expect((await get(url, COVERAGE, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' })).status).toBe(403);
      expect((await get(url, COVERAGE, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
      expect((await get(url, COVERAGE, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' })).status).toBe(403);
      expect((await get(url, '/assets/dashboard.js', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' })).status).toBe(403);
      // The page's own requests, a typed address, and a link followed from elsewhere to the page.
      for (const site of ['same-origin', 'same-site', 'none']) expect((await get(url, COVERAGE, { 'sec-fetch-site': site })).status, site).toBe(200);
      expect((await get(url, '/', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' })).status).toBe(200);
    } finally {
      await stop(process);
    }
  });

  it('without a token, refuses to listen beyond loopback: exit 2 at once, naming the setting', async () => {
    const refused = startCliProcess(['dashboard', '--port', '0', '--host', '0.0.0.0'], { cwd: seeded.dir, env: seeded.env });
    expect(await refused.exited).toBe(2);
    expect(refused.output()).toContain('without a login: set dashboard.token (REPORT_SYNC_DASHBOARD__TOKEN)');
    expect(refused.stdout()).not.toMatch(/at http/);
  });

  it('refuses a token too short to be a secret, without quoting it', async () => {
    const refused = startCliProcess(['dashboard', '--port', '0'], { cwd: seeded.dir, env: { ...seeded.env, REPORT_SYNC_DASHBOARD__TOKEN: 'hunter2x' } });
    expect(await refused.exited).toBe(2);
    expect(refused.output()).toContain('dashboard.token (from REPORT_SYNC_DASHBOARD__TOKEN): too short for a secret');
    expect(refused.output()).not.toContain('hunter2x');
  });

  it('with a token, on 0.0.0.0: every route asks for it; Bearer and Basic (any user) are let in', async () => {
    const env = { REPORT_SYNC_DASHBOARD__TOKEN: TOKEN, REDIS_URL: TEST_REDIS_URL, REPORT_SYNC_QUEUE__PREFIX: redis.prefix, LOG_LEVEL: 'trace' };
    const { process, url } = await startDashboard(seeded, ['--host', '0.0.0.0'], env);
    try {
      expect(url).toMatch(/^http:\/\/0\.0\.0\.0:\d+\/$/);
      for (const path of ['/', '/assets/dashboard.js', '/api/meta', COVERAGE, '/api/queue', '/queues', '/favicon.ico']) {
        const none = await get(url, path);
        expect(none.status, path).toBe(401);
        expect(none.headers['www-authenticate'], path).toBe('Basic realm="report-sync"');
        expect(none.body, path).not.toContain('1001');
        for (const wrong of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, basic('admin', 'guess'), basic(TOKEN, ''), 'Bearer', TOKEN]) {
          expect((await get(url, path, { authorization: wrong })).status, `${path} with ${wrong}`).toBe(401);
        }
        const bearer = await get(url, path, { authorization: `Bearer ${TOKEN}` });
        expect(bearer.status, path).toBeLessThan(300);
        expect((await get(url, path, { authorization: basic('anyone', TOKEN) })).status, path).toBe(bearer.status);
        expect((await get(url, path, { authorization: basic('', TOKEN) })).status, path).toBe(bearer.status);
      }
      // Cross-site is refused even with the token: a browser sends a Basic login it was given to any page's request.
      expect((await get(url, COVERAGE, { authorization: basic('op', TOKEN), 'sec-fetch-site': 'cross-site' })).status).toBe(403);
      expect((await get(url, COVERAGE, { authorization: basic('op', TOKEN), 'sec-fetch-site': 'same-origin' })).status).toBe(200);
      expect(process.stdout()).toContain('Login: the token of dashboard.token');
      expect(process.output()).not.toContain(TOKEN);
    } finally {
      await stop(process);
    }
  });

  it('shows the token in report-sync config as set only, from the environment or a settings file', async () => {
    const fromEnv = startCliProcess(['config'], { cwd: seeded.dir, env: { REPORT_SYNC_DASHBOARD__TOKEN: TOKEN } });
    expect(await fromEnv.exited).toBe(0);
    expect(fromEnv.stdout()).toMatch(/dashboard\.token +set +REPORT_SYNC_DASHBOARD__TOKEN \(environment\)/);
    writeFileSync(join(seeded.dir, 'with-token.json'), JSON.stringify({ dashboard: { token: TOKEN } }));
    const fromFile = startCliProcess(['config', '--json', '--config', 'with-token.json'], { cwd: seeded.dir, env: {} });
    expect(await fromFile.exited).toBe(0);
    expect((JSON.parse(fromFile.stdout()) as { settings: Record<string, unknown> }).settings['dashboard.token']).toEqual({ value: 'set', source: 'with-token.json (--config)' });
    const unset = startCliProcess(['config'], { cwd: seeded.dir, env: {} });
    expect(await unset.exited).toBe(0);
    expect(unset.stdout()).toMatch(/dashboard\.token +unset +default/);
    for (const run of [fromEnv, fromFile, unset]) expect(run.output()).not.toContain(TOKEN);
  });
});
