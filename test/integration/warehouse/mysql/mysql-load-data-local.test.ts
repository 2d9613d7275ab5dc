import { CompiledQuery, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { constituentReport } from '../../../../src/reports/constituent-report.js';
import { rowColumns, type WarehouseRow } from '../../../../src/extract/row-builder.js';
import { CopyTextRows } from '../../../../src/warehouse/engine/copy-text-rows.js';
import { copyTextRow } from '../../../../src/warehouse/loading/copy-text-row.js';
import { Ledger } from '../../../../src/warehouse/ledger/ledger.js';
import { SliceLoader } from '../../../../src/warehouse/loading/slice-loader.js';
import { openWarehouse } from '../../../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../../../src/warehouse/engine/warehouse-engine.js';
import type { Warehouse } from '../../../../src/warehouse/engine/warehouse-schema.js';
import { constituentRow, LOADED_FILE, LOADED_SLICE, rowStream } from '../../../helpers/constituent-row.js';
import { createTempWarehouse } from '../../../helpers/temp-warehouse.js';

/** Text LOAD DATA's format (tab, line feed, backslash escapes, `\N`) or SQL could each mangle. */
const AWKWARD = [
  'tab\there',
  'line\nfeed',
  'carriage\rreturn',
  'Windows\r\nline end',
  'back\\slash',
  'ends with a backslash\\',
  '\\N',
  'NULL',
  '\\t not a tab',
  '',
  '   ',
  'Société Générale 😀 𝄞',
  "'); drop table report_loads; --",
];

/** Decimals DECIMAL(65,30) keeps exactly: 20-digit integers, 30-digit fractions. */
const DECIMALS = ['12345678901234567890', '-98765432109876543210.123456789012345678901234567891', '0.000000000000000000000000000001', '1e3'];

function awkwardRows(): WarehouseRow[] {
  return [
    ...AWKWARD.map((name, i) => constituentRow(i + 1, DECIMALS[i % DECIMALS.length]!, { security_name: name, security_ticker: name, extra: JSON.stringify({ note: name }) })),
    constituentRow(AWKWARD.length + 1, '1', { security_name: null, security_ticker: '', exchange_code: null, closing_fx: null }),
  ];
}

/** How many statements of `command` (`load`, `insert`) the session of `db`'s connection has run. */
async function statementsRun(db: Kysely<Warehouse>, command: 'load' | 'insert'): Promise<number> {
  const { rows } = await db.executeQuery<{ Value: string }>(CompiledQuery.raw(`show session status like 'Com_${command}'`));
  return Number(rows[0]!.Value);
}

/** Loads `rows` as the slice's rows with a loader of one connection, counting the LOAD DATA and INSERT statements its session ran. */
/**
 * The slice loaded three times, counting statements: a first load (which also INSERTs its ledger
 * row), then one row and then nine rows replacing it, the two loads compared.
 */
async function loadOneThenNine(warehouse: WarehouseHandle): Promise<{ one: StatementCounts; nine: StatementCounts; rows: WarehouseRow[] }> {
  await loadCounting(warehouse, [constituentRow(1, '1')], 'first');
  const one = await loadCounting(warehouse, [constituentRow(1, '1')], 'one');
  const rows = Array.from({ length: 9 }, (_, i) => constituentRow(i + 1, `${i}.5`));
  const nine = await loadCounting(warehouse, rows, 'ordinary');
  return { one, nine, rows };
}

/** What a load ran: the rows it counted, its LOAD DATA statements and its INSERTs. */
interface StatementCounts {
  readonly count: number;
  readonly loads: number;
  readonly inserts: number;
}

/** Runs `load` on one connection of its own, counting the LOAD DATA and INSERT statements it ran there. */
async function countStatements(warehouse: WarehouseHandle, load: (loader: SliceLoader) => Promise<number>): Promise<StatementCounts> {
  return warehouse.db.connection().execute(async (connection) => {
    const before = { load: await statementsRun(connection, 'load'), insert: await statementsRun(connection, 'insert') };
    const count = await load(new SliceLoader({ warehouse: { ...warehouse, db: connection }, batchRows: 4 }));
    return { count, loads: (await statementsRun(connection, 'load')) - before.load, inserts: (await statementsRun(connection, 'insert')) - before.insert };
  });
}

/** Loads `rows` as a stream, as a file read as it comes hands them. */
async function loadCounting(warehouse: WarehouseHandle, rows: WarehouseRow[], sha256: string): Promise<StatementCounts> {
  return countStatements(warehouse, (loader) =>
    loader.replaceRows({ slice: LOADED_SLICE, definition: constituentReport, rows: rowStream(...rows), file: { ...LOADED_FILE, sha256 }, attempts: 1 }),
  );
}

/** The rows as a worker thread hands them to a writer that takes COPY text: written already, in batches of `perBatch`. */
function asCopyText(rows: WarehouseRow[], perBatch: number): CopyTextRows {
  const columns = rowColumns(constituentReport);
  return new CopyTextRows(async function* (lineEnd) {
    for (let start = 0; start < rows.length; start += perBatch) {
      const batch = rows.slice(start, start + perBatch);
      yield {
        text: batch
          .map((row) =>
            copyTextRow(
              columns.map((column) => row[column] ?? null),
              lineEnd,
            ),
          )
          .join(''),
        rows: batch.length,
      };
    }
  });
}

/** Loads COPY text rows as a downloaded file's, the way a big ZIP read on a worker thread is loaded. */
async function loadCopyText(warehouse: WarehouseHandle, rows: WarehouseRow[], sha256: string): Promise<number> {
  const loader = new SliceLoader({ warehouse, batchRows: 4 });
  const loaded = await loader.loadExport({ slice: LOADED_SLICE, definition: constituentReport, rows: asCopyText(rows, 5), file: { ...LOADED_FILE, sha256 }, attempts: 1 });
  return loaded.rowCount;
}

/** Loads `rows` as a small file's, all at hand (an array of values, as a body parsed at once hands them). */
async function loadAtHand(warehouse: WarehouseHandle, rows: WarehouseRow[], sha256: string): Promise<StatementCounts> {
  const columns = rowColumns(constituentReport);
  const values = rows.map((row) => columns.map((column) => row[column] ?? null));
  return countStatements(warehouse, async (loader) => {
    const loaded = await loader.loadExport({ slice: LOADED_SLICE, definition: constituentReport, rows: values, file: { ...LOADED_FILE, sha256 }, attempts: 1 });
    return loaded.rowCount;
  });
}

async function storedRows(warehouse: WarehouseHandle) {
  return warehouse.db
    .selectFrom('constituent_report')
    .select(['line_number', 'security_name', 'security_ticker', 'exchange_code', 'closing_price', 'closing_fx', 'extra', 'load_id'])
    .orderBy('line_number')
    .execute();
}

describe('MySQL slices loaded with LOAD DATA LOCAL INFILE (the server allows local files)', () => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeAll(async () => {
    warehouse = await createTempWarehouse('mysql');
  });
  afterAll(async () => {
    await warehouse.close();
  });

  it('is the path the row writer says it takes, and the one a load takes: one LOAD DATA, and no more INSERTs for more rows', async () => {
    expect(await warehouse.engine.rowWriter.describe(warehouse.db)).toBe('LOAD DATA LOCAL INFILE');
    const { one, nine, rows } = await loadOneThenNine(warehouse);
    expect(one).toMatchObject({ count: 1, loads: 1 });
    // The INSERTs left are the ledger's.
    expect(nine).toEqual({ count: 9, loads: 1, inserts: one.inserts });
    const stored = await storedRows(warehouse);
    expect(stored.map((row) => [row.line_number, row.closing_price])).toEqual(rows.map((row) => [row.line_number, row.closing_price]));
    const ledger = await new Ledger(warehouse).row(LOADED_SLICE);
    expect(ledger).toMatchObject({ status: 'loaded', row_count: 9, content_sha256: 'ordinary' });
    expect(new Set(stored.map((row) => row.load_id))).toEqual(new Set([ledger!.load_id]));
  });

  it('stores tabs, line ends, backslashes, a literal \\N, emoji and 20-digit decimals byte for byte, NULL apart from the empty string', async () => {
    const rows = awkwardRows();
    expect(await loadCounting(warehouse, rows, 'awkward')).toMatchObject({ count: rows.length, loads: 1 });
    const stored = await storedRows(warehouse);
    expect(stored.map((row) => row.security_name)).toEqual([...AWKWARD, null]);
    expect(stored.map((row) => row.security_ticker)).toEqual([...AWKWARD, '']);
    expect(stored.map((row) => row.exchange_code)).toEqual(rows.map(() => null));
    expect(stored.map((row) => row.closing_fx)).toEqual([...AWKWARD.map(() => '1'), null]);
    expect(stored.slice(0, 4).map((row) => row.closing_price)).toEqual([
      '12345678901234567890',
      '-98765432109876543210.123456789012345678901234567891',
      '0.000000000000000000000000000001',
      '1000',
    ]);
    expect(stored.map((row) => (row.extra === null ? null : (JSON.parse(row.extra) as { note: string }).note))).toEqual([...AWKWARD, null]);
    // The hostile text was data: the ledger is whole.
    expect(await warehouse.db.selectFrom('report_loads').select('status').execute()).toEqual([{ status: 'loaded' }]);
  });

  it('streams a file of many chunks to the last row', async () => {
    const name = 'a security name of some length, ';
    const rows = Array.from({ length: 30_000 }, (_, i) => constituentRow(i + 1, `${i}.25`, { security_name: `${name}${i}` }));
    expect(await loadCounting(warehouse, rows, 'many chunks')).toMatchObject({ count: 30_000, loads: 1 });
    const { rows: stored } = await warehouse.db.executeQuery<{ n: number; last: string }>(
      CompiledQuery.raw('select count(*) as n, max(closing_price) as last from constituent_report'),
    );
    expect(Number(stored[0]!.n)).toBe(30_000);
    expect(stored[0]!.last).toBe('29999.25');
  });

  it('writes a small file’s rows, all at hand, with prepared multi-row INSERTs instead, storing the same values', async () => {
    const rows = awkwardRows();
    const atHand = await loadAtHand(warehouse, rows, 'at hand');
    // 14 rows, 4 a batch: four INSERTs of rows, beside the ledger's and the check rows' statements.
    expect(atHand).toMatchObject({ count: rows.length, loads: 0 });
    expect(atHand.inserts).toBeGreaterThanOrEqual(4);
    expectAwkwardStored(await storedRows(warehouse));
    // The same rows as a stream (a file read as it comes) still go in one LOAD DATA.
    expect(await loadCounting(warehouse, rows, 'as they come')).toMatchObject({ count: rows.length, loads: 1 });
    expectAwkwardStored(await storedRows(warehouse));
  });

  it('loads rows a worker thread wrote as COPY text as they are', async () => {
    const rows = awkwardRows();
    expect(await loadCopyText(warehouse, rows, 'copy text')).toBe(rows.length);
    expectAwkwardStored(await storedRows(warehouse));
  });

  it('fails a slice whose value the server would store as another one (LOCAL only warns), naming it, and keeps the rows loaded before', async () => {
    const kept = await storedRows(warehouse);
    const rows = [constituentRow(1, '1'), constituentRow(2, '2'), constituentRow(3, 'not a number')];
    const error = await loadCounting(warehouse, rows, 'refused').catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: 'WAREHOUSE_REJECTED' });
    expect((error as Error).message).toMatch(
      /LOAD DATA LOCAL INFILE ended with 1 warning .*Incorrect decimal value: 'not a number' for column .*closing_price.* at row 3 \(Warning 1366\)/,
    );
    expect(await storedRows(warehouse)).toEqual(kept);
    expect(await new Ledger(warehouse).row(LOADED_SLICE)).toMatchObject({ status: 'loaded', content_sha256: 'copy text' });
  });

  it('fails a slice whose rows the server skipped (a duplicate key), not just the values it changed', async () => {
    const kept = await storedRows(warehouse);
    const error = await loadCounting(warehouse, [constituentRow(1, '1'), constituentRow(1, '2')], 'duplicate').catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: 'WAREHOUSE_REJECTED' });
    expect((error as Error).message).toMatch(/Skipped: 1 .*Duplicate entry/);
    expect(await storedRows(warehouse)).toEqual(kept);
  });

  it('lets go of what each failed file left on the connection: a dozen bad files on one connection, then a good one, and no leak warned of', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      // A bad record after the first chunk (4 rows) has gone: the file fails half-sent, as a bad decimal found while reading does.
      async function* badFile(): AsyncGenerator<WarehouseRow> {
        for (let line = 1; line <= 6; line += 1) yield constituentRow(line, `${line}.5`);
        throw new Error('record 7 is not valid');
      }
      const kept = await storedRows(warehouse);
      await countStatements(warehouse, async (loader) => {
        for (let attempt = 0; attempt < 12; attempt += 1) {
          const load = loader.replaceRows({ slice: LOADED_SLICE, definition: constituentReport, rows: badFile(), file: { ...LOADED_FILE, sha256: 'bad' }, attempts: 1 });
          await expect(load).rejects.toThrow('record 7 is not valid');
        }
        expect(await storedRows(warehouse)).toEqual(kept);
        return loader.replaceRows({
          slice: LOADED_SLICE,
          definition: constituentReport,
          rows: rowStream(constituentRow(1, '7.5')),
          file: { ...LOADED_FILE, sha256: 'good' },
          attempts: 1,
        });
      });
      expect((await storedRows(warehouse)).map((row) => row.closing_price)).toEqual(['7.5']);
      // Node reports a listener leak on a later turn of the event loop.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => warning.name)).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('loads on a connection again after a refused load, with no warnings left over', async () => {
    const rows = [constituentRow(1, '3.25'), constituentRow(2, '4')];
    expect(await loadCounting(warehouse, rows, 'after')).toMatchObject({ count: 2, loads: 1 });
    expect((await storedRows(warehouse)).map((row) => row.closing_price)).toEqual(['3.25', '4']);
  });
});

