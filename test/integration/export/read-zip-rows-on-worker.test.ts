import { POSTGRES_DECIMALS } from '../../../src/reports/decimal-capacity.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExportError, FileFormatError } from '../../../src/errors/sync-error.js';
import { readZipCopyTextOnWorker, readZipRowsOnWorker } from '../../../src/export/read-zip-rows-on-worker.js';
import { createRowValuesBuilder, type RowValues } from '../../../src/extract/row-builder.js';
import { readZipCsvRecords } from '../../../src/extract/zip-csv-records.js';
import { settingsSchema } from '../../../src/config/settings-schema.js';
import { SliceCheckTally } from '../../../src/quality/slice-check-tally.js';
import { REPORT_REGISTRY } from '../../../src/reports/report-registry.js';
import { renderZip } from '../../../src/simulator/render-export.js';
import { lazySyntheticReport } from '../../../src/simulator/synthetic-reports.js';
import { exportRows } from '../../../src/export/export-rows.js';
import { numberedRows } from '../../../src/export/numbered-rows.js';
import type { Slice } from '../../../src/slice/slice.js';
import { copyLineEnd, copyTextRow } from '../../../src/warehouse/loading/copy-text-row.js';
import { CopyTextRows } from '../../../src/warehouse/engine/copy-text-rows.js';
import type { SliceRows } from '../../../src/warehouse/engine/row-writer.js';
import { SliceLoader } from '../../../src/warehouse/loading/slice-loader.js';
import { makeZip } from '../../helpers/make-zip.js';
import { createTempWarehouse, DIALECTS } from '../../helpers/temp-warehouse.js';

