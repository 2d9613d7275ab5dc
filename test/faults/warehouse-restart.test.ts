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
import { startPrivateMariadb } from '../helpers/private-mariadb.js';
import { startPrivatePostgres } from '../helpers/private-postgres.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { loggedErrorMessage } from '../helpers/logged-error.js';
import { until } from '../helpers/until.js';

/*
 * A warehouse server of the test's own (never the shared one) is restarted, as a deploy restarts
 * it, while a slice's transaction is open: Postgres with `pg_ctl restart -m fast` (sessions
 * terminated, 57P01), MariaDB stopped with SIGTERM and started again. Connections are refused
 * while it restarts, then it answers again. The transaction is lost whole, the error is
 * WAREHOUSE_UNAVAILABLE (retryable), the pool drops the dead connections, and the retry loads it.
 */

// Large enough that one slice's rows are still going in (COPY, LOAD DATA) for well over a second
// at ~90,000 rows/s, so the restart lands inside it on a busy CI machine too.
const CONSTITUENT_ROWS = 150_000;

/** What each server needs of the tests: its own instance, and a way to see a load under way. */
interface RestartedServer {
  readonly name: string;
  start(): Promise<PrivateServer>;
}

interface PrivateServer {
  createDatabase(name: string): Promise<string>;
  /** Whether rows are going into `constituent_report` of `database` now, with more to come. */
  loadUnderWay(database: string): Promise<boolean>;
  restart(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

const SERVERS: readonly RestartedServer[] = [
  {
    name: 'Postgres',
    start: async () => {
      const server = await startPrivatePostgres();
      return {
        ...server,
        loadUnderWay: async (database: string) =>
          (
            await server.query<{ n: string }>(
              database,
              `select count(*) as n from pg_stat_progress_copy where relid = to_regclass('constituent_report') and tuples_processed between 1 and ${CONSTITUENT_ROWS / 2}`,
            )
          )[0]!.n !== '0',
      };
    },
  },
  {
    name: 'MySQL (MariaDB)',
    start: async () => {
      const server = await startPrivateMariadb();
      return {
        ...server,
        loadUnderWay: async (database: string) =>
          Number(
            (
              await server.query<{ n: number }>(
                `select count(*) as n from information_schema.processlist where db = '${database}' and info like 'load data local infile%constituent_report%'`,
              )
            )[0]!.n,
          ) > 0,
      };
    },
  },
];

/** What a restart looks like from the client, depending on the moment it lands and the driver. */
const RESTART_MESSAGE = /terminat|57P01|57P03|ECONNREFUSED|ECONNRESET|EPIPE|not queryable|shutting down|starting up|shutdown|connection lost|closed state|server closed/i;

async function tableCounts(warehouse: WarehouseHandle) {
  const counts = await countWarehouse(warehouse.db);
  return { index: counts.index, constituent: counts.constituent, ledger: counts.ledgerRowCount };
}

describe.each(SERVERS)('$name restarted during a load', (kind) => {
  let server: PrivateServer | undefined;
  let rig: SyncRig | undefined;
  const warehouses: WarehouseHandle[] = [];
  beforeAll(async () => {
    server = await kind.start();
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
    const database = 'restart_during_run';
    const databaseUrl = await server!.createDatabase(database);
    rig = await startSyncRig({
      simulator: { constituentRows: CONSTITUENT_ROWS },
      // Attempts spread over several seconds: a restart takes about one.
      settings: { retry: { attempts: 8, baseDelayMs: 300, maxDelayMs: 2_000 } },
    });
    const args = ['run', '--from', '2024-01-02', '--to', '2024-01-02'];
    const running = rig.cli(args, { DATABASE_URL: databaseUrl });
    await until(() => server!.loadUnderWay(database), 20_000, 'a load into constituent_report under way', 20);
    await server!.restart();
    const result = await running;

    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/loaded\s+4/);
    const retries = result.logLines.filter((line) => line.msg === 'attempt failed, will retry');
    expect(retries.length).toBeGreaterThan(0);
    for (const line of retries) {
      expect(line.code).toBe('WAREHOUSE_UNAVAILABLE');
      expect(loggedErrorMessage(line)).toMatch(RESTART_MESSAGE);
    }
    expect(
      retries.some((line) => line.reportType === 'constituent.close'),
      `the constituent slice caught mid-load is retried; retries logged: ${JSON.stringify(retries.map((line) => [line.portfolioId, line.reportType, line.code, loggedErrorMessage(line)]))}`,
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
    const warehouse = await openWarehouse(await server!.createDatabase('restart_idle_in_transaction'), { poolSize: 2 });
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
          // No statement is running: the driver hears of the loss between statements.
          await server!.restart();
          await trx.selectFrom('report_loads').select('status').execute();
        })
        .catch((error: unknown) => classifyWarehouseError(error, 'reading the ledger'));
      expect(failed).toMatchObject({ code: 'WAREHOUSE_UNAVAILABLE' });
      expect((failed as Error).message).toMatch(RESTART_MESSAGE);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    // The dead connections were dropped: the next statements, more than the pool holds, get live ones.
    for (let i = 0; i < 3; i += 1) expect(await warehouse.db.selectFrom('report_loads').select('status').execute()).toEqual([]);
  });

  it('a connection lost while the loader waits for more rows fails that attempt as WAREHOUSE_UNAVAILABLE, leaves nothing, and the next attempt loads the slice', async () => {
    const warehouse = await openWarehouse(await server!.createDatabase('restart_between_statements'), { poolSize: 2 });
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
      restarted = server!.restart();
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
      // A streaming load may see the loss before the restart is over.
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
