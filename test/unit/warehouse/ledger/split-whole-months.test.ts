import { describe, expect, it } from 'vitest';
import { splitWholeMonths } from '../../../../src/warehouse/ledger/split-whole-months.js';

describe('splitWholeMonths', () => {
  it.each([
    ['whole months only', { from: '2024-01-01', to: '2024-03-31' }, { months: { from: '2024-01-01', to: '2024-03-01' }, edges: [] }],
    ['a leap February', { from: '2024-02-01', to: '2024-02-29' }, { months: { from: '2024-02-01', to: '2024-02-01' }, edges: [] }],
    [
      'partial months at both ends',
      { from: '2024-01-15', to: '2024-04-10' },
      {
        months: { from: '2024-02-01', to: '2024-03-01' },
        edges: [
          { from: '2024-01-15', to: '2024-01-31' },
          { from: '2024-04-01', to: '2024-04-10' },
        ],
      },
    ],
    ['across a year', { from: '2023-12-31', to: '2024-01-31' }, { months: { from: '2024-01-01', to: '2024-01-01' }, edges: [{ from: '2023-12-31', to: '2023-12-31' }] }],
    ['inside one month', { from: '2024-02-10', to: '2024-02-20' }, { edges: [{ from: '2024-02-10', to: '2024-02-20' }] }],
    ['two partial months and no whole one', { from: '2024-02-10', to: '2024-03-05' }, { edges: [{ from: '2024-02-10', to: '2024-03-05' }] }],
    ['one day', { from: '2024-03-01', to: '2024-03-01' }, { edges: [{ from: '2024-03-01', to: '2024-03-01' }] }],
    ['an empty range', { from: '2024-03-02', to: '2024-03-01' }, { edges: [] }],
  ])('%s', (_, range, split) => {
    expect(splitWholeMonths(range)).toEqual(split);
  });
});
