import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { constituentReport } from '../../src/reports/constituent-report.js';
import type { WarehouseRow } from '../../src/extract/row-builder.js';
import type { ReportType } from '../../src/reports/report-types.js';
import { lazySyntheticReport } from '../../src/simulator/synthetic-reports.js';
import { migrateWarehouse } from '../../src/warehouse/schema/migrate-warehouse.js';
import { classifyWarehouseError } from '../../src/warehouse/engine/classify-warehouse-error.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../src/warehouse/engine/warehouse-engine.js';
import { SliceLoader } from '../../src/warehouse/loading/slice-loader.js';
import { constituentRow, LOADED_FILE, LOADED_SLICE } from '../helpers/constituent-row.js';
import { countWarehouse } from '../helpers/count-warehouse.js';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { loggedErrorMessage } from '../helpers/logged-error.js';
import { until } from '../helpers/until.js';

/*
 * A Postgres of the test's own (never the shared one) is restarted with `pg_ctl restart -m fast`
 * while a slice's transaction is open: the server terminates the session (57P01), refuses
 * connections while it restarts, then answers again. The transaction is lost whole, the error is
 * WAREHOUSE_UNAVAILABLE (retryable), the pool drops the dead connections, and the retry loads it.
 */

// Large enough that the COPY of one slice lasts well over a second even at ~90,000 rows/s, so the
// restart lands inside it on a busy CI machine too (30,000 rows was caught only sometimes once COPY got faster).
const CONSTITUENT_ROWS = 150_000;

async function tableCounts(warehouse: WarehouseHandle) {
  const counts = await countWarehouse(warehouse.db);
  return { index: counts.index, constituent: counts.constituent, ledger: counts.ledgerRowCount };
}

