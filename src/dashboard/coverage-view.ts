import { buildCoverageGrid, countPeriods, type CoverageCell } from '../coverage/coverage-grid.js';
import { shiftIsoDate, todayIn } from '../dates/report-date.js';
import type { ReportType } from '../reports/report-types.js';
import { pairKey, type Slice } from '../slice/slice.js';
import type { Ledger } from '../warehouse/ledger/ledger.js';
import type { LedgerPeriod } from '../warehouse/engine/ledger-period.js';
import { DASHBOARD_OUTCOMES, type DashboardOutcome, type DashboardQuery } from './dashboard-query.js';
import { fitCoveragePeriod } from './fit-coverage-period.js';
import type { QueuedSlices } from './queue-view.js';

/**
 * One cell as the page receives it, compact because a ten-year grid has tens of thousands:
 * `[worst, loaded, noData, failed, missing, queued, running]`.
 */
export type CoverageViewCell = readonly [DashboardOutcome, number, number, number, number, number, number];

/** The grid the page draws, and what it was drawn from. */
export interface CoverageView {
  readonly from: string;
  readonly to: string;
  readonly period: LedgerPeriod;
  readonly outcome: DashboardOutcome | null;
  /** The cells' spans, the same for every row: first and last day inside the range. */
  readonly columns: readonly { readonly from: string; readonly to: string }[];
  readonly rows: readonly {
    readonly portfolioId: number;
    readonly reportType: string;
    readonly cells: readonly CoverageViewCell[];
    /**
     * Per cell, in the same order: of its loaded slices, those whose latest file missed a
     * data-quality check set to `warn` (loaded with warnings). Beside the cells rather than in
     * them, so that the grid's cells stay as compact as they were.
     */
    readonly warned: readonly number[];
  }[];
  /** Slices per outcome over the rows shown. */
  readonly totals: Readonly<Record<DashboardOutcome, number>>;
  /** Of `totals.loaded`: the slices loaded with warnings, over the rows shown. */
  readonly warned: number;
  /** Rows left out by the outcome filter. */
  readonly hiddenRows: number;
  /** Whether queued and running come from the queue: `null` when no queue is configured. */
  readonly queue: { readonly reachable: boolean; readonly reason?: string; readonly truncated?: boolean } | null;
  /** The first and last dates the ledger holds for the portfolios and report types asked, `null` when none: the page's "whole ledger" range. */
  readonly ledger: { readonly from: string; readonly to: string } | null;
}

export interface CoverageDefaults {
  readonly portfolios: readonly number[];
  readonly reportTypes: readonly ReportType[];
  readonly timeZone: string;
  readonly lookbackDays: number;
  /** `dates.earliest`: a query's dates before it are refused. */
  readonly earliest: string;
}

/** Most cells one answer holds (a page of more is slow to draw): a ten-year range of 600 pairs by month is 72,000. */
export const MAX_CELLS = 150_000;
/** Cells made into the answer between two turns of the event loop (see `nextTurn`). */
const CELLS_PER_TURN = 20_000;
/** Columns assumed when the page does not say how many it has room for. */
const DEFAULT_COLUMNS = 120;
/**
 * Days the range covers when the query names no start: recent nights, drawn day by day on most
 * screens. Starting at the ledger's first date instead would open a years-old backfill as
 * thousands of grey cells; the whole ledger is one parameter (`from`) away.
 */
export const DEFAULT_RANGE_DAYS = 90;

/**
 * The coverage grid for a dashboard query, counted per period in SQL, with the queue laid over it.
 * The range defaults to the last {@link DEFAULT_RANGE_DAYS} days (at least the lookback), or up to
 * the ledger's last date when later (never after tomorrow).
 * @throws UsageError when the answer would exceed {@link MAX_CELLS} cells, before counting
 */
