import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSliceFailed } from '../helpers/expect-slice-outcome.js';
import { startFaultRig, type FaultRig } from '../helpers/fault-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';

/*
 * An empty answer never deletes a loaded slice's rows on its own. A close-delimited 200 that ends
 * before any byte (a dying proxy or gateway pod) is a broken transfer, retried and then failed; a
 * properly framed empty answer for a slice that holds rows keeps them and fails the slice with
 * EMPTY_RESTATEMENT (shown by status, check and the alert), unless the operator accepts such
 * restatements. In both dialects.
 */
describe.each(DIALECTS)('empty answers for a slice that holds rows (%s)', (dialect) => {
  let fault: FaultRig;
  beforeAll(async () => {
    fault = await startFaultRig({}, { dialect });
  });
  afterAll(async () => {
    await fault.close();
  });

  it('a 200 closed right after its headers, with no Content-Length and no chunking, is a broken transfer: retried, then failed, rows kept', async () => {
    for (const reportType of ['index', 'constituent.close'] as const) {
      const slice = fault.slice(reportType);
      const earlier = await fault.loadGood(slice);
      fault.gateway.handle((_request, reply) => {
        reply.head(200, { 'Content-Type': 'application/json', Connection: 'close' });
        reply.end();
      });
      const run = await fault.run(slice, { through: 'gateway' });
      await expectSliceFailed(fault, slice, run, {
        code: 'EXPORT_NETWORK',
        says: /closed the connection before sending any byte, with neither Content-Length nor chunked framing: a broken transfer/,
        attempts: 3,
        withinMs: 5_000,
        earlier,
      });
      expect(fault.gateway.requests.length).toBeGreaterThanOrEqual(3);
    }
  });

  it('the same cut, followed by a good answer, loads on the retry', async () => {
    const slice = fault.slice('constituent.close');
    await fault.loadGood(slice);
    const good = await fault.goodFile(slice);
    fault.gateway.handle((request, reply) => {
      if (request.number > 1) return reply.send(200, good.body, good.headers);
      reply.head(200, { ...good.headers, Connection: 'close' });
      reply.end();
    });
    const run = await fault.run(slice, { through: 'gateway' });
    expect(run.code, run.stdout).toBe(0);
    expect(await fault.ledger(slice)).toMatchObject({ status: 'loaded', attempts: 2 });
  });

  it.each([
    ['Content-Length: 0', { 'Content-Length': 0 }],
    ['an empty chunked body', { 'Transfer-Encoding': 'chunked' }],
  ])('a properly framed empty answer (%s) keeps the rows and fails the slice with EMPTY_RESTATEMENT', async (_name, headers) => {
    const slice = fault.slice('constituent.close');
    const earlier = await fault.loadGood(slice);
    fault.gateway.handle((_request, reply) => {
      reply.head(200, { 'Content-Type': 'application/zip', ...headers });
      if ('Transfer-Encoding' in headers) reply.write('0\r\n\r\n');
    });
    const run = await fault.run(slice, { through: 'gateway' });
    await expectSliceFailed(fault, slice, run, {
      code: 'EMPTY_RESTATEMENT',
      says: new RegExp(
        `no data for portfolio ${slice.portfolioId}, constituent.close, .* holds ${earlier.rows.length} rows .* the rows are kept. .*warehouse\\.acceptEmptyRestatements`,
      ),
      attempts: 3,
      withinMs: 5_000,
      earlier,
    });
    const status = await fault.rig.cli([
      'status',
      '--from',
      slice.reportDate,
      '--to',
      slice.reportDate,
      '--portfolios',
      String(slice.portfolioId),
      '--report-types',
      slice.reportType,
    ]);
    expect(status.stdout).toContain('EMPTY_RESTATEMENT');
  });

  it('with warehouse.acceptEmptyRestatements, an empty answer is believed: no_data, rows gone', async () => {
    const slice = fault.slice('index');
    await fault.loadGood(slice);
    fault.gateway.handle((_request, reply) => reply.send(200, '', { 'Content-Type': 'application/json' }));
    const run = await fault.run(slice, { through: 'gateway', settings: { warehouse: { acceptEmptyRestatements: true } } });
    expect(run.code, run.stdout).toBe(0);
    expect(await fault.ledger(slice)).toMatchObject({ status: 'no_data', row_count: 0, error: null });
    expect(await fault.rows(slice)).toEqual([]);
  });

  it('a slice with no rows yet still takes an empty answer as no data', async () => {
    const slice = fault.slice('index');
    fault.gateway.handle((_request, reply) => reply.send(200, '', { 'Content-Type': 'application/json' }));
    const run = await fault.run(slice, { through: 'gateway' });
    expect(run.code, run.stdout).toBe(0);
    expect(await fault.ledger(slice)).toMatchObject({ status: 'no_data', row_count: 0 });
  });
});
