import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DryRunPlan } from '../../src/planning/dry-run-plan.js';
import { freePort } from '../helpers/free-port.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';

/*
 * `run --dry-run` and `backfill --dry-run` say what would be requested and about how long it would
 * take, and do nothing else: no token, no export request, no Redis, no write, no new SQLite file.
 */

// Monday 4 to Thursday 7 March 2024: 2 portfolios × 2 report types × 4 days = 16 slices.
const RANGE = ['--from', '2024-03-04', '--to', '2024-03-07', '--portfolios', '1001,1002', '--report-types', 'index,constituent.close'];
// The first three days of it, synced before the dry runs: Thursday stays never attempted.
const SYNCED = ['--from', '2024-03-04', '--to', '2024-03-06', '--portfolios', '1001,1002', '--report-types', 'index,constituent.close'];

/** The variables that let a sync ask for a token: a dry run needs none of them. */
const NO_CREDENTIALS = { REPORT_CLIENT_ID: undefined, REPORT_CLIENT_SECRET: undefined, REPORT_USERNAME: undefined, REPORT_PASSWORD: undefined };

function sqliteFile(rig: SyncRig): string {
  return rig.databaseUrl.slice('sqlite:'.length);
}

async function dryRun(rig: SyncRig, args: string[], env: Record<string, string | undefined> = {}): Promise<DryRunPlan> {
  const result = await rig.cli([...args, '--dry-run', '--json'], env);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as DryRunPlan;
}

/** Every ledger row, every column: what a dry run must leave as it was. */
async function ledgerRows(rig: SyncRig) {
  const warehouse = await rig.warehouse();
  return warehouse.db.selectFrom('report_loads').selectAll().orderBy('report_date').orderBy('portfolio_id').orderBy('report_type').execute();
}

describe('dry run without a warehouse', () => {
  let rig: SyncRig;
  afterEach(async () => {
    await rig.close();
  });

  it('run --dry-run prints the plan, requests nothing, asks for no token and creates no SQLite file', async () => {
    rig = await startSyncRig();
    expect(existsSync(sqliteFile(rig))).toBe(false);
    const result = await rig.cli(['run', ...RANGE, '--dry-run'], NO_CREDENTIALS);
    expect(result.code, result.stderr).toBe(0);
    expect(rig.simulator.counters.exportRequests).toBe(0);
    expect(rig.simulator.counters.tokenRequests).toBe(0);
    expect(existsSync(sqliteFile(rig))).toBe(false);
    expect(existsSync(`${sqliteFile(rig)}-wal`)).toBe(false);

    // The dry run's printed report is the product: its lines are checked whole.
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe('Dry run of report-sync run: nothing is requested, loaded or written, and no token is asked for.');
    expect(result.stdout).toContain('Range 2024-03-04 to 2024-03-07: 2 portfolios × 2 report types × 4 days = 16 slices.');
    expect(result.stdout).toContain(`There is no warehouse at sqlite:${sqliteFile(rig)} yet: the ledger holds none of them (0 loaded, 0 no data, 0 failed)`);
    expect(lines.find((line) => line.startsWith('1001') && line.includes('index'))).toMatch(/^1001\s+index\s+4\s+0\s+0\s+0\s+4\s+4$/);
    expect(lines.find((line) => line.startsWith('total'))).toMatch(/^total\s+16\s+0\s+0\s+0\s+16\s+16$/);
    expect(result.stdout).toContain('Export requests: 16 (one per slice taken; each retryable failure adds up to 3 more, retry.attempts 4).');
    // concurrency 4 (the rig's settings), 16 requests: 4 waves of the assumed 2 s.
    expect(result.stdout).toContain('Estimated duration: about 8 s for this process: 16 requests, up to 4 at a time (concurrency 4, http.connections 64), at 2 s per request.');
    expect(result.stdout).toContain('is an assumption, not a measurement');
    expect(result.stdout).toContain('run is not rate-limited');

    // One of each is said in the singular.
    const single = await rig.cli(['run', '--from', '2024-03-04', '--to', '2024-03-04', '--portfolios', '1001', '--report-types', 'index', '--dry-run'], NO_CREDENTIALS);
    expect(single.code, single.stderr).toBe(0);
    expect(single.stdout).toContain('Range 2024-03-04 to 2024-03-04: 1 portfolio × 1 report type × 1 day = 1 slice.');
    expect(single.stdout).toContain('for this process: 1 request, up to 4 at a time');
  });

  it('--json holds the same counts; --only-missing with no ledger takes every slice', async () => {
    rig = await startSyncRig();
    const plan = await dryRun(rig, ['run', ...RANGE, '--only-missing'], NO_CREDENTIALS);
    expect(plan).toMatchObject({
      dryRun: true,
      command: 'run',
      range: { from: '2024-03-04', to: '2024-03-07', portfolios: [1001, 1002], reportTypes: ['index', 'constituent.close'], days: 4 },
      selection: { kind: 'missing' },
      warehouse: { location: `sqlite:${sqliteFile(rig)}`, exists: false },
      totals: { inRange: 16, loaded: 0, noData: 0, failed: 0, neverAttempted: 16, toRequest: 16 },
      exportRequests: 16,
      estimate: { seconds: 8, secondsPerRequest: 2, secondsPerRequestSource: 'assumed', measured: null, concurrency: 4, parallel: 4 },
    });
    expect(plan.pairs).toHaveLength(4);
    expect(existsSync(sqliteFile(rig))).toBe(false);
    expect(rig.simulator.counters.tokenRequests).toBe(0);
  });

  it('backfill --dry-run connects to no Redis (REDIS_URL at a closed port) and queues nothing', async () => {
    rig = await startSyncRig();
    const closed = `redis://127.0.0.1:${await freePort()}`;
    const started = Date.now();
    const result = await rig.cli(['backfill', ...RANGE, '--dry-run'], { REDIS_URL: closed });
    expect(result.code, result.stderr).toBe(0);
    // A Redis that does not answer would have held it for startup.timeoutMs (10 s), then exit 2.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result.stdout).toContain('Dry run of report-sync backfill: nothing is requested, queued or written');
    expect(result.stdout).toContain('Export requests: 16');
    expect(result.stdout).toContain('for one worker');
    expect(result.stderr).not.toMatch(/redis/i);
    expect(rig.simulator.counters.exportRequests).toBe(0);
    expect(rig.simulator.counters.tokenRequests).toBe(0);
    expect(existsSync(sqliteFile(rig))).toBe(false);
  });
});

