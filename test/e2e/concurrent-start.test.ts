import { afterEach, describe, expect, it } from 'vitest';
import type { ReportType } from '../../src/reports/report-types.js';
import { lazySyntheticReport } from '../../src/simulator/synthetic-reports.js';
import { startCliProcess } from '../helpers/cli-process.js';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { DIALECTS, migrationNamesFrom } from '../helpers/temp-warehouse.js';

/*
 * Six report-sync processes started at once on a warehouse nobody has migrated yet (a compose
 * file's workers and a cron job after a deploy): one migrates, the others wait for it and find
 * nothing to do, and every process exits 0. On SQLite two migrators used to race (Kysely takes no
 * migration lock there): one failed with "duplicate column name: load_id" or an empty history.
 */

const PORTFOLIOS = [1001, 1002];
const REPORT_TYPES: ReportType[] = ['index', 'constituent.close'];
const DATES = ['2024-01-02', '2024-01-03'];

describe.each(DIALECTS)('six processes starting at once on a new %s warehouse', (dialect) => {
  let rig: SyncRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('all exit 0, the schema is migrated once, and every slice is recorded once', async () => {
    rig = await startSyncRig({ dialect });
    const { dir, env } = rig;
    const commands = [0, 1, 2, 3, 4, 5].map((n) => (n % 2 === 0 ? ['migrate'] : ['run', '--from', DATES[0]!, '--to', DATES.at(-1)!]));
    const processes = commands.map((args) => ({ args, process: startCliProcess(args, { cwd: dir, env }) }));
    const killers = processes.map(({ process }) => setTimeout(() => process.child.kill('SIGKILL'), 150_000));
    const exits = await Promise.all(processes.map(({ process }) => process.exited));
    for (const killer of killers) clearTimeout(killer);

    for (const [i, { args, process }] of processes.entries()) expect(exits[i], `${args.join(' ')}:\n${process.output()}`).toBe(0);
    // One process applied the migrations; every other one found the schema up to date.
    const migrators = processes.filter(({ process }) => process.stdout().includes('Applied 0001-create-tables'));
    expect(migrators.length).toBeLessThanOrEqual(1);
    for (const { process } of processes.filter(({ args }) => args[0] === 'migrate'))
      expect(process.stdout()).toMatch(new RegExp(`Applied 0001-create-tables.*${migrationNamesFrom('0001-create-tables').at(-1)}|is up to date`));

    const warehouse = await rig.warehouse();
    const history = await (warehouse.db as unknown as import('kysely').Kysely<{ kysely_migration: { name: string } }>)
      .selectFrom('kysely_migration')
      .select('name')
      .orderBy('name')
      .execute();
    expect(history.map((row) => row.name)).toEqual(migrationNamesFrom('0001-create-tables'));
    const ledger = await warehouse.db.selectFrom('report_loads').select(['portfolio_id', 'report_type', 'report_date', 'status']).execute();
    expect(ledger).toHaveLength(PORTFOLIOS.length * REPORT_TYPES.length * DATES.length);
    expect(new Set(ledger.map((row) => `${row.portfolio_id} ${row.report_type} ${row.report_date}`)).size).toBe(ledger.length);
    expect(ledger.every((row) => row.status === 'loaded')).toBe(true);
    // Exactly the rows served, once: three runs of the same slices loaded each one once.
    const served = { index: 0, constituent: 0 };
    for (const date of DATES)
      for (const portfolioId of PORTFOLIOS)
        for (const reportType of REPORT_TYPES)
          served[reportType === 'index' ? 'index' : 'constituent'] += lazySyntheticReport({ portfolioId, reportType, reportDate: date }).rowCount;
    const counts = await countWarehouse(warehouse.db);
    expect(counts).toMatchObject({ index: served.index, constituent: served.constituent, ledgerRowCount: served.index + served.constituent, notDone: 0 });
  }, 240_000);
});
