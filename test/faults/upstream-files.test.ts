import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Slice } from '../../src/slice/slice.js';
import type { ReportType } from '../../src/reports/report-types.js';
import { expectSliceFailed, expectSliceLoaded } from '../helpers/expect-slice-outcome.js';
import { CONSTITUENT_HEADER, startFaultRig, type FaultRig } from '../helpers/fault-rig.js';
import { makeZip } from '../helpers/make-zip.js';
import { makeZipBomb } from '../helpers/make-zip-bomb.js';

// Files that arrive whole but are wrong: each case loads the simulator's good file for its slice
// first, then serves the bad one (HTTP 200, as a real gateway would) and checks that the slice
// fails at once, naming the file, the line or record and the column, with the earlier rows intact.

// Every temporary directory of this file's process (the rig's and the spooled bodies') goes here,
// so the test can see that nothing is left behind.
const privateTmp = mkdtempSync(join(tmpdir(), 'report-sync-faults-'));
const originalTmp = process.env.TMPDIR;
process.env.TMPDIR = privateTmp;

/**
 * These files are about their form, not their numbers: a row's weight of 0.25 in a file of two, or
 * a negative open market value, would be refused by the data-quality checks (test/e2e/slice-checks.test.ts),
 * so the cases that load such files turn those checks off.
 */
const FORM_ONLY = { checks: { weightsSum: { severity: 'off' }, positiveValues: { severity: 'off' } } } as const;

const ROW = (isin: string, price = '12.5', date = '2024-05-06') => `${date},${isin},Acme,ACM,XLON,${price},EUR,1.1,100,0.25`;

function zipOf(csv: string): () => Promise<Buffer> {
  return () => makeZip({ 'constituents.csv': csv });
}

/** Rewrites fields of the (first) entry in both its local and its central header. */
function patchEntry(zip: Buffer, fields: { method?: number; flags?: number; uncompressedSize?: number }): Buffer {
  const out = Buffer.from(zip);
  const central = out.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
  if (out.readUInt32LE(0) !== 0x04034b50 || central < 0) throw new Error('not a one-entry ZIP');
  if (fields.flags !== undefined) {
    out.writeUInt16LE(fields.flags, 6);
    out.writeUInt16LE(fields.flags, central + 8);
  }
  if (fields.method !== undefined) {
    out.writeUInt16LE(fields.method, 8);
    out.writeUInt16LE(fields.method, central + 10);
  }
  if (fields.uncompressedSize !== undefined) {
    out.writeUInt32LE(fields.uncompressedSize, 22);
    out.writeUInt32LE(fields.uncompressedSize, central + 24);
  }
  return out;
}

interface BadFile {
  readonly name: string;
  readonly reportType: ReportType;
  readonly body: () => Promise<Buffer | string>;
  readonly contentType?: string;
  readonly says: RegExp;
  readonly code?: string;
}