describe.each(DIALECTS)('dry run over a ledger with history (%s)', (dialect) => {
  let rig: SyncRig;
  afterEach(async () => {
    await rig.close();
  });

  /** Syncs Monday to Wednesday with one 403 and one unreadable file; Thursday stays never attempted. */
  async function seeded(): Promise<SyncRig> {
    rig = await startSyncRig({ dialect });
    rig.simulator.script(1001, 'index', '2024-03-04', [{ status: 403 }]);
    rig.simulator.script(1002, 'index', '2024-03-05', [
      { status: 200, body: '{"effectiveDate":"2024-03-05"}', headers: { 'Content-Type': 'application/json', 'Content-Disposition': 'attachment; filename="bad.json"' } },
    ]);
    const first = await rig.cli(['run', ...SYNCED]);
    expect(first.code, first.stdout).toBe(1);
    rig.simulator.resetCounters();
    return rig;
  }

  it('counts what the ledger holds and what each selection would request; changes nothing', async () => {
    await seeded();
    const before = await ledgerRows(rig);
    expect(before).toHaveLength(12);

    const all = await dryRun(rig, ['run', ...RANGE]);
    expect(all.warehouse.exists).toBe(true);
    expect(all.totals).toEqual({ inRange: 16, loaded: 10, noData: 0, failed: 2, neverAttempted: 4, toRequest: 16 });

    const missing = await dryRun(rig, ['run', ...RANGE, '--only-missing']);
    expect(missing.totals.toRequest).toBe(6);
    expect(missing.pairs.find((pair) => pair.portfolioId === 1001 && pair.reportType === 'index')).toEqual({
      portfolioId: 1001,
      reportType: 'index',
      inRange: 4,
      loaded: 2,
      noData: 0,
      failed: 1,
      neverAttempted: 1,
      toRequest: 2,
    });

    const failed = await dryRun(rig, ['run', ...RANGE, '--failed']);
    expect(failed.selection).toEqual({ kind: 'failed' });
    expect(failed.exportRequests).toBe(2);

    const invalid = await dryRun(rig, ['backfill', ...RANGE, '--code', 'file_invalid']);
    expect(invalid.selection).toEqual({ kind: 'failed', codes: ['FILE_INVALID'] });
    expect(invalid.exportRequests).toBe(1);
    expect(invalid.pairs.filter((pair) => pair.toRequest > 0).map((pair) => [pair.portfolioId, pair.reportType])).toEqual([[1002, 'index']]);

    const text = await rig.cli(['run', ...RANGE, '--failed', '--code', 'EXPORT_FORBIDDEN', '--dry-run']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('has 10 of them loaded, 0 no data and 2 failed; 4 were never attempted.');
    // The dry run's printed report is the product: checked whole.
    expect(text.stdout).toContain('--failed --code EXPORT_FORBIDDEN: only the 1 slice whose last outcome is failed with code EXPORT_FORBIDDEN is taken; the other 15 are skipped.');
    expect(text.stdout).toContain('Export requests: 1 ');

    expect(rig.simulator.counters.exportRequests).toBe(0);
    expect(rig.simulator.counters.tokenRequests).toBe(0);
    expect(await ledgerRows(rig)).toEqual(before);
  });

  it('estimates from concurrency, http.connections, the rate limit (backfill only) and --request-seconds', async () => {
    await seeded();
    writeFileSync(join(rig.dir, 'limited.json'), JSON.stringify({ concurrency: 8, http: { connections: 2 }, queue: { rateLimit: { max: 3, durationMs: 60_000 } } }));
    const limited = ['--config', 'limited.json'];

    // run: 16 requests, 2 in flight (http.connections caps concurrency 8), 10 s each: 8 waves, 80 s. No rate limit in run.
    const run = await dryRun(rig, ['run', ...RANGE, ...limited, '--request-seconds', '10']);
    expect(run.estimate).toMatchObject({ seconds: 80, parallel: 2, secondsPerRequestSource: 'given', rateLimitSeconds: null, boundBy: 'concurrency' });
    expect(run.estimate.rateLimit).toEqual({ max: 3, durationMs: 60_000, applies: false });

    // backfill: the workers' rate limit admits 3 a minute: 16 requests start over 6 windows, the last one 5 minutes in.
    const backfill = await dryRun(rig, ['backfill', ...RANGE, ...limited, '--request-seconds', '10']);
    expect(backfill.estimate).toMatchObject({ seconds: 310, parallelSeconds: 80, rateLimitSeconds: 310, boundBy: 'rateLimit' });
    expect(backfill.estimate.rateLimit.applies).toBe(true);
    const text = await rig.cli(['backfill', ...RANGE, ...limited, '--dry-run']);
    // The dry run's printed report is the product: checked whole.
    expect(text.stdout).toContain('queue.rateLimit (3 per 60000 ms, across every worker) allows it no sooner than 5 min, which is what bounds it');

    // Without --request-seconds, the ledger's own figure: the mean attempt time of the 10 slices loaded (failures left out).
    const durations = await (await rig.warehouse()).db.selectFrom('report_loads').select(['duration_ms', 'status']).execute();
    const loaded = durations.filter((row) => row.status === 'loaded').map((row) => Number(row.duration_ms));
    expect(loaded).toHaveLength(10);
    expect(durations.filter((row) => row.status === 'failed').every((row) => row.duration_ms !== null)).toBe(true);
    const meanSeconds = Math.round(loaded.reduce((sum, ms) => sum + ms, 0) / loaded.length) / 1000;
    const measured = await dryRun(rig, ['run', ...RANGE]);
    expect(measured.estimate).toMatchObject({ secondsPerRequestSource: 'measured', measured: { meanSeconds, slices: 10 }, secondsPerRequest: Math.max(0.001, meanSeconds) });
    const measuredText = await rig.cli(['run', ...RANGE, '--dry-run']);
    expect(measuredText.stdout).toContain(`is measured: the mean over the ledger's 10 latest loaded or no-data slices is ${meanSeconds} s`);

    // Nothing failed with this code: nothing to request, nothing to estimate.
    const none = await rig.cli(['run', ...RANGE, '--code', 'EXPORT_NOT_FOUND', '--dry-run']);
    expect(none.stdout).toContain('Export requests: 0 ');
    expect(none.stdout).toContain('Estimated duration: none, there is nothing to request.');
    expect(rig.simulator.counters.exportRequests).toBe(0);
  });
});
