import { sql, type ExpressionBuilder, type Kysely, type SelectQueryBuilder } from 'kysely';
import { EXAMPLES_PER_GROUP, NO_FAILURES, summariseFailures, type FailureGroup, type FailureSummary } from '../../outcomes/failure-groups.js';
import { SLICE_CHECK_NAMES } from '../../quality/slice-check-result.js';
import { NO_WARNINGS, summariseWarnings, WARNING_EXAMPLES_PER_GROUP, type WarningGroup, type WarningSummary } from '../../outcomes/warning-groups.js';
import type { ReportType } from '../../reports/report-types.js';
import { pairKey, type Slice } from '../../slice/slice.js';
import { rangeOfPairs, type SliceRange } from '../../slice/slice-range.js';
import { ShortPairs, type LedgerPair } from './short-pairs.js';
import { ledgerError } from '../schema/ledger-error.js';
import { LedgerWriter } from './ledger-writer.js';
import { countMonthsFromTotals, totalsDifferences, type MonthlyTotalDifference, type MonthTotals } from './monthly-totals.js';
import { splitWholeMonths, type DateSpan, type SplitRange } from './split-whole-months.js';
import { countIsoDates, monthEnd, shiftIsoDate } from '../../dates/report-date.js';
import { classifyWarehouseError } from '../engine/classify-warehouse-error.js';
import type { LedgerPeriod } from '../engine/ledger-period.js';
import type { WarehouseEngine, WarehouseHandle } from '../engine/warehouse-engine.js';
import type { ReportLoadsRow, SliceChecksRow, SliceStatus, Warehouse } from '../engine/warehouse-schema.js';

/** Which ledger rows a question is about. Dates are inclusive. */
export interface LedgerFilter {
  readonly from: string;
  readonly to: string;
  readonly portfolios?: readonly number[];
  readonly reportTypes?: readonly ReportType[];
  /** Only rows with one of these error codes (so only failed ones). */
  readonly errorCodes?: readonly string[];
}

export interface LedgerCount {
  readonly portfolioId: number;
  readonly reportType: string;
  readonly status: SliceStatus;
  readonly slices: number;
}

export type LedgerEntry = Pick<ReportLoadsRow, 'portfolio_id' | 'report_type' | 'report_date' | 'status' | 'error' | 'attempts' | 'updated_at' | 'checked_at'>;

/** The slice a ledger row is about. */
export function sliceOfEntry(entry: Pick<LedgerEntry, 'portfolio_id' | 'report_type' | 'report_date'>): Slice {
  return { portfolioId: entry.portfolio_id, reportType: entry.report_type as ReportType, reportDate: entry.report_date };
}

/** Slices per portfolio, report type and period, by outcome (see {@link Ledger.countByPeriod}). */
export interface LedgerPeriodCount {
  readonly portfolioId: number;
  readonly reportType: string;
  /** The first day of the period (YYYY-MM-DD): the day itself, the Monday of its week, or the 1st of its month. */
  readonly periodStart: string;
  readonly loaded: number;
  readonly noData: number;
  readonly failed: number;
}

/** Slices of one month and status over every pair of a filter (see {@link Ledger.countByMonth}). */
export interface LedgerMonthCount {
  /** The month's first day (YYYY-MM-DD). */
  readonly month: string;
  readonly status: SliceStatus;
  readonly slices: number;
}

// Bucketing by period is the engine's (`WarehouseEngine.periodStart`), so the word is defined below both.

/** Slices checked since a moment, by outcome: a wait's progress. */
export interface FinishedSince {
  readonly loaded: number;
  readonly noData: number;
  readonly failed: number;
  /** All three. */
  readonly finished: number;
}

/** What the slices checked since a moment came to, per status and report type. */
export interface OutcomesSince {
  readonly status: SliceStatus;
  readonly reportType: string;
  readonly slices: number;
  /** Of `slices`: the outcome and the rows did not change (the same file, or no data again). */
  readonly unchanged: number;
  /** Rows of the slices whose rows were (re)written. */
  readonly rowsWritten: number;
  /** Attempts after the first it took these slices to reach their outcome. */
  readonly retries: number;
  /** Of the slices whose rows were (re)written: those whose file missed a data-quality check set to `warn`. */
  readonly warned: number;
}

/** One data-quality check of a slice's latest checked file, as `slice_checks` records it. */
export interface SliceCheckEntry {
  readonly portfolioId: number;
  readonly reportType: string;
  readonly reportDate: string;
  readonly check: string;
  readonly severity: string;
  readonly outcome: string;
  readonly measured: number;
  readonly threshold: number;
  readonly message: string;
  readonly checkedAt: string;
}

/** Loaded slices whose latest file missed a data-quality check set to `warn`, per pair (and period, when asked; see {@link Ledger.countWarned}). */
export interface LedgerWarnedCount {
  readonly portfolioId: number;
  readonly reportType: string;
  /** The first day of the period, when counted by period. */
  readonly periodStart?: string;
  readonly slices: number;
}

/** A month, pair and status whose monthly count is not what counting the ledger gives (see {@link Ledger.monthlyCountDifferences}). */
export interface MonthlyCountDifference {
  /** The month's first day. */
  readonly month: string;
  readonly portfolioId: number;
  readonly reportType: string;
  readonly status: string;
  /** What `report_loads_monthly` says. */
  readonly counted: number;
  /** What the ledger holds. */
  readonly ledger: number;
}

/** The first days of the first and last months of a question's whole months; a bound left out is open (see `Ledger.#withinHeldMonths`). */
interface MonthBounds {
  readonly from?: string;
  readonly to?: string;
}

/** Failure groups whose example slices are read; the rest are counted only. */
const GROUPS_WITH_EXAMPLES = 60;

/** Most slices one query of {@link Ledger.shortPairs} reads the days of (unless a single portfolio has more). */
const SLICES_READ_AT_ONCE = 5_000;

/**
 * The ledger (`report_loads`): the questions asked of it (what we have, what is missing, what
 * failed), and, through its {@link Ledger.writer}, every write to it. Nothing else reads or writes
 * the table.
 */
