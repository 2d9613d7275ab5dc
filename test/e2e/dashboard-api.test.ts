import { request } from 'node:http';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCliProcess, type CliProcess } from '../helpers/cli-process.js';
import { freePort } from '../helpers/free-port.js';
import { ledgerRow } from '../helpers/ledger-row.js';
import { seededWarehouse, type SeededWarehouse } from '../helpers/seeded-warehouse.js';
import { until } from '../helpers/until.js';

/*
 * The dashboard's API as a careless or hostile client meets it, and the process as an operator
 * runs it: bad parameters named, nothing but reads, no answer to a foreign Host, a dead Redis said
 * at once without holding the grid hostage, and a clean stop on the first signal.
 */

async function startDashboard(seeded: SeededWarehouse, args: string[], env: Record<string, string> = {}): Promise<{ process: CliProcess; url: string }> {
  const process = startCliProcess(['dashboard', '--port', '0', ...args], { cwd: seeded.dir, env: { ...seeded.env, ...env } });
  await until(
    () => /at (http:\/\/\S+)/.test(process.stdout()) || process.child.exitCode !== null,
    15_000,
    () => `the dashboard to listen (output: ${process.output()})`,
  );
  return { process, url: /at (http:\/\/\S+)/.exec(process.stdout())![1]! };
}

async function stop(process: CliProcess, signal: NodeJS.Signals): Promise<number> {
  const started = Date.now();
  process.child.kill(signal);
  const code = await process.exited;
  expect(Date.now() - started).toBeLessThan(3_000);
  return code as number;
}