export async function coverageView(options: {
  readonly ledger: Ledger;
  readonly query: DashboardQuery;
  readonly defaults: CoverageDefaults;
  /** The queue's slices, or the reason it could not be read; undefined when no queue is configured. */
  readonly queued?: QueuedSlices | { readonly unreachable: string };
  /**
   * Awaited between the grid's queries and its building, to let other requests in: SQLite
   * answers synchronously, and the steps in a row would keep every other request out until done.
   * @defaultValue the next turn of the event loop
   */
  readonly nextTurn?: () => Promise<void>;
}): Promise<CoverageView> {
  const { ledger, query, defaults } = options;
  const nextTurn = options.nextTurn ?? (() => new Promise<void>((resolve) => setImmediate(resolve)));
  const span = await ledger.dateSpan({ portfolios: query.portfolios, reportTypes: query.reportTypes });
  const { from, to } = resolveDates(span, query, defaults);
  const portfolios = query.portfolios ?? defaults.portfolios;
  const reportTypes = query.reportTypes ?? defaults.reportTypes;
  const filter = { from, to, portfolios: query.portfolios, reportTypes: query.reportTypes };
  const pairs = portfolios.flatMap((portfolioId) => reportTypes.map((reportType) => ({ portfolioId, reportType })));
  const fit = (rows: number) => fitCoveragePeriod({ from, to, rows, columns: query.columns ?? DEFAULT_COLUMNS, period: query.period, maxCells: MAX_CELLS });
  // The grid's size is known before it is counted or built: a query that would not fit is refused
  // here, in arithmetic, whatever range it names (a century by day would otherwise fill the heap).
  let period = fit(pairs.length);
  if (!query.portfolios || !query.reportTypes) {
    // The grid also shows the pairs the ledger holds beyond those asked (a portfolio since dropped
    // from the settings): fetched up to the most rows any period leaves room for, no more.
    const roomForRows = Math.floor(MAX_CELLS / Math.max(1, countPeriods(from, to, query.period ?? 'month')));
    const keys = new Set(pairs.map((pair) => pairKey(pair.portfolioId, pair.reportType)));
    await nextTurn();
    for (const pair of await ledger.pairs(filter, roomForRows + 1)) keys.add(pairKey(pair.portfolioId, pair.reportType));
    period = fit(keys.size);
  }
  await nextTurn();
  const counts = await ledger.countByPeriod(filter, period);
  await nextTurn();
  const grid = buildCoverageGrid({ from, to, period, pairs, counts });

  const spans = grid.rows[0]?.cells.map((cell) => ({ from: cell.from, to: cell.to })) ?? [];
  const inQueue =
    options.queued && 'queued' in options.queued ? overlay(options.queued, spans, { from, to, portfolios: query.portfolios, reportTypes: query.reportTypes }) : undefined;

  await nextTurn();
  const warnedCells = await warnedPerCell(ledger, filter, period, spans);
  const totals: Record<DashboardOutcome, number> = { failed: 0, running: 0, queued: 0, missing: 0, no_data: 0, loaded: 0 };
  let warned = 0;
  let hiddenRows = 0;
  const rows = [];
  let cellsSinceTurn = 0;
  for (const row of [...grid.rows].sort((a, b) => a.portfolioId - b.portfolioId || a.reportType.localeCompare(b.reportType))) {
    cellsSinceTurn += row.cells.length;
    if (cellsSinceTurn >= CELLS_PER_TURN) {
      cellsSinceTurn = 0;
      await nextTurn();
    }
    const key = pairKey(row.portfolioId, row.reportType);
    const cells = row.cells.map((cell, i) => viewCell(cell, inQueue?.get(key)?.[i]));
    if (query.outcome && !cells.some((cell) => cell[OUTCOME_INDEX[query.outcome!]] > 0)) {
      hiddenRows += 1;
      continue;
    }
    for (const cell of cells) {
      for (const outcome of DASHBOARD_OUTCOMES) totals[outcome] += cell[OUTCOME_INDEX[outcome]];
    }
    const rowWarned = warnedCells.get(key) ?? spans.map(() => 0);
    for (const count of rowWarned) warned += count;
    rows.push({ portfolioId: row.portfolioId, reportType: row.reportType, cells, warned: rowWarned });
  }
  const queue =
    options.queued === undefined
      ? null
      : 'unreachable' in options.queued
        ? { reachable: false, reason: options.queued.unreachable }
        : { reachable: true, truncated: options.queued.truncated };
  return { from, to, period, outcome: query.outcome ?? null, columns: spans, rows, totals, warned, hiddenRows, queue, ledger: span ?? null };
}