export class Ledger {
  readonly #db: Kysely<Warehouse>;
  /** Handed in rather than looked up, so the ledger needs no registry of engines. */
  readonly #engine: WarehouseEngine;
  /** Whether the dialect keeps the monthly counts keyed pair first too (MySQL, migration 0008). */
  readonly #countsKeyedByPair: boolean;
  /** Whether the dialect keeps the monthly counts summed over every portfolio too (MySQL, migration 0009). */
  readonly #keepsMonthlyTotals: boolean;
  #writer: LedgerWriter | undefined;

  /** The ledger of `warehouse`: its `db`, and its `engine` for the SQL that differs by dialect (periods). */
  constructor(warehouse: Pick<WarehouseHandle, 'db' | 'engine'>) {
    this.#db = warehouse.db;
    this.#engine = warehouse.engine;
    this.#countsKeyedByPair = warehouse.engine.migrations.monthlyCountsByPair !== undefined;
    this.#keepsMonthlyTotals = warehouse.engine.migrations.monthlyTotals !== undefined;
  }

  /**
   * The statements that read and write one slice's ledger row inside the slice's locked
   * transaction (the slice loader's); compiled on first use, so read-only commands never build them.
   */
  get writer(): LedgerWriter {
    this.#writer ??= new LedgerWriter(this.#db);
    return this.#writer;
  }

