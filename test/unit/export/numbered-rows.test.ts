import { describe, expect, it } from 'vitest';
import { FileFormatError } from '../../../src/errors/sync-error.js';
import { numberedRows } from '../../../src/export/numbered-rows.js';
import { readJsonRecords } from '../../../src/extract/json-records.js';
import { createRowValuesBuilder, rowColumns, type RowValues } from '../../../src/extract/row-builder.js';
import { REPORT_REGISTRY } from '../../../src/reports/report-registry.js';
import type { Slice } from '../../../src/slice/slice.js';

const slice: Slice = { portfolioId: 1001, reportType: 'index', reportDate: '2024-03-01' };
const definition = REPORT_REGISTRY.index;
const lineNumber = rowColumns(definition).indexOf('line_number');
const record = (effectiveDate: string) => `{"effectiveDate":"${effectiveDate}","indexId":"X","indexValue":1.5}`;
const file = (...dates: string[]) => Buffer.from(`[${dates.map(record).join(',')}]`);
const rowsOf = (bytes: Buffer) => numberedRows(readJsonRecords(bytes, { fileName: 'x.json' }), createRowValuesBuilder(definition, slice, 'x.json'));

describe('numberedRows', () => {
  it('numbers the rows of a file parsed at once in a plain loop, as it numbers streamed ones', async () => {
    const rows = rowsOf(file('2024-03-01', '2024-02-29', '2024-03-01'));
    expect(Symbol.asyncIterator in rows).toBe(false);
    const now = [...(rows as Iterable<RowValues>)].map((row) => row[lineNumber]);
    // The ordinary neighbour: the same records as they come.
    const streamed: unknown[] = [];
    const stream = numberedRows(
      (async function* () {
        yield* readJsonRecords(file('2024-03-01', '2024-02-29', '2024-03-01'), { fileName: 'x.json' }) as Iterable<never>;
      })(),
      createRowValuesBuilder(definition, slice, 'x.json'),
    );
    for await (const row of stream) streamed.push(row[lineNumber]);
    expect(now).toEqual([1, 2, 3]);
    expect(streamed).toEqual(now);
  });

  it('types a record only when its row is read, so a bad one fails the reader there', () => {
    const rows = rowsOf(file('2024-03-01', 'not a date')) as Iterable<RowValues>;
    const iterator = rows[Symbol.iterator]();
    expect(iterator.next().value?.[lineNumber]).toBe(1);
    expect(() => iterator.next()).toThrow(FileFormatError);
  });
});
