import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';

/*
 * `run --failed` (and `backfill --failed`) take only the slices whose last outcome is failed,
 * `--code` only those failed with some codes: exactly those are requested again, nothing else.
 */

// Monday to Wednesday: weekdays, so every slice has rows. 2 portfolios × 2 report types × 3 days = 12 slices.
const RANGE = ['--from', '2024-03-04', '--to', '2024-03-06', '--portfolios', '1001,1002', '--report-types', 'index,constituent.close'];

type Seeded = { portfolioId: number; reportType: 'index' | 'constituent.close'; date: string; code: string };

/** Two slices answered 403 (EXPORT_FORBIDDEN), one a JSON object instead of records (FILE_INVALID). */
const FAILURES: readonly Seeded[] = [
  { portfolioId: 1001, reportType: 'index', date: '2024-03-04', code: 'EXPORT_FORBIDDEN' },
  { portfolioId: 1002, reportType: 'constituent.close', date: '2024-03-05', code: 'EXPORT_FORBIDDEN' },
  { portfolioId: 1002, reportType: 'index', date: '2024-03-06', code: 'FILE_INVALID' },
];

const keyOf = (slice: { portfolioId: number; reportType: string; date: string }) => `${slice.portfolioId}:${slice.reportType}:${slice.date}`;

/** Scripts the simulator to fail the slices of FAILURES once each. */
function scriptFailures(rig: SyncRig | QueueRig): void {
  for (const failure of FAILURES) {
    rig.simulator.script(
      failure.portfolioId,
      failure.reportType,
      failure.date,
      failure.code === 'EXPORT_FORBIDDEN'
        ? [{ status: 403 }]
        : [{ status: 200, body: '{"effectiveDate":"2024-03-06"}', headers: { 'Content-Type': 'application/json', 'Content-Disposition': 'attachment; filename="bad.json"' } }],
    );
  }
}

/** Forgets whatever is left of the scripts: the slices answer normally again. */
function unscript(rig: SyncRig | QueueRig): void {
  for (const failure of FAILURES) rig.simulator.script(failure.portfolioId, failure.reportType, failure.date, []);
}

interface LedgerRow {
  key: string;
  status: string;
  errorCode: string | null;
  checkedAt: string;
}

async function ledgerOf(rig: SyncRig | QueueRig): Promise<Map<string, LedgerRow>> {
  const warehouse = await rig.warehouse();
  const rows = await warehouse.db.selectFrom('report_loads').select(['portfolio_id', 'report_type', 'report_date', 'status', 'error_code', 'checked_at']).execute();
  return new Map(
    rows.map((row) => {
      const key = keyOf({ portfolioId: Number(row.portfolio_id), reportType: row.report_type, date: String(row.report_date) });
      return [key, { key, status: row.status, errorCode: row.error_code, checkedAt: String(row.checked_at) }];
    }),
  );
}

/** The slices checked (so requested: every request ends in a ledger write) between two readings of the ledger. */
function checkedBetween(before: Map<string, LedgerRow>, after: Map<string, LedgerRow>): string[] {
  return [...after.values()]
    .filter((row) => before.get(row.key)?.checkedAt !== row.checkedAt)
    .map((row) => row.key)
    .sort();
}