/** A GET with a Host header of our choosing (fetch will not send another host's name). */
function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the dashboard API and process', () => {
  let seeded: SeededWarehouse;
  let configFile: string;

  beforeAll(async () => {
    seeded = await seededWarehouse('sqlite', [
      ledgerRow(1001, 'index', '2024-03-04', 'loaded'),
      ledgerRow(1001, 'index', '2024-03-05', 'failed', { error: 'FILE_INVALID: line 2' }),
      ledgerRow(1002, 'index', '2024-03-04', 'no_data'),
    ]);
    configFile = join(seeded.dir, 'settings.json');
    writeFileSync(configFile, JSON.stringify({ portfolios: [1001, 1002, 1003], reportTypes: ['index'] }));
  });
  afterAll(async () => {
    await seeded?.close();
  });

  it('names bad parameters (400), reads only (405), answers no foreign Host (421), and counts exactly', async () => {
    const { process, url } = await startDashboard(seeded, ['--config', configFile]);
    try {
      for (const [query, named] of [
        ['from=2024-02-30', 'from: 2024-02-30 is not a day of the calendar: February 2024 has 29 days'],
        ['from=2024-3-1', 'from: "2024-3-1" is not a date; expected YYYY-MM-DD'],
        ['portfolios=1,,2', 'portfolios: the portfolio list has an empty item'],
        ['reportTypes=nope', 'reportTypes: "nope" is not a report type'],
        ['outcome=bogus', 'outcome: expected one of failed, running, queued, missing, no_data, loaded'],
        ['period=year', 'period: expected one of day, week, month'],
        ['columns=3', 'columns: expected a whole number of columns from 7 to 2000'],
        ['from=2024-03-05&to=2024-03-01', 'from 2024-03-05 is after to 2024-03-01'],
        ['from=2000-01-01&to=2024-12-31&period=day&portfolios=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18', 'choose a coarser period'],
      ]) {
        const response = await fetch(`${url}api/coverage?${query}`);
        expect(response.status, query).toBe(400);
        expect(((await response.json()) as { error: string }).error, query).toContain(named);
      }
      expect((await fetch(`${url}api/slice?portfolio=1001&reportType=index`)).status).toBe(400);

      // The same long range without a period: the server picks one that fits.
      const fitted = (await (await fetch(`${url}api/coverage?from=2000-01-01&to=2024-12-31&portfolios=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18`)).json()) as { period: string };
      expect(fitted.period).toBe('month');

      for (const method of ['POST', 'PUT', 'DELETE']) {
        const response = await fetch(`${url}api/coverage`, { method });
        expect(response.status, method).toBe(405);
        expect(response.headers.get('allow')).toBe('GET, HEAD');
      }
      const foreign = await getWithHost(`${url}api/meta`, `evil.example:${new URL(url).port}`);
      expect(foreign.status).toBe(421);
      expect(foreign.body).not.toContain('sqlite');
      const page = await fetch(url);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect((await fetch(`${url}nothing-here`)).status).toBe(404);

      // Week cells: a week that starts before the range is cut to it. 1003 is configured, never seen: all missing.
      const view = (await (await fetch(`${url}api/coverage?from=2024-03-05&to=2024-03-17&period=week`)).json()) as {
        columns: { from: string; to: string }[];
        rows: { portfolioId: number; cells: unknown[][] }[];
        totals: Record<string, number>;
      };
      expect(view.columns).toEqual([
        { from: '2024-03-05', to: '2024-03-10' },
        { from: '2024-03-11', to: '2024-03-17' },
      ]);
      expect(view.rows.map((row) => [row.portfolioId, row.cells])).toEqual([
        [
          1001,
          [
            ['failed', 0, 0, 1, 5, 0, 0],
            ['missing', 0, 0, 0, 7, 0, 0],
          ],
        ],
        [
          1002,
          [
            ['missing', 0, 0, 0, 6, 0, 0],
            ['missing', 0, 0, 0, 7, 0, 0],
          ],
        ],
        [
          1003,
          [
            ['missing', 0, 0, 0, 6, 0, 0],
            ['missing', 0, 0, 0, 7, 0, 0],
          ],
        ],
      ]);
      const failedOnly = (await (await fetch(`${url}api/coverage?from=2024-03-04&to=2024-03-05&outcome=failed`)).json()) as { rows: unknown[]; hiddenRows: number };
      expect(failedOnly.rows).toHaveLength(1);
      expect(failedOnly.hiddenRows).toBe(2);
      expect(await (await fetch(`${url}api/queue`)).json()).toBeNull();
    } finally {
      expect(await stop(process, 'SIGTERM')).toBe(0);
    }
  });

  it('with Redis unreachable: the queue says so within seconds, the grid still answers, and Ctrl-C stops it at once', async () => {
    const dead = `redis://127.0.0.1:${await freePort()}`;
    const { process, url } = await startDashboard(seeded, [], { REDIS_URL: dead });
    try {
      const started = Date.now();
      const queue = (await (await fetch(`${url}api/queue`)).json()) as { reachable: boolean; reason: string };
      expect(Date.now() - started).toBeLessThan(4_000);
      expect(queue.reachable).toBe(false);
      expect(queue.reason).toContain('unreachable');
      const grid = await fetch(`${url}api/coverage?from=2024-03-04&to=2024-03-05`);
      expect(grid.status).toBe(200);
      expect(((await grid.json()) as { queue: { reachable: boolean } }).queue.reachable).toBe(false);
    } finally {
      expect(await stop(process, 'SIGINT')).toBe(0);
    }
  });

  it('stops with exit 2 naming the fix: a port in use, a warehouse that is not there (and creates none)', async () => {
    const { process, url } = await startDashboard(seeded, []);
    try {
      const port = new URL(url).port;
      const second = startCliProcess(['dashboard', '--port', port], { cwd: seeded.dir, env: seeded.env });
      expect(await second.exited).toBe(2);
      expect(second.output()).toContain(`cannot serve the dashboard on 127.0.0.1:${port}`);
      expect(second.output()).toContain('(EADDRINUSE); choose another --port');
    } finally {
      expect(await stop(process, 'SIGTERM')).toBe(0);
    }
    const missing = join(seeded.dir, 'nowhere.sqlite');
    const none = startCliProcess(['dashboard', '--port', '0'], { cwd: seeded.dir, env: { DATABASE_URL: `sqlite:${missing}` } });
    expect(await none.exited).toBe(2);
    expect(none.output()).toContain('nowhere.sqlite');
    expect(existsSync(missing)).toBe(false);
  });
});
