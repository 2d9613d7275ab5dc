import type { WarehouseRow } from '../../src/extract/row-builder.js';
import type { Slice } from '../../src/slice/slice.js';

/** The slice the loader tests write: portfolio 7's close of 2024-03-01. */
export const LOADED_SLICE: Slice = { portfolioId: 7, reportType: 'constituent.close', reportDate: '2024-03-01' };

/** The file the loader tests say it came from. */
export const LOADED_FILE = { format: 'csv' as const, fileName: 'f.zip', bytes: 10, sha256: 'abc' };

/** A typed `constituent_report` row of {@link LOADED_SLICE}, line `line` at `price`; `fields` change the rest. */
export function constituentRow(line: number, price: string, fields: Partial<WarehouseRow> = {}): WarehouseRow {
  return {
    portfolio_id: 7,
    report_type: 'constituent.close',
    report_date: '2024-03-01',
    line_number: line,
    effective_date: '2024-03-01',
    isin: `ISIN${line}`,
    security_name: null,
    security_ticker: null,
    exchange_code: null,
    closing_price: price,
    currency: 'EUR',
    closing_fx: '1',
    index_shares: '10',
    index_weighting: '0.5',
    extra: null,
    ...fields,
  };
}

/** Rows as the loader takes them: an async stream. */
export async function* rowStream(...items: WarehouseRow[]): AsyncGenerator<WarehouseRow> {
  yield* items;
}
