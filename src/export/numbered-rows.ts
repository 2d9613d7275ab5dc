import type { SourceRecords } from '../extract/json-records.js';
import type { SourceRecord } from '../extract/source-record.js';
import type { createRowValuesBuilder, RowValues } from '../extract/row-builder.js';
import type { SliceCheckTally } from '../quality/slice-check-tally.js';
import { isSyncIterable } from '../runtime/sync-iterable.js';

type RowValuesBuilder = ReturnType<typeof createRowValuesBuilder>;

/**
 * The file's records as warehouse row values, numbered from 1 in the order the file has them;
 * `checks` tallies each row on its way (no generator of its own: one less hop per row). Records
 * parsed at once give rows that can be read at once; streamed records, rows as they come. Either
 * way a row is typed only when it is read, so a bad record fails the write that reads it.
 */
export function numberedRows(records: AsyncIterable<SourceRecord>, build: RowValuesBuilder, checks?: SliceCheckTally): AsyncIterable<RowValues>;
export function numberedRows(records: SourceRecords, build: RowValuesBuilder, checks?: SliceCheckTally): Iterable<RowValues> | AsyncIterable<RowValues>;
export function numberedRows(records: SourceRecords, build: RowValuesBuilder, checks?: SliceCheckTally): Iterable<RowValues> | AsyncIterable<RowValues> {
  let ordinal = 0;
  const number = (record: SourceRecord): RowValues => {
    ordinal += 1;
    const values = build(record, ordinal);
    checks?.observe(values);
    return values;
  };
  return isSyncIterable(records) ? numberedNow(records, number) : numberedAsTheyCome(records, number);
}

function* numberedNow(records: Iterable<SourceRecord>, number: (record: SourceRecord) => RowValues): Generator<RowValues> {
  for (const record of records) yield number(record);
}

async function* numberedAsTheyCome(records: AsyncIterable<SourceRecord>, number: (record: SourceRecord) => RowValues): AsyncGenerator<RowValues> {
  for await (const record of records) yield number(record);
}
