import { describe, expect, it } from 'vitest';
import { planFailedSlices } from '../../../src/planning/plan-failed-slices.js';
import { LEDGER_WINDOW_DAYS } from '../../../src/slice/slice-range.js';
import { countIsoDates } from '../../../src/dates/report-date.js';
import type { Ledger, LedgerEntry, LedgerFilter } from '../../../src/warehouse/ledger/ledger.js';

/** A ledger that fails the 1st of every month and remembers the questions it was asked. */
function ledgerFailingFirsts(asked: { filter: LedgerFilter; status: unknown }[]): Ledger {
  return {
    async entries(filter: LedgerFilter, options: { status?: unknown } = {}): Promise<LedgerEntry[]> {
      asked.push({ filter, status: options.status });
      const rows: LedgerEntry[] = [];
      for (let day = filter.from; day <= filter.to; day = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10)) {
        if (!day.endsWith('-01')) continue;
        rows.push({ portfolio_id: 1001, report_type: 'index', report_date: day, status: 'failed', error: 'EXPORT_FORBIDDEN: x', attempts: 1, updated_at: day, checked_at: day });
      }
      return rows;
    },
  } as unknown as Ledger;
}

describe('planFailedSlices', () => {
  it('reads the ledger a window at a time, lazily, asking only for failed rows with the codes given', async () => {
    const asked: { filter: LedgerFilter; status: unknown }[] = [];
    const range = { from: '2014-01-01', to: '2023-12-31', portfolios: [1001], reportTypes: ['index' as const] };
    const planned = planFailedSlices(range, ledgerFailingFirsts(asked), ['EXPORT_FORBIDDEN']);

    const first = await planned.next();
    expect(first.value).toEqual({ portfolioId: 1001, reportType: 'index', reportDate: '2014-01-01' });
    // One window read so far, not ten years.
    expect(asked).toHaveLength(1);

    const rest = [];
    for await (const slice of planned) rest.push(slice);
    expect(rest).toHaveLength(119);
    expect(asked.length).toBe(Math.ceil(countIsoDates(range.from, range.to) / LEDGER_WINDOW_DAYS));
    for (const question of asked) {
      expect(countIsoDates(question.filter.from, question.filter.to)).toBeLessThanOrEqual(LEDGER_WINDOW_DAYS);
      expect(question.filter.errorCodes).toEqual(['EXPORT_FORBIDDEN']);
      expect(question.status).toBe('failed');
    }
  });
});