/**
 * The slices loaded with warnings per row and column, counted by the ledger in SQL per period. A
 * warehouse not yet migrated to hold the checks has none: the grid still shows.
 */
async function warnedPerCell(
  ledger: Ledger,
  filter: { from: string; to: string; portfolios?: readonly number[]; reportTypes?: readonly ReportType[] },
  period: LedgerPeriod,
  spans: readonly { from: string }[],
): Promise<Map<string, number[]>> {
  const cells = new Map<string, number[]>();
  if (spans.length === 0) return cells;
  for (const count of await ledger.countWarned(filter, period).catch(() => [])) {
    const key = pairKey(count.portfolioId, count.reportType);
    let row = cells.get(key);
    if (!row) {
      row = spans.map(() => 0);
      cells.set(key, row);
    }
    // A week or month that starts before the range is the range's first column.
    row[spanIndex(spans, count.periodStart ?? filter.from)]! += count.slices;
  }
  return cells;
}

/** Where each outcome's count sits in a {@link CoverageViewCell}. */
const OUTCOME_INDEX: Record<DashboardOutcome, 1 | 2 | 3 | 4 | 5 | 6> = { loaded: 1, no_data: 2, failed: 3, missing: 4, queued: 5, running: 6 };

/**
 * A cell with the queue laid over it: queued and running count jobs beside the ledger's outcomes.
 * It shows what `cellOutcome` does, with running, then queued, ranked after failed and before the
 * rest, so loaded weekdays and no-data weekends still show loaded.
 */
function viewCell(cell: CoverageCell, inQueue: { queued: number; running: number } | undefined): CoverageViewCell {
  const running = inQueue?.running ?? 0;
  const queued = inQueue?.queued ?? 0;
  const { missing } = cell;
  const worst: DashboardOutcome = cell.worst === 'failed' ? 'failed' : running > 0 ? 'running' : queued > 0 ? 'queued' : cell.worst;
  return [worst, cell.loaded, cell.noData, cell.failed, missing, queued, running];
}

/** Queued and running slices per row and column. */
function overlay(
  queued: QueuedSlices,
  spans: readonly { from: string; to: string }[],
  filter: { from: string; to: string; portfolios?: readonly number[]; reportTypes?: readonly string[] },
): Map<string, { queued: number; running: number }[]> {
  const cells = new Map<string, { queued: number; running: number }[]>();
  const add = (slice: Slice, state: 'queued' | 'running') => {
    if (slice.reportDate < filter.from || slice.reportDate > filter.to) return;
    if (filter.portfolios && !filter.portfolios.includes(slice.portfolioId)) return;
    if (filter.reportTypes && !filter.reportTypes.includes(slice.reportType)) return;
    const key = pairKey(slice.portfolioId, slice.reportType);
    let row = cells.get(key);
    if (!row) {
      row = spans.map(() => ({ queued: 0, running: 0 }));
      cells.set(key, row);
    }
    row[spanIndex(spans, slice.reportDate)]![state] += 1;
  };
  for (const slice of queued.queued) add(slice, 'queued');
  for (const slice of queued.running) add(slice, 'running');
  return cells;
}

/** The span holding `date`: the last whose first day is not after it. */
function spanIndex(spans: readonly { from: string }[], date: string): number {
  let low = 0;
  let high = spans.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (spans[middle]!.from <= date) low = middle;
    else high = middle - 1;
  }
  return low;
}

/** The query's dates, or: to yesterday (or the ledger's last day if later), from the recent window before it. */
function resolveDates(span: { from: string; to: string } | undefined, query: DashboardQuery, defaults: CoverageDefaults): { from: string; to: string } {
  if (query.from && query.to) return { from: query.from, to: query.to };
  const yesterday = shiftIsoDate(todayIn(defaults.timeZone), -1);
  // A date after tomorrow in the ledger (typed wrong before dates.earliest existed) is no reason to draw up to it.
  const tomorrow = shiftIsoDate(yesterday, 2);
  let to = query.to ?? (span && span.to > yesterday ? (span.to < tomorrow ? span.to : tomorrow) : yesterday);
  if (query.from && query.from > to) to = query.from;
  const from = query.from ?? shiftIsoDate(to, -Math.max(DEFAULT_RANGE_DAYS - 1, defaults.lookbackDays));
  return { from, to };
}
