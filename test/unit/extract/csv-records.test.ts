import { createReadStream } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { CsvRecordSplitter } from '../../../src/extract/csv-record-splitter.js';
import { FileFormatError } from '../../../src/errors/sync-error.js';
import { readCsvRecords } from '../../../src/extract/csv-records.js';
import type { SourceRecord } from '../../../src/extract/source-record.js';
import { valuesByName } from '../../helpers/values-by-name.js';

const fixture = new URL('../../fixtures/constituent-bom-crlf.csv', import.meta.url);

async function read(input: AsyncIterable<Buffer | string>): Promise<SourceRecord[]> {
  const records: SourceRecord[] = [];
  for await (const record of readCsvRecords(input, { fileName: 'x.zip', entryName: 'data.csv' })) records.push(record);
  return records;
}

async function* text(value: string, chunkSize = 1 << 16) {
  for (let i = 0; i < value.length; i += chunkSize) yield Buffer.from(value.slice(i, i + chunkSize));
}

describe('readCsvRecords', () => {
  it('reads a BOM, CRLF, quoted commas, doubled quotes, embedded line breaks and empty cells', async () => {
    const records = await read(createReadStream(fixture));
    expect(records.map((r) => r.where)).toEqual(['data.csv line 2', 'data.csv line 4']);
    const [sap, diageo] = records as [SourceRecord, SourceRecord];
    expect(sap.names[0]).toBe('Effective Date');
    expect(valuesByName(sap)).toMatchObject({ ISIN: 'DE0007164600', 'Security Name': 'SAP, SE', 'Closing Price': '1234.56789012345678901' });
    expect(valuesByName(diageo)).toMatchObject({ 'Security Name': 'Diageo\r\nOrdinary "Shares"', 'Exchange Code': '', 'Index Shares': '-250.75' });
  });

  it('counts physical lines after multi-line fields, with LF and with CRLF', async () => {
    for (const eol of ['\n', '\r\n']) {
      const csv = ['a,b', '1,"x', 'y', 'z"', '', '3,4', '5,"6"'].join(eol);
      const records = await read(text(csv, 3));
      expect(records.map((r) => r.where)).toEqual(['data.csv line 2', 'data.csv line 6', 'data.csv line 7']);
    }
  });

  it('refuses a row with too many or too few cells, naming the line', async () => {
    const tooMany = await read(text('a,b\n1,2\n1,2,3\n')).catch((e: unknown) => e);
    expect(tooMany).toBeInstanceOf(FileFormatError);
    expect((tooMany as Error).message).toBe('x.zip, data.csv line 3: expected 2 columns (as in the header), found 3');
    const tooFew = await read(text('a,b\n1\n')).catch((e: unknown) => e);
    expect((tooFew as Error).message).toContain('line 2: expected 2 columns (as in the header), found 1');
  });

  it('refuses a header with an empty or repeated name', async () => {
    expect(((await read(text('a,,c\n1,2,3\n')).catch((e: unknown) => e)) as Error).message).toContain('header cell 2 is empty');
    expect(((await read(text('a,b,a\n1,2,3\n')).catch((e: unknown) => e)) as Error).message).toContain('names column "a" twice');
  });

  it('turns a CSV syntax error into a file error', async () => {
    const error = await read(text('a,b\n1,"unclosed\n')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FileFormatError);
    expect((error as FileFormatError).code).toBe('FILE_INVALID');
    expect((error as Error).message).toContain('x.zip, data.csv is not valid CSV at line 2');
  });

  it('refuses bytes that are not UTF-8, naming how many came before, wherever the chunks are cut', async () => {
    const latin1 = Buffer.concat([Buffer.from('a,b\nSociété,1\n'), Buffer.from('2,Soci\xe9t\xe9\n', 'latin1')]);
    // "a,b\nSociété,1\n2,Soci" is 22 bytes: the 23rd is the Latin-1 é.
    for (const chunkSize of [latin1.length, 21, 7, 1]) {
      const chunks = async function* () {
        for (let i = 0; i < latin1.length; i += chunkSize) yield latin1.subarray(i, i + chunkSize);
      };
      const error = await read(chunks()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FileFormatError);
      expect((error as Error).message).toMatch(/^x\.zip, data\.csv is not UTF-8 text \(an invalid byte after byte (\d+) of the CSV; Latin-1 or Windows-1252, perhaps\)/);
      expect((error as Error).message).toContain('after byte 22 of the CSV');
    }
  });

  it('yields nothing for an empty file or a header alone', async () => {
    expect(await read(text(''))).toEqual([]);
    expect(await read(text('\uFEFFa,b\r\n'))).toEqual([]);
  });
});

