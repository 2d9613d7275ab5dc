import { UsageError } from '../errors/sync-error.js';
import { parseSelection } from '../selection/parse-selection.js';
import { checkPlausibleDate, type DateWindow } from '../dates/plausible-date.js';
import type { ReportType } from '../reports/report-types.js';
import type { LedgerPeriod } from '../warehouse/engine/ledger-period.js';

/** Outcomes a grid can be filtered to: the ledger's, missing, and the queue's. */
export const DASHBOARD_OUTCOMES = ['failed', 'running', 'queued', 'missing', 'no_data', 'loaded'] as const;
export type DashboardOutcome = (typeof DASHBOARD_OUTCOMES)[number];

/** What a dashboard URL asks for; every field is optional and has a default the server picks. */
export interface DashboardQuery {
  readonly from?: string;
  readonly to?: string;
  readonly portfolios?: readonly number[];
  readonly reportTypes?: readonly ReportType[];
  readonly outcome?: DashboardOutcome;
  readonly period?: LedgerPeriod;
  /** Columns the page has room for; the period is the finest that fits. */
  readonly columns?: number;
}

const PERIODS: readonly LedgerPeriod[] = ['day', 'week', 'month'];

/**
 * The dashboard's URL parameters, checked with the rules the command line uses (dates inside
 * `window`, as every command's). Empty values count as absent (a cleared form field).
 * @throws UsageError naming the parameter and what a good value looks like
 */
export function parseDashboardQuery(params: URLSearchParams, window: DateWindow): DashboardQuery {
  const value = (name: string): string | undefined => {
    const text = params.get(name)?.trim();
    return text ? text : undefined;
  };
  const parsed = <T>(name: string, parse: (text: string) => T): T | undefined => {
    const text = value(name);
    if (text === undefined) return undefined;
    try {
      return parse(text);
    } catch (error) {
      if (error instanceof UsageError) throw new UsageError(`${name}: ${error.message}`);
      throw error;
    }
  };
  const query: DashboardQuery = {
    from: parsed('from', parseSelection.date),
    to: parsed('to', parseSelection.date),
    portfolios: parsed('portfolios', parseSelection.portfolios),
    reportTypes: parsed('reportTypes', parseSelection.reportTypes),
    outcome: parsed('outcome', (text) => {
      if (!(DASHBOARD_OUTCOMES as readonly string[]).includes(text)) throw new UsageError(`expected one of ${DASHBOARD_OUTCOMES.join(', ')}`);
      return text as DashboardOutcome;
    }),
    period: parsed('period', (text) => {
      if (!(PERIODS as readonly string[]).includes(text)) throw new UsageError(`expected one of ${PERIODS.join(', ')}`);
      return text as LedgerPeriod;
    }),
    columns: parsed('columns', (text) => {
      if (!/^\d{1,4}$/.test(text) || Number(text) < 7 || Number(text) > 2000) throw new UsageError('expected a whole number of columns from 7 to 2000');
      return Number(text);
    }),
  };
  if (query.from && query.to && query.from > query.to) throw new UsageError(`from ${query.from} is after to ${query.to}`);
  if (query.from) checkPlausibleDate(query.from, 'from', window);
  if (query.to) checkPlausibleDate(query.to, 'to', window);
  return query;
}