const slice: Slice = { portfolioId: 1001, reportType: 'constituent.close', reportDate: '2024-03-01' };
const definition = REPORT_REGISTRY[slice.reportType];
const javaZip = readFileSync(new URL('../../fixtures/constituent-java-data-descriptor.zip', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'report-sync-zip-rows-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Zip = { path: string } | { buffer: Buffer };
const LIMIT = 1 << 30;

async function collect(rows: AsyncIterable<RowValues>): Promise<RowValues[]> {
  const all: RowValues[] = [];
  for await (const row of rows) all.push(row);
  return all;
}

/** The rows as the single-threaded path types them. */
function onThisThread(zip: Zip, maxUncompressedBytes = LIMIT): AsyncIterable<RowValues> {
  return numberedRows(readZipCsvRecords(zip, { fileName: 'export.zip', maxUncompressedBytes }), createRowValuesBuilder(definition, slice, 'export.zip'));
}

function onWorker(zip: Zip, maxUncompressedBytes = LIMIT, batchRows?: number): AsyncIterable<RowValues> {
  return readZipRowsOnWorker({ zip, fileName: 'export.zip', maxUncompressedBytes, slice, ...(batchRows ? { batchRows } : {}) });
}

/** The COPY text of rows typed on a worker, each line ended by `lineEnd`, and the rows each batch said it held. */
async function copyText(rows: CopyTextRows, lineEnd: string): Promise<{ text: string; rows: number }> {
  let text = '';
  let count = 0;
  for await (const batch of rows.batches(lineEnd)) {
    text += batch.text;
    count += batch.rows;
  }
  return { text, rows: count };
}

async function failure(rows: AsyncIterable<RowValues> | (() => Promise<unknown>)): Promise<Error> {
  const error = await (typeof rows === 'function' ? rows() : collect(rows)).catch((thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

/** The simulator's constituent ZIP of `count` rows: 20-digit decimals, quoted commas, quotes, line breaks, a data descriptor. */
async function syntheticZip(count: number): Promise<Buffer> {
  return buffer(renderZip(lazySyntheticReport(slice, { sizes: { constituentRows: count } })));
}

/** A stored (uncompressed) ZIP of one CSV, its text findable in the bytes to corrupt them. */
function constituentCsv(lines: string[]): string {
  return ['Effective Date,ISIN,Security Name,Closing Price,Currency', ...lines].join('\n');
}

/** Counts the worker threads started while `work` runs (process 'worker' events). */
async function workersStartedBy(work: () => Promise<unknown>): Promise<number> {
  let started = 0;
  const count = () => (started += 1);
  process.on('worker', count);
  try {
    await work();
  } finally {
    process.off('worker', count);
  }
  return started;
}

describe('readZipRowsOnWorker', () => {
  it('yields the rows the single-threaded reader yields: a Java ZIP from memory and from a file, and 3,001 synthetic rows across batches', async () => {
    const path = join(dir, 'java.zip');
    writeFileSync(path, javaZip);
    for (const zip of [{ buffer: javaZip }, { path }]) {
      const expected = await collect(onThisThread(zip));
      expect(expected).toHaveLength(4);
      expect(await collect(onWorker(zip))).toEqual(expected);
    }
    const synthetic = await syntheticZip(3_001);
    const expected = await collect(onThisThread({ buffer: synthetic }));
    expect(expected).toHaveLength(3_001);
    // Odd batch sizes: full batches, a short last one, and backpressure (more batches than may wait).
    expect(await collect(onWorker({ buffer: synthetic }, LIMIT, 7))).toEqual(expected);
    expect(await collect(onWorker({ buffer: synthetic }))).toEqual(expected);
  });

  it('fails a CRC-32 mismatch as the single-threaded reader does: same class, same message', async () => {
    const zip = await makeZip({ 'data.csv': constituentCsv(['2024-03-01,DE0007164600,SAP SE,123.45,EUR']) }, { compress: false });
    const corrupt = Buffer.from(zip.toString('latin1').replace('SAP SE', 'SAP SF'), 'latin1');
    const expected = await failure(onThisThread({ buffer: corrupt }));
    const error = await failure(onWorker({ buffer: corrupt }));
    expect(error).toBeInstanceOf(FileFormatError);
    expect(error.message).toBe(expected.message);
    expect(error.message).toContain('CRC-32 does not match');
  });

  it('fails a bad decimal, naming the line and column, as the single-threaded reader does', async () => {
    const zip = await makeZip({ 'data.csv': constituentCsv(['2024-03-01,DE0007164600,SAP SE,123.45,EUR', '2024-03-01,US0378331005,Apple,12x.5,USD']) });
    const expected = await failure(onThisThread({ buffer: zip }));
    const error = await failure(onWorker({ buffer: zip }));
    expect(error).toBeInstanceOf(FileFormatError);
    expect((error as FileFormatError).code).toBe('FILE_INVALID');
    expect(error.message).toBe(expected.message);
    expect(error.message).toContain('data.csv line 3, column closing_price');
  });

  it('fails a line of ten million commas over limits.maxRecordBytes as the single-threaded reader does, and loads the ordinary file beside it', async () => {
    const poison = await makeZip({ 'data.csv': constituentCsv(['2024-03-01,DE0007164600,SAP SE,123.45,EUR', ','.repeat(10_000_000)]) }, { compress: true });
    const maxRecordBytes = 1024 ** 2;
    const expected = await failure(
      numberedRows(
        readZipCsvRecords({ buffer: poison }, { fileName: 'export.zip', maxUncompressedBytes: LIMIT, maxRecordBytes }),
        createRowValuesBuilder(definition, slice, 'export.zip'),
      ),
    );
    const error = await failure(readZipRowsOnWorker({ zip: { buffer: poison }, fileName: 'export.zip', maxUncompressedBytes: LIMIT, maxRecordBytes, slice }));
    expect(error).toBeInstanceOf(FileFormatError);
    expect(error.message).toBe(expected.message);
    expect((error as FileFormatError).code).toBe('FILE_INVALID');
    expect(error.message).toContain('export.zip, data.csv line 3: ');
    expect(error.message).toContain('limits.maxRecordBytes (1048576 characters)');
    const ordinary = await syntheticZip(200);
    expect(await collect(readZipRowsOnWorker({ zip: { buffer: ordinary }, fileName: 'export.zip', maxUncompressedBytes: LIMIT, maxRecordBytes, slice }))).toHaveLength(200);
  });

  it('stops a file that inflates past limits.maxUncompressedBytes with EXPORT_TOO_LARGE', async () => {
    const error = await failure(onWorker({ buffer: await syntheticZip(100) }, 1_000));
    expect(error).toBeInstanceOf(ExportError);
    expect((error as ExportError).code).toBe('EXPORT_TOO_LARGE');
  });

  it('ends its worker when the reader stops early, and starts none when the rows are never read', async () => {
    const rows = onWorker({ buffer: await syntheticZip(5_000) }, LIMIT, 10);
    expect(
      await workersStartedBy(async () => {
        for await (const row of rows) {
          expect(row[0]).toBe(slice.portfolioId);
          break;
        }
      }),
    ).toBe(1);
    expect(await workersStartedBy(async () => onWorker({ buffer: javaZip }))).toBe(0);
  });
});

describe('readZipCopyTextOnWorker', () => {
  const lineEnd = copyLineEnd('0b7e4d1c-3a52-4f0e-9d61-6c1f2a8b9e07');
  const tallyOf = () => new SliceCheckTally(definition, slice, settingsSchema.parse({}).checks);

  it('writes the COPY text of the rows the single-threaded reader types, in batches whose counts add up, and nothing before it is read', async () => {
    const synthetic = await syntheticZip(3_001);
    const expected = await collect(onThisThread({ buffer: synthetic }));
    const rows = readZipCopyTextOnWorker({ zip: { buffer: synthetic }, fileName: 'export.zip', maxUncompressedBytes: LIMIT, slice, batchRows: 7 });
    expect(await workersStartedBy(async () => rows)).toBe(0);
    const written = await copyText(rows, lineEnd);
    expect(written.rows).toBe(3_001);
    expect(written.text).toBe(expected.map((row) => copyTextRow(row, lineEnd)).join(''));
    // The simulator's awkward values need COPY's escapes: a line break inside a security name.
    expect(written.text).toContain('\\n');
  });

  it('tallies the data-quality checks on the worker to the same results as a tally of the rows on this thread', async () => {
    const zip = await makeZip({
      'data.csv': constituentCsv(['2024-03-01,DE0007164600,SAP SE,123.45,EUR', '2024-02-01,DE0007164600,SAP SE,-1,EUR', '2024-03-01,US0378331005,Apple,0,USD']),
    });
    const here = tallyOf();
    for await (const row of onThisThread({ buffer: zip })) here.observe(row);
    const there = tallyOf();
    await copyText(readZipCopyTextOnWorker({ zip: { buffer: zip }, fileName: 'export.zip', maxUncompressedBytes: LIMIT, slice, checks: there }), lineEnd);
    const context = { previous: { reportDate: '2024-02-29', rowCount: 10 }, repeated: { rows: 1, example: { value: 'DE0007164600', row: 2 } } };
    expect(there.mayRepeat).toBe(true);
    expect(there.evaluate(context)).toEqual(here.evaluate(context));
    expect(
      there
        .evaluate(context)
        .filter((result) => result.outcome !== 'pass')
        .map((result) => result.check),
    ).toEqual(expect.arrayContaining(['duplicateIsin', 'rowCountDrop', 'effectiveDate', 'positiveValues']));
    // The worker's tally of a file with typed rows agrees too (the path SQLite takes).
    const typed = tallyOf();
    await collect(readZipRowsOnWorker({ zip: { buffer: zip }, fileName: 'export.zip', maxUncompressedBytes: LIMIT, slice, checks: typed }));
    expect(typed.evaluate(context)).toEqual(here.evaluate(context));
  });

  it('fails a bad decimal as the single-threaded reader does', async () => {
    const zip = await makeZip({ 'data.csv': constituentCsv(['2024-03-01,DE0007164600,SAP SE,123.45,EUR', '2024-03-01,US0378331005,Apple,12x.5,USD']) });
    const expected = await failure(onThisThread({ buffer: zip }));
    const error = await failure(() => copyText(readZipCopyTextOnWorker({ zip: { buffer: zip }, fileName: 'export.zip', maxUncompressedBytes: LIMIT, slice }), lineEnd));
    expect(error).toBeInstanceOf(FileFormatError);
    expect(error.message).toBe(expected.message);
  });
});

describe('exportRows', () => {
  const content = (zip: Buffer) => ({
    kind: 'records' as const,
    format: 'csv' as const,
    records: readZipCsvRecords({ buffer: zip }, { fileName: 'export.zip', maxUncompressedBytes: LIMIT }),
    zip: { buffer: zip },
  });

  it('reads a ZIP below the threshold on this thread, and one at or above it on a worker, to the same rows', async () => {
    const zip = await syntheticZip(500);
    const options = { fileName: 'export.zip', bytes: zip.length, maxUncompressedBytes: LIMIT, maxRecordBytes: 1024 ** 2, copyText: false, decimals: POSTGRES_DECIMALS };
    let small: RowValues[] = [];
    let big: RowValues[] = [];
    expect(
      await workersStartedBy(
        async () => (small = await collect(exportRows(content(zip), slice, definition, { ...options, threadedParseBytes: zip.length + 1 }).rows as AsyncIterable<RowValues>)),
      ),
    ).toBe(0);
    expect(
      await workersStartedBy(
        async () => (big = await collect(exportRows(content(zip), slice, definition, { ...options, threadedParseBytes: zip.length }).rows as AsyncIterable<RowValues>)),
      ),
    ).toBe(1);
    expect(exportRows(content(zip), slice, definition, { ...options, threadedParseBytes: zip.length + 1 }).onWorker).toBe(false);
    expect(exportRows(content(zip), slice, definition, { ...options, threadedParseBytes: zip.length }).onWorker).toBe(true);
    expect(small).toHaveLength(500);
    expect(big).toEqual(small);
  });

  it('hands a big ZIP on as COPY text when the warehouse takes it, and a small one as values all the same', async () => {
    const zip = await syntheticZip(50);
    const options = { fileName: 'export.zip', bytes: zip.length, maxUncompressedBytes: LIMIT, maxRecordBytes: 1024 ** 2, copyText: true, decimals: POSTGRES_DECIMALS };
    expect(exportRows(content(zip), slice, definition, { ...options, threadedParseBytes: zip.length }).rows).toBeInstanceOf(CopyTextRows);
    const small = exportRows(content(zip), slice, definition, { ...options, threadedParseBytes: zip.length + 1 }).rows;
    expect(small).not.toBeInstanceOf(CopyTextRows);
    expect(await collect(small as AsyncIterable<RowValues>)).toHaveLength(50);
  });
});

describe.each(DIALECTS)('a slice loaded from a worker thread on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  const facts = (zip: Buffer, sha256: string) => ({ format: 'csv' as const, fileName: 'export.zip', bytes: zip.length, sha256 });
  const heldRows = async () =>
    (
      await warehouse.db
        .selectFrom('constituent_report')
        .select(['line_number', 'isin', 'closing_price'])
        .where('portfolio_id', '=', slice.portfolioId)
        .orderBy('line_number')
        .execute()
    ).map((row) => [Number(row.line_number), row.isin, String(row.closing_price)]);

  /** The rows as the slice's loader is handed them for this warehouse: COPY text where it takes it (Postgres). */
  const fromWorker = (zip: Zip, batchRows?: number): SliceRows =>
    warehouse.engine.rowWriter.takesCopyText
      ? readZipCopyTextOnWorker({ zip, fileName: 'export.zip', maxUncompressedBytes: LIMIT, slice, ...(batchRows ? { batchRows } : {}) })
      : onWorker(zip, LIMIT, batchRows);

  it('takes COPY text from the worker on Postgres and MySQL (COPY, LOAD DATA), typed rows on SQLite', () => {
    expect(warehouse.engine.rowWriter.takesCopyText).toBe(dialect !== 'sqlite');
  });

  it('loads every row; a bad decimal or a bad CRC found by the worker rolls the load back, leaving the earlier rows and ledger row', async () => {
    const loader = new SliceLoader({ warehouse, batchRows: 100 });
    const good = await syntheticZip(1_200);
    const loaded = await loader.loadExport({ slice, definition, rows: fromWorker({ buffer: good }, 50), file: facts(good, 'a'.repeat(64)), attempts: 1 });
    expect(loaded.rowCount).toBe(1_200);
    const before = await heldRows();
    expect(before).toHaveLength(1_200);
    const ledgerBefore = await warehouse.db.selectFrom('report_loads').selectAll().execute();

    const badDecimal = await makeZip({ 'data.csv': constituentCsv(['2024-03-01,DE0007164600,SAP SE,123.45,EUR', '2024-03-01,US0378331005,Apple,12x.5,USD']) });
    const stored = await makeZip({ 'data.csv': constituentCsv(['2024-03-01,DE0007164600,SAP SE,123.45,EUR']) }, { compress: false });
    const badCrc = Buffer.from(stored.toString('latin1').replace('SAP SE', 'SAP SF'), 'latin1');
    for (const [zip, sha256] of [
      [badDecimal, 'b'.repeat(64)],
      [badCrc, 'c'.repeat(64)],
    ] as const) {
      const error = await loader.loadExport({ slice, definition, rows: fromWorker({ buffer: zip }), file: facts(zip, sha256), attempts: 2 }).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(FileFormatError);
      expect(await heldRows()).toEqual(before);
      expect(await warehouse.db.selectFrom('report_loads').selectAll().execute()).toEqual(ledgerBefore);
    }
  });

  it('refuses, on either thread, a decimal the column cannot keep, naming its line, column, value and limit; its neighbours load exactly', async () => {
    const loader = new SliceLoader({ warehouse, batchRows: 100 });
    const read = (zip: Buffer, threaded: boolean) =>
      exportRows(
        { kind: 'records', format: 'csv', records: readZipCsvRecords({ buffer: zip }, { fileName: 'export.zip', maxUncompressedBytes: LIMIT }), zip: { buffer: zip } },
        slice,
        definition,
        {
          fileName: 'export.zip',
          bytes: zip.length,
          maxUncompressedBytes: LIMIT,
          maxRecordBytes: 1024 ** 2,
          threadedParseBytes: threaded ? 0 : zip.length + 1,
          copyText: warehouse.engine.rowWriter.takesCopyText,
          decimals: warehouse.engine.rowWriter.decimals,
        },
      ).rows;
    const csvOf = (prices: string[]) => makeZip({ 'data.csv': constituentCsv(prices.map((price, i) => `2024-03-01,XS${String(i).padStart(10, '0')},Acme,${price},EUR`)) });
    // MySQL's DECIMAL(65,30) holds less than the range the others share: its own edges, 35 digits before the point and 30 after.
    const neighbours =
      dialect === 'mysql'
        ? [`${'9'.repeat(35)}.${'9'.repeat(30)}`, '-1e-30', '1e-5', '12345678901234567890', `1.${'0'.repeat(40)}`]
        : ['2.2250738585072014e-308', '1.7976931348623157e308', '1e-5', '12345678901234567890', `1.${'0'.repeat(16_382)}1`];
    let sha = 0;
    const load = (zip: Buffer, threaded: boolean) =>
      loader.loadExport({ slice, definition, rows: read(zip, threaded), file: facts(zip, String(++sha).padStart(64, '0')), attempts: 1 });
    for (const threaded of [false, true]) {
      const good = await csvOf(neighbours);
      expect((await load(good, threaded)).rowCount).toBe(neighbours.length);
      const held = await heldRows();
      if (dialect === 'postgres') {
        // NUMERIC keeps every digit: each value reads back as the same number, written out.
        expect(held.map((row) => row[2])).toEqual([
          `0.${'0'.repeat(307)}22250738585072014`,
          `17976931348623157${'0'.repeat(292)}`,
          '0.00001',
          '12345678901234567890',
          neighbours[4],
        ]);
      } else if (dialect === 'mysql') {
        // DECIMAL keeps every digit it has room for, read back without the zeros its scale pads with.
        expect(held.map((row) => row[2])).toEqual([neighbours[0], `-0.${'0'.repeat(29)}1`, '0.00001', '12345678901234567890', '1']);
      } else {
        // A 64-bit float: the nearest one, which reads back as the same number within its digits.
        expect(held.map((row) => Number(row[2]))).toEqual([2.2250738585072014e-308, 1.7976931348623157e308, 1e-5, 12345678901234567000, 1]);
      }
      const bad: [string[], RegExp][] = [
        [
          ['1', '1e-400'],
          /export\.zip, data\.csv line 3, column closing_price \("Closing Price"\): "1e-400" is too small to keep exactly: a decimal other than 0 is loaded from 2\.2250738585072014e-308/,
        ],
        [['2.2250738585072013e-308'], /line 2, column closing_price .*"2\.2250738585072013e-308" is too small/],
        [['1e400'], /line 2, column closing_price .*"1e400" is too large: a decimal is loaded up to 1\.7976931348623157e308/],
        [['-1.7976931348623158e308'], /"-1\.7976931348623158e308" is too large/],
      ];
      if (dialect === 'mysql')
        bad.push(
          [['1e35'], /line 2, column closing_price .*"1e35" has 36 digits before the point; the column \(MySQL DECIMAL\(65,30\)\) keeps at most 35/],
          [['1e-31'], /line 2, column closing_price .*"1e-31" has 31 digits after the point; the column \(MySQL DECIMAL\(65,30\)\) keeps at most 30/],
          [['2.2250738585072014e-308'], /"2\.2250738585072014e-308" has 324 digits after the point/],
        );
      if (dialect === 'postgres')
        bad.push([
          [`1.${'0'.repeat(16_383)}1`],
          /line 2, column closing_price .*"1\.0000.*…" has 16384 digits after the point; the column \(Postgres NUMERIC\) keeps at most 16383/,
        ]);
      for (const [prices, says] of bad) {
        const error = await load(await csvOf(prices), threaded).catch((thrown: unknown) => thrown);
        expect(error).toBeInstanceOf(FileFormatError);
        expect((error as FileFormatError).code).toBe('FILE_INVALID');
        expect((error as Error).message).toMatch(says);
        expect(await heldRows()).toEqual(held);
      }
    }
  });
});
