import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { ReportType } from '../reports/report-types.js';
import { classifyWarehouseError } from './classify-warehouse-error.js';
import type { ReportLoadsRow, SliceStatus, Warehouse } from './warehouse-schema.js';

/** Which ledger rows a question is about. Dates are inclusive. */
export interface LedgerFilter {
  readonly from: string;
  readonly to: string;
  readonly portfolios?: readonly number[];
  readonly reportTypes?: readonly ReportType[];
}

export interface LedgerCount {
  readonly portfolioId: number;
  readonly reportType: string;
  readonly status: SliceStatus;
  readonly slices: number;
}

export type LedgerEntry = Pick<ReportLoadsRow, 'portfolio_id' | 'report_type' | 'report_date' | 'status' | 'error' | 'attempts' | 'updated_at'>;

/** Read-only questions to the ledger (`report_loads`): what we have, what is missing, what failed. */
export class Ledger {
  readonly #db: Kysely<Warehouse>;

  constructor(db: Kysely<Warehouse>) {
    this.#db = db;
  }

  /** Slices per portfolio, report type and status; counted in SQL, so ten years stay cheap. */
  async countByStatus(filter: LedgerFilter): Promise<LedgerCount[]> {
    try {
      const rows = await this.#where(this.#db.selectFrom('report_loads'), filter)
        .select(({ fn }) => ['portfolio_id', 'report_type', 'status', fn.countAll<number | string>().as('slices')])
        .groupBy(['portfolio_id', 'report_type', 'status'])
        .orderBy('portfolio_id')
        .orderBy('report_type')
        .execute();
      return rows.map((row) => ({ portfolioId: Number(row.portfolio_id), reportType: row.report_type, status: row.status, slices: Number(row.slices) }));
    } catch (error) {
      throw classifyWarehouseError(error, 'counting the ledger');
    }
  }

  /** The ledger rows in the filter, oldest first, at most `limit` (all when omitted). */
  async entries(filter: LedgerFilter, options: { status?: SliceStatus | readonly SliceStatus[]; checkedSince?: string; limit?: number } = {}): Promise<LedgerEntry[]> {
    try {
      let query = this.#where(this.#db.selectFrom('report_loads'), filter)
        .select(['portfolio_id', 'report_type', 'report_date', 'status', 'error', 'attempts', 'updated_at'])
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
   * Outcomes recorded since `since` (ISO time) inside the filter, per status, with the rows the
   * slices now hold: how a queued backfill is doing, whichever workers ran it.
   */
  async outcomesSince(filter: LedgerFilter, since: string): Promise<{ status: SliceStatus; reportType: string; slices: number; rows: number }[]> {
    try {
      const rows = await this.#where(this.#db.selectFrom('report_loads'), filter)
        .where('checked_at', '>=', since)
        .select(({ fn }) => ['status', 'report_type', fn.countAll<number | string>().as('slices'), fn.sum<number | string>('row_count').as('rows')])
        .groupBy(['status', 'report_type'])
        .execute();
      return rows.map((row) => ({ status: row.status, reportType: row.report_type, slices: Number(row.slices), rows: Number(row.rows ?? 0) }));
    } catch (error) {
      throw classifyWarehouseError(error, 'reading the ledger');
    }
  }

  #where<O>(query: SelectQueryBuilder<Warehouse, 'report_loads', O>, filter: LedgerFilter): SelectQueryBuilder<Warehouse, 'report_loads', O> {
    let scoped = query.where('report_date', '>=', filter.from).where('report_date', '<=', filter.to);
    if (filter.portfolios?.length) scoped = scoped.where('portfolio_id', 'in', [...filter.portfolios]);
    if (filter.reportTypes?.length) scoped = scoped.where('report_type', 'in', [...filter.reportTypes]);
    return scoped;
  }
}
