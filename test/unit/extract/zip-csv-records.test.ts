import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ExportError, FileFormatError } from '../../../src/errors/sync-error.js';
import type { SourceRecord } from '../../../src/extract/source-record.js';
import { readZipCsvRecords } from '../../../src/extract/zip-csv-records.js';
import { makeZip } from '../../helpers/make-zip.js';
import { valuesByName } from '../../helpers/values-by-name.js';

const javaZip = readFileSync(new URL('../../fixtures/constituent-java-data-descriptor.zip', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'report-sync-zip-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function read(zip: { path: string } | { buffer: Buffer }, maxUncompressedBytes = 1 << 30): Promise<SourceRecord[]> {
  const records: SourceRecord[] = [];
  for await (const record of readZipCsvRecords(zip, { fileName: 'export.zip', maxUncompressedBytes })) records.push(record);
  return records;
}

async function failure(zip: { path: string } | { buffer: Buffer }, maxUncompressedBytes?: number): Promise<Error> {
  const error = await read(zip, maxUncompressedBytes).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

describe('readZipCsvRecords', () => {
  it('reads a ZIP written by Java ZipOutputStream (data descriptors), from memory and from a file', async () => {
    expect(javaZip.readUInt16LE(6) & 0x08).toBe(0x08); // general purpose bit 3: sizes follow the data
    const path = join(dir, 'java.zip');
    writeFileSync(path, javaZip);
    for (const source of [{ buffer: javaZip }, { path }]) {
      const records = await read(source);
      expect(records).toHaveLength(4);
      expect(records[0]!.where).toBe('2024-03-01_Global_Equity_Index_index.csv line 2');
      expect(valuesByName(records[0]!)).toMatchObject({ 'Security Name': 'SAP, SE', 'Closing Price': '1234.56789012345678901' });
      expect(valuesByName(records[1]!)).toMatchObject({ 'Security Name': 'Apple "Classic" Inc', 'Exchange Code': '' });
      expect(valuesByName(records[2]!)['Security Name']).toBe('Diageo\r\nOrdinary Shares');
      expect(records[3]!.where).toBe('2024-03-01_Global_Equity_Index_index.csv line 6');
    }
  });

  it('reads a yazl stream entry (data descriptor) and ignores directories and other files', async () => {
    const zip = await makeZip({ 'folder/': '', 'readme.txt': 'hello', '__MACOSX/._data.csv': 'junk', 'folder/data.CSV': 'a,b\n1,2\n' }, { stream: true });
    const records = await read({ buffer: zip });
    expect(records).toEqual([{ where: 'folder/data.CSV line 2', names: ['a', 'b'], values: ['1', '2'] }]);
  });

  it('never writes entries anywhere, so ../ names are harmless', async () => {
    const zip = await makeZip({ 'data.csv': 'a\n1\n' });
    // yazl refuses ../ names, so the name is patched in place (same length) in both headers.
    const patched = Buffer.from(zip.toString('latin1').replaceAll('data.csv', '../x.csv'), 'latin1');
    const records = await read({ buffer: patched });
    expect(records[0]!.where).toBe('../x.csv line 2');
  });

  it('requires exactly one CSV', async () => {
    expect((await failure({ buffer: await makeZip({ 'a.csv': 'a\n', 'b.csv': 'b\n' }) })).message).toBe('export.zip holds 2 CSV files (a.csv, b.csv); expected exactly one');
    expect((await failure({ buffer: await makeZip({ 'notes.txt': 'x' }) })).message).toBe('export.zip holds no CSV file (entries: notes.txt); expected exactly one');
    expect((await failure({ buffer: await makeZip({}) })).message).toBe('export.zip holds no CSV file (it has no entries); expected exactly one');
  });

  it('refuses bytes that are not a ZIP, or a corrupt one', async () => {
    const notZip = await failure({ buffer: Buffer.from('<html>error</html>') });
    expect(notZip).toBeInstanceOf(FileFormatError);
    expect(notZip.message).toMatch(/^export\.zip is not a readable ZIP archive/);
    const corrupt = Buffer.from(javaZip);
    corrupt.fill(0x55, 80, 200); // inside the deflated data
    const error = await failure({ buffer: corrupt });
    expect(error).toBeInstanceOf(FileFormatError);
  });

  it('stops a zip bomb by its declared size, and by the bytes actually inflated', async () => {
    const bomb = await makeZip({ 'bomb.csv': Buffer.alloc(20 * 1024 * 1024, 0x61) });
    expect(bomb.length).toBeLessThan(100 * 1024);
    const declared = await failure({ buffer: bomb }, 1024 * 1024);
    expect(declared).toBeInstanceOf(ExportError);
    expect((declared as ExportError).code).toBe('EXPORT_TOO_LARGE');
    expect(declared.message).toContain('limits.maxUncompressedBytes');

    const streamed = await makeZip({ 'bomb.csv': Buffer.alloc(20 * 1024 * 1024, 0x61) }, { stream: true });
    // Lie in the central directory: claim 100 bytes uncompressed.
    const lying = Buffer.from(streamed);
    const central = lying.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    lying.writeUInt32LE(100, central + 24);
    const started = Date.now();
    const inflated = await failure({ buffer: lying }, 1024 * 1024);
    expect((inflated as ExportError).code).toBe('EXPORT_TOO_LARGE');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('lets the reader stop early without leaving the file open', async () => {
    const path = join(dir, 'early.zip');
    writeFileSync(path, javaZip);
    for await (const record of readZipCsvRecords({ path }, { fileName: 'early.zip', maxUncompressedBytes: 1 << 20 })) {
      expect(record.where).toContain('line 2');
      break;
    }
    rmSync(path);
  });
});
