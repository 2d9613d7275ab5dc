import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { FileFormatError } from '../../../src/errors/sync-error.js';
import { CsvRecordSplitter } from '../../../src/extract/csv-record-splitter.js';
import { renderCsv } from '../../../src/simulator/render-export.js';
import { lazySyntheticReport } from '../../../src/simulator/synthetic-reports.js';

/** The records of `text` fed to a splitter in the given chunks. */
function split(chunks: readonly string[]): string[][] {
  const splitter = new CsvRecordSplitter('x.csv');
  const records: string[][] = [];
  for (const chunk of chunks) splitter.push(chunk, records);
  splitter.end(records);
  return records;
}

function failure(text: string): Error {
  try {
    split([text]);
  } catch (error) {
    return error as Error;
  }
  throw new Error(`${JSON.stringify(text)} split without an error`);
}

/** csv-parse, the parser this one replaced, as the oracle: the same options it was used with. */
function oracle(text: string): string[][] {
  return parse(text, { bom: true, relax_column_count: true }) as string[][];
}

/** A small seeded generator, so a failing case can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `text` cut at random places into 1 to 6 chunks (a cut may fall inside a quote pair or a CRLF). */
function randomChunks(text: string, next: () => number): string[] {
  const cuts = Array.from({ length: Math.floor(next() * 6) }, () => Math.floor(next() * (text.length + 1))).sort((a, b) => a - b);
  const chunks: string[] = [];
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    chunks.push(text.slice(from, cut));
    from = cut;
  }
  return chunks;
}

