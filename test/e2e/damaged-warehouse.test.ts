import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';

/*
 * A warehouse damaged behind report-sync's back (a table or column dropped, kysely_migration
 * edited) is named at start, with exit 2 and how to repair it: migrate no longer says "up to date"
 * over it, a sync stops before any download, and the read-only status still shows the ledger.
 */

const DAY = ['--from', '2024-03-04', '--to', '2024-03-04'];

describe.each(DIALECTS)('a damaged warehouse (%s)', (dialect) => {
  let rig: SyncRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  /** A warehouse holding one loaded day (two portfolios, index and constituent.close), then damaged by `damage`. */
  async function loadedThenDamaged(damage: string): Promise<SyncRig> {
    rig = await startSyncRig({ dialect });
    const first = await rig.cli(['run', ...DAY]);
    expect(first.code, first.stderr).toBe(0);
    const warehouse = await rig.warehouse();
    await sql.raw(damage).execute(warehouse.db);
    rig.simulator.resetCounters();
    return rig;
  }

  /** `status` exits 0 with the ledger's counts, and one warning line matching `warning`. */
  async function expectStatusWarns(rig: SyncRig, warning: RegExp): Promise<void> {
    const status = await rig.cli(['status', ...DAY]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/1001\s+index\s+1\s+0\s+0\s+0/);
    expect(status.stdout).toMatch(/1002\s+constituent\.close\s+1\s+0\s+0\s+0/);
    const warnings = status.stderr.split('\n').filter((line) => line.startsWith('report-sync: warning: '));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(warning);
  }

  it('missing index_report: migrate exits 2 naming it and the reload, run stops before any download, status warns', async () => {
    // Postgres drops a table only with the analysts' views that read it (cascade); SQLite leaves them, unreadable.
    const rig = await loadedThenDamaged(dialect === 'postgres' ? 'drop table index_report cascade' : 'drop table index_report');

    const migrate = await rig.cli(['migrate']);
    expect(migrate.code, migrate.stderr).toBe(2);
    expect(migrate.stdout).not.toContain('up to date');
    expect(migrate.stderr).toContain('lacks index_report (table), which report-sync writes');
    expect(migrate.stderr).toContain('Restore the warehouse from a backup');
    // The ledger still lists the two index slices as loaded: the run that loads them into a re-created table.
    // The command is what the user copies: checked whole.
    expect(migrate.stderr).toContain(
      'load the 2 slices its ledger lists as loaded there again: report-sync run --from 2024-03-04 --to 2024-03-04 --portfolios 1001,1002 --report-types index (the run finds their rows gone',
    );

    const run = await rig.cli(['run', ...DAY]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('index_report (table)');
    expect(rig.simulator.counters.exportRequests).toBe(0);
    expect(rig.simulator.counters.tokenRequests).toBe(0);

    await expectStatusWarns(rig, /lacks index_report \(table\)/);

    // The repair the message gives is the repair: the table re-created, then the run it names.
    // MySQL's bare `numeric` is DECIMAL(10,0), which would keep no fraction: LOAD DATA refuses to round.
    const numeric = dialect === 'mysql' ? 'decimal(65,30)' : 'numeric';
    await sql
      .raw(
        `create table index_report (portfolio_id integer not null, report_date date not null, line_number integer not null,
      effective_date date not null, index_id text not null, index_name text, index_value ${numeric}, currency text, close_market_value ${numeric},
      open_market_value ${numeric}, close_divisor ${numeric}, open_divisor ${numeric}, extra ${dialect === 'postgres' ? 'jsonb' : 'text'}, load_id ${dialect === 'postgres' ? 'uuid' : 'text'},
      primary key (portfolio_id, report_date, line_number))`,
      )
      .execute((await rig.warehouse()).db);
    const advised = /report-sync (run --from \S+ --to \S+ --portfolios \S+ --report-types \S+)/.exec(migrate.stderr)![1]!.split(' ');
    const reload = await rig.cli(advised);
    expect(reload.code, reload.stderr).toBe(0);
    const held = await (
      await rig.warehouse()
    ).db
      .selectFrom('index_report')
      .select(({ fn }) => fn.countAll<number | string>().as('rows'))
      .executeTakeFirstOrThrow();
    expect(Number(held.rows)).toBe(6);
    // Postgres dropped the view over index_report with it (cascade): migrate puts it back.
    expect((await rig.cli(['migrate'])).stdout).toContain(dialect === 'postgres' ? 'Re-created view latest_index_report in ' : 'is up to date');
    expect((await rig.cli(['migrate'])).stdout).toContain('is up to date');
  });

  it('a dropped view and index: a sync goes on, status warns, migrate re-creates them and the view answers again', async () => {
    const rig = await loadedThenDamaged('drop view latest_constituent_report');
    // MySQL names an index within its table.
    await sql.raw(dialect === 'mysql' ? 'drop index report_loads_loaded on report_loads' : 'drop index report_loads_loaded').execute((await rig.warehouse()).db);

    const run = await rig.cli(['run', '--from', '2024-03-05', '--to', '2024-03-05']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.logs).toContain('the warehouse lacks index report_loads_loaded, view latest_constituent_report');
    expect(run.logs).toContain('run report-sync migrate to re-create them');
    const status = await rig.cli(['status', ...DAY]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stderr).toContain(
      'report-sync: warning: the warehouse at ' +
        `${(await rig.warehouse()).location} lacks index report_loads_loaded, view latest_constituent_report: nothing is lost (they hold no data of their own), ` +
        'but queries of a missing view fail and a missing index makes them slow; run report-sync migrate to re-create them',
    );

    const migrate = await rig.cli(['migrate']);
    expect(migrate.code, migrate.stderr).toBe(0);
    expect(migrate.stdout).toContain('Re-created index report_loads_loaded, view latest_constituent_report in ');
    // `held`, not `rows`: a reserved word in MariaDB.
    const latest = await sql<{ held: number | string }>`select count(*) as held from latest_constituent_report`.execute((await rig.warehouse()).db);
    expect(Number(latest.rows[0]!.held)).toBeGreaterThan(0);
    const again = await rig.cli(['status', ...DAY]);
    expect(again.stderr).not.toContain('warning');
    expect((await rig.cli(['migrate'])).stdout).toContain('is up to date');
  });

  it('a missing column is named as table.column', async () => {
    const rig = await loadedThenDamaged('alter table report_loads drop column error_code');
    const migrate = await rig.cli(['migrate']);
    expect(migrate.code).toBe(2);
    expect(migrate.stderr).toContain('lacks report_loads.error_code (column)');
    // Damage to the ledger makes every loaded slice suspect, and a re-created column takes --force.
    // The command is what the user copies: checked whole.
    expect(migrate.stderr).toContain('--report-types index,constituent.close --force (--force, because the rows are there');
    expect(rig.simulator.counters.exportRequests).toBe(0);
  });

  it('kysely_migration listing a migration this version does not know: exit 2 saying which and what to do', async () => {
    const rig = await loadedThenDamaged("insert into kysely_migration (name, timestamp) values ('0099-from-the-future', '2999-01-01T00:00:00.000Z')");
    for (const command of [['migrate'], ['run', ...DAY]]) {
      const result = await rig.cli(command);
      expect(result.code, command[0]).toBe(2);
      expect(result.stderr).toContain('(table kysely_migration) is damaged');
      expect(result.stderr).toContain('it lists 0099-from-the-future, which this version of report-sync does not know');
      expect(result.stderr).toContain('(it knows 0001-create-tables, 0002-ledger-error-code');
      expect(result.stderr).toContain("delete from kysely_migration where name in ('0099-from-the-future')");
    }
    expect(rig.simulator.counters.exportRequests).toBe(0);
    await expectStatusWarns(rig, /0099-from-the-future, which this version of report-sync does not know/);
  });

  it('a decimal column re-declared as a type that rounds: run exits 2 before any download; the repair and the --force run it gives load exact values', async () => {
    // The view over index_report is dropped first where the column's type cannot change under it.
    const narrowed: Record<typeof dialect, { type: string; statements: string[] }> = {
      sqlite: { type: 'real', statements: ['alter table index_report drop column index_value', 'alter table index_report add column index_value real'] },
      postgres: { type: 'numeric(10,2)', statements: ['alter table index_report alter column index_value type numeric(10,2)'] },
      mysql: { type: 'decimal(10,2)', statements: ['alter table index_report modify index_value decimal(10,2)'] },
    };
    const rig = await loadedThenDamaged('drop view latest_index_report');
    for (const statement of narrowed[dialect].statements) await sql.raw(statement).execute((await rig.warehouse()).db);

    const run = await rig.cli(['run', ...DAY]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`has decimal column of a type that would round what report-sync loads: index_report.index_value (${narrowed[dialect].type})`);
    expect(rig.simulator.counters.exportRequests).toBe(0);
    await expectStatusWarns(rig, /index_report\.index_value/);

    if (dialect === 'sqlite') return;
    // The repair the message gives is the repair: the column's type, then the run it names (with --force).
    const repair = new RegExp(`(alter table index_report [^;]+); then`).exec(run.stderr)![1]!;
    await sql.raw(repair).execute((await rig.warehouse()).db);
    const advised = /report-sync (run --from \S+ --to \S+ --portfolios \S+ --report-types \S+ --force)/.exec(run.stderr)![1]!.split(' ');
    const reload = await rig.cli(advised);
    expect(reload.code, reload.stderr).toBe(0);
    const values = await sql<{ index_value: string }>`select index_value from index_report where index_value is not null`.execute((await rig.warehouse()).db);
    // The simulator's index values carry more digits after the point than the narrowed column kept.
    expect(values.rows.some((row) => /\.\d{3,}/.test(String(row.index_value)))).toBe(true);
    expect((await rig.cli(['migrate'])).stdout).toContain('Re-created view latest_index_report');
  });

  it('kysely_migration missing a row before a later one: exit 2 with the row to put back', async () => {
    const rig = await loadedThenDamaged("delete from kysely_migration where name = '0002-ledger-error-code'");
    const migrate = await rig.cli(['migrate']);
    expect(migrate.code).toBe(2);
    expect(migrate.stderr).toMatch(/it lacks 0002-ledger-error-code, though it lists the later 00\d\d-\S+, so the table was edited/);
    expect(migrate.stderr).toMatch(/insert into kysely_migration \(name, timestamp\) values \('0002-ledger-error-code', '[^']+'\)/);
    await expectStatusWarns(rig, /it lacks 0002-ledger-error-code/);

    // The repair the message gives is the repair.
    const repair = /insert into kysely_migration \(name, timestamp\) values \('0002-ledger-error-code', '[^']+'\)/.exec(migrate.stderr)![0];
    await sql.raw(repair).execute((await rig.warehouse()).db);
    const again = await rig.cli(['migrate']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('is up to date');
  });
});
