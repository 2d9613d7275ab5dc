import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, type Transform } from 'node:stream';
import { createDeflate, createGzip } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import type { WarehouseDialect } from '../../src/warehouse/open-warehouse.js';
import { Ledger } from '../../src/warehouse/ledger/ledger.js';
import { startFileGateway, type FileGateway } from '../helpers/file-gateway.js';
import { measuredCliRun, type MeasuredCliRun } from '../helpers/measured-cli-run.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import yazl from 'yazl';

/*
 * One huge record cannot take a run's memory (issue 25, finding 3). The compiled `run` fetches
 * hostile files from an upstream of the test's own (the simulator only issues the token), made here
 * as they are served: a 285 KiB ZIP holding one CSV line of 300 million commas, a gzip-encoded JSON
 * body holding one string of hundreds of MB, a file of hundreds of records each just under the limit. Each
 * slice fails as FILE_INVALID naming its line or record and limits.maxRecordBytes (or, under the
 * limit, loads), the run prints its summary and exits as a run with failures does, and the
 * process's peak resident memory, read from the kernel as it exits, stays within 300 MB of what
 * the same command takes for one ordinary slice.
 */

const MiB = 1024 ** 2;
const CEILING_MB = 300;
const DATE = '2024-05-06';
const HEADER = 'Effective Date,ISIN,Security Name,Security Ticker,Exchange Code,Closing Price,Currency,Closing Fx,Index Shares,Index Weighting';
const LIMIT_MESSAGE = 'is longer than limits.maxRecordBytes (1048576 characters): refusing it before it is held whole; raise that setting if the file is genuine';

function constituentLine(i: number, name: string | Buffer): Buffer[] {
  return [Buffer.from(`${DATE},XS${String(i).padStart(10, '0')},`), Buffer.isBuffer(name) ? name : Buffer.from(name), Buffer.from(',ACM,XLON,12.5,EUR,1.1,100,0.001\r\n')];
}

function constituentJson(i: number, name: string | Buffer): Buffer[] {
  return [
    Buffer.from(`{"effectiveDate":"${DATE}","isin":"XS${String(i).padStart(10, '0')}","securityName":"`),
    Buffer.isBuffer(name) ? name : Buffer.from(name),
    Buffer.from('","closingPrice":12.5,"currency":"EUR","indexWeighting":0.001}'),
  ];
}