  /**
   * Slices per portfolio, report type and status, counted in SQL: the whole months of the range
   * from `report_loads_monthly`, only the days at its edges from the ledger, so ten years cost
   * about what two months do. A question about error codes reads the ledger.
   */
  async countByStatus(filter: LedgerFilter): Promise<LedgerCount[]> {
    try {
      if (filter.errorCodes?.length) return mergeStatusCounts(await this.#countByStatusInLedger(filter));
      const { months, edges } = await this.#splitWholeMonths(filter);
      // Concatenated, never pushed spread: a ten-year answer has more rows than a call has arguments.
      let counts: LedgerCount[] = [];
      for (const edge of edges) counts = counts.concat(await this.#countByStatusInLedger({ ...filter, ...edge }, { byDate: true }));
      if (months) {
        const rows = await this.#monthly(await this.#withoutHeldPortfolios(filter), await this.#withinHeldMonths(months))
          .select(({ fn }) => ['portfolio_id', 'report_type', 'status', fn.sum<number | string>('slices').as('slices')])
          .groupBy(['portfolio_id', 'report_type', 'status'])
          .execute();
        counts = counts.concat(rows.map((row) => ({ portfolioId: Number(row.portfolio_id), reportType: row.report_type, status: row.status, slices: Number(row.slices) })));
      }
      return mergeStatusCounts(counts);
    } catch (error) {
      throw classifyWarehouseError(error, 'counting the ledger');
    }
  }

  async #countByStatusInLedger(filter: LedgerFilter, options: { byDate?: boolean } = {}): Promise<LedgerCount[]> {
    const rows = await this.#where(this.#db.selectFrom('report_loads'), filter, options)
      .select(({ fn }) => ['portfolio_id', 'report_type', 'status', fn.countAll<number | string>().as('slices')])
      .groupBy(['portfolio_id', 'report_type', 'status'])
      .execute();
    return rows.map((row) => ({ portfolioId: Number(row.portfolio_id), reportType: row.report_type, status: row.status, slices: Number(row.slices) }));
  }

  /**
   * Slices per month (its first day) and status over every pair of the filter: whole months from
   * `report_loads_monthly`, grouped in the order of its key, and the range's edges from the
   * ledger. What `check` needs to know which months hold gaps, in a row per month and status
   * rather than one per pair and month. Asked of most of the portfolios held, MySQL's whole months
   * come from its totals per month and report type (`countMonthsFromTotals`).
   */
  async countByMonth(filter: Omit<LedgerFilter, 'errorCodes'>): Promise<LedgerMonthCount[]> {
    try {
      const { months, edges } = await this.#splitWholeMonths(filter);
      let counts: LedgerMonthCount[] = [];
      const month = this.#engine.periodStart('month');
      for (const edge of edges) {
        const rows = await this.#where(this.#db.selectFrom('report_loads'), { ...filter, ...edge }, { byDate: true })
          .select(({ fn }) => [month.as('month'), 'status', fn.countAll<number | string>().as('slices')])
          .groupBy(['month', 'status'])
          .execute();
        counts = counts.concat(rows.map((row) => ({ month: String(row.month), status: row.status, slices: Number(row.slices) })));
      }
      if (months) {
        for (const row of await this.#countWholeMonths(filter, months)) {
          counts.push(
            { month: row.month, status: 'loaded', slices: row.loaded },
            { month: row.month, status: 'no_data', slices: row.noData },
            { month: row.month, status: 'failed', slices: row.failed },
          );
        }
      }
      return counts.filter((count) => count.slices > 0).sort((a, b) => byText(a.month, b.month) || byText(a.status, b.status));
    } catch (error) {
      throw classifyWarehouseError(error, 'counting the ledger by month');
    }
  }

  /**
   * The whole months' counts per month of {@link countByMonth}. MySQL's come from its totals
   * whenever the question asks at least half the portfolios held, less the counts of those it
   * does not ask (read by the pair-first key); fewer asked, their own rows are fewer to read.
   */
  async #countWholeMonths(filter: LedgerFilter, months: DateSpan): Promise<MonthTotals[]> {
    // Only where the counts are keyed pair first is listing the portfolios held a short walk.
    const held = this.#countsKeyedByPair && filter.portfolios?.length ? await this.#heldPortfolios() : [];
    const asked = new Set(filter.portfolios);
    const without = held.filter((portfolioId) => !asked.has(portfolioId));
    if (this.#keepsMonthlyTotals && without.length <= held.length - without.length) {
      const totals = await countMonthsFromTotals(this.#db, { months, reportTypes: filter.reportTypes, without });
      if (totals) return totals;
    }
    // Grouped by month alone, the statuses summed side by side: in the order of the month-first
    // key, where grouping by month and status took MySQL a temporary table of every row. Every
    // portfolio held asked: the list is left out (see `#withoutHeldPortfolios`).
    const scoped = held.length > 0 && without.length === 0 ? { ...filter, portfolios: undefined } : filter;
    const rows = await this.#monthly(scoped, months, { byMonth: true })
      .select((eb) => ['month', monthlySlicesOf(eb, 'loaded').as('loaded'), monthlySlicesOf(eb, 'no_data').as('no_data'), monthlySlicesOf(eb, 'failed').as('failed')])
      .groupBy('month')
      .execute();
    return rows.map((row) => ({ month: String(row.month), loaded: Number(row.loaded), noData: Number(row.no_data), failed: Number(row.failed) }));
  }

  /**
   * Slices per pair and day, ISO week (from Monday) or month, by outcome: what a coverage grid
   * draws. Bucketed, counted and pivoted in SQL, so a ten-year range of hundreds of pairs returns
   * one small row per pair and period and never reads the ledger into memory; by month, the whole
   * months come from `report_loads_monthly` and only the range's edges from the ledger.
   */
  async countByPeriod(filter: LedgerFilter, period: LedgerPeriod): Promise<LedgerPeriodCount[]> {
    try {
      if (period !== 'month' || filter.errorCodes?.length) return await this.#countByPeriodInLedger(filter, period);
      const { months, edges } = await this.#splitWholeMonths(filter);
      let counts: LedgerPeriodCount[] = [];
      for (const edge of edges) counts = counts.concat(await this.#countByPeriodInLedger({ ...filter, ...edge }, period, { byDate: true }));
      if (months) {
        const rows = await this.#monthly(filter, await this.#withinHeldMonths(months))
          .select((eb) => [
            'portfolio_id',
            'report_type',
            'month',
            monthlySlicesOf(eb, 'loaded').as('loaded'),
            monthlySlicesOf(eb, 'no_data').as('no_data'),
            monthlySlicesOf(eb, 'failed').as('failed'),
          ])
          .groupBy(['portfolio_id', 'report_type', 'month'])
          .having(({ fn }) => fn.sum('slices'), '>', 0)
          .execute();
        counts = counts.concat(
          rows.map((row) => ({
            portfolioId: Number(row.portfolio_id),
            reportType: row.report_type,
            periodStart: String(row.month),
            loaded: Number(row.loaded),
            noData: Number(row.no_data),
            failed: Number(row.failed),
          })),
        );
      }
      return counts.sort((a, b) => a.portfolioId - b.portfolioId || byText(a.reportType, b.reportType) || byText(a.periodStart, b.periodStart));
    } catch (error) {
      throw classifyWarehouseError(error, 'counting the ledger by period');
    }
  }

  async #countByPeriodInLedger(filter: LedgerFilter, period: LedgerPeriod, options: { byDate?: boolean } = {}): Promise<LedgerPeriodCount[]> {
    const periodStart = this.#engine.periodStart(period);
    const rows = await this.#where(this.#db.selectFrom('report_loads'), filter, options)
      .select(({ fn, eb }) => {
        const count = (status: SliceStatus) => fn.sum<number | string>(eb.case().when('status', '=', status).then(1).else(0).end());
        return ['portfolio_id', 'report_type', periodStart.as('period_start'), count('loaded').as('loaded'), count('no_data').as('no_data'), count('failed').as('failed')];
      })
      .groupBy(['portfolio_id', 'report_type', 'period_start'])
      .orderBy('portfolio_id')
      .orderBy('report_type')
      .orderBy('period_start')
      .execute();
    return rows.map((row) => ({
      portfolioId: Number(row.portfolio_id),
      reportType: row.report_type,
      periodStart: String(row.period_start),
      loaded: Number(row.loaded),
      noData: Number(row.no_data),
      failed: Number(row.failed),
    }));
  }

  /**
   * Compares the monthly counts of the filter's whole months with what counting the ledger's rows
   * gives (`check --deep`): a difference means `report_loads_monthly` was changed by hand or its
   * triggers were dropped, and the counts `status`, `check` and the dashboard show are wrong.
   * Reads every ledger row of those months.
   */
  async monthlyCountDifferences(filter: LedgerFilter): Promise<MonthlyCountDifference[]> {
    try {
      const { months } = splitWholeMonths(filter);
      if (!months) return [];
      const key = (month: string, portfolioId: number, reportType: string, status: string) => `${month}\u0000${portfolioId}\u0000${reportType}\u0000${status}`;
      const found = new Map<string, MonthlyCountDifference>();
      const month = this.#engine.periodStart('month');
      const ledgerRows = await this.#where(this.#db.selectFrom('report_loads'), { ...filter, from: months.from, to: monthEnd(months.to), errorCodes: undefined })
        .select(({ fn }) => [month.as('month'), 'portfolio_id', 'report_type', 'status', fn.countAll<number | string>().as('slices')])
        .groupBy(['month', 'portfolio_id', 'report_type', 'status'])
        .execute();
      for (const row of ledgerRows) {
        const portfolioId = Number(row.portfolio_id);
        found.set(key(String(row.month), portfolioId, row.report_type, row.status), {
          month: String(row.month),
          portfolioId,
          reportType: row.report_type,
          status: row.status,
          counted: 0,
          ledger: Number(row.slices),
        });
      }
      const counted = await this.#monthly(filter, months)
        .select(({ fn }) => ['month', 'portfolio_id', 'report_type', 'status', fn.sum<number | string>('slices').as('slices')])
        .groupBy(['month', 'portfolio_id', 'report_type', 'status'])
        .execute();
      for (const row of counted) {
        const portfolioId = Number(row.portfolio_id);
        const at = key(String(row.month), portfolioId, row.report_type, row.status);
        const before = found.get(at) ?? { month: String(row.month), portfolioId, reportType: row.report_type, status: row.status, counted: 0, ledger: 0 };
        found.set(at, { ...before, counted: Number(row.slices) });
      }
      return [...found.values()]
        .filter((difference) => difference.counted !== difference.ledger)
        .sort((a, b) => byText(a.month, b.month) || a.portfolioId - b.portfolioId || byText(a.reportType, b.reportType) || byText(a.status, b.status));
    } catch (error) {
      throw classifyWarehouseError(error, 'comparing the monthly counts with the ledger');
    }
  }

  /**
   * Compares MySQL's monthly totals (migration 0009) of the filter's whole months and report types
   * with what its monthly counts' folded rows sum to over every portfolio (`check --deep`); none
   * elsewhere, where no totals are kept.
   */
  async monthlyTotalDifferences(filter: LedgerFilter): Promise<MonthlyTotalDifference[]> {
    const { months } = splitWholeMonths(filter);
    if (!this.#keepsMonthlyTotals || !months) return [];
    try {
      return await totalsDifferences(this.#db, { months, reportTypes: filter.reportTypes });
    } catch (error) {
      throw classifyWarehouseError(error, 'comparing the monthly totals with the monthly counts');
    }
  }

  /**
   * The portfolio and report type pairs the ledger holds inside the filter, at most `limit` of
   * them: how many rows a coverage grid would have, asked before its cells are counted. Whole
   * months are asked of `report_loads_monthly`, the range's edges of the ledger.
   */
  async pairs(filter: LedgerFilter, limit: number): Promise<{ portfolioId: number; reportType: string }[]> {
    try {
      const split = filter.errorCodes?.length ? { edges: [filter] } : await this.#splitWholeMonths(filter);
      const found = new Map<string, { portfolioId: number; reportType: string }>();
      const add = (rows: readonly { portfolio_id: number; report_type: string }[]) => {
        for (const row of rows)
          if (found.size < limit) found.set(pairKey(row.portfolio_id, row.report_type), { portfolioId: Number(row.portfolio_id), reportType: row.report_type });
      };
      if (split.months) {
        add(
          await this.#monthly(filter, await this.#withinHeldMonths(split.months))
            .select(['portfolio_id', 'report_type'])
            .groupBy(['portfolio_id', 'report_type'])
            .having(({ fn }) => fn.sum('slices'), '>', 0)
            .limit(limit)
            .execute(),
        );
      }
      for (const edge of split.edges) {
        if (found.size >= limit) break;
        add(
          await this.#where(this.#db.selectFrom('report_loads'), { ...filter, ...edge }, { byDate: !filter.errorCodes?.length })
            .select(['portfolio_id', 'report_type'])
            .distinct()
            .limit(limit)
            .execute(),
        );
      }
      return [...found.values()];
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the ledger');
    }
  }

  /** The ledger rows in the filter, oldest first, at most `limit` (all when omitted). */
  async entries(filter: LedgerFilter, options: { status?: SliceStatus | readonly SliceStatus[]; checkedSince?: string; limit?: number } = {}): Promise<LedgerEntry[]> {
    try {
      // The failed slices are found through their own index, whatever portfolios are asked.
      let query = this.#where(this.#db.selectFrom('report_loads'), filter, { byDate: options.status === 'failed' })
        .select(['portfolio_id', 'report_type', 'report_date', 'status', 'error', 'attempts', 'updated_at', 'checked_at'])
        .orderBy('report_date')
        .orderBy('portfolio_id')
        .orderBy('report_type');
      if (typeof options.status === 'string') query = query.where('status', '=', options.status);
      else if (options.status) query = query.where('status', 'in', [...options.status]);
      if (options.checkedSince) query = query.where('checked_at', '>=', options.checkedSince);
      if (options.limit !== undefined) query = query.limit(options.limit);
      const rows = await query.execute();
      return rows.map((row) => ({ ...row, portfolio_id: Number(row.portfolio_id), report_date: String(row.report_date) }));
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the ledger');
    }
  }

  /**
   * The pairs of `range` with fewer slices of these statuses than it has days, and the days of
   * those statuses they have: what planning the slices the ledger lacks needs of it. The pairs are
   * counted first (see {@link countByStatus}: whole months from `report_loads_monthly`); a pair
   * with a slice for every day is left out and one with none needs no row read, so only the pairs
   * with some but not all have their days read, a few pairs a query. A range of a month or less
   * keeps that to a month of slices however long the ledger.
   */
  async shortPairs(range: SliceRange, options: { status: readonly SliceStatus[] }): Promise<ShortPairs> {
    const counted = new Map<string, number>();
    for (const count of await this.countByStatus(range)) {
      if (!options.status.includes(count.status)) continue;
      const key = pairKey(count.portfolioId, count.reportType);
      counted.set(key, (counted.get(key) ?? 0) + count.slices);
    }
    const days = countIsoDates(range.from, range.to);
    const pairs: LedgerPair[] = [];
    // The pairs with some days but not all, by portfolio.
    const partial = new Map<number, LedgerPair[]>();
    for (const portfolioId of range.portfolios) {
      for (const reportType of range.reportTypes) {
        const slices = counted.get(pairKey(portfolioId, reportType)) ?? 0;
        if (slices >= days) continue;
        pairs.push({ portfolioId, reportType });
        if (slices === 0) continue;
        const ofPortfolio = partial.get(portfolioId);
        if (ofPortfolio) ofPortfolio.push({ portfolioId, reportType });
        else partial.set(portfolioId, [{ portfolioId, reportType }]);
      }
    }
    const short = new ShortPairs(range, pairs);
    // A few portfolios a query (one at least), so each query's rows are dropped young.
    const portfolios = [...partial.keys()];
    const perQuery = Math.max(1, Math.floor(SLICES_READ_AT_ONCE / (days * range.reportTypes.length)));
    try {
      for (let i = 0; i < portfolios.length; i += perQuery) {
        const batch = portfolios.slice(i, i + perQuery).flatMap((portfolioId) => partial.get(portfolioId)!);
        const rows = await this.#where(this.#db.selectFrom('report_loads'), rangeOfPairs(range, batch))
          .select(['portfolio_id', 'report_type', 'report_date'])
          .where('status', 'in', [...options.status])
          .execute();
        // Portfolios × report types may take in pairs that are not short: the short pairs keep only their own.
        for (const row of rows) short.hold(Number(row.portfolio_id), row.report_type, String(row.report_date));
      }
      return short;
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the ledger');
    }
  }

  /** The whole ledger row of one slice, or undefined when the slice was never attempted. */
  async row(slice: Slice): Promise<ReportLoadsRow | undefined> {
    try {
      const row = await this.#db
        .selectFrom('report_loads')
        .selectAll()
        .where('portfolio_id', '=', slice.portfolioId)
        .where('report_type', '=', slice.reportType)
        .where('report_date', '=', slice.reportDate)
        .executeTakeFirst();
      return (
        row && {
          ...row,
          portfolio_id: Number(row.portfolio_id),
          report_date: String(row.report_date),
          row_count: Number(row.row_count),
          bytes: row.bytes === null ? null : Number(row.bytes),
        }
      );
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the ledger');
    }
  }

  /**
   * The mean time of the latest attempt of the most recently checked slices that reached
   * `loaded` or `no_data` (at most `sample` of them), from `duration_ms`; undefined when no such row
   * records one (all written before it was kept). What a dry run estimates a request from.
   */
  async meanAttemptSeconds(sample = 1000): Promise<{ seconds: number; slices: number } | undefined> {
    try {
      const recent = this.#db
        .selectFrom('report_loads')
        .select('duration_ms')
        .where('duration_ms', 'is not', null)
        .where('status', 'in', ['loaded', 'no_data'])
        .orderBy('checked_at', 'desc')
        .limit(sample)
        .as('recent');
      const mean = await this.#db
        .selectFrom(recent)
        .select(({ fn }) => [fn.avg<number | string>('duration_ms').as('mean_ms'), fn.countAll<number | string>().as('slices')])
        .executeTakeFirst();
      const slices = Number(mean?.slices ?? 0);
      return slices === 0 ? undefined : { seconds: Math.round(Number(mean!.mean_ms)) / 1000, slices };
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the ledger');
    }
  }

  /**
   * The first and last report dates the ledger holds for these portfolios and report types (all
   * when omitted), or undefined when it holds none: the first and last months with slices from
   * `report_loads_monthly`, then the first and last days of those months from the ledger. Asked of
   * the ledger alone, the portfolios asked would send a planner through ten years of each of them.
   */
  async dateSpan(filter: Pick<LedgerFilter, 'portfolios' | 'reportTypes'> = {}): Promise<{ from: string; to: string } | undefined> {
    try {
      const end = async (bound: 'min' | 'max'): Promise<string | undefined> => {
        let months = this.#db
          .selectFrom('report_loads_monthly')
          .select('month')
          .groupBy('month')
          .having(({ fn }) => fn.sum('slices'), '>', 0)
          .orderBy('month', bound === 'min' ? 'asc' : 'desc')
          .limit(1);
        if (filter.portfolios?.length) months = months.where('portfolio_id', 'in', [...filter.portfolios]);
        if (filter.reportTypes?.length) months = months.where('report_type', 'in', [...filter.reportTypes]);
        const month = await months.executeTakeFirst();
        if (month === undefined) return undefined;
        const first = String(month.month);
        const day = await this.#where(this.#db.selectFrom('report_loads'), { ...filter, from: first, to: monthEnd(first) }, { byDate: true })
          .select(({ fn }) => fn[bound]<string>('report_date').as('date'))
          .executeTakeFirst();
        return day?.date == null ? undefined : String(day.date);
      };
      const from = await end('min');
      const to = from === undefined ? undefined : await end('max');
      return from === undefined || to === undefined ? undefined : { from, to };
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the ledger');
    }
  }

  /**
   * Outcomes recorded since `since` (ISO time) inside the filter, per status and report type: how
   * a queued backfill is doing, whichever workers ran it. A slice counts as unchanged when it was
   * checked but its outcome and rows were last changed before `since`.
   */
  async outcomesSince(filter: LedgerFilter, since: string): Promise<OutcomesSince[]> {
    try {
      const rows = await this.#where(this.#db.selectFrom('report_loads'), filter)
        .where('checked_at', '>=', since)
        .select(({ fn, eb }) => [
          'status',
          'report_type',
          fn.countAll<number | string>().as('slices'),
          fn.sum<number | string>(eb.case().when('updated_at', '<', since).then(1).else(0).end()).as('unchanged'),
          fn.sum<number | string>(eb.case().when('updated_at', '>=', since).then(eb.ref('row_count')).else(0).end()).as('rows_written'),
          fn.sum<number | string>(eb('attempts', '-', 1)).as('retries'),
          fn
            .sum<number | string>(
              eb
                .case()
                .when(
                  eb.and([
                    eb('status', '=', 'loaded'),
                    eb('updated_at', '>=', since),
                    eb.exists(
                      eb
                        .selectFrom('slice_checks')
                        .select('slice_checks.check_name')
                        .whereRef('slice_checks.portfolio_id', '=', 'report_loads.portfolio_id')
                        .whereRef('slice_checks.report_type', '=', 'report_loads.report_type')
                        .whereRef('slice_checks.report_date', '=', 'report_loads.report_date')
                        .where('slice_checks.outcome', '=', 'warn'),
                    ),
                  ]),
                )
                .then(1)
                .else(0)
                .end(),
            )
            .as('warned'),
        ])
        .groupBy(['status', 'report_type'])
        .execute();
      return rows.map((row) => ({
        status: row.status,
        reportType: row.report_type,
        slices: Number(row.slices),
        unchanged: Number(row.unchanged ?? 0),
        rowsWritten: Number(row.rows_written ?? 0),
        retries: Number(row.retries ?? 0),
        warned: Number(row.warned ?? 0),
      }));
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the ledger');
    }
  }

  /**
   * Slices inside the filter with an outcome checked since `since` (ISO time), by status: what a
   * progress line shows. Far cheaper than {@link outcomesSince} over millions of slices, which a
   * wait reads once, for its summary.
   */
  async finishedSince(filter: LedgerFilter, since: string): Promise<FinishedSince> {
    try {
      const rows = await this.#where(this.#db.selectFrom('report_loads'), filter)
        .where('checked_at', '>=', since)
        .select(({ fn }) => ['status', fn.countAll<number | string>().as('slices')])
        .groupBy('status')
        .execute();
      const count = (status: string) => Number(rows.find((row) => row.status === status)?.slices ?? 0);
      const [loaded, noData, failed] = [count('loaded'), count('no_data'), count('failed')];
      return { loaded, noData, failed, finished: loaded + noData + failed };
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the ledger');
    }
  }

  /**
   * The failed slices inside the filter (checked since `checkedSince`, if given), grouped by error
   * code and portfolio in SQL, with true counts and the first few slices of each group: a million
   * failures cost a few small queries, not a million rows in memory.
   */
  async failureSummary(filter: LedgerFilter, options: { checkedSince?: string } = {}): Promise<FailureSummary> {
    try {
      const failed = () => {
        let query = this.#where(this.#db.selectFrom('report_loads'), filter, { byDate: true }).where('status', '=', 'failed');
        if (options.checkedSince) query = query.where('checked_at', '>=', options.checkedSince);
        return query;
      };
      const counted = await failed()
        .select(({ fn }) => ['error_code', 'portfolio_id', fn.countAll<number | string>().as('slices')])
        .groupBy(['error_code', 'portfolio_id'])
        .execute();
      if (counted.length === 0) return NO_FAILURES;
      const groups: FailureGroup[] = [];
      for (const [i, group] of summariseFailures(
        counted.map((row) => ({ code: row.error_code ?? 'UNEXPECTED', portfolioId: Number(row.portfolio_id), slices: Number(row.slices), examples: [] })),
        undefined,
      ).groups.entries()) {
        if (i >= GROUPS_WITH_EXAMPLES) {
          groups.push(group);
          continue;
        }
        // The group's first failures by date, through the failed slices' index (see #where's byDate).
        const examples = await failed()
          .where(sql<number>`portfolio_id + 0`, '=', group.portfolioId)
          .where((eb) => (group.code === 'UNEXPECTED' ? eb.or([eb('error_code', '=', group.code), eb('error_code', 'is', null)]) : eb('error_code', '=', group.code)))
          .select(['report_type', 'report_date', 'error'])
          .orderBy('report_date')
          .orderBy('report_type')
          .limit(EXAMPLES_PER_GROUP)
          .execute();
        groups.push({
          ...group,
          examples: examples.map((row) => ({
            slice: { portfolioId: group.portfolioId, reportType: row.report_type as ReportType, reportDate: String(row.report_date) },
            message: ledgerError(row.error).message,
          })),
        });
      }
      const span = await failed()
        .select(({ fn }) => [fn.min('report_date').as('from'), fn.max('report_date').as('to')])
        .executeTakeFirstOrThrow();
      const portfolios = await failed().select('portfolio_id').distinct().orderBy('portfolio_id').execute();
      const reportTypes = await failed().select('report_type').distinct().orderBy('report_type').execute();
      return summariseFailures(groups, {
        from: String(span.from),
        to: String(span.to),
        portfolios: portfolios.map((row) => Number(row.portfolio_id)),
        reportTypes: reportTypes.map((row) => row.report_type as ReportType),
      });
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the ledger');
    }
  }

  /**
   * The slices inside the filter that are `loaded` and whose file missed a data-quality check set
   * to `warn` (loaded with warnings), per portfolio and report type, and per period when `period`
   * is given; counted in SQL.
   */
  async countWarned(filter: LedgerFilter, period?: LedgerPeriod): Promise<LedgerWarnedCount[]> {
    try {
      const periodStart = period === undefined ? undefined : this.#engine.periodStart(period);
      // Driven by the warnings (few) through slice_checks' date index, not by every ledger row of the range.
      let warnings = this.#db
        .selectFrom('slice_checks')
        .select(['portfolio_id', 'report_type', 'report_date'])
        .distinct()
        .where('report_date', '>=', filter.from)
        .where('report_date', '<=', filter.to)
        .where('outcome', '=', 'warn');
      if (filter.portfolios?.length) warnings = warnings.where('portfolio_id', 'in', [...filter.portfolios]);
      if (filter.reportTypes?.length) warnings = warnings.where('report_type', 'in', [...filter.reportTypes]);
      const base = this.#db
        .selectFrom(warnings.as('warned'))
        .where(({ exists, selectFrom }) =>
          exists(
            selectFrom('report_loads')
              .select('report_loads.status')
              .whereRef('report_loads.portfolio_id', '=', 'warned.portfolio_id')
              .whereRef('report_loads.report_type', '=', 'warned.report_type')
              .whereRef('report_loads.report_date', '=', 'warned.report_date')
              .where('report_loads.status', '=', 'loaded'),
          ),
        );
      const rows = await (
        periodStart === undefined
          ? base
              .select(({ fn }) => ['portfolio_id', 'report_type', sql<string | null>`null`.as('period_start'), fn.countAll<number | string>().as('slices')])
              .groupBy(['portfolio_id', 'report_type'])
          : base
              .select(({ fn }) => ['portfolio_id', 'report_type', periodStart.as('period_start'), fn.countAll<number | string>().as('slices')])
              .groupBy(['portfolio_id', 'report_type', 'period_start'])
      )
        .orderBy('portfolio_id')
        .orderBy('report_type')
        .execute();
      return rows.map((row) => ({
        portfolioId: Number(row.portfolio_id),
        reportType: row.report_type,
        ...(row.period_start == null ? {} : { periodStart: String(row.period_start) }),
        slices: Number(row.slices),
      }));
    } catch (error) {
      throw classifyWarehouseError(error, 'counting the slices loaded with warnings');
    }
  }

  /**
   * The warnings of the slices inside the filter that are `loaded` with warnings (loaded anew since
   * `loadedSince`, if given: what a backfill or a night loaded), grouped by check and portfolio in
   * SQL with true counts, the values measured and the first few slices of each group.
   */
  async warningSummary(filter: LedgerFilter, options: { loadedSince?: string } = {}): Promise<WarningSummary> {
    try {
      const warned = () => {
        let query = this.#db
          .selectFrom('slice_checks as c')
          .innerJoin('report_loads as l', (join) =>
            join.onRef('l.portfolio_id', '=', 'c.portfolio_id').onRef('l.report_type', '=', 'c.report_type').onRef('l.report_date', '=', 'c.report_date'),
          )
          .where('c.outcome', '=', 'warn')
          .where('l.status', '=', 'loaded')
          .where('c.report_date', '>=', filter.from)
          .where('c.report_date', '<=', filter.to);
        if (filter.portfolios?.length) query = query.where('c.portfolio_id', 'in', [...filter.portfolios]);
        if (filter.reportTypes?.length) query = query.where('c.report_type', 'in', [...filter.reportTypes]);
        if (options.loadedSince) query = query.where('l.updated_at', '>=', options.loadedSince);
        return query;
      };
      const counted = await warned()
        .select(({ fn }) => [
          'c.check_name',
          'c.portfolio_id',
          fn.countAll<number | string>().as('slices'),
          fn.min<number | string>('c.measured').as('min_measured'),
          fn.max<number | string>('c.measured').as('max_measured'),
          fn.max<number | string>('c.threshold').as('threshold'),
        ])
        .groupBy(['c.check_name', 'c.portfolio_id'])
        .execute();
      if (counted.length === 0) return NO_WARNINGS;
      const ordered = summariseWarnings(
        counted.map((row) => ({
          check: row.check_name,
          portfolioId: Number(row.portfolio_id),
          slices: Number(row.slices),
          measured: { min: Number(row.min_measured), max: Number(row.max_measured) },
          threshold: Number(row.threshold),
          examples: [],
        })),
        0,
      ).groups;
      const groups: WarningGroup[] = [];
      for (const [i, group] of ordered.entries()) {
        if (i >= GROUPS_WITH_EXAMPLES) {
          groups.push(group);
          continue;
        }
        const examples = await warned()
          .where('c.check_name', '=', group.check)
          .where('c.portfolio_id', '=', group.portfolioId)
          .select(['c.report_type', 'c.report_date', 'c.measured', 'c.message'])
          .orderBy('c.report_date')
          .orderBy('c.report_type')
          .limit(WARNING_EXAMPLES_PER_GROUP)
          .execute();
        groups.push({
          ...group,
          examples: examples.map((row) => ({
            slice: { portfolioId: group.portfolioId, reportType: row.report_type as ReportType, reportDate: String(row.report_date) },
            measured: Number(row.measured),
            message: row.message,
          })),
        });
      }
      // A slice two checks warned of is in two groups: the slices are counted once each.
      const slices = await this.#db
        .selectFrom(warned().select(['c.portfolio_id', 'c.report_type', 'c.report_date']).distinct().as('warned_slices'))
        .select(({ fn }) => fn.countAll<number | string>().as('slices'))
        .executeTakeFirst();
      return { slices: Number(slices?.slices ?? 0), groups };
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the data-quality warnings');
    }
  }

  /**
   * The data-quality checks inside the filter that the slices' latest checked files missed
   * (`warn` or `fail`), oldest first, at most `limit`, and how many there are in all.
   */
  async checkMisses(filter: LedgerFilter, limit: number): Promise<{ total: number; misses: SliceCheckEntry[] }> {
    try {
      const missed = () => {
        let query = this.#db.selectFrom('slice_checks').where('report_date', '>=', filter.from).where('report_date', '<=', filter.to).where('outcome', 'in', ['warn', 'fail']);
        if (filter.portfolios?.length) query = query.where('portfolio_id', 'in', [...filter.portfolios]);
        if (filter.reportTypes?.length) query = query.where('report_type', 'in', [...filter.reportTypes]);
        return query;
      };
      const counted = await missed()
        .select(({ fn }) => fn.countAll<number | string>().as('misses'))
        .executeTakeFirst();
      const rows = await missed().selectAll().orderBy('report_date').orderBy('portfolio_id').orderBy('report_type').orderBy('check_name').limit(limit).execute();
      return { total: Number(counted?.misses ?? 0), misses: rows.map(checkEntry) };
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the data-quality checks');
    }
  }

  /** Every data-quality check of the slice's latest checked file, in the order they run. */
  async sliceChecks(slice: Slice): Promise<SliceCheckEntry[]> {
    try {
      const rows = await this.#db
        .selectFrom('slice_checks')
        .selectAll()
        .where('portfolio_id', '=', slice.portfolioId)
        .where('report_type', '=', slice.reportType)
        .where('report_date', '=', slice.reportDate)
        .execute();
      const order: readonly string[] = SLICE_CHECK_NAMES;
      return rows.map(checkEntry).sort((a, b) => order.indexOf(a.check) - order.indexOf(b.check));
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the data-quality checks');
    }
  }

  /**
   * The range as {@link splitWholeMonths} splits it, with an edge taken as its whole month when
   * the ledger holds no slice of that month outside the range (a range that starts on the
   * ledger's first day, or ends yesterday): the monthly counts then answer for it exactly, and the
   * ledger's rows of its days, found through the date index and read one by one, are not read.
   */
  async #splitWholeMonths(range: DateSpan): Promise<SplitRange> {
    const split = splitWholeMonths(range);
    let months = split.months;
    const edges: DateSpan[] = [];
    for (const edge of split.edges) {
      const month = `${edge.from.slice(0, 7)}-01`;
      const end = monthEnd(month);
      const adjacent = !months || shiftIsoDate(month, -1) === monthEnd(months.to) || shiftIsoDate(end, 1) === months.from;
      if (edge.to > end || !adjacent || (await this.#holdsDaysOutside(month, edge))) {
        edges.push(edge);
        continue;
      }
      months = { from: !months || month < months.from ? month : months.from, to: !months || month > months.to ? month : months.to };
    }
    return { months, edges };
  }

  /**
   * `months` without the bounds that take in every month the monthly counts hold, for a question
   * grouped per pair, where the dialect keeps the counts keyed pair first too (MySQL, migration
   * 0008): the same question, which a planner no longer enters by the month. Bounded,
   * MariaDB read ten years through the month-first key and grouped them per pair in a temporary
   * table; unbounded, it groups them in the order of `report_loads_monthly_pair`.
   */
  async #withinHeldMonths(months: DateSpan): Promise<MonthBounds> {
    // Without that index (SQLite, Postgres) nothing groups the counts per pair in order anyway.
    if (!this.#countsKeyedByPair) return months;
    const held = await this.#db
      .selectFrom('report_loads_monthly')
      .select(({ fn }) => [fn.min('month').as('first'), fn.max('month').as('last')])
      .executeTakeFirst();
    const first = held?.first == null ? undefined : String(held.first);
    const last = held?.last == null ? undefined : String(held.last);
    return {
      from: first !== undefined && first >= months.from ? undefined : months.from,
      to: last !== undefined && last <= months.to ? undefined : months.to,
    };
  }

  /**
   * `filter` without its portfolios when they take in every portfolio the monthly counts hold,
   * where the dialect keeps the counts keyed pair first too (MySQL, migration 0008), so that the
   * portfolios held are a short walk of that index: the same question, without testing each
   * monthly row of the range against a list of every configured portfolio, which took MariaDB
   * about a fifth of `check`'s count over ten years. Without that index, listing the portfolios
   * would read every monthly row itself. Report types are left asked: listing the pairs held walks
   * six times as much of the index, which a small buffer pool then reads again from disk.
   */
  async #withoutHeldPortfolios(filter: LedgerFilter): Promise<LedgerFilter> {
    if (!this.#countsKeyedByPair || !filter.portfolios?.length) return filter;
    const asked = new Set(filter.portfolios);
    return (await this.#heldPortfolios()).every((portfolioId) => asked.has(portfolioId)) ? { ...filter, portfolios: undefined } : filter;
  }

  /** The portfolios the monthly counts hold: a short walk of the pair-first key where there is one (MySQL). */
  async #heldPortfolios(): Promise<number[]> {
    const rows = await this.#db.selectFrom('report_loads_monthly').select('portfolio_id').distinct().execute();
    return rows.map((row) => Number(row.portfolio_id));
  }

  /** Whether the ledger holds any slice of the month starting `month` outside `edge` (a span inside it), whatever its pair. */
  async #holdsDaysOutside(month: string, edge: DateSpan): Promise<boolean> {
    const outside = [
      { from: month, to: shiftIsoDate(edge.from, -1) },
      { from: shiftIsoDate(edge.to, 1), to: monthEnd(month) },
    ].filter((span) => span.from <= span.to);
    for (const span of outside) {
      const row = await this.#db
        .selectFrom('report_loads')
        .select('report_date')
        .where('report_date', '>=', span.from)
        .where('report_date', '<=', span.to)
        .limit(1)
        .executeTakeFirst();
      if (row) return true;
    }
    return false;
  }

  /**
   * The monthly counts of the filter's pairs in `months` (the first days of its first and last
   * whole months; a bound left out is open). `byMonth`: the counts are grouped by month, so the
   * pairs asked are written so that no planner enters by them (as `#where` does for dates), and
   * the bounds are kept: through the pair-first index (MySQL's), MariaDB read the pairs' months and
   * grouped them in a temporary table, where the month-first key gives them in order.
   */
  #monthly(filter: LedgerFilter, months: MonthBounds, options: { byMonth?: boolean } = {}): SelectQueryBuilder<Warehouse, 'report_loads_monthly', object> {
    let query = this.#db.selectFrom('report_loads_monthly');
    if (months.from !== undefined) query = query.where('month', '>=', months.from);
    if (months.to !== undefined) query = query.where('month', '<=', months.to);
    const pair = pairColumns({ unindexable: options.byMonth === true });
    if (filter.portfolios?.length) query = query.where(pair.portfolio, 'in', [...filter.portfolios]);
    if (filter.reportTypes?.length) query = query.where(pair.reportType, 'in', [...filter.reportTypes]);
    return query;
  }

  /**
   * The filter as a WHERE clause. `byDate`: the rows are found by their dates (a range's edge of
   * at most a month, or the failed slices, through their own index); the portfolios and report
   * types are then written so that no planner can use them to enter by the primary key instead.
   * Without statistics, SQLite takes `portfolio_id in (…)` for the way in, and reads every day of
   * ten years of those portfolios to count a few days of them.
   */
  #where<O>(query: SelectQueryBuilder<Warehouse, 'report_loads', O>, filter: LedgerFilter, options: { byDate?: boolean } = {}): SelectQueryBuilder<Warehouse, 'report_loads', O> {
    let scoped = query.where('report_date', '>=', filter.from).where('report_date', '<=', filter.to);
    const pair = pairColumns({ unindexable: options.byDate === true });
    if (filter.portfolios?.length) scoped = scoped.where(pair.portfolio, 'in', [...filter.portfolios]);
    if (filter.reportTypes?.length) scoped = scoped.where(pair.reportType, 'in', [...filter.reportTypes]);
    if (filter.errorCodes?.length) scoped = scoped.where('error_code', 'in', [...filter.errorCodes]);
    return scoped;
  }
}

