import { isLosslessNumber } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { FileFormatError } from '../../../src/errors/sync-error.js';
import { readJsonRecords } from '../../../src/extract/json-records.js';
import type { SourceRecord } from '../../../src/extract/source-record.js';
import { valuesByName } from '../../helpers/values-by-name.js';

async function read(text: string | Buffer, chunkSize = 1 << 16, maxDepth?: number): Promise<SourceRecord[]> {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  async function* chunks() {
    for (let i = 0; i < bytes.length; i += chunkSize) yield bytes.subarray(i, i + chunkSize);
  }
  const records: SourceRecord[] = [];
  for await (const record of readJsonRecords(chunks(), { fileName: 'x.json', maxDepth })) records.push(record);
  return records;
}

async function failure(text: string, maxDepth?: number): Promise<string> {
  const error = await read(text, 7, maxDepth).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(FileFormatError);
  return (error as Error).message;
}

describe('readJsonRecords', () => {
  const file =
    '\uFEFF [\n {"effectiveDate":"2024-03-01","indexValue":1234.56789012345678901,"name":"a \\"q\\" ] }","nested":{"a":[1,{"b":2}]}},\r\n\t{"indexValue":-1.5E-7,"emoji":"€ 😀"} ] \n';

  it.each([1, 2, 3, 64])('yields every record with every digit, fed %i bytes at a time', async (chunkSize) => {
    const records = await read(file, chunkSize);
    expect(records.map((r) => r.where)).toEqual(['record 1', 'record 2']);
    const [first, second] = records as [SourceRecord, SourceRecord];
    expect(isLosslessNumber(valuesByName(first).indexValue)).toBe(true);
    expect(String(valuesByName(first).indexValue)).toBe('1234.56789012345678901');
    expect(valuesByName(first).name).toBe('a "q" ] }');
    expect(JSON.parse(JSON.stringify(valuesByName(first).nested, (_k, v) => (isLosslessNumber(v) ? Number(v) : v)))).toEqual({ a: [1, { b: 2 }] });
    expect(String(valuesByName(second).indexValue)).toBe('-1.5E-7');
    expect(valuesByName(second).emoji).toBe('€ 😀');
  });

  it('finds string ends across chunk boundaries, whatever the run of backslashes before a quote', async () => {
    const strings = ['\\', '\\\\', 'a\\"', '\\"}]', 'x\\\\\\"y', '"', ''];
    const text = `[${strings.map((value, n) => JSON.stringify({ n, value, after: '}]' })).join(',')}]`;
    for (let chunkSize = 1; chunkSize <= 12; chunkSize += 1) {
      const records = await read(text, chunkSize);
      expect(records.map((record) => valuesByName(record).value)).toEqual(strings);
      expect(records.every((record) => valuesByName(record).after === '}]')).toBe(true);
    }
  });

  it('yields nothing for an empty array or an empty file', async () => {
    expect(await read('[]')).toEqual([]);
    expect(await read(' [ ] ')).toEqual([]);
    expect(await read('')).toEqual([]);
  });

  it('refuses an object at the top', async () => {
    expect(await failure('{"a":1}')).toBe('x.json: the file is an object, not an array of records');
  });

  it('refuses an element that is not an object', async () => {
    expect(await failure('[{"a":1}, 42]')).toBe('x.json: record 2 is a number, not an object');
  });

  it('refuses nesting deeper than the limit', async () => {
    expect(await failure('[{"a":[[[[1]]]]}]', 4)).toContain('record 1 is nested deeper than 4 levels');
    expect(await read('[{"a":[[[1]]]}]', 3, 4)).toHaveLength(1);
  });

  it('refuses a truncated file', async () => {
    expect(await failure('[{"a":1},{"b":')).toContain('ends inside record 2: it was cut short');
    expect(await failure('[{"a":1},')).toContain('ends before the closing "]"');
    expect(await failure('[{"a":1}')).toContain('ends before the closing "]"');
  });

  it('refuses syntax errors inside a record, naming it', async () => {
    expect(await failure('[{"a":1},{"b" 2}]')).toMatch(/^x\.json: record 2 is not valid JSON: /);
    expect(await failure('[{"a":1},{"a":NaN}]')).toMatch(/record 2 is not valid JSON/);
  });

  it('refuses duplicate keys in a record', async () => {
    expect(await failure('[{"a":1,"a":2}]')).toMatch(/record 1 is not valid JSON: .*[Dd]uplicate key/);
  });

  it('quotes no more than a line of a long key or number in its messages', async () => {
    const key = 'k'.repeat(100_000);
    const duplicate = await failure(`[{"${key}":1,"${key}":2}]`);
    expect(duplicate).toMatch(/record 1 is not valid JSON: .*[Dd]uplicate key 'k+…$/);
    expect(duplicate.length).toBeLessThan(400);
    const number = await failure(`[{"a":${'1'.repeat(100_000)}.}]`);
    expect(number).toMatch(/record 1 is not valid JSON: /);
    expect(number.length).toBeLessThan(400);
  });

  it('refuses trailing garbage and stray commas', async () => {
    expect(await failure('[{"a":1}] x')).toContain('after the closing "]"');
    expect(await failure('[{"a":1},]')).toContain('record 2 is text starting "]"');
    expect(await failure('[{"a":1} {"b":2}]')).toContain('expected "," or "]" after record 1');
  });

  it('refuses bytes that are not UTF-8', async () => {
    const error = await read(Buffer.from([0x5b, 0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d, 0x5d])).catch((e: unknown) => e);
    expect((error as Error).message).toContain('not valid UTF-8');
  });
});

describe('readJsonRecords given a whole file in memory', () => {
  async function readWhole(text: string | Buffer, maxDepth?: number): Promise<SourceRecord[]> {
    const records: SourceRecord[] = [];
    for await (const record of readJsonRecords(Buffer.isBuffer(text) ? text : Buffer.from(text), { fileName: 'x.json', maxDepth })) records.push(record);
    return records;
  }
  const plain = (records: SourceRecord[]) =>
    records.map((record) => ({ where: record.where, values: JSON.stringify(valuesByName(record), (_k, v: unknown) => (isLosslessNumber(v) ? `#${String(v)}` : v)) }));

  it.each([
    '\uFEFF [\n {"effectiveDate":"2024-03-01","indexValue":1234.56789012345678901,"name":"a \\"q\\" ] }","nested":{"a":[1,{"b":2}]}},\r\n\t{"indexValue":-1.5E-7,"emoji":"€ 😀"} ] \n',
    '[]',
    '[{"\\u0001x":"\\u0001","n":-0.0e+5,"__proto__":{"a":1},"t":true,"z":null}]',
    '[{"a":1,"a":1}]',
  ])('yields what the streaming reader yields (%#)', async (text) => {
    expect(plain(await readWhole(text))).toEqual(plain(await read(text, 3)));
  });

  it.each([
    ['{"a":1}', undefined],
    ['[{"a":1}, 42]', undefined],
    ['[{"a":[[[[1]]]]}]', 4],
    ['[{"a":1},{"b":', undefined],
    ['[{"a":1},', undefined],
    ['[{"a":1},{"b" 2}]', undefined],
    ['[{"a":1},{"a":NaN}]', undefined],
    ['[{"a":1,"a":2}]', undefined],
    ['[{"a":01}]', undefined],
    ['[{"a":1}] x', undefined],
    ['[{"a":1},]', undefined],
    ['[{"a":1} {"b":2}]', undefined],
  ] as const)('refuses %s with the streaming reader’s message', async (text, maxDepth) => {
    const whole = await readWhole(text, maxDepth).catch((e: unknown) => e);
    expect(whole).toBeInstanceOf(FileFormatError);
    expect((whole as Error).message).toBe(await failure(text, maxDepth));
  });

  it('hands a file in memory on without a promise per record, small, unusual or long; a stream’s as they come', () => {
    const small = readJsonRecords(Buffer.from('[{"a":1},{"a":2}]'), { fileName: 'x.json' });
    expect(Symbol.asyncIterator in small).toBe(false);
    expect([...(small as Iterable<SourceRecord>)].map((record) => record.where)).toEqual(['record 1', 'record 2']);
    // The ordinary neighbours: a stream, and files in memory the one-piece parse does not take.
    expect(Symbol.asyncIterator in readJsonRecords((async function* () {})(), { fileName: 'x.json' })).toBe(true);
    expect(Symbol.asyncIterator in readJsonRecords(Buffer.from('[{"a":1},]'), { fileName: 'x.json' })).toBe(false);
    expect(Symbol.asyncIterator in readJsonRecords(Buffer.from('[{"a":"abcdef"}]'), { fileName: 'x.json', maxRecordBytes: 8 })).toBe(false);
  });

  it('parses a file in memory only when its first record is asked for, small or not', () => {
    for (const filler of ['', 'x'.repeat(300 * 1024)]) {
      const file = Buffer.from(`[{"a":1,"b":"${filler}"}]`);
      const records = readJsonRecords(file, { fileName: 'x.json', maxRecordBytes: 1024 * 1024 }) as Iterable<SourceRecord>;
      // Changed after the call: what is read is what the file holds when the records are asked for.
      file.write('7', file.indexOf('1'));
      const [record] = [...records];
      expect(String(record!.values[0])).toBe('7');
    }
  });

  it('takes nesting up to the limit, and refuses bytes that are not UTF-8', async () => {
    expect(await readWhole('[{"a":[[[1]]]}]', 4)).toHaveLength(1);
    const error = await readWhole(Buffer.from([0x5b, 0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d, 0x5d])).catch((e: unknown) => e);
    expect((error as Error).message).toContain('not valid UTF-8');
  });
});

describe('readJsonRecords: the longest record', () => {
  const LIMIT = 2048;
  const readWith = async (text: string | Buffer, chunkSize: number): Promise<SourceRecord[]> => {
    const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
    async function* chunks() {
      for (let i = 0; i < bytes.length; i += chunkSize) yield bytes.subarray(i, i + chunkSize);
    }
    const records: SourceRecord[] = [];
    for await (const record of readJsonRecords(chunks(), { fileName: 'x.json', maxRecordBytes: LIMIT })) records.push(record);
    return records;
  };
  const recordOfLength = (length: number): string => {
    const shell = '{"name":""}';
    return `{"name":"${'n'.repeat(length - shell.length)}"}`;
  };

  it.each([7, 500, 1 << 16])('takes a record right at the limit, fed %i bytes at a time', async (chunkSize) => {
    const records = await readWith(`[${recordOfLength(LIMIT)},${recordOfLength(20)}]`, chunkSize);
    expect(records).toHaveLength(2);
    expect((valuesByName(records[0]!).name as string).length).toBe(LIMIT - 11);
  });

  it.each([7, 500, 1 << 16])('refuses a record one character over it, naming the record, fed %i bytes at a time', async (chunkSize) => {
    const error = await readWith(`[${recordOfLength(20)},${recordOfLength(LIMIT + 1)}]`, chunkSize).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FileFormatError);
    expect((error as FileFormatError).code).toBe('FILE_INVALID');
    expect((error as Error).message).toContain('x.json: record 2 is longer than limits.maxRecordBytes (2048 characters)');
  });

  it('refuses a long record in a whole file held in memory too', async () => {
    const whole = Buffer.from(`[${recordOfLength(LIMIT * 2)}]`);
    const records: SourceRecord[] = [];
    const reading = (async () => {
      for await (const record of readJsonRecords(whole, { fileName: 'x.json', maxRecordBytes: LIMIT })) records.push(record);
    })();
    await expect(reading).rejects.toThrowError(/record 1 is longer than limits\.maxRecordBytes/);
  });

  it('stops a string that never ends after about the limit, not at the end of the file', async () => {
    let fed = 0;
    async function* endless() {
      yield Buffer.from('[{"a":"');
      for (;;) {
        fed += 1;
        yield Buffer.alloc(512, 'x');
      }
    }
    const reading = (async () => {
      for await (const record of readJsonRecords(endless(), { fileName: 'x.json', maxRecordBytes: LIMIT })) void record;
    })();
    await expect(reading).rejects.toThrowError(/record 1 is longer than limits\.maxRecordBytes/);
    expect(fed).toBeLessThanOrEqual(LIMIT / 512 + 1);
  });
});