describe('MySQL slices loaded without local files (multi-row INSERTs)', () => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  let withoutLocalFiles: WarehouseHandle;
  beforeAll(async () => {
    warehouse = await createTempWarehouse('mysql');
    // The client side of the switch: the server's local_infile is global, and other tests use it.
    withoutLocalFiles = await openWarehouse(warehouse.databaseUrl, { mysqlLocalFiles: false });
  });
  afterAll(async () => {
    await withoutLocalFiles.close();
    await warehouse.close();
  });

  it('says why, and writes with INSERTs only', async () => {
    expect(await withoutLocalFiles.engine.rowWriter.describe(withoutLocalFiles.db)).toBe('multi-row INSERTs: the client was opened without local files');
    const { one, nine, rows } = await loadOneThenNine(withoutLocalFiles);
    // 9 rows, 4 a batch: three INSERTs where one row took one (the ledger's INSERTs are the same).
    expect(nine).toEqual({ count: 9, loads: 0, inserts: one.inserts + 2 });
    expect((await storedRows(warehouse)).map((row) => row.closing_price)).toEqual(rows.map((row) => row.closing_price));
  });

  it('stores the same awkward values as LOAD DATA does', async () => {
    const rows = awkwardRows();
    expect(await loadCounting(withoutLocalFiles, rows, 'awkward')).toMatchObject({ count: rows.length, loads: 0 });
    expectAwkwardStored(await storedRows(warehouse));
  });

  it('binds rows a worker thread wrote as COPY text as their values again', async () => {
    const rows = awkwardRows();
    expect(await loadCopyText(withoutLocalFiles, rows, 'copy text')).toBe(rows.length);
    const stored = await storedRows(warehouse);
    expect(stored.map((row) => row.security_name)).toEqual([...AWKWARD, null]);
    expect(stored.map((row) => row.security_ticker)).toEqual([...AWKWARD, '']);
    expect(stored.map((row) => row.line_number)).toEqual(rows.map((row) => row.line_number));
    expect(stored.slice(0, 4).map((row) => row.closing_price)).toEqual([
      '12345678901234567890',
      '-98765432109876543210.123456789012345678901234567891',
      '0.000000000000000000000000000001',
      '1000',
    ]);
    expect(stored.map((row) => (row.extra === null ? null : (JSON.parse(row.extra) as { note: string }).note))).toEqual([...AWKWARD, null]);
  });

  it('refuses the value strict mode refuses, keeping the rows loaded before', async () => {
    const kept = await storedRows(warehouse);
    const error = await loadCounting(withoutLocalFiles, [constituentRow(1, '1'), constituentRow(2, 'not a number')], 'refused').catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: 'WAREHOUSE_REJECTED' });
    expect((error as Error).message).toContain('not a number');
    expect(await storedRows(warehouse)).toEqual(kept);
  });
});

/** The awkward rows as the warehouse must hold them, byte for byte: text, NULL against '' and decimals of every size. */
function expectAwkwardStored(stored: Awaited<ReturnType<typeof storedRows>>): void {
  expect(stored.map((row) => row.security_name)).toEqual([...AWKWARD, null]);
  expect(stored.map((row) => row.security_ticker)).toEqual([...AWKWARD, '']);
  expect(stored.slice(0, 4).map((row) => row.closing_price)).toEqual([
    '12345678901234567890',
    '-98765432109876543210.123456789012345678901234567891',
    '0.000000000000000000000000000001',
    '1000',
  ]);
}
