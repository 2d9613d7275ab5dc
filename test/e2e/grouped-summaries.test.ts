import { afterEach, describe, expect, it } from 'vitest';
import { shiftIsoDate, todayIn } from '../../src/dates/report-date.js';
import type { ReportType } from '../../src/reports/report-types.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';

/*
 * A run with two error codes across three portfolios ends with one summary of them: grouped by
 * code, then portfolio, with true counts, a few example slices and the reason once per group, then
 * the exact command that retries them. Run here for `run`, `nightly` and `backfill --wait`; each
 * printed retry command is then run as printed and leaves no failure behind.
 */

const PORTFOLIOS = [1001, 1002, 1003];
const TYPES: readonly ReportType[] = ['index', 'constituent.close'];
const SETTINGS = { portfolios: PORTFOLIOS, reportTypes: [...TYPES] };

interface Failure {
  readonly portfolioId: number;
  readonly reportType: ReportType;
  readonly date: string;
  readonly code: 'EXPORT_FORBIDDEN' | 'FILE_INVALID';
}

/** Portfolio 1001 forbidden on every slice, 1003 on its index of the last day, one unreadable index file of 1002. */
function failuresOver(dates: readonly string[]): Failure[] {
  const last = dates.at(-1)!;
  return [
    ...dates.flatMap((date) => TYPES.map((reportType) => ({ portfolioId: 1001, reportType, date, code: 'EXPORT_FORBIDDEN' as const }))),
    { portfolioId: 1003, reportType: 'index', date: last, code: 'EXPORT_FORBIDDEN' },
    { portfolioId: 1002, reportType: 'index', date: last, code: 'FILE_INVALID' },
  ];
}

function script(rig: SyncRig | QueueRig, failures: readonly Failure[]): void {
  for (const failure of failures) {
    rig.simulator.script(
      failure.portfolioId,
      failure.reportType,
      failure.date,
      failure.code === 'EXPORT_FORBIDDEN'
        ? [{ status: 403 }]
        : [{ status: 200, body: '{"effectiveDate":"x"}', headers: { 'Content-Type': 'application/json', 'Content-Disposition': 'attachment; filename="bad.json"' } }],
    );
  }
}

function unscript(rig: SyncRig | QueueRig, failures: readonly Failure[]): void {
  for (const failure of failures) rig.simulator.script(failure.portfolioId, failure.reportType, failure.date, []);
}

/** The summary's failure section, from its header to the retry line, checked line by line; returns the retry command's arguments. */
function expectGroupedSummary(stdout: string, failures: readonly Failure[], command: 'run' | 'backfill'): string[] {
  const lines = stdout.split('\n');
  const start = lines.findIndex((line) => line.startsWith('Failed slices by error code and portfolio'));
  expect(start, stdout).toBeGreaterThanOrEqual(0);
  const forbidden1001 = failures.filter((failure) => failure.portfolioId === 1001).length;
  const section = lines.slice(
    start,
    lines.findIndex((line, i) => i > start && line === ''),
  );
  expect(section[0]).toBe(`Failed slices by error code and portfolio (${failures.length} slices):`);
  // Codes with the most slices first, then portfolios with the most slices first.
  expect(section.filter((line) => /^ {2}\S/.test(line))).toEqual([`  EXPORT_FORBIDDEN: ${forbidden1001 + 1} slices`, '  FILE_INVALID: 1 slice']);
  const portfolioLines = section.filter((line) => /^ {4}portfolio/.test(line));
  expect(portfolioLines.map((line) => line.replace(/, e\.g\. .*/, ''))).toEqual([
    `    portfolio 1001: ${forbidden1001} slices`,
    '    portfolio 1003: 1 slice',
    '    portfolio 1002: 1 slice',
  ]);
  // A few examples each, never every slice: 1001's slices are three examples, not one line each.
  const examples = portfolioLines.map((line) => line.split(', e.g. ')[1]!.split(', '));
  expect(examples.map((list) => list.length)).toEqual([3, 1, 1]);
  const last = failures.at(-1)!.date;
  expect(examples[1]).toEqual([`index ${last}`]);
  expect(examples[2]).toEqual([`index ${last}`]);
  // The reason once per group, under it.
  const reasons = section.filter((line) => /^ {6}\S/.test(line));
  expect(reasons).toHaveLength(3);
  expect(reasons[0]).toMatch(/^ {6}EXPORT_FORBIDDEN: /);
  expect(reasons[2]).toMatch(/^ {6}FILE_INVALID: /);
  expect(section).toHaveLength(1 + 2 + 3 + 3);

  const dates = failures.map((failure) => failure.date).sort();
  const retry = lines.find((line) => line.startsWith('Retry them: '));
  // The command is what the user copies: checked whole.
  expect(retry).toBe(
    `Retry them: report-sync ${command} --from ${dates[0]} --to ${dates.at(-1)} --portfolios 1001,1002,1003 --report-types constituent.close,index --only-missing`,
  );
  return retry!.slice('Retry them: report-sync '.length).split(' ');
}

