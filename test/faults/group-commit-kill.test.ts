import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewaySimulator, simulatorEnvironment, type GatewaySimulator } from '../../src/simulator/gateway-simulator.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import { startCliProcess } from '../helpers/cli-process.js';
import { createTempDatabase, DIALECTS } from '../helpers/temp-warehouse.js';
import { until } from '../helpers/until.js';

/*
 * `kill -9` while many small slices are being committed in groups (several slices per transaction,
 * a savepoint each): the real `report-sync run` is killed once some slices are loaded and many are
 * on their way. Every slice must then be wholly there (its ledger row `loaded`, exactly its rows,
 * all with the ledger row's load_id) or wholly absent (no ledger row, no rows); a second run loads
 * the rest, each slice once.
 */

const PORTFOLIOS = Array.from({ length: 20 }, (_, i) => 1001 + i);
const FROM = '2024-01-01';
const TO = '2024-01-26';
// 26 days (the weekends' answers are empty: no_data) × 20 portfolios × 2 report types.
const SLICES = 1040;

describe.each(DIALECTS)('report-sync run killed (SIGKILL) while slices are committed in groups into %s', (dialect) => {
  let simulator: GatewaySimulator | undefined;
  let dir = '';
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'report-sync-group-kill-'));
    mkdirSync(join(dir, 'config'));
    writeFileSync(
      join(dir, 'config/default.json'),
      JSON.stringify({ portfolios: PORTFOLIOS, reportTypes: ['index', 'constituent.close'], concurrency: 16, checks: { rowCountDrop: { severity: 'off' } } }),
    );
    simulator = await createGatewaySimulator({ port: 0 });
  });
  afterAll(async () => {
    await simulator?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves every slice wholly loaded or wholly absent, and a second run loads each missing slice once', async () => {
    const database = await createTempDatabase(dialect);
    const run = () =>
      startCliProcess(['run', '--from', FROM, '--to', TO], { cwd: dir, env: { ...simulatorEnvironment(simulator!), DATABASE_URL: database.databaseUrl, LOG_LEVEL: 'info' } });
    try {
      const migrated = startCliProcess(['migrate'], { cwd: dir, env: { DATABASE_URL: database.databaseUrl } });
      expect(await migrated.exited, migrated.output()).toBe(0);
      const warehouse = await openWarehouse(database.databaseUrl);
      try {
        const loadedSlices = async () =>
          Number(
            (
              await warehouse.db
                .selectFrom('report_loads')
                .select(({ fn }) => fn.countAll().as('n'))
                .executeTakeFirstOrThrow()
            ).n,
          );
        const killed = run();
        await until(
          async () => {
            if (killed.child.exitCode !== null) throw new Error(`report-sync exited before it was killed:\n${killed.output()}`);
            return (await loadedSlices()) >= 60;
          },
          60_000,
          'the first slices to be committed',
          10,
        );
        killed.child.kill('SIGKILL');
        expect(await killed.exited).toBe('SIGKILL');
        const afterKill = await loadedSlices();
        // Killed midway: some slices committed, most not.
        expect(afterKill).toBeGreaterThanOrEqual(60);
        expect(afterKill).toBeLessThan(SLICES);

        const mismatched = async () =>
          (
            await sql<{ slice: string; problem: string }>`
              select l.portfolio_id || ' ' || l.report_type || ' ' || l.report_date as slice, 'ledger and rows differ' as problem
              from report_loads l
              where l.status = 'failed'
                 or l.row_count <> (select count(*) from index_report r where r.portfolio_id = l.portfolio_id and r.report_date = l.report_date and l.report_type = 'index' and r.load_id = l.load_id)
                                 + (select count(*) from constituent_report r where r.portfolio_id = l.portfolio_id and r.report_date = l.report_date and r.report_type = l.report_type and r.load_id = l.load_id)
              union all
              select r.portfolio_id || ' index ' || r.report_date, 'rows without their load' from index_report r
              where not exists (select 1 from report_loads l where l.portfolio_id = r.portfolio_id and l.report_type = 'index' and l.report_date = r.report_date and l.load_id = r.load_id)
              union all
              select r.portfolio_id || ' ' || r.report_type || ' ' || r.report_date, 'rows without their load' from constituent_report r
              where not exists (select 1 from report_loads l where l.portfolio_id = r.portfolio_id and l.report_type = r.report_type and l.report_date = r.report_date and l.load_id = r.load_id)
            `.execute(warehouse.db)
          ).rows;
        expect(await mismatched()).toEqual([]);

        const second = run();
        expect(await second.exited, second.output()).toBe(0);
        expect(await loadedSlices()).toBe(SLICES);
        expect(await mismatched()).toEqual([]);
      } finally {
        await warehouse.close();
      }
    } finally {
      await database.drop();
    }
  }, 180_000);
});
