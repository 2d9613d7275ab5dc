import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { shiftIsoDate, todayIn } from '../../src/dates/report-date.js';
import type { ReportLoadsRow } from '../../src/warehouse/engine/warehouse-schema.js';
import { foldMonthlyCounts } from '../../src/warehouse/mysql/fold-monthly-counts.js';
import { capturedIo } from '../helpers/captured-io.js';
import { ledgerRow } from '../helpers/ledger-row.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { createTempWarehouse, DIALECTS } from '../helpers/temp-warehouse.js';
import { Receiver } from '../helpers/webhook-receiver.js';

/*
 * `report-sync check`: the freshness check cron, Kubernetes and monitoring run. Exit 0 when every
 * slice of the expected days is loaded or no_data (or only last night's are missing while it is
 * within its grace), 1 otherwise, with what is missing or failed; the alert when it fails.
 */

const NIGHT = '2024-03-04';
const SETTINGS = { portfolios: [1001, 1002], reportTypes: ['index', 'constituent.close'], schedule: { cron: '30 2 * * *', timeZone: 'UTC' } };

/** The seeded rows were checked in the early hours after the night they are about. */
const CHECKED_AT = '2024-03-05T03:00:00.000Z';

describe.each(DIALECTS)('check on a seeded ledger (%s)', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  let dir: string;
  let receiver: Receiver;
  beforeAll(async () => {
    warehouse = await createTempWarehouse(dialect);
    dir = mkdtempSync(join(tmpdir(), 'report-sync-check-'));
    mkdirSync(join(dir, 'config'));
    writeFileSync(join(dir, 'config/default.json'), JSON.stringify(SETTINGS));
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await receiver.close();
    await warehouse.close();
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await warehouse.db.deleteFrom('report_loads').execute();
    receiver.requests.length = 0;
  });

  async function check(args: string[], env: Record<string, string> = {}) {
    const io = capturedIo({ DATABASE_URL: warehouse.databaseUrl, REPORT_ALERT_WEBHOOK_URL: receiver.url.href, ...env }, dir);
    const code = await main(['check', ...args], io);
    return { code, stdout: io.stdout.text, stderr: io.stderr.text, logs: io.logs.text };
  }

  async function seed(date: string, except: (portfolioId: number, reportType: string) => ReportLoadsRow | 'missing' | undefined = () => undefined) {
    const rows: ReportLoadsRow[] = [];
    for (const portfolioId of [1001, 1002]) {
      for (const reportType of ['index', 'constituent.close']) {
        const special = except(portfolioId, reportType);
        if (special === 'missing') continue;
        rows.push(special ?? ledgerRow(portfolioId, reportType, date, reportType === 'index' ? 'loaded' : 'no_data', { at: CHECKED_AT }));
      }
    }
    await warehouse.db.insertInto('report_loads').values(rows).execute();
  }

  it('a complete night: exit 0, and no alert', async () => {
    await seed(NIGHT);
    const result = await check(['--date', NIGHT]);
    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout).toContain('loaded 2, no_data 2, failed 0, missing 0');
    expect(result.stdout).toContain('OK: every slice is loaded or no_data.');
    expect(receiver.requests).toHaveLength(0);
  });

  it('a missing slice past the grace: exit 1, named, with the retry commands, and one alert', async () => {
    await seed(NIGHT, (portfolioId, reportType) => (portfolioId === 1002 && reportType === 'index' ? 'missing' : undefined));
    const result = await check(['--date', NIGHT]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('FAILED: 1 of 4 slices have no outcome (did the night run?)');
    expect(result.stdout).toContain('portfolio 1002, index: 1 slice (2024-03-04)');
    // The retry command is what the user copies: checked whole.
    expect(result.stdout).toContain('report-sync run --from 2024-03-04 --to 2024-03-04 --portfolios 1001,1002 --report-types index,constituent.close --only-missing');
    expect(receiver.requests).toHaveLength(1);
    expect(String(receiver.requests[0]!.body.text)).toContain('1 of 4 slices have no outcome');
  });

  it('a night that never ran: exit 1 and the alert says so', async () => {
    const result = await check(['--date', NIGHT]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('missing 4');
    expect(receiver.requests).toHaveLength(1);
    expect(String(receiver.requests[0]!.body.text)).toContain('4 of 4 slices have no outcome (did the night run?)');
  });

  it('a failed slice: exit 1, grouped by code and portfolio; --no-alert sends nothing; --json for machines', async () => {
    await seed(NIGHT, (portfolioId, reportType) =>
      portfolioId === 1001 && reportType === 'constituent.close'
        ? ledgerRow(1001, reportType, NIGHT, 'failed', { error: 'FILE_INVALID: line 3, column Closing Price: "x" is not a decimal', at: CHECKED_AT })
        : undefined,
    );
    const result = await check(['--date', NIGHT, '--no-alert']);
    expect(result.code).toBe(1);
    // The summary's printed layout is the product: checked whole.
    expect(result.stdout).toContain('FILE_INVALID: 1 slice\n    portfolio 1001: 1 slice, e.g. constituent.close 2024-03-04');
    expect(receiver.requests).toHaveLength(0);
    const json = await check(['--date', NIGHT, '--json', '--no-alert']);
    expect(json.code).toBe(1);
    const parsed = JSON.parse(json.stdout) as { status: string; failed: number; failures: { total: number; groups: { code: string }[] } };
    expect(parsed).toMatchObject({ status: 'failed', failed: 1, failures: { total: 1, groups: [{ code: 'FILE_INVALID' }] } });
  });

  it('last night still within its grace: missing slices are pending, exit 0; past the grace they fail', async () => {
    const yesterday = shiftIsoDate(todayIn('UTC'), -1);
    await seed(yesterday, (portfolioId) => (portfolioId === 1002 ? 'missing' : undefined));
    const within = await check(['--grace', '168']);
    expect(within.code, within.stdout).toBe(0);
    expect(within.stdout).toContain(`PENDING: the night of ${yesterday} may still be running`);
    expect(receiver.requests).toHaveLength(0);
    // With no grace and its cron time (02:30 today) passed… or not yet: a night not yet due is always pending.
    const past = await check(['--date', shiftIsoDate(yesterday, -2), '--grace', '0']);
    expect(past.code).toBe(1);
  });

  it('refuses a --date, or --days reaching back, outside the dates window, naming dates.earliest; lowered, older nights are checked', async () => {
    const typo = await check(['--date', '0224-03-04']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('--date 0224-03-04 is before dates.earliest (2000-01-01)');
    expect(typo.stderr).toContain('REPORT_SYNC_DATES__EARLIEST');
    const centuries = await check(['--date', NIGHT, '--days', '900000']);
    expect(centuries.code).toBe(2);
    expect(centuries.stderr).toContain('--days 900000');
    expect(centuries.stderr).toContain('is before dates.earliest (2000-01-01)');
    const future = await check(['--date', '2204-03-04']);
    expect(future.code).toBe(2);
    expect(future.stderr).toContain('--date 2204-03-04 is after tomorrow');
    expect(receiver.requests).toHaveLength(0);

    // The neighbours: an ordinary night is checked, and so is an old one once the window is lowered.
    await seed(NIGHT);
    expect((await check(['--date', NIGHT, '--days', '1'])).code).toBe(0);
    await seed('1995-06-30');
    const older = await check(['--date', '1995-06-30'], { REPORT_SYNC_DATES__EARLIEST: '1990-01-01' });
    expect(older.code, older.stderr).toBe(0);
    expect(older.stdout).toContain('loaded 2, no_data 2, failed 0, missing 0');
  });
});

describe.each(DIALECTS)('check --deep (%s)', (dialect) => {
  let rig: SyncRig;
  beforeAll(async () => {
    rig = await startSyncRig({ dialect });
  });
  afterAll(async () => {
    await rig.close();
  });

  it('lists slices whose rows were deleted behind the ledger, and a plain re-run restores them', async () => {
    expect((await rig.cli(['run', '--from', NIGHT, '--to', NIGHT])).code).toBe(0);
    const clean = await rig.cli(['check', '--date', NIGHT, '--deep']);
    expect(clean.code, clean.stdout).toBe(0);
    expect(clean.stdout).toContain('Row counts: every slice holds the rows its ledger row records.');

    const warehouse = await rig.warehouse();
    await warehouse.db.deleteFrom('constituent_report').where('portfolio_id', '=', 1002).where('report_date', '=', NIGHT).execute();
    const found = await rig.cli(['check', '--date', NIGHT, '--deep']);
    expect(found.code).toBe(1);
    expect(found.stdout).toContain('Row counts: 1 slice holds other row counts than its ledger row records');
    expect(found.stdout).toContain('portfolio 1002, constituent.close, 2024-03-04: ');
    expect(found.stdout).toContain('the ledger records 25 rows, the table holds 0');

    expect((await rig.cli(['run', '--from', NIGHT, '--to', NIGHT])).code).toBe(0);
    expect((await rig.cli(['check', '--date', NIGHT, '--deep'])).code).toBe(0);
  });
});

describe('check --deep on MySQL', () => {
  let rig: SyncRig;
  beforeAll(async () => {
    rig = await startSyncRig({ dialect: 'mysql' });
  });
  afterAll(async () => {
    await rig.close();
  });

  it('says where the monthly totals differ from the monthly counts, in text and in JSON', async () => {
    expect((await rig.cli(['run', '--from', NIGHT, '--to', NIGHT])).code).toBe(0);
    // March whole: the only night run is counted from the totals (the rest of the month is missing).
    const month = ['check', '--date', '2024-03-31', '--days', '31', '--deep'];
    const clean = await rig.cli(month);
    expect(clean.stdout).toContain('Row counts: every slice holds the rows its ledger row records.');
    expect(clean.stdout).not.toContain('Monthly totals');
    const { db } = await rig.warehouse();
    // Folded, as workers fold after every so many commits, then a total changed by hand.
    await db.connection().execute(foldMonthlyCounts);
    await sql`update report_loads_monthly_totals set slices = slices + 5 where month = '2024-03-01' and report_type = 'index' and status = 'loaded'`.execute(db);
    const found = await rig.cli(month);
    expect(found.code).toBe(1);
    expect(found.stdout).toContain('Monthly totals: report_loads_monthly_totals differs from report_loads_monthly in 1 place');
    expect(found.stdout).toMatch(/ {2}2024-03, index, loaded: totalled (\d+), the monthly counts sum to (\d+)/);
    const [, total, folded] = /totalled (\d+), the monthly counts sum to (\d+)/.exec(found.stdout)!;
    expect(Number(total) - Number(folded)).toBe(5);
    const json = JSON.parse((await rig.cli([...month, '--json'])).stdout) as { monthlyTotalDifferences: unknown[] };
    expect(json.monthlyTotalDifferences).toEqual([{ month: '2024-03-01', reportType: 'index', status: 'loaded', total: Number(total), folded: Number(folded) }]);
  });
});