describe('readCsvRecords given long names', () => {
  it('quotes no more than 80 characters of a header cell named twice', async () => {
    const name = 'n'.repeat(100_000);
    const error = await read(text(`${name},${name}\nx,y\n`)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FileFormatError);
    expect((error as Error).message).toBe(`x.zip, data.csv line 1: the header names column "${'n'.repeat(79)}…" twice`);
  });
});

describe('readCsvRecords given a whole body in one chunk', () => {
  it('hands the splitter at most 64 Ki characters at a time, and its records on as they come, so a line of commas is refused within a piece of the limit', async () => {
    const push = vi.spyOn(CsvRecordSplitter.prototype, 'push');
    try {
      const body = Buffer.from(`a,b\n${','.repeat(8 * 1024 ** 2)}\n`);
      const reading = (async () => {
        for await (const record of readCsvRecords(
          (async function* () {
            yield body;
          })(),
          { fileName: 'x.csv', maxRecordBytes: 1024 ** 2 },
        ))
          void record;
      })();
      await expect(reading).rejects.toThrowError('x.csv line 2: the record is longer than limits.maxRecordBytes (1048576 characters)');
      const pieces = push.mock.calls.map(([text]) => text.length);
      expect(Math.max(...pieces)).toBeLessThanOrEqual(64 * 1024);
      // Refused after about 1 MiB of the 8: not after the whole chunk was split into cells.
      expect(pieces.reduce((sum, length) => sum + length, 0)).toBeLessThanOrEqual(1024 ** 2 + 64 * 1024);
    } finally {
      push.mockRestore();
    }
  });

  it('hands the splitter whole records where it can: a record of 80,000 cells over many pieces is split in one go, the same as read line by line', async () => {
    const names = Array.from({ length: 80_000 }, (_, i) => `f${i}`);
    const line = (row: number) => names.map((_, i) => `${row}:${i}`).join(',');
    // CRLF, a CR ending a piece (its LF in the next), a quoted line break across pieces, no break at the end.
    const quoted = `"${'q'.repeat(70_000)}\r\n${'q'.repeat(70_000)}"`;
    const body = `${names.join(',')}\r\n${line(1)}\r\n${line(2)}\r\n${quoted},${line(3).slice(line(3).indexOf(',') + 1)}`;
    for (const chunkSize of [1 << 16, 100_003, 1 << 20, body.length]) {
      const push = vi.spyOn(CsvRecordSplitter.prototype, 'push');
      const records: SourceRecord[] = [];
      try {
        for await (const record of readCsvRecords(text(body, chunkSize), { fileName: 'x.csv' })) {
          records.push(record);
        }
        expect(records.map((record) => record.where)).toEqual(['line 2', 'line 3', 'line 4']);
        expect(records[0]!.values).toEqual(line(1).split(','));
        expect(records[1]!.values).toEqual(line(2).split(','));
        expect(records[2]!.values[0]).toBe(quoted.slice(1, -1));
        expect(records[2]!.values.slice(1)).toEqual(line(3).split(',').slice(1));
        expect(push.mock.calls.every(([piece]) => piece.length <= 64 * 1024)).toBe(true);
        // Each piece pushed ends at a line break or holds none (the start of a record held back).
        expect(push.mock.calls.filter(([piece]) => /[\r\n]/.test(piece) && !/[\r\n]$/.test(piece))).toEqual([]);
      } finally {
        push.mockRestore();
      }
    }
  });
});