/**
 * A slice's pair as a WHERE clause compares it, in the ledger or its monthly counts: the columns
 * themselves, or (`unindexable`) written so that no planner can enter by them.
 */
function pairColumns(options: { readonly unindexable: boolean }) {
  return options.unindexable
    ? { portfolio: sql<number>`portfolio_id + 0`, reportType: sql<string>`report_type || ''` }
    : { portfolio: 'portfolio_id' as const, reportType: 'report_type' as const };
}

/** The slices of one status among the monthly counts a query groups: a column of a count pivoted by status. */
function monthlySlicesOf(eb: ExpressionBuilder<Warehouse, 'report_loads_monthly'>, status: SliceStatus) {
  return eb.fn.sum<number | string>(eb.case().when('status', '=', status).then(eb.ref('slices')).else(0).end());
}

/** Text compared as SQL compares the ledger's keys (code point by code point), not by locale. */
function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Counts of the same pair and status (from the ledger and the monthly counts) added up, in pair order. */
function mergeStatusCounts(counts: readonly LedgerCount[]): LedgerCount[] {
  const merged = new Map<string, LedgerCount>();
  for (const count of counts) {
    const key = `${count.portfolioId}\u0000${count.reportType}\u0000${count.status}`;
    const before = merged.get(key);
    merged.set(key, before ? { ...before, slices: before.slices + count.slices } : count);
  }
  return [...merged.values()].filter((count) => count.slices > 0).sort((a, b) => a.portfolioId - b.portfolioId || byText(a.reportType, b.reportType) || byText(a.status, b.status));
}

function checkEntry(row: SliceChecksRow): SliceCheckEntry {
  return {
    portfolioId: Number(row.portfolio_id),
    reportType: row.report_type,
    reportDate: String(row.report_date),
    check: row.check_name,
    severity: row.severity,
    outcome: row.outcome,
    measured: Number(row.measured),
    threshold: Number(row.threshold),
    message: row.message,
    checkedAt: String(row.checked_at),
  };
}
