import type { SourceRecord } from '../extract/source-record.js';
import type { createRowValuesBuilder, RowValues } from '../extract/row-builder.js';

/** The file's records as warehouse row values, numbered from 1 in the order the file has them. */
export async function* numberedRows(records: AsyncIterable<SourceRecord>, build: ReturnType<typeof createRowValuesBuilder>): AsyncGenerator<RowValues> {
  let ordinal = 0;
  for await (const record of records) {
    ordinal += 1;
    yield build(record, ordinal);
  }
}