const BAD_FILES: BadFile[] = [
  {
    name: 'an HTML page sent as application/zip',
    reportType: 'constituent.close',
    body: async () => '<!DOCTYPE html>\n<html><body><h1>502 Bad Gateway</h1></body></html>',
    says: /bad-file\.zip is an HTML or XML page \(content type application\/zip\), not a report file/,
  },
  { name: 'an empty ZIP', reportType: 'constituent.close', body: () => makeZip({}), says: /bad-file\.zip holds no CSV file \(it has no entries\); expected exactly one/ },
  {
    name: 'a row with too many columns',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER}\r\n${ROW('XS1')}\r\n${ROW('XS2')},extra\r\n`),
    says: /bad-file\.zip, constituents\.csv line 3: expected 10 columns \(as in the header\), found 11/,
  },
  {
    name: 'a row with too few columns',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER}\n2024-05-06,XS1,Acme,ACM,XLON,12.5,EUR,1.1,100\n`),
    says: /bad-file\.zip, constituents\.csv line 2: expected 10 columns \(as in the header\), found 9/,
  },
  {
    name: 'a date that does not exist',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER}\n${ROW('XS1')}\n${ROW('XS2', '1', '2024-02-30')}\n`),
    says: /bad-file\.zip, constituents\.csv line 3, column effective_date \("Effective Date"\): "2024-02-30" is not a date in YYYY-MM-DD form/,
  },
  {
    name: 'a date in another form',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER}\n${ROW('XS1', '1', '06/05/2024')}\n`),
    says: /constituents\.csv line 2, column effective_date \("Effective Date"\): "06\/05\/2024" is not a date/,
  },
  {
    name: 'a number with a thousands separator',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER}\n${ROW('XS1', '"1,234.5"')}\n`),
    says: /constituents\.csv line 2, column closing_price \("Closing Price"\): "1,234\.5" is not a decimal number/,
  },
  {
    name: 'NaN',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER}\n2024-05-06,XS1,Acme,ACM,XLON,12.5,EUR,NaN,100,0.25\n`),
    says: /constituents\.csv line 2, column closing_fx \("Closing Fx"\): "NaN" is not a decimal number/,
  },
  {
    name: '1e999',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER}\n2024-05-06,XS1,Acme,ACM,XLON,12.5,EUR,1,1e999,0.25\n`),
    says: /constituents\.csv line 2, column index_shares \("Index Shares"\): "1e999" is too large: a decimal is loaded up to 1\.7976931348623157e308/,
  },
  {
    name: 'a header naming a column twice',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER},ISIN\n${ROW('XS1')},XS1\n`),
    says: /constituents\.csv line 1: the header names column "ISIN" twice/,
  },
  {
    name: 'two headers that name one column',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER},closing_fx\n${ROW('XS1')},1.2\n`),
    says: /constituents\.csv line 2: fields "Closing Fx" and "closing_fx" both name column closing_fx/,
  },
  {
    name: 'a quote never closed',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER}\n${ROW('XS1')}\n2024-05-06,XS2,"Acme,ACM\n`),
    says: /constituents\.csv is not valid CSV at line 3: quoted cell 3 is not closed before the end of the file/,
  },
  {
    name: 'a CSV entry compressed with a method other than deflate',
    reportType: 'constituent.close',
    body: async () => patchEntry(await makeZip({ 'c.csv': `${CONSTITUENT_HEADER}\n${ROW('XS1')}\n` }), { method: 12 }),
    says: /c\.csv is compressed with method 12 \(bzip2\); only stored and deflate entries can be read/,
  },
  {
    name: 'an encrypted CSV entry',
    reportType: 'constituent.close',
    body: async () => patchEntry(await makeZip({ 'c.csv': `${CONSTITUENT_HEADER}\n${ROW('XS1')}\n` }), { flags: 0x0801 }),
    says: /c\.csv is encrypted/,
  },
  {
    name: 'a stored entry whose bytes do not match its CRC',
    reportType: 'constituent.close',
    body: async () => {
      const zip = await makeZip({ 'c.csv': `${CONSTITUENT_HEADER}\n${ROW('XS1', '12.5')}\n` }, { compress: false });
      const at = zip.indexOf('12.5');
      zip.write('92.5', at); // a flipped digit: still a valid CSV, but not the file that was zipped
      return zip;
    },
    says: /c\.csv is corrupt: its CRC-32 does not match its content/,
  },
  {
    name: 'an entry larger than it declares (under the limit)',
    reportType: 'constituent.close',
    body: async () => patchEntry(await makeZip({ 'c.csv': `${CONSTITUENT_HEADER}\n${ROW('XS1')}\n${ROW('XS2')}\n` }), { uncompressedSize: 40 }),
    says: /c\.csv inflates to more than the 40 bytes it declares: refusing it as a possible zip bomb \(or a corrupt archive\)/,
    code: 'EXPORT_TOO_LARGE',
  },
  {
    name: 'an entry smaller than it declares',
    reportType: 'constituent.close',
    body: async () => patchEntry(await makeZip({ 'c.csv': `${CONSTITUENT_HEADER}\n${ROW('XS1')}\n` }), { uncompressedSize: 5000 }),
    says: /c\.csv is corrupt: it inflates to \d+ bytes, not the 5000 it declares/,
  },
  {
    name: 'a CSV in Latin-1 rather than UTF-8',
    reportType: 'constituent.close',
    body: () => makeZip({ 'c.csv': Buffer.from(`${CONSTITUENT_HEADER}\n${ROW('XS1')}\n2024-05-06,XS2,Soci\u00e9t\u00e9 G\u00e9n\u00e9rale,GLE,XPAR,1,EUR,1,1,0.1\n`, 'latin1') }),
    says: /bad-file\.zip, c\.csv is not UTF-8 text \(an invalid byte after byte \d+ of the CSV/,
  },
  {
    name: 'JSON nested too deep',
    reportType: 'index',
    body: async () => `[{"effectiveDate":"2024-05-06","indexId":"x","more":${'['.repeat(100)}${']'.repeat(100)}}]`,
    contentType: 'application/json',
    says: /bad-file\.zip: record 1 is nested deeper than 64 levels \(limits\.maxJsonDepth\)/,
  },
  {
    name: 'JSON records that are arrays',
    reportType: 'index',
    body: async () => '[["2024-05-06","x"]]',
    contentType: 'application/json',
    says: /bad-file\.zip: record 1 is an array, not an object/,
  },
  {
    name: 'a JSON NaN',
    reportType: 'index',
    body: async () => '[{"effectiveDate":"2024-05-06","indexId":"x","indexValue":NaN}]',
    contentType: 'application/json',
    says: /bad-file\.zip: record 1 is not valid JSON/,
  },
  {
    name: 'a JSON 1e999',
    reportType: 'index',
    body: async () => '[{"effectiveDate":"2024-05-06","indexId":"x","indexValue":1e999}]',
    contentType: 'application/json',
    says: /bad-file\.zip, record 1, column index_value \("indexValue"\): "1e999" is too large/,
  },
  {
    name: 'a decimal too small to keep (SQLite would store 0)',
    reportType: 'constituent.close',
    body: zipOf(`${CONSTITUENT_HEADER}\n${ROW('XS1')}\n${ROW('XS2', '1e-400')}\n`),
    says: /constituents\.csv line 3, column closing_price \("Closing Price"\): "1e-400" is too small to keep exactly: .*2\.2250738585072014e-308.*SQLite would store 0\)/,
  },
  {
    name: 'a JSON number written as text with a separator',
    reportType: 'index',
    body: async () => '[{"effectiveDate":"2024-05-06","indexId":"x","indexValue":"1,234.5"}]',
    contentType: 'application/json',
    says: /record 1, column index_value \("indexValue"\): "1,234\.5" is not a decimal number/,
  },
  {
    name: 'JSON cut short inside a string',
    reportType: 'index',
    body: async () => '[{"effectiveDate":"2024-05-06","indexId":"x"},{"effectiveDate":"2024-05-06","indexName":"Glob',
    contentType: 'application/json',
    says: /bad-file\.zip: the file ends inside record 2: it was cut short/,
  },
];

