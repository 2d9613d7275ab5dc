import type { FailureSpan } from '../outcomes/failure-groups.js';
import { retryCommand } from '../outcomes/retry-command.js';
import { shellQuote } from '../text/shell-quote.js';
import type { Ledger, LedgerFilter } from '../warehouse/ledger/ledger.js';

/** Failures grouped by error code and portfolio, as the dashboard lists them, with the commands that act on them. */
export interface FailuresView {
  readonly total: number;
  readonly codes: readonly {
    readonly code: string;
    readonly slices: number;
    /** Re-runs this code's failures only, in one process. */
    readonly retry: string;
    readonly portfolios: readonly {
      readonly portfolioId: number;
      readonly slices: number;
      readonly examples: readonly { readonly reportType: string; readonly reportDate: string; readonly message: string }[];
    }[];
  }[];
  readonly span: FailureSpan | null;
  /** Re-runs every failed or missing slice of the span, in one process and through the workers. */
  readonly retry: { readonly run: string; readonly backfill: string } | null;
  /** Lists every failed slice, not only the examples. */
  readonly everyOne: string;
}

/** The ledger's failures inside `filter`, counted in SQL (see {@link Ledger.failureSummary}). */
export async function failuresView(ledger: Ledger, filter: LedgerFilter, configFile?: string): Promise<FailuresView> {
  const summary = await ledger.failureSummary(filter);
  const codes = new Map<string, { code: string; slices: number; portfolios: FailuresView['codes'][number]['portfolios'][number][] }>();
  for (const group of summary.groups) {
    let code = codes.get(group.code);
    if (!code) {
      code = { code: group.code, slices: 0, portfolios: [] };
      codes.set(group.code, code);
    }
    code.slices += group.slices;
    code.portfolios.push({
      portfolioId: group.portfolioId,
      slices: group.slices,
      examples: group.examples.map((example) => ({ reportType: example.slice.reportType, reportDate: example.slice.reportDate, message: example.message })),
    });
  }
  const { span } = summary;
  return {
    total: summary.total,
    codes: [...codes.values()].map((code) => ({ ...code, retry: span ? retryCommand('run', span, configFile, [code.code]) : '' })),
    span: span ?? null,
    retry: span ? { run: retryCommand('run', span, configFile), backfill: retryCommand('backfill', span, configFile) } : null,
    everyOne: `report-sync status --failed --json --from ${filter.from} --to ${filter.to}${configFile ? ` --config ${shellQuote(configFile)}` : ''}`,
  };
}
