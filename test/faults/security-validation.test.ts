import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_TYPES } from '../../src/reports/report-types.js';
import { startQueueRig } from '../helpers/queue-rig.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { TEST_REDIS_URL } from '../helpers/test-redis.js';

/*
 * Portfolio ids, report types and dates are checked before they reach a URL or a query: from the
 * command line, from settings files and from job data in Redis. A bad one stops the command with
 * exit 2 and a message naming it (and, for report types, the allowed ones) before any request is
 * sent and before the warehouse is opened; a tampered job is refused by the worker.
 */

const HOSTILE_REPORT_TYPES = ["index'; DROP TABLE report_loads;--", 'index&format=csv', '../index', 'index%00', 'index\u001b[2J'];
const HOSTILE_PORTFOLIOS = ['1001;DROP', '-1', '1e3', '0x10', '99999999999999999999', '1001,,1002', '0', '1001 OR 1=1'];
const HOSTILE_DATES = ['2024-02-30', '2024-1-1', '20240101', '2024-01-01T00:00', "2024-01-01' OR 1=1", '2024-01-01%27'];

/** What a date flag says of each: a day that does not exist is told apart from a value that is no date. */
function dateProblem(date: string): string {
  return date === '2024-02-30' ? '2024-02-30 is not a day of the calendar: February 2024 has 29 days' : `${JSON.stringify(date)} is not a date; expected YYYY-MM-DD`;
}