describe('CsvRecordSplitter', () => {
  it('splits quoted commas, doubled quotes, line breaks inside quotes and empty cells', () => {
    expect(split(['a,"b, c","say ""hi""",\n"x\r\ny",,""\n'])).toEqual([
      ['a', 'b, c', 'say "hi"', ''],
      ['x\r\ny', '', ''],
    ]);
  });

  it('ends records at LF, CRLF or a lone CR, with or without a line break at the end', () => {
    expect(split(['a,b\n1,2\n'])).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
    expect(split(['a,b\r\n1,2'])).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
    expect(split(['a,b\r1,2\r'])).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
    expect(split(['a,b,'])).toEqual([['a', 'b', '']]);
  });

  it('drops a leading byte-order mark only, and hands a blank line on as one empty cell', () => {
    expect(split(['\uFEFFa\n\n\uFEFFb\n'])).toEqual([['a'], [''], ['\uFEFFb']]);
    expect(split([''])).toEqual([]);
  });

  it('gives the same records wherever the chunks are cut, even between the halves of "" or CRLF', () => {
    const text = '\uFEFFa,"b ""q"", c"\r\n"multi\nline",\r\n,""\r\nlast,"x"';
    const whole = split([text]);
    for (let cut = 0; cut <= text.length; cut += 1) expect(split([text.slice(0, cut), text.slice(cut)])).toEqual(whole);
    expect(split([...text])).toEqual(whole);
  });

  it('refuses a quote inside an unquoted cell, text after a closing quote and an unclosed quote, naming the line', () => {
    expect(failure('a,b\n1,x"y\n')).toBeInstanceOf(FileFormatError);
    // These messages are what a user reads to mend the file (line, cell, what to do): checked whole.
    expect(failure('a,b\n1,x"y\n').message).toBe(
      'x.csv is not valid CSV at line 2: a quote inside an unquoted cell (cell 2); a cell holding a quote must be quoted, with the quote doubled',
    );
    expect(failure('a,b\n"1\n2"x,3\n').message).toBe('x.csv is not valid CSV at line 3: "x" after the closing quote of cell 1; expected a comma or the end of the line');
    expect(failure('a,b\n1,2\n3,"open\n\n').message).toBe('x.csv is not valid CSV at line 3: quoted cell 2 is not closed before the end of the file');
  });

  it('agrees with csv-parse on 3,000 random well-formed files, cut into random chunks', () => {
    const next = random(20261124);
    const pieces = ['a', 'Société', '1.25', ',', '"', '\n', '\r\n', ' ', '', '💶'];
    const cell = () => Array.from({ length: Math.floor(next() * 4) }, () => pieces[Math.floor(next() * pieces.length)]).join('');
    const quoted = (value: string) => `"${value.replaceAll('"', '""')}"`;
    for (let file = 0; file < 3_000; file += 1) {
      const eol = next() < 0.5 ? '\n' : '\r\n';
      const records = Array.from({ length: 1 + Math.floor(next() * 5) }, () => Array.from({ length: 1 + Math.floor(next() * 4) }, cell));
      const lines = records.map((record) =>
        record
          .map((value) => {
            const mustQuote = /[",\r\n]/.test(value) || (record.length === 1 && value === '');
            return mustQuote || next() < 0.2 ? quoted(value) : value;
          })
          .join(','),
      );
      const text = (next() < 0.3 ? '\uFEFF' : '') + lines.join(eol) + (next() < 0.5 ? eol : '');
      const chunks = randomChunks(text, next);
      expect(split(chunks), JSON.stringify(chunks)).toEqual(oracle(text));
      expect(split(chunks)).toEqual(records);
    }
  });

  it('agrees with csv-parse on 3,000 random strings of CSV punctuation: the same records, or both refuse', () => {
    const next = random(7);
    const alphabet = ['a', 'b', '"', '"', ',', '\n', 'é'];
    for (let file = 0; file < 3_000; file += 1) {
      const text = Array.from({ length: Math.floor(next() * 14) }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
      let expected: string[][] | 'refused';
      try {
        expected = oracle(text);
      } catch {
        expected = 'refused';
      }
      let actual: string[][] | 'refused';
      try {
        actual = split(randomChunks(text, next));
      } catch (error) {
        expect(error).toBeInstanceOf(FileFormatError);
        actual = 'refused';
      }
      expect(actual, JSON.stringify(text)).toEqual(expected);
    }
  });

  it('agrees with csv-parse on the simulator’s 5,000-row constituent export (20-digit decimals, quoted commas, quotes, line breaks)', () => {
    const chunks = [...renderCsv(lazySyntheticReport({ portfolioId: 1001, reportType: 'constituent.close', reportDate: '2024-03-01' }, { sizes: { constituentRows: 5_000 } }))];
    const records = split(chunks);
    expect(records).toHaveLength(5_001);
    expect(records).toEqual(oracle(chunks.join('')));
    expect(records.some((record) => record.some((cell) => cell.includes('\n')))).toBe(true);
    expect(records.some((record) => record.some((cell) => cell.includes('"')))).toBe(true);
  });
});

describe('CsvRecordSplitter: the longest record', () => {
  const LIMIT = 1024;
  const splitWith = (chunks: readonly string[]): string[][] => {
    const splitter = new CsvRecordSplitter('x.csv', LIMIT);
    const records: string[][] = [];
    for (const chunk of chunks) splitter.push(chunk, records);
    splitter.end(records);
    return records;
  };
  const inChunks = (text: string, size: number): string[] => Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

  it.each([1, 100, 4096])('takes records right up to the limit, fed %i characters at a time', (size) => {
    const full = `${'a'.repeat(LIMIT - 2)},b`;
    const records = splitWith(inChunks(`h1,h2\n${full}\n${full}\r\nx,y\n`, size));
    expect(records).toEqual([
      ['h1', 'h2'],
      [full.slice(0, -2), 'b'],
      [full.slice(0, -2), 'b'],
      ['x', 'y'],
    ]);
  });

  it.each([1, 100, 4096])('refuses a record of commas over the limit, naming its line, fed %i characters at a time', (size) => {
    const text = `h1,h2\nx,y\n${','.repeat(LIMIT * 3)}\n`;
    expect(() => splitWith(inChunks(text, size))).toThrowError(
      new FileFormatError(
        'x.csv line 3: the record is longer than limits.maxRecordBytes (1024 characters): refusing it before it is held whole; raise that setting if the file is genuine',
      ),
    );
  });

  it('refuses a quoted cell over the limit, and a last record without a line break', () => {
    expect(() => splitWith([`a\n"${'x'.repeat(LIMIT)}`, '"\n'])).toThrowError(/line 2: the record is longer than limits\.maxRecordBytes/);
    expect(() => splitWith([`a\n${'x'.repeat(LIMIT + 1)}`])).toThrowError(/line 2: the record is longer/);
  });

  it('holds no more than the limit and a chunk of a line of a million commas', () => {
    const splitter = new CsvRecordSplitter('x.csv', LIMIT);
    const records: string[][] = [];
    const chunk = ','.repeat(512);
    let fedChunks = 0;
    expect(() => {
      for (; fedChunks < 2_000; fedChunks += 1) splitter.push(chunk, records);
    }).toThrowError(/longer than limits\.maxRecordBytes/);
    expect(fedChunks).toBeLessThanOrEqual(2);
  });
});