async function failedInLedger(rig: SyncRig | QueueRig): Promise<number> {
  const warehouse = await rig.warehouse();
  const rows = await warehouse.db.selectFrom('report_loads').select('status').where('status', '=', 'failed').execute();
  return rows.length;
}

describe('failures grouped at the end of a run', () => {
  let rig: SyncRig | QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('run: two codes across three portfolios, then its retry command, run as printed, loads them', async () => {
    const sync = await startSyncRig({ settings: SETTINGS });
    rig = sync;
    const failures = failuresOver(['2024-03-04', '2024-03-05', '2024-03-06', '2024-03-07']);
    script(sync, failures);
    const result = await sync.cli(['run', '--from', '2024-03-04', '--to', '2024-03-07']);
    expect(result.code, result.stdout).toBe(1);
    const retry = expectGroupedSummary(result.stdout, failures, 'run');
    // The command is what the user copies: checked whole.
    expect(result.stdout).toContain('Every failed slice: report-sync status --failed --json --from 2024-03-04 --to 2024-03-07');
    // Ten forbidden slices of one portfolio do not make ten lines: the whole summary stays short.
    expect(result.stdout.split('\n').length).toBeLessThan(40);

    unscript(sync, failures);
    sync.simulator.resetCounters();
    const retried = await sync.cli(retry);
    expect(retried.code, retried.stdout).toBe(0);
    // Exactly the failed slices were requested again: the loaded ones were skipped.
    expect(sync.simulator.counters.exportRequests).toBe(failures.length);
    expect(await failedInLedger(sync)).toBe(0);
  });

  it('nightly: the same grouping for yesterday and its lookback', async () => {
    const sync = await startSyncRig({ settings: { ...SETTINGS, schedule: { timeZone: 'UTC', lookbackDays: 1 } } });
    rig = sync;
    const yesterday = shiftIsoDate(todayIn('UTC'), -1);
    const failures = failuresOver([shiftIsoDate(yesterday, -1), yesterday]);
    script(sync, failures);
    const result = await sync.cli(['nightly']);
    expect(result.code, result.stdout).toBe(1);
    const retry = expectGroupedSummary(result.stdout, failures, 'run');

    unscript(sync, failures);
    const retried = await sync.cli(retry);
    expect(retried.code, retried.stdout).toBe(0);
    expect(await failedInLedger(sync)).toBe(0);
  });

  it('backfill --wait: the same grouping from the ledger, whichever worker failed them', async () => {
    const queued = await startQueueRig({ settings: SETTINGS });
    rig = queued;
    const failures = failuresOver(['2024-03-04', '2024-03-05', '2024-03-06']);
    script(queued, failures);
    const worker = queued.startWorker();
    await queued.ready(worker);
    const result = await queued.cli(['backfill', '--from', '2024-03-04', '--to', '2024-03-06', '--wait']);
    expect(result.code, result.stdout).toBe(1);
    const retry = expectGroupedSummary(result.stdout, failures, 'backfill');

    unscript(queued, failures);
    const retried = await queued.cli([...retry, '--wait']);
    expect(retried.code, retried.stdout).toBe(0);
    expect(await failedInLedger(queued)).toBe(0);
  }, 60_000);
});
