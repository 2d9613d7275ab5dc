import { afterEach, describe, expect, it } from 'vitest';
import { selectedSlicesFrom, type PlacedSlice } from '../../../src/planning/selected-slices-from.js';
import { planSlices, type SliceRange } from '../../../src/slice/slice-range.js';
import { Ledger } from '../../../src/warehouse/ledger/ledger.js';
import { ledgerRow } from '../../helpers/ledger-row.js';
import { seededWarehouse, type SeededWarehouse } from '../../helpers/seeded-warehouse.js';

// 4 days × 2 portfolios × 3 report types: 24 slices, 6 a day.
const RANGE: SliceRange = { from: '2024-02-27', to: '2024-03-01', portfolios: [7, 3], reportTypes: ['index', 'constituent.open', 'constituent.close'] };

async function collect(source: AsyncIterable<PlacedSlice>): Promise<PlacedSlice[]> {
  const all: PlacedSlice[] = [];
  for await (const placed of source) all.push(placed);
  return all;
}

describe('the slices a selection takes from a position of the range', () => {
  let seeded: SeededWarehouse | undefined;
  afterEach(async () => {
    await seeded?.close();
    seeded = undefined;
  });

  it('are the range’s slices in order with their positions, from any position, mid-day and across a month’s end', async () => {
    seeded = await seededWarehouse('sqlite', []);
    const ledger = new Ledger(seeded.warehouse);
    const every = [...planSlices(RANGE)];
    for (const start of [0, 1, 5, 6, 13, 23]) {
      const placed = await collect(selectedSlicesFrom(RANGE, { kind: 'all' }, ledger, start));
      expect(placed.map((p) => p.position)).toEqual(Array.from({ length: 24 - start }, (_, i) => start + i));
      expect(placed.map((p) => p.slice)).toEqual(every.slice(start));
    }
    expect(await collect(selectedSlicesFrom(RANGE, { kind: 'all' }, ledger, 24))).toEqual([]);
  });

  it('leave out what the selection leaves out, keeping each slice’s position in the whole range', async () => {
    seeded = await seededWarehouse('sqlite', [
      ledgerRow(7, 'index', '2024-02-28', 'loaded'),
      ledgerRow(3, 'constituent.close', '2024-02-28', 'failed', { error: 'FILE_INVALID: bad' }),
      ledgerRow(3, 'index', '2024-03-01', 'failed'),
    ]);
    const ledger = new Ledger(seeded.warehouse);
    const missing = await collect(selectedSlicesFrom(RANGE, { kind: 'missing' }, ledger, 6));
    // Day 2 starts at position 6; its first slice (7, index) is loaded.
    expect(missing[0]).toEqual({ slice: { portfolioId: 7, reportType: 'constituent.open', reportDate: '2024-02-28' }, position: 7 });
    expect(missing).toHaveLength(17);
    const failed = await collect(selectedSlicesFrom(RANGE, { kind: 'failed', codes: ['FILE_INVALID'] }, ledger, 0));
    expect(failed).toEqual([{ slice: { portfolioId: 3, reportType: 'constituent.close', reportDate: '2024-02-28' }, position: 11 }]);
  });
});
