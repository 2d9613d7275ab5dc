import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { resolveUpstreamConfig } from '../../../src/config/upstream-config.js';
import { createLogger } from '../../../src/logging/logger.js';
import { createGatewaySimulator, simulatorEnvironment, type GatewaySimulator } from '../../../src/simulator/gateway-simulator.js';
import { exportSlice } from '../../../src/export/export-slice.js';
import type { Slice } from '../../../src/slice/slice.js';
import { createSyncServices, type SyncServices } from '../../../src/cli/sync-services.js';
import { CapturedStream, logLines } from '../../helpers/captured-io.js';
import { createTempDatabase } from '../../helpers/temp-warehouse.js';

const FIRST = { number: 1, isLast: false };
const LAST = { number: 3, isLast: true };
/** A Friday: the simulator has a file for it. */
const friday = (portfolioId: number): Slice => ({ portfolioId, reportType: 'constituent.close', reportDate: '2024-03-01' });
/** A Saturday: the simulator answers 200 with an empty body. */
const saturday = (portfolioId: number): Slice => ({ portfolioId, reportType: 'index', reportDate: '2024-03-02' });

describe('exportSlice, against the simulator and a SQLite warehouse', () => {
  let simulator: GatewaySimulator;
  let services: SyncServices;
  let dir: string;
  let drop: () => Promise<void>;
  const logs = new CapturedStream();

  beforeAll(async () => {
    simulator = await createGatewaySimulator({ constituentRows: 7 });
    dir = mkdtempSync(join(tmpdir(), 'report-sync-slice-'));
    const database = await createTempDatabase('sqlite');
    drop = database.drop;
    const config = loadConfig({ cwd: dir, readDotEnv: false, env: { ...simulatorEnvironment(simulator), DATABASE_URL: database.databaseUrl } });
    const logger = createLogger({ level: 'info', pretty: false, destination: logs });
    services = await createSyncServices({ config, upstream: resolveUpstreamConfig(config.env), logger });
  });
  afterAll(async () => {
    await services?.close();
    await simulator?.close();
    await drop?.();
    rmSync(dir, { recursive: true, force: true });
  });

  const rowsHeld = async (slice: Slice) =>
    (
      await services.warehouse.db
        .selectFrom('constituent_report')
        .select('isin')
        .where('portfolio_id', '=', slice.portfolioId)
        .where('report_date', '=', slice.reportDate)
        .execute()
    ).length;
  const linesFor = (slice: Slice) => logLines(logs).filter((line) => line.portfolioId === slice.portfolioId && line.reportDate === slice.reportDate);

  it('loads a file: the rows, a loaded ledger row with its facts, and one log line saying so', async () => {
    const slice = friday(11);
    const outcome = await exportSlice(slice, FIRST, services);
    expect(outcome).toMatchObject({ status: 'loaded', final: true, rowCount: 7, unchanged: false, format: 'csv', attempt: 1 });
    expect(await rowsHeld(slice)).toBe(7);
    const ledger = await services.ledger.row(slice);
    expect(ledger).toMatchObject({ status: 'loaded', row_count: 7, format: 'csv', attempts: 1, error: null });
    expect(ledger?.content_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(linesFor(slice)).toEqual([expect.objectContaining({ msg: 'slice loaded', status: 'loaded', rows: 7, unchanged: false, attempt: 1 })]);
  });

  it('takes the same file again as unchanged: rows and updated_at kept, checked_at and attempts moved', async () => {
    const slice = friday(12);
    await exportSlice(slice, FIRST, services);
    const before = (await services.ledger.row(slice))!;
    await new Promise((resolve) => setTimeout(resolve, 5));
    const again = await exportSlice(slice, { number: 2, isLast: false }, services);
    expect(again).toMatchObject({ status: 'loaded', unchanged: true, rowCount: 7 });
    const after = (await services.ledger.row(slice))!;
    expect(after).toMatchObject({ status: 'loaded', row_count: 7, content_sha256: before.content_sha256, updated_at: before.updated_at, attempts: 2 });
    expect(after.checked_at > before.checked_at).toBe(true);
    expect(await rowsHeld(slice)).toBe(7);
  });

  it('loads the same file again when forced, and a restated file always', async () => {
    const slice = friday(13);
    await exportSlice(slice, FIRST, services);
    expect(await exportSlice(slice, FIRST, services, { force: true })).toMatchObject({ status: 'loaded', unchanged: false, rowCount: 7 });
    simulator.restate(slice.portfolioId, slice.reportType, slice.reportDate);
    const restated = await exportSlice(slice, FIRST, services);
    expect(restated).toMatchObject({ status: 'loaded', unchanged: false, rowCount: 6 });
    expect(await rowsHeld(slice)).toBe(6);
  });

  it('loads again an unchanged file whose rows the table no longer holds, and says so', async () => {
    const slice = friday(14);
    await exportSlice(slice, FIRST, services);
    await services.warehouse.db.deleteFrom('constituent_report').where('portfolio_id', '=', slice.portfolioId).execute();
    expect(await exportSlice(slice, FIRST, services)).toMatchObject({ status: 'loaded', unchanged: false, rowCount: 7 });
    expect(await rowsHeld(slice)).toBe(7);
    expect(linesFor(slice).find((line) => line.level === 40)).toMatchObject({ heldRows: 0, ledgerRows: 7 });
  });

  it('records an empty answer as no_data, and the next one as no data again', async () => {
    const slice = saturday(15);
    expect(await exportSlice(slice, FIRST, services)).toMatchObject({ status: 'no_data', final: true, unchanged: false });
    expect(await services.ledger.row(slice)).toMatchObject({ status: 'no_data', row_count: 0, attempts: 1 });
    expect(await exportSlice(slice, FIRST, services)).toMatchObject({ status: 'no_data', unchanged: true });
  });

  it('refuses an empty answer for a slice the warehouse holds rows of (EMPTY_RESTATEMENT), keeping the rows', async () => {
    const slice = friday(16);
    await exportSlice(slice, FIRST, services);
    simulator.script(slice.portfolioId, slice.reportType, slice.reportDate, [
      { status: 200, body: '' },
      { status: 200, body: '' },
    ]);
    // Retried first (an upstream glitch may pass), the ledger still saying loaded.
    expect(await exportSlice(slice, FIRST, services)).toMatchObject({ status: 'failed', final: false, error: { code: 'EMPTY_RESTATEMENT' } });
    expect(await services.ledger.row(slice)).toMatchObject({ status: 'loaded', row_count: 7 });
    const outcome = await exportSlice(slice, LAST, services);
    expect(outcome).toMatchObject({ status: 'failed', final: true, error: { code: 'EMPTY_RESTATEMENT' } });
    expect(await rowsHeld(slice)).toBe(7);
    const ledger = await services.ledger.row(slice);
    expect(ledger).toMatchObject({ status: 'failed', error_code: 'EMPTY_RESTATEMENT', row_count: 7 });
    expect(ledger?.error).toMatch(/^EMPTY_RESTATEMENT: .*warehouse\.acceptEmptyRestatements/);
  });

  it('leaves the ledger alone after a retryable failure that is not the last attempt, and records it when it is', async () => {
    const slice = friday(17);
    simulator.script(slice.portfolioId, slice.reportType, slice.reportDate, [{ status: 503 }, { status: 503 }]);
    const retried = await exportSlice(slice, FIRST, services);
    expect(retried).toMatchObject({ status: 'failed', final: false, error: { code: 'EXPORT_SERVER_ERROR' } });
    expect(await services.ledger.row(slice)).toBeUndefined();
    const last = await exportSlice(slice, LAST, services);
    expect(last).toMatchObject({ status: 'failed', final: true, attempt: 3, error: { code: 'EXPORT_SERVER_ERROR' } });
    expect(await services.ledger.row(slice)).toMatchObject({ status: 'failed', attempts: 3, error_code: 'EXPORT_SERVER_ERROR' });
    const statuses = linesFor(slice).map((line) => line.status);
    expect(statuses).toEqual(['retrying', 'failed']);
  });

  it('fails a permanent answer at once, whatever the attempt', async () => {
    const slice = friday(18);
    simulator.script(slice.portfolioId, slice.reportType, slice.reportDate, [{ status: 400, body: 'bad request' }]);
    const outcome = await exportSlice(slice, FIRST, services);
    expect(outcome).toMatchObject({ status: 'failed', final: true, error: { retryable: false } });
    expect((await services.ledger.row(slice))?.status).toBe('failed');
  });
});
