import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';

/*
 * PgBouncer in statement pooling answers a BEGIN with a FATAL error and closes the connection:
 * report-sync writes every slice in a transaction, so a command that writes is refused at start
 * (exit 2) with one line naming the setting to change, before it downloads or writes anything,
 * instead of failing every slice as a lost connection. Reading needs no transaction: `status`
 * works through such a pool, and the same commands straight to Postgres are not refused.
 */

const DAY = '2024-01-02';
const REFUSAL = /PgBouncer's pool_mode = statement.*set pool_mode = transaction \(or session\) for this database in pgbouncer\.ini/;

describe('report-sync through PgBouncer in statement pooling', () => {
  let rig: SyncRig;
  let bouncer: PgBouncer;
  const viaBouncer = () => ({ DATABASE_URL: bouncer.url });

  beforeAll(async () => {
    rig = await startSyncRig({ dialect: 'postgres' });
    bouncer = await startPgBouncer({ databaseUrl: rig.databaseUrl, poolMode: 'statement' });
  });
  afterAll(async () => {
    await bouncer?.stop();
    await rig?.close();
  });

  it('refuses migrate and run at start, exit 2, one line naming pool_mode; the same commands straight to Postgres work', async () => {
    const migrate = await rig.cli(['migrate'], viaBouncer());
    expect(migrate.code, migrate.stdout).toBe(2);
    expect(migrate.stderr).toMatch(REFUSAL);
    expect(migrate.stderr.trim().split('\n')).toHaveLength(1);
    // Nothing was created: not even Kysely's history table.
    const warehouse = await rig.warehouse();
    const { rows } = await sql<{ tables: number | string }>`select count(*) as tables from information_schema.tables where table_schema = 'public'`.execute(warehouse.db);
    expect(Number(rows[0]!.tables)).toBe(0);

    // The ordinary case: the same command straight to the database is not refused.
    const direct = await rig.cli(['migrate']);
    expect(direct.code, direct.stderr).toBe(0);

    // Migrated, nothing is pending: the run still stops before its first slice.
    const run = await rig.cli(['run', '--from', DAY, '--to', DAY], viaBouncer());
    expect(run.code, run.stdout).toBe(2);
    expect(run.stderr).toMatch(REFUSAL);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(rig.simulator.counters.exportRequests).toBe(0);
    expect(await warehouse.db.selectFrom('report_loads').select('status').execute()).toEqual([]);

    const runDirect = await rig.cli(['run', '--from', DAY, '--to', DAY]);
    expect(runDirect.code, runDirect.stderr + runDirect.stdout).toBe(0);
    expect(runDirect.stdout).toMatch(/failed\s+0/);
  });

  it('lets status read through it', async () => {
    const status = await rig.cli(['status', '--from', DAY, '--to', DAY], viaBouncer());
    expect(status.code, status.stderr).toBe(0);
    expect(status.stderr).not.toMatch(/pool_mode/);
  });
});
