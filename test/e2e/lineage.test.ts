import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeZip } from '../helpers/make-zip.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';

/*
 * Every row of a report table can be traced to the load that wrote it: the row's load_id is its
 * ledger row's, and the ledger keeps the file (name, SHA-256, size, format) and when it was loaded.
 * The query is docs/warehouse.md's ("Lineage: from a number to its file"), run as an analyst would.
 */

const DAY = '2024-05-06';
const PORTFOLIO = 1001;
const ISIN = 'XS0000000042';
const HEADER = 'Effective Date,ISIN,Security Name,Security Ticker,Exchange Code,Closing Price,Currency,Closing Fx,Index Shares,Index Weighting,Sector Code';

/** A constituent.close file whose one security of interest closes at `price`. */
async function constituentFile(price: string): Promise<Buffer> {
  const lines = [
    `${DAY},XS0000000001,Acme Corp,ACME,XLON,10.25,GBP,1,100,0.99987654321098765433,A1`,
    `${DAY},${ISIN},Globex Inc,GBX,XNYS,${price},USD,1.0825,2500,0.00012345678901234567,B2`,
  ];
  return makeZip({ 'close.csv': `${HEADER}\r\n${lines.join('\r\n')}\r\n` });
}

/** The lineage query of docs/warehouse.md: from one number (a security's closing price) to the file it came from. */
const lineage = (isin: string) => sql<{
  closing_price: string;
  load_id: string;
  file_name: string | null;
  content_sha256: string;
  bytes: number;
  format: string;
  loaded_at: string;
}>`
  select report.closing_price, ledger.load_id, ledger.file_name, ledger.content_sha256, ledger.bytes, ledger.format, ledger.loaded_at
  from constituent_report as report
  join report_loads as ledger on ledger.load_id = report.load_id
  where report.portfolio_id = ${PORTFOLIO} and report.report_type = 'constituent.close' and report.report_date = ${DAY} and report.isin = ${isin}`;

describe.each(DIALECTS)('lineage from a row to its file, loaded through the pipeline into %s', (dialect) => {
  let rig: SyncRig;
  const sync = (args: string[] = []) => rig.cli(['run', '--from', DAY, '--to', DAY, '--portfolios', String(PORTFOLIO), '--report-types', 'constituent.close', ...args]);
  const serve = (body: Buffer, fileName: string) =>
    rig.simulator.script(PORTFOLIO, 'constituent.close', DAY, [
      { status: 200, body, headers: { 'Content-Type': 'application/zip', 'Content-Disposition': `attachment; filename="${fileName}"` } },
    ]);
  const sha256 = (body: Buffer) => createHash('sha256').update(body).digest('hex');

  beforeAll(async () => {
    rig = await startSyncRig({ dialect, settings: { portfolios: [PORTFOLIO], reportTypes: ['constituent.close'] } });
  });
  afterAll(async () => {
    await rig?.close();
  });

  let firstLoad: { load_id: string; loaded_at: string };
  /** The first file, kept: a ZIP built again would differ in its entries' times. */
  let file: Buffer;

  it('goes from a closing price to the file it came from: name, SHA-256, size, format, and when it was loaded', async () => {
    file = await constituentFile('123.456789012345678');
    serve(file, 'constituent-close-2024-05-06.zip');
    const started = Date.now();
    const result = await sync();
    expect(result.code, result.stdout + result.stderr).toBe(0);

    const { db } = await rig.warehouse();
    const { rows } = await lineage(ISIN).execute(db);
    expect(rows).toHaveLength(1);
    const answer = rows[0]!;
    if (dialect === 'postgres') expect(answer.closing_price).toBe('123.456789012345678');
    else expect(Number(answer.closing_price)).toBeCloseTo(123.4567890123, 10);
    expect(answer).toMatchObject({ file_name: 'constituent-close-2024-05-06.zip', content_sha256: sha256(file), bytes: file.length, format: 'csv' });
    expect(answer.load_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The warehouse's clock, at the load: not before the run began (give a second for clocks apart).
    expect(Date.parse(answer.loaded_at)).toBeGreaterThan(started - 1_000);
    firstLoad = { load_id: answer.load_id, loaded_at: answer.loaded_at };

    // Every row of the slice carries that load's id, and the ledger row is the slice's.
    const slice = await db.selectFrom('constituent_report').select('load_id').where('portfolio_id', '=', PORTFOLIO).where('report_date', '=', DAY).execute();
    expect(slice.map((row) => row.load_id)).toEqual([answer.load_id, answer.load_id]);
    const ledger = await db
      .selectFrom('report_loads')
      .select(['load_id', 'loaded_at', 'updated_at', 'status'])
      .where('portfolio_id', '=', PORTFOLIO)
      .where('report_type', '=', 'constituent.close')
      .where('report_date', '=', DAY)
      .executeTakeFirstOrThrow();
    expect(ledger).toEqual({ load_id: answer.load_id, loaded_at: answer.loaded_at, updated_at: answer.loaded_at, status: 'loaded' });
  });

  it('keeps the load_id when the same file comes again (nothing was rewritten)', async () => {
    serve(file, 'constituent-close-2024-05-06.zip');
    const result = await sync();
    expect(result.stdout).toMatch(/of which unchanged\s+1/);
    const { db } = await rig.warehouse();
    expect((await lineage(ISIN).execute(db)).rows).toMatchObject([firstLoad]);
  });

  it('keeps the load_id when a later attempt fails: the rows are still the first load’s', async () => {
    rig.simulator.script(PORTFOLIO, 'constituent.close', DAY, [{ status: 403, body: 'no entitlement' }]);
    const result = await sync();
    expect(result.code).not.toBe(0);
    const { db } = await rig.warehouse();
    expect((await lineage(ISIN).execute(db)).rows).toMatchObject([firstLoad]);
    const ledger = await db.selectFrom('report_loads').select(['status', 'load_id', 'loaded_at']).executeTakeFirstOrThrow();
    expect(ledger).toEqual({ status: 'failed', ...firstLoad });
  });

  it('gives a changed file’s rows a new load_id, shared with the ledger row that names the new file', async () => {
    const restated = await constituentFile('124.5');
    serve(restated, 'constituent-close-2024-05-06-restated.zip');
    const result = await sync();
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const { db } = await rig.warehouse();
    const answer = (await lineage(ISIN).execute(db)).rows[0]!;
    expect(Number(answer.closing_price)).toBe(124.5);
    expect(answer).toMatchObject({ file_name: 'constituent-close-2024-05-06-restated.zip', content_sha256: sha256(restated), bytes: restated.length });
    expect(answer.load_id).not.toBe(firstLoad.load_id);
    expect(Date.parse(answer.loaded_at)).toBeGreaterThanOrEqual(Date.parse(firstLoad.loaded_at));
    const loadIds = await db.selectFrom('constituent_report').select('load_id').distinct().execute();
    expect(loadIds).toEqual([{ load_id: answer.load_id }]);
    // Nothing points at the first load any more: its rows were replaced whole.
    expect((await db.selectFrom('report_loads').select('load_id').where('load_id', '=', firstLoad.load_id).execute()).length).toBe(0);
  });
});
