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
  async entries(filter: LedgerFilter, options: { status?: SliceStatus; limit?: number } = {}): Promise<LedgerEntry[]> {
    try {
      let query = this.#where(this.#db.selectFrom('report_loads'), filter)
        .select(['portfolio_id', 'report_type', 'report_date', 'status', 'error', 'attempts', 'updated_at'])
        .orderBy('report_date')
        .orderBy('portfolio_id')
        .orderBy('report_type');
      if (options.status) query = query.where('status', '=', options.status);
      if (options.limit !== undefined) query = query.limit(options.limit);
      const rows = await query.execute();
      return rows.map((row) => ({ ...row, portfolio_id: Number(row.portfolio_id), report_date: String(row.report_date) }));
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