describe('run --failed', () => {
  let rig: SyncRig;
  beforeEach(async () => {
    rig = await startSyncRig();
    scriptFailures(rig);
    const first = await rig.cli(['run', ...RANGE]);
    expect(first.code, first.stdout).toBe(1);
    unscript(rig);
    rig.simulator.resetCounters();
  });
  afterEach(async () => {
    await rig.close();
  });

  it('the first run left exactly the seeded failures, with their codes', async () => {
    const ledger = await ledgerOf(rig);
    expect(ledger.size).toBe(12);
    const failed = [...ledger.values()].filter((row) => row.status === 'failed');
    expect(failed.map((row) => [row.key, row.errorCode]).sort()).toEqual(FAILURES.map((failure) => [keyOf(failure), failure.code]).sort());
  });

  it('requests exactly the failed slices, and loads them', async () => {
    const before = await ledgerOf(rig);
    const result = await rig.cli(['run', ...RANGE, '--failed']);
    expect(result.code, result.stdout).toBe(0);
    expect(rig.simulator.counters.exportRequests).toBe(3);
    const after = await ledgerOf(rig);
    expect(checkedBetween(before, after)).toEqual(FAILURES.map(keyOf).sort());
    expect([...after.values()].every((row) => row.status === 'loaded')).toBe(true);
    expect(result.logLines.find((line) => line.planned !== undefined)).toMatchObject({ planned: 3 });
  });

  it('--code narrows to the failures with that code (any case), leaving the others failed', async () => {
    const before = await ledgerOf(rig);
    const forbidden = await rig.cli(['run', ...RANGE, '--code', 'export_forbidden']);
    expect(forbidden.code, forbidden.stdout).toBe(0);
    expect(rig.simulator.counters.exportRequests).toBe(2);
    const afterForbidden = await ledgerOf(rig);
    expect(checkedBetween(before, afterForbidden)).toEqual(
      FAILURES.filter((failure) => failure.code === 'EXPORT_FORBIDDEN')
        .map(keyOf)
        .sort(),
    );
    const invalid = FAILURES.find((failure) => failure.code === 'FILE_INVALID')!;
    expect(afterForbidden.get(keyOf(invalid))).toMatchObject({ status: 'failed', errorCode: 'FILE_INVALID' });

    rig.simulator.resetCounters();
    const rest = await rig.cli(['run', ...RANGE, '--failed', '--code', 'FILE_INVALID,EXPORT_NOT_FOUND']);
    expect(rest.code, rest.stdout).toBe(0);
    expect(rig.simulator.counters.exportRequests).toBe(1);
    expect(checkedBetween(afterForbidden, await ledgerOf(rig))).toEqual([keyOf(invalid)]);
  });

  it('requests nothing when nothing failed', async () => {
    expect((await rig.cli(['run', ...RANGE, '--failed'])).code).toBe(0);
    rig.simulator.resetCounters();
    const again = await rig.cli(['run', ...RANGE, '--failed']);
    expect(again.code, again.stdout).toBe(0);
    expect(rig.simulator.counters.exportRequests).toBe(0);
  });

  it.each([
    [['--failed', '--only-missing'], /--only-missing and --failed do not go together/],
    [['--code', 'FILE_INVALID', '--only-missing'], /--only-missing and --code do not go together/],
    [['--code', 'not a code'], /is not an error code/],
    [['--json'], /--json and --request-seconds go with --dry-run only/],
  ])('refuses %j with exit 2, requesting nothing', async (flags, message) => {
    const result = await rig.cli(['run', ...RANGE, ...flags]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(rig.simulator.counters.exportRequests).toBe(0);
    expect(rig.simulator.counters.tokenRequests).toBe(0);
  });
});

describe('backfill --failed', () => {
  let rig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('queues exactly the failed slices with the code; a worker requests only those', async () => {
    rig = await startQueueRig();
    scriptFailures(rig);
    const first = await rig.cli(['run', ...RANGE]);
    expect(first.code, first.stdout).toBe(1);
    unscript(rig);
    rig.simulator.resetCounters();
    const before = await ledgerOf(rig);

    const worker = rig.startWorker();
    await rig.ready(worker);
    const backfill = await rig.cli(['backfill', ...RANGE, '--code', 'EXPORT_FORBIDDEN', '--wait']);
    expect(backfill.code, `${backfill.stdout}${backfill.stderr}`).toBe(0);
    expect(backfill.stdout).toContain('Queued 2 slices from 2024-03-04 to 2024-03-06');
    expect(backfill.stdout).toContain('10 of the 12 in the range not failed with code EXPORT_FORBIDDEN');
    expect(rig.simulator.counters.exportRequests).toBe(2);
    const after = await ledgerOf(rig);
    expect(checkedBetween(before, after)).toEqual(
      FAILURES.filter((failure) => failure.code === 'EXPORT_FORBIDDEN')
        .map(keyOf)
        .sort(),
    );
    expect([...after.values()].filter((row) => row.status === 'failed').map((row) => row.errorCode)).toEqual(['FILE_INVALID']);
  }, 60_000);
});
