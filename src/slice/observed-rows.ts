import type { RowValues } from '../extract/row-builder.js';
import type { SliceCheckTally } from '../quality/slice-check-tally.js';

/** `rows` as they are, each shown to the slice's data-quality tally on its way to the warehouse. */
export async function* observedRows(rows: AsyncIterable<RowValues>, checks: SliceCheckTally): AsyncGenerator<RowValues> {
  for await (const values of rows) {
    checks.observe(values);
    yield values;
  }
}
