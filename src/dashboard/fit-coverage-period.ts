import { choosePeriod, countPeriods } from '../coverage/coverage-grid.js';
import { UsageError } from '../errors/sync-error.js';
import type { LedgerPeriod } from '../warehouse/engine/ledger-period.js';

const COARSER: readonly LedgerPeriod[] = ['day', 'week', 'month'];

/**
 * The period a coverage grid is drawn at, decided before anything is counted: the one asked for,
 * or the finest fitting `columns`, coarsened to weeks, then months, while over `maxCells`.
 * @throws UsageError when even that exceeds `maxCells`, saying how to narrow the query
 */
export function fitCoveragePeriod(options: {
  readonly from: string;
  readonly to: string;
  readonly rows: number;
  /** Columns the page has room for. */
  readonly columns: number;
  /** The period the query asked for, if any: never coarsened behind its back. */
  readonly period?: LedgerPeriod;
  readonly maxCells: number;
}): LedgerPeriod {
  const { from, to, rows, maxCells } = options;
  const cells = (period: LedgerPeriod) => rows * countPeriods(from, to, period);
  const candidates = options.period ? [options.period] : COARSER.slice(COARSER.indexOf(choosePeriod(from, to, options.columns)));
  const fitting = candidates.find((period) => cells(period) <= maxCells);
  if (fitting) return fitting;
  const period = candidates.at(-1)!;
  const coarser = COARSER.slice(COARSER.indexOf(period) + 1).find((other) => cells(other) <= maxCells);
  const narrow = [coarser ? `a coarser period (period=${coarser} fits)` : undefined, 'fewer dates', 'fewer portfolios and report types'].filter(Boolean);
  throw new UsageError(
    `${cells(period).toLocaleString('en-US')} cells (${rows.toLocaleString('en-US')} rows by ${countPeriods(from, to, period).toLocaleString('en-US')} ${period}s from ${from} to ${to}) is more than one page shows (${maxCells.toLocaleString('en-US')}); choose ${narrow.slice(0, -1).join(', ')} or ${narrow.at(-1)}`,
  );
}