describe('Postgres restarted during a load', () => {
  let server: PrivatePostgres | undefined;
  let rig: SyncRig | undefined;
  const warehouses: WarehouseHandle[] = [];
  beforeAll(async () => {
    server = await startPrivatePostgres();
  }, 60_000);
  afterAll(async () => {
    await server?.destroy();
  }, 60_000);
  afterEach(async () => {
    for (const warehouse of warehouses.splice(0)) await warehouse.close();
    await rig?.close();
    rig = undefined;
    await server?.start();
  });

  it('report-sync run: the slice being loaded is retried after the restart and completes, once', async () => {
    const pg = server!;
    const database = 'restart_during_run';
    const databaseUrl = await pg.createDatabase(database);
    rig = await startSyncRig({
      simulator: { constituentRows: CONSTITUENT_ROWS },
      // Attempts spread over several seconds: a restart takes about one.
      settings: { retry: { attempts: 8, baseDelayMs: 300, maxDelayMs: 2_000 } },
    });
    const args = ['run', '--from', '2024-01-02', '--to', '2024-01-02'];
    const running = rig.cli(args, { DATABASE_URL: databaseUrl });
    // The moment a slice's COPY into constituent_report has written rows and has more to write.
    await until(
      async () =>
        (
          await pg.query<{ n: string }>(
            database,
            `select count(*) as n from pg_stat_progress_copy where relid = to_regclass('constituent_report') and tuples_processed between 1 and ${CONSTITUENT_ROWS / 2}`,
          )
        )[0]!.n !== '0',
      20_000,
      'a COPY into constituent_report under way',
      20,
    );
    await pg.restart();
    const result = await running;

    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/loaded\s+4/);
    const retries = result.logLines.filter((line) => line.msg === 'attempt failed, will retry');
    expect(retries.length).toBeGreaterThan(0);
    for (const line of retries) {
      expect(line.code).toBe('WAREHOUSE_UNAVAILABLE');
      // What a restart looks like from the client depends on the moment it lands: all of these are it.
      expect(loggedErrorMessage(line)).toMatch(/terminat|57P01|57P03|ECONNREFUSED|ECONNRESET|EPIPE|not queryable|shutting down|starting up/i);
    }
    expect(
      retries.some((line) => line.reportType === 'constituent.close'),
      `the constituent slice caught mid-COPY is retried; retries logged: ${JSON.stringify(retries.map((line) => [line.portfolioId, line.reportType, line.code, loggedErrorMessage(line)]))}`,
    ).toBe(true);

    const warehouse = await openWarehouse(databaseUrl);
    warehouses.push(warehouse);
    const ledger = await warehouse.db.selectFrom('report_loads').select(['portfolio_id', 'report_type', 'status', 'row_count', 'attempts']).execute();
    expect(ledger).toHaveLength(4);
    expect(ledger.every((row) => row.status === 'loaded')).toBe(true);
    expect(ledger.some((row) => row.attempts > 1)).toBe(true);
    // Exactly what the simulator serves: no row twice, none missing.
    const served = (portfolioId: number, reportType: ReportType) =>
      lazySyntheticReport({ portfolioId, reportType, reportDate: '2024-01-02' }, { sizes: { constituentRows: CONSTITUENT_ROWS } }).rowCount;
    const counts = await tableCounts(warehouse);
    expect(counts.constituent).toBe(served(1001, 'constituent.close') + served(1002, 'constituent.close'));
    expect(counts.index).toBe(served(1001, 'index') + served(1002, 'index'));
    expect(counts.ledger).toBe(counts.index + counts.constituent);
    for (const row of ledger) expect(row.row_count).toBe(served(row.portfolio_id, row.report_type as ReportType));
    // Two 150,000-row files loaded twice take their CPU; the time limit is the harness's, not the product's.
  }, 90_000);

  it('a connection lost while a transaction is idle between statements is WAREHOUSE_UNAVAILABLE, and the process survives it', async () => {
    const pg = server!;
    const warehouse = await openWarehouse(await pg.createDatabase('restart_idle_in_transaction'), { poolSize: 2 });
    warehouses.push(warehouse);
    await migrateWarehouse(warehouse);
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const failed = await warehouse.db
        .transaction()
        .execute(async (trx) => {
          await trx.selectFrom('report_loads').select('status').execute();
          // No statement is running: pg reports the loss as an 'error' event on the checked-out client.
          await pg.restart();
          await trx.selectFrom('report_loads').select('status').execute();
        })
        .catch((error: unknown) => classifyWarehouseError(error, 'reading the ledger'));
      expect(failed).toMatchObject({ code: 'WAREHOUSE_UNAVAILABLE' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    // The dead client was dropped: the next statement gets a live connection.
    expect(await warehouse.db.selectFrom('report_loads').select('status').execute()).toEqual([]);
  });

  it('a connection lost while the loader waits for more rows fails that attempt as WAREHOUSE_UNAVAILABLE, leaves nothing, and the next attempt loads the slice', async () => {
    const pg = server!;
    const warehouse = await openWarehouse(await pg.createDatabase('restart_between_statements'), { poolSize: 2 });
    warehouses.push(warehouse);
    await migrateWarehouse(warehouse);
    const loader = new SliceLoader({ warehouse, batchRows: 100 });
    const slice = LOADED_SLICE;
    const file = LOADED_FILE;
    const row = (line: number): WarehouseRow => constituentRow(line, '1.5');
    // The server goes away while the loader waits for the next rows (as while the parser is busy).
    let restarted: Promise<void> | undefined;
    async function* restartMidway(): AsyncGenerator<WarehouseRow> {
      for (let line = 1; line <= 250; line += 1) yield row(line);
      restarted = pg.restart();
      await restarted;
      for (let line = 251; line <= 500; line += 1) yield row(line);
    }
    async function* whole(): AsyncGenerator<WarehouseRow> {
      for (let line = 1; line <= 500; line += 1) yield row(line);
    }

    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const failed = await loader.replaceRows({ slice, definition: constituentReport, rows: restartMidway(), file, attempts: 1 }).catch((error: unknown) => error);
      expect(failed).toMatchObject({ code: 'WAREHOUSE_UNAVAILABLE' });
      // A streaming COPY may see the loss before the restart is over.
      await restarted;
      // Let a late 'error' event surface, if the client had no listener for it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    // Nothing of the lost transaction is left, and the pool hands out a live connection again.
    expect(await tableCounts(warehouse)).toEqual({ index: 0, constituent: 0, ledger: 0 });
    expect(await loader.replaceRows({ slice, definition: constituentReport, rows: whole(), file, attempts: 2 })).toBe(500);
    expect(await tableCounts(warehouse)).toEqual({ index: 0, constituent: 500, ledger: 500 });
  });
});
