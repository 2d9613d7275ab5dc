import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderZip } from '../../src/simulator/render-export.js';
import { createGatewaySimulator, simulatorEnvironment, type GatewaySimulator } from '../../src/simulator/gateway-simulator.js';
import { lazySyntheticReport } from '../../src/simulator/synthetic-reports.js';
import { settingsSchema } from '../../src/config/settings-schema.js';
import { openWarehouse } from '../../src/warehouse/open-warehouse.js';
import { startCliProcess } from '../helpers/cli-process.js';
import { createTempDatabase, DIALECTS } from '../helpers/temp-warehouse.js';
import { until } from '../helpers/until.js';

/*
 * `kill -9` in the middle of a big load that takes the threaded path (a worker thread inflating,
 * parsing and typing the ZIP while the main thread writes): the real `report-sync run`, the
 * compiled one, is killed while its rows are being written, over a slice an earlier run loaded
 * from a small file. The slice must be wholly the old rows, and its ledger row unchanged.
 */

const SLICE = { portfolioId: 1001, reportType: 'constituent.close', reportDate: '2024-03-01' } as const;
// About 12 MB of ZIP, over limits.threadedParseBytes, and a few seconds of writing: room to be caught mid-write.
const BIG_ROWS = 400_000;
const OLD_ROWS = 250;

async function sliceZip(rows: number, revision: number): Promise<Buffer> {
  return buffer(renderZip(lazySyntheticReport(SLICE, { revision, sizes: { constituentRows: rows } })));
}

describe.each(DIALECTS)('report-sync run killed (SIGKILL) while a threaded big load writes into %s', (dialect) => {
  let simulator: GatewaySimulator | undefined;
  let dir = '';
  let bigZip: Buffer;
  let oldZip: Buffer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'report-sync-threaded-kill-'));
    mkdirSync(join(dir, 'config'));
    mkdirSync(join(dir, 'tmp'));
    writeFileSync(join(dir, 'config/default.json'), JSON.stringify({ portfolios: [SLICE.portfolioId], reportTypes: [SLICE.reportType], formats: { [SLICE.reportType]: 'csv' } }));
    simulator = await createGatewaySimulator({ port: 0 });
    [oldZip, bigZip] = await Promise.all([sliceZip(OLD_ROWS, 0), sliceZip(BIG_ROWS, 1)]);
  }, 120_000);
  afterAll(async () => {
    await simulator?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const serve = (zip: Buffer) =>
    simulator!.script(SLICE.portfolioId, SLICE.reportType, SLICE.reportDate, [
      { status: 200, body: zip, headers: { 'content-type': 'application/zip', 'content-disposition': 'attachment; filename="2024-03-01_big.zip"' } },
    ]);
  const run = (databaseUrl: string) =>
    startCliProcess(['run', '--from', SLICE.reportDate, '--to', SLICE.reportDate], {
      cwd: dir,
      env: { ...simulatorEnvironment(simulator!), DATABASE_URL: databaseUrl, LOG_LEVEL: 'debug', TMPDIR: join(dir, 'tmp') },
    });

  it('leaves the slice wholly old: its earlier rows, and its ledger row unchanged', async () => {
    expect(bigZip.length).toBeGreaterThanOrEqual(settingsSchema.parse({}).limits.threadedParseBytes);
    const database = dialect === 'sqlite' ? undefined : await createTempDatabase('postgres');
    const sqlitePath = join(dir, 'warehouse.sqlite');
    const databaseUrl = database?.databaseUrl ?? `sqlite:${sqlitePath}`;
    try {
      serve(oldZip);
      const first = run(databaseUrl);
      expect(await first.exited, first.output()).toBe(0);

      const warehouse = await openWarehouse(databaseUrl);
      const sliceRows = () =>
        warehouse.db
          .selectFrom('constituent_report')
          .select(['line_number', 'isin', 'closing_price', 'security_name'])
          .where('portfolio_id', '=', SLICE.portfolioId)
          .where('report_date', '=', SLICE.reportDate)
          .orderBy('line_number')
          .execute();
      const ledgerRow = () => warehouse.db.selectFrom('report_loads').selectAll().execute();
      try {
        const oldRows = await sliceRows();
        const oldLedger = await ledgerRow();
        expect(oldRows).toHaveLength(OLD_ROWS);
        expect(oldLedger).toMatchObject([{ status: 'loaded', row_count: OLD_ROWS }]);

        serve(bigZip);
        const killed = run(databaseUrl);
        // Rows are being written: Postgres reports the COPY's progress; SQLite's WAL grows with the pages written.
        const client = database ? new pg.Client({ connectionString: database.databaseUrl }) : undefined;
        await client?.connect();
        try {
          await until(
            async () => {
              if (killed.child.exitCode !== null) throw new Error(`report-sync exited before it was killed:\n${killed.output()}`);
              if (client) {
                const progress = await client.query<{ n: string }>(
                  `select count(*) as n from pg_stat_progress_copy where relid = to_regclass('constituent_report') and tuples_processed between 10000 and ${BIG_ROWS / 2}`,
                );
                return progress.rows[0]!.n !== '0';
              }
              return existsSync(`${sqlitePath}-wal`) && statSync(`${sqlitePath}-wal`).size > 8 * 2 ** 20;
            },
            60_000,
            'rows being written',
            20,
          );
        } finally {
          await client?.end();
        }
        killed.child.kill('SIGKILL');
        expect(await killed.exited).toBe('SIGKILL');
        // It was the threaded path that was killed.
        expect(killed.output()).toContain('reading the file on a worker thread while its rows are written');
        expect(killed.output()).not.toContain('"status":"loaded"');

        expect(await sliceRows()).toEqual(oldRows);
        expect(await ledgerRow()).toEqual(oldLedger);
      } finally {
        await warehouse.close();
      }
    } finally {
      await database?.drop();
    }
  }, 180_000);
});