describe('values are validated before they reach a URL or a query', () => {
  let rig: SyncRig;
  let warehouseFile: string;

  beforeAll(async () => {
    rig = await startSyncRig();
    warehouseFile = rig.databaseUrl.slice('sqlite:'.length);
  });
  afterEach(() => rmSync(join(rig.dir, 'config/local.json'), { force: true }));
  afterAll(async () => {
    await rig?.close();
  });

  /** Nothing was asked of the service and the warehouse was never opened. */
  function expectUntouched(): void {
    expect(rig.simulator.counters.tokenRequests).toBe(0);
    expect(rig.simulator.counters.exportRequests).toBe(0);
    expect(existsSync(warehouseFile)).toBe(false);
  }

  const commandLines: [string, string[], RegExp][] = [
    ...HOSTILE_REPORT_TYPES.map((type): [string, string[], RegExp] => [
      `--report-types ${JSON.stringify(type)}`,
      ['--report-types', `constituent.close,${type}`],
      new RegExp(`${escapeRegExp(JSON.stringify(type))} is not a report type; use one of ${escapeRegExp(REPORT_TYPES.join(', '))}`),
    ]),
    ...HOSTILE_PORTFOLIOS.map((ids): [string, string[], RegExp] => [
      `--portfolios ${JSON.stringify(ids)}`,
      ['--portfolios', ids],
      ids.includes(',,') ? /the portfolio list has an empty item/ : new RegExp(`${escapeRegExp(JSON.stringify(ids))} is not a portfolio id`),
    ]),
    ['--from 0224-01-08 (a year typed wrong)', ['--from', '0224-01-08', '--to', '2024-01-09'], /--from 0224-01-08 is before dates\.earliest \(2000-01-01\): check the year/],
    ['--to 2204-01-08 (a year typed wrong)', ['--from', '2024-01-08', '--to', '2204-01-08'], /--to 2204-01-08 is after tomorrow/],
    ...HOSTILE_DATES.flatMap((date): [string, string[], RegExp][] => [
      [
        `--from ${JSON.stringify(date)}`,
        ['--from', date, '--to', '2024-03-01'],
        new RegExp(`'--from <date>' argument '${escapeRegExp(date)}' is invalid\\. ${escapeRegExp(dateProblem(date))}`),
      ],
      [
        `--to ${JSON.stringify(date)}`,
        ['--from', '2024-01-01', '--to', date],
        new RegExp(`'--to <date>' argument '${escapeRegExp(date)}' is invalid\\. ${escapeRegExp(dateProblem(date))}`),
      ],
    ]),
  ];

  it.each(commandLines)('refuses %s on the command line with exit 2', async (_name, args, message) => {
    for (const command of ['run', 'status', 'backfill']) {
      const result = await rig.cli([command, ...args]);
      expect(result.code, `${command}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    expectUntouched();
  });

  const settingsFiles: [string, Record<string, unknown>, RegExp][] = [
    ...HOSTILE_REPORT_TYPES.map((type): [string, Record<string, unknown>, RegExp] => [
      `reportTypes ${JSON.stringify(type)}`,
      { reportTypes: ['index', type] },
      new RegExp(`reportTypes\\.1 \\(from .*local\\.json\\): ${escapeRegExp(JSON.stringify(type))} is not allowed; use one of ${escapeRegExp(REPORT_TYPES.join(', '))}`),
    ]),
    ...HOSTILE_REPORT_TYPES.map((type): [string, Record<string, unknown>, RegExp] => [
      `a formats key ${JSON.stringify(type)}`,
      { formats: { index: 'json', [type]: 'csv' } },
      new RegExp(`formats \\(from .*local\\.json\\): unknown key ${escapeRegExp(JSON.stringify(type))}; use one of ${escapeRegExp(REPORT_TYPES.join(', '))}`),
    ]),
    [`a format "csv&x=1"`, { formats: { index: 'csv&x=1' } }, /formats\.index \(from .*local\.json\): "csv&x=1" is not allowed; use one of json, csv/],
    [`portfolios "1001;DROP"`, { portfolios: ['1001;DROP'] }, /portfolios\.0 \(from .*local\.json\): .*expected number.* \(got "1001;DROP"\)/],
    ['portfolios -1', { portfolios: [-1] }, /portfolios\.0 \(from .*local\.json\): .* \(got -1\)/],
    ['portfolios 1e20', { portfolios: [1e20] }, /portfolios\.0 \(from .*local\.json\): .*2147483647 \(got 100000000000000000000\)/],
    ['portfolios 1.5', { portfolios: [1.5] }, /portfolios\.0 \(from .*local\.json\): .* \(got 1\.5\)/],
  ];

  it.each(settingsFiles)('refuses %s in config/local.json with exit 2', async (_name, settings, message) => {
    writeFileSync(join(rig.dir, 'config/local.json'), JSON.stringify(settings));
    for (const command of ['run', 'status', 'migrate', 'nightly']) {
      const result = await rig.cli([command]);
      expect(result.code, `${command}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    expectUntouched();
  });
});

describe('a queued job whose data was changed in Redis', () => {
  it('is refused by the worker before any request or query, and the others still load', async () => {
    const rig = await startQueueRig({ settings: { portfolios: [1001], reportTypes: ['index'] } });
    const redis = new Redis(TEST_REDIS_URL);
    const queue = new Queue('report-exports', { connection: redis, prefix: rig.prefix });
    try {
      const queued = await rig.cli(['backfill', '--from', '2024-05-06', '--to', '2024-05-10']);
      expect(queued.code).toBe(0);
      const tampered: Record<string, unknown> = {
        '2024-05-06': { portfolioId: '1001;DROP TABLE report_loads', reportType: 'index', reportDate: '2024-05-06' },
        '2024-05-07': { portfolioId: 1001, reportType: 'index&format=csv', reportDate: '2024-05-07' },
        '2024-05-08': { portfolioId: 1001, reportType: 'index', reportDate: "2024-05-08' OR 1=1" },
        '2024-05-09': 'not a slice',
      };
      for (const [date, data] of Object.entries(tampered)) {
        const key = `${rig.prefix}:report-exports:slice-1001-index-${date}`;
        expect(await redis.hexists(key, 'data')).toBe(1);
        await redis.hset(key, 'data', JSON.stringify(data));
      }

      const worker = rig.startWorker();
      await rig.ready(worker);
      const deadline = Date.now() + 20_000;
      let counts = await queue.getJobCounts('completed', 'failed');
      // getJobCounts is typed as a map from state name to count, so a state may be absent as far as the types know.
      while ((counts.completed ?? 0) + (counts.failed ?? 0) < 5 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        counts = await queue.getJobCounts('completed', 'failed');
      }
      expect(counts).toEqual({ completed: 1, failed: 4 });

      const failed = await queue.getFailed();
      const reasons = Object.fromEntries(failed.map((job) => [String(job.id).slice(-10), job.failedReason]));
      expect(reasons['2024-05-06']).toMatch(/^USAGE_INVALID: job data is not a valid slice: portfolioId "1001;DROP TABLE report_loads" is not a portfolio id/);
      expect(reasons['2024-05-07']).toMatch(/^USAGE_INVALID: .*reportType "index&format=csv" is not a report type; use one of index, /);
      expect(reasons['2024-05-08']).toMatch(/^USAGE_INVALID: .*reportDate "2024-05-08' OR 1=1" is not a date/);
      expect(reasons['2024-05-09']).toMatch(/^USAGE_INVALID: .*must be an object/);
      // Refused for good (no retries), before any request; only the untouched slice reached the service.
      for (const job of failed) expect(job.attemptsMade).toBe(1);
      expect(rig.simulator.counters.exportRequests).toBe(1);
      expect(worker.output()).toMatch(/refused a job whose data is not a valid slice/);

      const warehouse = await rig.warehouse();
      const ledger = await warehouse.db.selectFrom('report_loads').select(['portfolio_id', 'report_type', 'report_date', 'status']).execute();
      expect(ledger).toEqual([{ portfolio_id: 1001, report_type: 'index', report_date: '2024-05-10', status: 'loaded' }]);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    } finally {
      await queue.close();
      redis.disconnect();
      await rig.close();
    }
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
