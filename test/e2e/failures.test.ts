import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeZip } from '../helpers/make-zip.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';

const DAY = '2024-05-06'; // a Monday

const HEADER = 'Effective Date,ISIN,Security Name,Security Ticker,Exchange Code,Closing Price,Currency,Closing Fx,Index Shares,Index Weighting';

describe('failures, retries and bad files', () => {
  let rig: SyncRig;
  beforeAll(async () => {
    rig = await startSyncRig({ simulator: { portfolioIds: [1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008] } });
    writeFileSync(join(rig.dir, 'fast-timeouts.json'), JSON.stringify({ http: { headersTimeoutMs: 300 } }));
  });
  afterAll(async () => {
    await rig.close();
  });

  async function ledgerOf(portfolioId: number, reportType: string) {
    const warehouse = await rig.warehouse();
    return warehouse.db
      .selectFrom('report_loads')
      .selectAll()
      .where('portfolio_id', '=', portfolioId)
      .where('report_type', '=', reportType)
      .where('report_date', '=', DAY)
      .executeTakeFirstOrThrow();
  }

  async function rowsOf(portfolioId: number, reportType: string) {
    const warehouse = await rig.warehouse();
    const table = reportType === 'index' ? 'index_report' : 'constituent_report';
    return warehouse.db.selectFrom(table).selectAll().where('portfolio_id', '=', portfolioId).where('report_date', '=', DAY).execute();
  }

  function runOne(portfolioId: number, reportType: string) {
    return rig.cli(['run', '--from', DAY, '--to', DAY, '--portfolios', String(portfolioId), '--report-types', reportType]);
  }

  it('retries 500s, resets and truncated bodies until the slice loads', async () => {
    rig.simulator.script(1001, 'constituent.close', DAY, [{ status: 500 }, { fault: 'reset' }, { fault: 'truncate' }]);
    const result = await runOne(1001, 'constituent.close');
    expect(result.code).toBe(0);
    const ledger = await ledgerOf(1001, 'constituent.close');
    expect(ledger).toMatchObject({ status: 'loaded', attempts: 4, error: null });
    expect(result.logLines.filter((line) => line.status === 'retrying')).toHaveLength(3);
  });

  it('retries an answer slower than http.headersTimeoutMs, then loads', async () => {
    rig.simulator.script(1002, 'constituent.close', DAY, [{ delayMs: 1500 }]);
    const result = await rig.cli(['run', '--from', DAY, '--to', DAY, '--portfolios', '1002', '--report-types', 'constituent.close', '--config', 'fast-timeouts.json']);
    expect(result.code).toBe(0);
    const ledger = await ledgerOf(1002, 'constituent.close');
    expect(ledger).toMatchObject({ status: 'loaded', attempts: 2 });
    expect(result.logLines.find((line) => line.status === 'retrying')).toMatchObject({ code: 'EXPORT_TIMEOUT' });
  });

  it('honours a 429 Retry-After and then loads', async () => {
    rig.simulator.script(1001, 'index', DAY, [{ status: 429, headers: { 'Retry-After': '1' } }]);
    const startedAt = Date.now();
    const result = await runOne(1001, 'index');
    expect(result.code).toBe(0);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1000);
    expect(await ledgerOf(1001, 'index')).toMatchObject({ status: 'loaded', attempts: 2 });
  });

  it('gives up after the configured attempts and says why', async () => {
    rig.simulator.script(1002, 'index', DAY, [{ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }]);
    const result = await runOne(1002, 'index');
    expect(result.code).toBe(1);
    expect(await ledgerOf(1002, 'index')).toMatchObject({ status: 'failed', attempts: 4 });
    expect((await ledgerOf(1002, 'index')).error).toMatch(/^EXPORT_SERVER_ERROR: export endpoint answered 503/);
  });

  it.each([
    [403, /EXPORT_FORBIDDEN: .*verify REPORT_TENANT_ID/],
    [400, /EXPORT_BAD_REQUEST: .*check the parameters/],
  ])('fails a %i at once, with the ledger saying what to check', async (status, reason) => {
    rig.simulator.script(1003, 'index', DAY, [{ status }]);
    const result = await runOne(1003, 'index');
    expect(result.code).toBe(1);
    const ledger = await ledgerOf(1003, 'index');
    expect(ledger).toMatchObject({ status: 'failed', attempts: 1 });
    expect(ledger.error).toMatch(reason);
    expect(result.stdout).toMatch(reason);
  });

  it('fails an unknown portfolio (404) at once', async () => {
    const result = await runOne(9999, 'index');
    expect(result.code).toBe(1);
    const ledger = await ledgerOf(9999, 'index');
    expect(ledger).toMatchObject({ status: 'failed', attempts: 1 });
    expect(ledger.error).toMatch(/EXPORT_NOT_FOUND: .*check the portfolio id/);
  });

  const badFiles: [string, string, () => Promise<{ body: Buffer | string; contentType: string }>, RegExp][] = [
    [
      'JSON that is not an array',
      'index',
      async () => ({ body: '{"effectiveDate":"2024-05-06"}', contentType: 'application/json' }),
      /FILE_INVALID: .*is an object, not an array of records/,
    ],
    [
      'truncated JSON',
      'index',
      async () => ({ body: '[{"effectiveDate":"2024-05-06","indexId":"a"},{"effectiveDate":"2024-0', contentType: 'application/json' }),
      /FILE_INVALID: .*record 2/,
    ],
    [
      'a JSON record without its key column',
      'index',
      async () => ({ body: '[{"effectiveDate":"2024-05-06","indexName":"x"}]', contentType: 'application/json' }),
      /FILE_INVALID: .*record 1.*index_id is missing/,
    ],
    ['an HTML page', 'index', async () => ({ body: '<!DOCTYPE html><html><body>Gateway error</body></html>', contentType: 'text/html' }), /FILE_INVALID: .*HTML/],
    [
      'a CSV missing a key column',
      'constituent.close',
      async () => ({ body: await makeZip({ 'a.csv': 'Effective Date,Security Name\r\n2024-05-06,X\r\n' }), contentType: 'application/zip' }),
      /FILE_INVALID: .*line 2.*isin is missing/,
    ],
    [
      'a non-numeric decimal',
      'constituent.close',
      async () => ({
        body: await makeZip({ 'a.csv': `${HEADER}\r\n2024-05-06,XS1,A,B,,12.5,EUR,1,1,0.5\r\n2024-05-06,XS2,A,B,,abc,EUR,1,1,0.5\r\n` }),
        contentType: 'application/zip',
      }),
      /FILE_INVALID: .*line 3, column closing_price \("Closing Price"\): "abc" is not a decimal/,
    ],
    [
      'a ZIP with two CSVs',
      'constituent.close',
      async () => ({ body: await makeZip({ 'a.csv': `${HEADER}\r\n`, 'b.csv': `${HEADER}\r\n` }), contentType: 'application/zip' }),
      /FILE_INVALID: .*a\.csv.*b\.csv/,
    ],
    ['a ZIP with no CSV', 'constituent.close', async () => ({ body: await makeZip({ 'readme.txt': 'hi' }), contentType: 'application/zip' }), /FILE_INVALID: .*no CSV/],
    [
      'a corrupt ZIP',
      'constituent.close',
      async () => ({ body: Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(200, 7)]), contentType: 'application/zip' }),
      /FILE_INVALID: .*ZIP/i,
    ],
  ];

  it.each(badFiles)('fails the slice on %s and keeps the rows loaded earlier', async (_name, reportType, makeBody, reason) => {
    const portfolioId = 1004;
    // A good load first.
    const first = await runOne(portfolioId, reportType);
    expect(first.code).toBe(0);
    const before = await rowsOf(portfolioId, reportType);
    expect(before.length).toBeGreaterThan(0);
    const beforeLedger = await ledgerOf(portfolioId, reportType);

    const { body, contentType } = await makeBody();
    rig.simulator.script(portfolioId, reportType as 'index', DAY, [
      { status: 200, body, headers: { 'Content-Type': contentType, 'Content-Disposition': 'attachment; filename="bad-file.bin"' } },
    ]);
    const result = await runOne(portfolioId, reportType);
    expect(result.code).toBe(1);
    const ledger = await ledgerOf(portfolioId, reportType);
    expect(ledger.status).toBe('failed');
    expect(ledger.attempts).toBe(1);
    expect(ledger.error).toMatch(reason);
    expect(ledger.error).toContain('bad-file.bin');
    // Earlier rows, and the ledger's facts about them, are untouched.
    expect(await rowsOf(portfolioId, reportType)).toEqual(before);
    expect(ledger.content_sha256).toBe(beforeLedger.content_sha256);
    expect(ledger.row_count).toBe(beforeLedger.row_count);
  });

  it('never writes a secret or a token to the output, even at trace level', async () => {
    rig.simulator.script(1005, 'index', DAY, [{ status: 401 }, { status: 500 }]);
    const result = await rig.cli(['run', '--from', DAY, '--to', DAY, '--portfolios', '1005,1006'], { LOG_LEVEL: 'trace' });
    expect(result.code).toBe(0);
    const everything = `${result.stdout}${result.stderr}${result.logs}`;
    const { credentials } = rig.simulator;
    expect(everything.length).toBeGreaterThan(0);
    for (const secret of [credentials.clientSecret, credentials.password]) expect(everything).not.toContain(secret);
    expect(everything).not.toMatch(/Bearer\s+\S/i);
    for (const token of rig.simulator.issuedTokens()) expect(everything).not.toContain(token);
  });
});