/** The bytes `parts` yields, streamed through `encoder` (or not): hundreds of MB never held at once. */
async function bytesOf(parts: () => Iterable<Buffer>, encoder?: Transform): Promise<Buffer> {
  const source = Readable.from(parts());
  const chunks: Buffer[] = [];
  for await (const chunk of encoder ? source.pipe(encoder) : source) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A ZIP of one deflated `data.csv` streamed from `parts`, written as yazl writes it (a data descriptor after the data). */
async function zipOf(parts: () => Iterable<Buffer>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addReadStream(Readable.from(parts()), 'data.csv');
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The header, then one line of `count` MiB of commas. */
function* commaLine(count: number): Generator<Buffer> {
  yield Buffer.from(`${HEADER}\r\n`);
  const commas = Buffer.alloc(MiB, ',');
  for (let i = 0; i < count; i += 1) yield commas;
  yield Buffer.from('\r\n');
}

/** A JSON array of one record whose security name is `mb` MiB of one letter. */
function* hugeString(mb: number): Generator<Buffer> {
  const [head, , tail] = constituentJson(1, '');
  yield Buffer.from('[');
  yield head!;
  const letters = Buffer.alloc(MiB, 'x');
  for (let i = 0; i < mb; i += 1) yield letters;
  yield tail!;
  yield Buffer.from(']');
}

/** `rows` constituents, each with a security name of `nameChars` letters. */
function* wideCsv(rows: number, nameChars: number): Generator<Buffer> {
  yield Buffer.from(`${HEADER}\r\n`);
  const name = Buffer.alloc(nameChars, 'n');
  for (let i = 0; i < rows; i += 1) yield* constituentLine(i, name);
}

/**
 * A bare CSV of `rows` constituents with `fields` columns, all but the ten listed ones unlisted
 * (kept in `extra`): each record about 1 MiB of 12-character cells, just under the limit.
 */
function manyFieldsCsv(rows: number, fields: number): Buffer {
  const names = HEADER.split(',');
  for (let field = names.length; field < fields; field += 1) names.push(`f${field}`);
  const lines = [names.join(',')];
  for (let i = 0; i < rows; i += 1) {
    const cells = [DATE, `XS${String(i).padStart(10, '0')}`, 'Acme', 'ACM', 'XLON', '12.5', 'EUR', '1.1', '100', '0.001'];
    for (let field = cells.length; field < fields; field += 1) cells.push(`${String(i).padStart(2, '0')}:${String(field).padStart(9, '0')}`);
    lines.push(cells.join(','));
  }
  return Buffer.from(`${lines.join('\r\n')}\r\n`);
}

function* wideJson(rows: number, nameChars: number): Generator<Buffer> {
  const name = Buffer.alloc(nameChars, 'n');
  yield Buffer.from('[');
  for (let i = 0; i < rows; i += 1) {
    if (i > 0) yield Buffer.from(',');
    yield* constituentJson(i, name);
  }
  yield Buffer.from(']');
}

/** Figures for the log: what each run cost. */
function figures(run: MeasuredCliRun, idleMb: number): string {
  return `peak ${Math.round(run.peakMb ?? NaN)} MB (idle ${Math.round(idleMb)} MB, +${Math.round((run.peakMb ?? NaN) - idleMb)} MB), ${run.seconds.toFixed(1)} s`;
}

interface HostileCases {
  /** The CSV cases: a line of commas, eight at once, records at the limit. */
  readonly csv: boolean;
  /** Content-Encodings of a JSON body of one huge string, and the string's MiB. */
  readonly encoded: readonly (readonly ['gzip' | 'deflate', number])[];
  /** A file of records each just under the limit, that must load. */
  readonly wide: { readonly format: 'zip' | 'json'; readonly rows: number; readonly threaded: boolean };
}

function describeHostileRecords(dialect: WarehouseDialect, cases: HostileCases) {
  describe(`one huge record cannot take a run's memory (${dialect})`, () => {
    let rig: SyncRig;
    let upstream: FileGateway;
    let idleMb: number;
    let nextPortfolio = 1;
    let nextConfig = 1;
    const measured: string[] = [];

    beforeAll(async () => {
      rig = await startSyncRig({ dialect, settings: { formats: { index: 'json', 'constituent.close': 'csv' }, concurrency: 8 } });
      upstream = await startFileGateway();
      expect((await rig.cli(['migrate'])).code).toBe(0);
      // The same command over one ordinary slice: what the process takes anyway.
      const portfolio = nextPortfolio++;
      upstream.serve(portfolio, 'constituent.close', DATE, {
        body: await zipOf(function* () {
          yield Buffer.from(`${HEADER}\r\n`);
          yield* constituentLine(1, 'Acme');
        }),
        contentType: 'application/zip',
        fileName: 'ordinary.zip',
      });
      const idle = await run([portfolio]);
      expect(idle.code, idle.output).toBe(0);
      expect(idle.peakMb, idle.output).toBeDefined();
      idleMb = idle.peakMb!;
      measured.push(`idle: ${figures(idle, idleMb)}`);
    }, 60_000);
    afterAll(async () => {
      console.log(`${dialect}:\n  ${measured.join('\n  ')}`);
      await upstream?.close();
      await rig?.close();
    });

    /** `run` over `portfolios` (constituent.close, DATE) as a process of its own, with `settings` on top of the rig's. */
    async function run(portfolios: readonly number[], settings?: SettingsInput): Promise<MeasuredCliRun> {
      const args = ['run', '--from', DATE, '--to', DATE, '--portfolios', portfolios.join(','), '--report-types', 'constituent.close'];
      if (settings) {
        const file = `hostile-${nextConfig++}.json`;
        writeFileSync(join(rig.dir, file), JSON.stringify(settings));
        args.push('--config', file);
      }
      return measuredCliRun(args, { cwd: rig.dir, env: { ...rig.env, REPORT_BASE_URL: upstream.url } });
    }

    function serve(body: Buffer, fileName: string, contentEncoding?: string): number[] {
      return serveMany(1, body, fileName, contentEncoding);
    }

    function serveMany(count: number, body: Buffer, fileName: string, contentEncoding?: string): number[] {
      const portfolios = Array.from({ length: count }, () => nextPortfolio++);
      const contentType = fileName.endsWith('.zip') ? 'application/zip' : 'application/json';
      for (const portfolio of portfolios) upstream.serve(portfolio, 'constituent.close', DATE, { body, contentType, fileName, contentEncoding });
      return portfolios;
    }

    async function ledgerRow(portfolioId: number) {
      return new Ledger(await rig.warehouse()).row({ portfolioId, reportType: 'constituent.close', reportDate: DATE });
    }

    /** Failed as a file's fault, naming where and the limit, with the run's summary printed and the memory within the ceiling. */
    async function expectRefused(result: MeasuredCliRun, portfolios: readonly number[], message: string) {
      expect(result.code, result.output.slice(-3000)).toBe(1);
      expect(result.stdout).toMatch(new RegExp(`^failed\\s+${portfolios.length}\\s*$`, 'm'));
      expect(result.stdout).toContain(`FILE_INVALID: ${portfolios.length} slice`);
      expect(result.peakMb, result.output.slice(-3000)).toBeLessThanOrEqual(idleMb + CEILING_MB);
      for (const portfolio of portfolios) {
        const row = await ledgerRow(portfolio);
        expect(row).toMatchObject({ status: 'failed', error_code: 'FILE_INVALID', error: `FILE_INVALID: ${message}` });
      }
    }

    if (cases.csv) {
      let commas: Buffer;
      beforeAll(async () => {
        commas = await zipOf(() => commaLine(286));
      }, 30_000);

      it('fails a 285 KiB ZIP holding one line of 300 million commas as FILE_INVALID, naming the line and the limit, read on a worker thread', async () => {
        expect(commas.length).toBeLessThan(300 * 1024);
        const portfolios = serve(commas, 'commas.zip');
        const result = await run(portfolios, { limits: { threadedParseBytes: 0 } });
        measured.push(`one ZIP of 300 million commas, on a worker thread: ${figures(result, idleMb)}`);
        await expectRefused(result, portfolios, `commas.zip, data.csv line 2: the record ${LIMIT_MESSAGE}`);
      }, 60_000);

      it('fails eight of them at once (concurrency 8), and prints the summary', async () => {
        const portfolios = serveMany(8, commas, 'commas.zip');
        const result = await run(portfolios);
        measured.push(`eight ZIPs of 300 million commas at once: ${figures(result, idleMb)}`);
        await expectRefused(result, portfolios, `commas.zip, data.csv line 2: the record ${LIMIT_MESSAGE}`);
      }, 60_000);

      it('fails eight bodies of 4 MiB held in memory at once, each read as one chunk: bare CSVs of commas, JSON arrays of 1.4 million records', async () => {
        const csv = Buffer.concat([Buffer.from(`${HEADER}\r\n`), Buffer.alloc(4 * MiB - 1024, ','), Buffer.from('\r\n')]);
        const json = Buffer.from(`[${'{},'.repeat(1_400_000)}{}]`);
        const [csvs, jsons] = [Array.from({ length: 4 }, () => nextPortfolio++), Array.from({ length: 4 }, () => nextPortfolio++)];
        for (const portfolio of csvs) upstream.serve(portfolio, 'constituent.close', DATE, { body: csv, contentType: 'text/csv', fileName: 'commas.csv' });
        for (const portfolio of jsons) upstream.serve(portfolio, 'constituent.close', DATE, { body: json, contentType: 'application/json', fileName: 'many.json' });
        const result = await run([...csvs, ...jsons]);
        measured.push(`eight bodies of 4 MiB held in memory at once (commas, empty records): ${figures(result, idleMb)}`);
        expect(result.code, result.output.slice(-3000)).toBe(1);
        expect(result.stdout).toMatch(/^failed\s+8\s*$/m);
        expect(result.peakMb, result.output.slice(-3000)).toBeLessThanOrEqual(idleMb + CEILING_MB);
        for (const portfolio of csvs) expect(await ledgerRow(portfolio)).toMatchObject({ error: `FILE_INVALID: commas.csv line 2: the record ${LIMIT_MESSAGE}` });
        for (const portfolio of jsons)
          expect(await ledgerRow(portfolio)).toMatchObject({ error: 'FILE_INVALID: many.json, record 1: key column effective_date is missing; every record needs it' });
      }, 60_000);

      it('loads eight bare CSVs of 20 records of 80,000 tiny fields each at once (concurrency 8) within the ceiling', async () => {
        const body = manyFieldsCsv(20, 80_000);
        const portfolios = Array.from({ length: 8 }, () => nextPortfolio++);
        for (const portfolio of portfolios) upstream.serve(portfolio, 'constituent.close', DATE, { body, contentType: 'text/csv', fileName: 'fields.csv' });
        const result = await run(portfolios);
        measured.push(`eight bare CSVs of 20 records of 80,000 fields each at once: ${figures(result, idleMb)}`);
        expect(result.code, result.output.slice(-3000)).toBe(0);
        expect(result.stdout).toMatch(/^loaded\s+8\s*$/m);
        expect(result.peakMb, result.output.slice(-3000)).toBeLessThanOrEqual(idleMb + CEILING_MB);
        for (const portfolio of portfolios) expect(await ledgerRow(portfolio)).toMatchObject({ status: 'loaded', row_count: 20 });
        // Every unlisted field is kept, in file order.
        const warehouse = await rig.warehouse();
        const row = await warehouse.db
          .selectFrom('constituent_report')
          .select('extra')
          .where('portfolio_id', '=', portfolios[0]!)
          .where('isin', '=', 'XS0000000019')
          .executeTakeFirstOrThrow();
        const extra = JSON.parse(row.extra!) as Record<string, string>;
        expect(Object.keys(extra)).toHaveLength(80_000 - 10);
        expect(extra.f10).toBe('19:000000010');
        expect(extra.f79999).toBe('19:000079999');
      }, 60_000);

      it('loads a record just under the limit, refuses one just over it, and loads a 2 MiB one once limits.maxRecordBytes allows it', async () => {
        const line = (nameChars: number) => zipOf(() => wideCsv(1, nameChars));
        // The record is the name and 56 characters more.
        const [under, over, big] = [serve(await line(MiB - 100), 'under.zip'), serve(await line(MiB), 'over.zip'), serve(await line(2 * MiB), 'big.zip')];
        const result = await run([...under, ...over, ...big]);
        expect(result.code, result.output.slice(-3000)).toBe(1);
        expect(await ledgerRow(under[0]!)).toMatchObject({ status: 'loaded', row_count: 1 });
        expect(await ledgerRow(over[0]!)).toMatchObject({ status: 'failed', error: `FILE_INVALID: over.zip, data.csv line 2: the record ${LIMIT_MESSAGE}` });
        expect(await ledgerRow(big[0]!)).toMatchObject({ status: 'failed', error_code: 'FILE_INVALID' });

        const raised = await run(big, { limits: { maxRecordBytes: 3 * MiB } });
        expect(raised.code, raised.output.slice(-3000)).toBe(0);
        expect(await ledgerRow(big[0]!)).toMatchObject({ status: 'loaded', row_count: 1, error_code: null });
        const warehouse = await rig.warehouse();
        const names = await warehouse.db
          .selectFrom('constituent_report')
          .select((eb) => [eb.fn<number>('length', ['security_name']).as('length')])
          .where('portfolio_id', 'in', [under[0]!, big[0]!])
          .orderBy('portfolio_id')
          .execute();
        expect(names.map((row) => Number(row.length))).toEqual([MiB - 100, 2 * MiB]);
      }, 60_000);
    }

    it.each(cases.encoded)(
      'fails a %s-encoded JSON body holding one string of %i MiB as FILE_INVALID, not as the warehouse’s fault',
      async (encoding, mb) => {
        const body = await bytesOf(() => hugeString(mb), encoding === 'gzip' ? createGzip({ level: 1 }) : createDeflate({ level: 1 }));
        const portfolios = serve(body, 'huge.json', encoding);
        const result = await run(portfolios);
        measured.push(`a ${Math.round(body.length / 1024)} KiB ${encoding} JSON body of one ${mb} MiB string: ${figures(result, idleMb)}`);
        expect(result.output).not.toContain('WAREHOUSE_REJECTED');
        await expectRefused(result, portfolios, `huge.json: record 1 ${LIMIT_MESSAGE}`);
      },
      60_000,
    );

    const { wide } = cases;
    it(`loads a ${wide.format === 'zip' ? 'ZIP' : 'gzip-encoded JSON'} file of ${wide.rows} records each just under the limit within the ceiling${wide.threaded ? ', read on a worker thread' : ''}`, async () => {
      const nameChars = 1_000_000;
      const portfolios =
        wide.format === 'zip'
          ? serve(await zipOf(() => wideCsv(wide.rows, nameChars)), 'wide.zip')
          : serve(await bytesOf(() => wideJson(wide.rows, nameChars), createGzip({ level: 1 })), 'wide.json', 'gzip');
      const result = await run(portfolios, wide.threaded ? { limits: { threadedParseBytes: 0 } } : undefined);
      measured.push(`a ${wide.format} file of ${wide.rows} records of ${nameChars} characters each: ${figures(result, idleMb)}`);
      expect(result.code, result.output.slice(-3000)).toBe(0);
      expect(await ledgerRow(portfolios[0]!)).toMatchObject({ status: 'loaded', row_count: wide.rows });
      expect(result.peakMb).toBeLessThanOrEqual(idleMb + CEILING_MB);
    }, 60_000);
  });
}

describeHostileRecords('sqlite', {
  csv: true,
  encoded: [
    // The finding's string was 600 MB; its decoded body is spooled to disk whole before it is read,
    // which on a shared disk took from 9 to 53 s. Any string past the limit is refused the same way.
    ['gzip', 160],
    ['deflate', 64],
  ],
  wide: { format: 'zip', rows: 150, threaded: true },
});
// The warehouse was blamed for the huge string once; a Postgres load (COPY) is written in chunks of its own.
describeHostileRecords('postgres', { csv: false, encoded: [['gzip', 64]], wide: { format: 'json', rows: 150, threaded: false } });