describe('upstream faults: the files', () => {
  let fault: FaultRig;
  beforeAll(async () => {
    fault = await startFaultRig();
  });
  afterAll(async () => {
    await fault.close();
    process.env.TMPDIR = originalTmp;
    if (originalTmp === undefined) delete process.env.TMPDIR;
    rmSync(privateTmp, { recursive: true, force: true });
  });

  /** Serves `body` once for the slice, as a 200 with a Content-Disposition name. */
  function serveOnce(slice: Slice, body: Buffer | string, contentType: string) {
    fault.rig.simulator.script(slice.portfolioId, slice.reportType, slice.reportDate, [
      { status: 200, body, headers: { 'Content-Type': contentType, 'Content-Disposition': 'attachment; filename="bad-file.zip"' } },
    ]);
  }

  /**
   * Temporary directories left in this process's TMPDIR, other than the rig's own; and in the
   * spool root (which stays), any process directory left behind by a command that has ended.
   */
  function leftovers(): string[] {
    const own = new Set([fault.rig.dir, dirname(fault.rig.databaseUrl.replace(/^sqlite:/, ''))].map((path) => path.split('/').pop()));
    const spoolRoot = join(privateTmp, 'report-sync-spool');
    const spooled = existsSync(spoolRoot) ? readdirSync(spoolRoot).map((name) => `report-sync-spool/${name}`) : [];
    // tsx-<uid>: tsx's cache, made when a worker thread (the WAL checkpointer) loads its TypeScript
    // source under the tests; the built product runs JavaScript and makes none.
    const testRuntime = (name: string) => /^tsx-\d+$/.test(name);
    return [...readdirSync(privateTmp).filter((name) => !own.has(name) && name !== 'report-sync-spool' && !testRuntime(name)), ...spooled];
  }

  /** Spooled bodies this process still holds open (Linux; elsewhere nothing to check). */
  async function openSpoolFiles(): Promise<string[]> {
    if (!existsSync('/proc/self/fd')) return [];
    const list = () =>
      readdirSync('/proc/self/fd').flatMap((fd) => {
        try {
          const target = readlinkSync(`/proc/self/fd/${fd}`);
          return target.includes('export.body') ? [target] : [];
        } catch {
          return []; // closed while listing
        }
      });
    // Closing a file descriptor completes a moment after destroy().
    for (let i = 0; i < 20 && list().length > 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 25));
    return list();
  }

  it.each(BAD_FILES)('fails the slice at once on $name, keeping its earlier rows', async (bad) => {
    const slice = fault.slice(bad.reportType);
    const { elapsedMs: goodMs, ...earlier } = await fault.loadGood(slice);
    serveOnce(slice, await bad.body(), bad.contentType ?? 'application/zip');
    const run = await fault.run(slice);
    // At once: within 3 s, or twice the good file's run just before on a machine too busy for that,
    // so that the bound measures this run, not the load beside it.
    const withinMs = Math.max(3_000, 2 * goodMs);
    await expectSliceFailed(fault, slice, run, { code: bad.code ?? 'FILE_INVALID', says: bad.says, attempts: 1, withinMs, earlier });
    expect(leftovers()).toEqual([]);
  });

  describe('a zip bomb (limits.maxUncompressedBytes is 2 MiB here)', () => {
    // 1 GiB of CSV rows in about three megabytes. Reading it whole would take minutes (inflating,
    // parsing and inserting 24 million rows); refusing it takes moments.
    const head = Buffer.from(`${CONSTITUENT_HEADER}\r\n`);
    const unit = Buffer.from(`${ROW('XS0000000001')}\r\n`.repeat(Math.floor((1024 * 1024) / (ROW('XS0000000001').length + 2))));

    it('is refused by the size it declares, before anything is inflated', async () => {
      const slice = fault.slice('constituent.close');
      const earlier = await fault.loadGood(slice);
      const bomb = makeZipBomb({ head, unit, repeats: 1024 });
      expect(bomb.zip.length).toBeLessThan(4 * 1024 * 1024);
      expect(bomb.inflatedBytes).toBeGreaterThan(1000 * 1024 * 1024);
      serveOnce(slice, bomb.zip, 'application/zip');
      const run = await fault.run(slice);
      await expectSliceFailed(fault, slice, run, {
        code: 'EXPORT_TOO_LARGE',
        says: new RegExp(
          `bad-file\\.zip, bomb\\.csv declares ${bomb.inflatedBytes} bytes, over limits\\.maxUncompressedBytes \\(2097152 bytes\\): refusing it as a possible zip bomb`,
        ),
        attempts: 1,
        withinMs: 5_000,
        earlier,
      });
    });

    it('is stopped by the bytes actually inflated when it lies about its size', async () => {
      const slice = fault.slice('constituent.close');
      const earlier = await fault.loadGood(slice);
      const bomb = makeZipBomb({ head, unit, repeats: 1024, declaredSize: 1000 });
      serveOnce(slice, bomb.zip, 'application/zip');
      const run = await fault.run(slice, { settings: { limits: { spoolMemoryBytes: 0 } } });
      await expectSliceFailed(fault, slice, run, {
        code: 'EXPORT_TOO_LARGE',
        says: /bad-file\.zip, bomb\.csv inflates to more than the 1000 bytes it declares: refusing it as a possible zip bomb/,
        attempts: 1,
        withinMs: 5_000,
        earlier,
      });
      expect(leftovers()).toEqual([]); // the spooled body is gone too
      expect(await openSpoolFiles()).toEqual([]); // and no descriptor keeps it alive
    });

    it('is stopped at the limit when it declares exactly the limit and inflates past it', async () => {
      const slice = fault.slice('constituent.close');
      const earlier = await fault.loadGood(slice);
      // A smaller limit for this run: every row up to the limit is parsed and written (then rolled back).
      serveOnce(slice, makeZipBomb({ head, unit, repeats: 1024, declaredSize: 256 * 1024 }).zip, 'application/zip');
      const run = await fault.run(slice, { settings: { limits: { maxUncompressedBytes: 256 * 1024 } } });
      await expectSliceFailed(fault, slice, run, {
        code: 'EXPORT_TOO_LARGE',
        says: /bad-file\.zip, bomb\.csv inflates past the limit, over limits\.maxUncompressedBytes \(262144 bytes\): refusing it as a possible zip bomb/,
        attempts: 1,
        withinMs: 5_000,
        earlier,
      });
    });
  });

  describe('entry names that climb out of a directory', () => {
    it('writes nothing anywhere for ../ and absolute names, and loads the one CSV', async () => {
      const planted = `planted-${randomBytes(4).toString('hex')}`;
      const cwd = fault.dir;
      const warehouseDir = dirname(fault.rig.databaseUrl.replace(/^sqlite:/, ''));
      const places = [cwd, dirname(cwd), dirname(dirname(cwd)), warehouseDir, dirname(warehouseDir), privateTmp, tmpdir(), process.cwd(), dirname(process.cwd())];
      const names = [`${planted}.csv`, `${planted}.txt`];
      const present = () => places.flatMap((place) => names.filter((name) => existsSync(join(place, name))).map((name) => join(place, name)));
      expect(present()).toEqual([]);

      // yazl refuses such names, so placeholders of the same length are patched in both headers.
      const climbing = `../../${planted}.csv`;
      const absolute = `/tmp/../${planted}.txt`;
      const zip = await makeZip({ [climbing.replace(/[./]/g, 'a')]: `${CONSTITUENT_HEADER}\n${ROW('XS1')}\n${ROW('XS2')}\n`, [absolute.replace(/[./]/g, 'b')]: 'not a report' });
      const patched = Buffer.from(zip.toString('latin1').replaceAll(climbing.replace(/[./]/g, 'a'), climbing).replaceAll(absolute.replace(/[./]/g, 'b'), absolute), 'latin1');
      const slice = fault.slice('constituent.close');
      await fault.loadGood(slice);
      serveOnce(slice, patched, 'application/zip');
      // The body goes to a temporary file, the one place anything is written.
      const run = await fault.run(slice, { settings: { limits: { spoolMemoryBytes: 0 }, ...FORM_ONLY } });
      const { rows } = await expectSliceLoaded(fault, slice, run, { attempts: 1, withinMs: 3_000 });
      expect(rows.map((row) => row.isin)).toEqual(['XS1', 'XS2']);
      expect(present()).toEqual([]);
      expect(leftovers()).toEqual([]);
    });
  });

  describe('odd but valid files load', () => {
    it('a CSV with a BOM and a header only replaces the earlier rows with none', async () => {
      const slice = fault.slice('constituent.close');
      await fault.loadGood(slice);
      serveOnce(slice, await makeZip({ 'c.csv': `\uFEFF${CONSTITUENT_HEADER}\r\n` }), 'application/zip');
      const run = await fault.run(slice);
      const { ledger } = await expectSliceLoaded(fault, slice, run, { attempts: 1, withinMs: 3_000 });
      expect(ledger.row_count).toBe(0);
    });

    it('a CSV whose lines end in a lone \\r reads as the same rows as with \\r\\n', async () => {
      const lines = [CONSTITUENT_HEADER, ROW('XS1'), '2024-05-06,XS2,"Two\rLines",T,,3.5,USD,1,2,0.5', ROW('XS3')];
      const [crOnly, crlf] = [fault.slice('constituent.close'), fault.slice('constituent.close')];
      serveOnce(crOnly, await makeZip({ 'c.csv': `${lines.join('\r')}\r` }), 'application/zip');
      serveOnce(crlf, await makeZip({ 'c.csv': `${lines.join('\r\n')}\r\n` }), 'application/zip');
      const a = await expectSliceLoaded(fault, crOnly, await fault.run(crOnly), { attempts: 1, withinMs: 3_000 });
      const b = await expectSliceLoaded(fault, crlf, await fault.run(crlf), { attempts: 1, withinMs: 3_000 });
      // The two loads are two slices: their portfolio and load_id differ, nothing else may.
      const strip = (rows: Record<string, unknown>[]) => rows.map(({ portfolio_id: _, load_id: __, ...rest }) => rest);
      expect(a.rows).toHaveLength(3);
      expect(strip(a.rows)).toEqual(strip(b.rows));
    });

    it("a UTF-8 CSV whose characters straddle the inflater's chunks", async () => {
      const slice = fault.slice('constituent.close');
      // 3-byte and 4-byte characters at every offset: some are cut between two 16 KiB chunks.
      const names = Array.from({ length: 3000 }, (_, i) => `${'€'.repeat(i % 4)}S\u{1F600}ciété ${i}`);
      const csv = `${CONSTITUENT_HEADER}\n${names.map((name, i) => `2024-05-06,XS${i},"${name}",T,,1,EUR,1,1,0.1`).join('\n')}\n`;
      serveOnce(slice, await makeZip({ 'c.csv': csv }), 'application/zip');
      const { rows } = await expectSliceLoaded(fault, slice, await fault.run(slice, { settings: FORM_ONLY }), { attempts: 1, withinMs: 5_000 });
      expect(rows.map((row) => row.security_name)).toEqual(names);
    });

    it('JSON decimals of 40 digits and exponent forms such as 1.5E+3', async () => {
      const slice = fault.slice('index');
      const forty = '1234567890123456789012345678901234567890';
      serveOnce(
        slice,
        `[{"effectiveDate":"2024-05-06","indexId":"x","indexValue":${forty},"closeMarketValue":1.5E+3,"openMarketValue":-2.5e-3,"closeDivisor":0.${forty}}]`,
        'application/json',
      );
      const run = await fault.run(slice, { settings: FORM_ONLY });
      await expectSliceLoaded(fault, slice, run, { attempts: 1, withinMs: 3_000 });
      const warehouse = await fault.rig.warehouse();
      // SQLite keeps 15 significant digits (docs/warehouse.md, known limits): compared as numbers.
      const { rows } = await sql<
        Record<string, number>
      >`SELECT index_value, close_market_value, open_market_value, close_divisor FROM index_report WHERE portfolio_id = ${slice.portfolioId}`.execute(warehouse.db);
      expect(rows[0]!.index_value).toBeCloseTo(Number(forty), -25);
      expect(rows[0]!.close_market_value).toBe(1500);
      expect(rows[0]!.open_market_value).toBe(-0.0025);
      expect(rows[0]!.close_divisor).toBeCloseTo(0.123456789012345, 14);
    });

    it.each([
      ['a stored (uncompressed) entry', { compress: false }],
      ['a ZIP64 entry', { forceZip64Format: true }],
    ])('%s', async (_name, options) => {
      const slice = fault.slice('constituent.close');
      serveOnce(slice, await makeZip({ 'c.csv': `${CONSTITUENT_HEADER}\n${ROW('XS1')}\n${ROW('XS2')}\n` }, options), 'application/zip');
      const run = await fault.run(slice, { settings: FORM_ONLY });
      const { rows } = await expectSliceLoaded(fault, slice, run, { attempts: 1, withinMs: 3_000 });
      expect(rows.map((row) => row.isin)).toEqual(['XS1', 'XS2']);
    });
  });
});
