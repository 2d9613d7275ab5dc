import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readCsvRecords } from '../../../src/extract/csv-records.js';
import { valuesByName } from '../../helpers/values-by-name.js';

async function wheres(csv: string): Promise<string[]> {
  const found: string[] = [];
  for await (const record of readCsvRecords(Readable.from([Buffer.from(csv)]), { fileName: 'x.zip', entryName: 'data.csv' })) found.push(record.where);
  return found;
}

describe('readCsvRecords line numbers', () => {
  it('skips blank lines anywhere (before the header, between rows, at the end, CRLF or LF) and still counts them', async () => {
    expect(await wheres('\r\n\r\na,b\r\n1,2\r\n\r\n\r\n3,4\r\n\r\n')).toEqual(['data.csv line 4', 'data.csv line 7']);
    expect(await wheres('a\n\n1\n\n2\n')).toEqual(['data.csv line 3', 'data.csv line 5']);
  });

  it('counts the line breaks inside quoted values, and keeps empty cells as empty strings', async () => {
    const records: Record<string, unknown>[] = [];
    for await (const record of readCsvRecords(Readable.from([Buffer.from('a,b\n"x\n\ny",\n,"2"\n')]), { fileName: 'x.csv' }))
      records.push({ where: record.where, ...valuesByName(record) });
    expect(records).toEqual([
      { where: 'line 2', a: 'x\n\ny', b: '' },
      { where: 'line 5', a: '', b: '2' },
    ]);
  });

  it('still refuses a line of only spaces as a row with too few cells', async () => {
    await expect(wheres('a,b\n1,2\n  \n')).rejects.toThrow('x.zip, data.csv line 3: expected 2 columns (as in the header), found 1');
  });
});
