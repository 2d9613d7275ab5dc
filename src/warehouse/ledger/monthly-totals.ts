import { expressionBuilder, type Expression, type Kysely, type SqlBool } from 'kysely';
import type { ReportLoadsMonthlyRow, SliceStatus, Warehouse } from '../engine/warehouse-schema.js';
import type { DateSpan } from './split-whole-months.js';

/*
 * MySQL's monthly totals (migration 0009): the folded monthly counts summed over every portfolio,
 * per month, report type and status, kept by triggers on `report_loads_monthly` as the fold
 * moves its rows. A total leaves out the rows appended since the last fold (`pending`), so every
 * question adds them, in the same statement, so that a fold committing between two statements
 * can neither drop nor double them.
 */

/** The tables the totals are asked of, with the columns only MySQL's have. */
type TotalsTables = {
  report_loads_monthly_totals: { month: string; report_type: string; status: SliceStatus; slices: number };
  report_loads_monthly: ReportLoadsMonthlyRow & { pending: boolean };
};

/** Which months and report types a question of the totals covers, over every portfolio but `without`. */
export interface TotalsQuestion {
  /** The first days of the first and last months. */
  readonly months: DateSpan;
  readonly reportTypes?: readonly string[];
  /** Portfolios whose counts are taken out of the totals: held ones the question does not ask. */
  readonly without?: readonly number[];
}

/** A month's slices per status over every portfolio of the report types asked. */
export interface MonthTotals {
  /** The month's first day. */
  readonly month: string;
  readonly loaded: number;
  readonly noData: number;
  readonly failed: number;
}

/** A month, report type and status whose total is not the sum of its folded monthly counts (see {@link totalsDifferences}). */
export interface MonthlyTotalDifference {
  /** The month's first day. */
  readonly month: string;
  readonly reportType: string;
  readonly status: string;
  /** What `report_loads_monthly_totals` says. */
  readonly total: number;
  /** What the folded rows of `report_loads_monthly` sum to. */
  readonly folded: number;
}

/**
 * Slices per month by status over every portfolio of `question`: a row per month, from a row per
 * month, report type and status; `undefined` when the warehouse has no totals yet (a read-only
 * command before `migrate` applied 0009).
 */
export async function countMonthsFromTotals(db: Kysely<Warehouse>, question: TotalsQuestion): Promise<MonthTotals[] | undefined> {
  const tables = db.withTables<TotalsTables>();
  const totals = tables.selectFrom('report_loads_monthly_totals').where(scope(question)).select(['month', 'status', 'slices']);
  const pending = tables.selectFrom('report_loads_monthly').where(scope(question)).where('pending', '=', true).select(['month', 'status', 'slices']);
  // Every row of the portfolios left out, folded or not, counted out again: by the pair-first key (0008).
  const left = question.without?.length
    ? tables
        .selectFrom('report_loads_monthly')
        .where(scope(question))
        .where('portfolio_id', 'in', [...question.without])
        .select((eb) => ['month', 'status', eb.neg('slices').as('slices')])
    : undefined;
  const counted = left ? totals.unionAll(pending).unionAll(left) : totals.unionAll(pending);
  const rows = await tables
    .selectFrom(counted.as('counted'))
    .select((eb) => {
      const slicesOf = (status: SliceStatus) => eb.fn.sum<number | string>(eb.case().when('status', '=', status).then(eb.ref('slices')).else(0).end());
      return ['month', slicesOf('loaded').as('loaded'), slicesOf('no_data').as('no_data'), slicesOf('failed').as('failed')];
    })
    .groupBy('month')
    .execute()
    .catch(unlessTotalsMissing);
  return rows?.map((row) => ({ month: String(row.month), loaded: Number(row.loaded), noData: Number(row.no_data), failed: Number(row.failed) }));
}

/**
 * The months, report types and statuses of `question` whose total differs from what its folded
 * monthly counts sum to (`check --deep`): a difference means the totals, or the folded counts,
 * were changed by hand, or `report_loads_monthly` was emptied with TRUNCATE, which fires no trigger.
 * None while the warehouse has no totals yet (0009 not applied).
 */
export async function totalsDifferences(db: Kysely<Warehouse>, question: TotalsQuestion): Promise<MonthlyTotalDifference[]> {
  const tables = db.withTables<TotalsTables>();
  const totals = tables
    .selectFrom('report_loads_monthly_totals')
    .where(scope(question))
    .select((eb) => ['month', 'report_type', 'status', 'slices as total', eb.lit<number>(0).as('folded')]);
  const folded = tables
    .selectFrom('report_loads_monthly')
    .where(scope(question))
    .where('pending', '=', false)
    .select((eb) => ['month', 'report_type', 'status', eb.lit<number>(0).as('total'), 'slices as folded']);
  const rows = await tables
    .selectFrom(totals.unionAll(folded).as('both'))
    .select(({ fn }) => ['month', 'report_type', 'status', fn.sum<number | string>('total').as('total'), fn.sum<number | string>('folded').as('folded')])
    .groupBy(['month', 'report_type', 'status'])
    .having((eb) => eb(eb.fn.sum('total'), '<>', eb.fn.sum('folded')))
    .orderBy('month')
    .orderBy('report_type')
    .orderBy('status')
    .execute()
    .catch(unlessTotalsMissing);
  return (rows ?? []).map((row) => ({ month: String(row.month), reportType: row.report_type, status: row.status, total: Number(row.total), folded: Number(row.folded) }));
}

/** `undefined` for MySQL's error for a table that is not there (the totals before 0009); any other error is thrown on. */
function unlessTotalsMissing(error: unknown): undefined {
  if ((error as { code?: unknown } | undefined)?.code === 'ER_NO_SUCH_TABLE') return undefined;
  throw error;
}

/**
 * The question's months and report types as a WHERE clause of unqualified columns, for either
 * table (both keyed month first), the values bound as parameters.
 */
function scope(question: TotalsQuestion): Expression<SqlBool> {
  const eb = expressionBuilder<{ scoped: { month: string; report_type: string } }, 'scoped'>();
  const { months, reportTypes } = question;
  const conditions = [eb('month', '>=', months.from), eb('month', '<=', months.to)];
  if (reportTypes?.length) conditions.push(eb('report_type', 'in', [...reportTypes]));
  return eb.and(conditions);
}
