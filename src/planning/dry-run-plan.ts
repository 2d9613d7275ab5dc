import type { Settings } from '../config/settings-schema.js';
import { ASSUMED_REQUEST_SECONDS, estimateDuration, type DurationEstimate } from './estimate-duration.js';
import { countSlices, type SliceRange } from '../slice/slice-range.js';
import { countIsoDates } from '../dates/report-date.js';
import type { SliceSelection } from '../selection/slice-selection.js';
import type { Ledger, LedgerCount } from '../warehouse/ledger/ledger.js';

/** One portfolio and report type of a dry run: what the ledger holds of the range, and what would be requested. */
export interface DryRunPair {
  readonly portfolioId: number;
  readonly reportType: string;
  readonly inRange: number;
  readonly loaded: number;
  readonly noData: number;
  /** Last outcome `failed`, whatever the code. */
  readonly failed: number;
  /** No ledger row at all. */
  readonly neverAttempted: number;
  /** The slices the selection takes: one export request each. */
  readonly toRequest: number;
}

/** What `run --dry-run` and `backfill --dry-run` say, as `--json` prints it. */
export interface DryRunPlan {
  readonly dryRun: true;
  readonly command: 'run' | 'backfill';
  readonly range: SliceRange & { readonly days: number };
  readonly selection: SliceSelection;
  /** Where the ledger was read; `exists: false`: there is none yet, so nothing is held. */
  readonly warehouse: { readonly location: string; readonly exists: boolean };
  readonly pairs: readonly DryRunPair[];
  readonly totals: Omit<DryRunPair, 'portfolioId' | 'reportType'>;
  /** First attempts only: each retryable failure adds up to `retry.attempts - 1` more. */
  readonly exportRequests: number;
  readonly retryAttempts: number;
  readonly estimate: DurationEstimate & {
    readonly secondsPerRequest: number;
    /** `given`: `--request-seconds`; `measured`: the ledger's mean attempt time; `assumed`: {@link ASSUMED_REQUEST_SECONDS}, when the ledger has none. */
    readonly secondsPerRequestSource: 'assumed' | 'given' | 'measured';
    /** The ledger's mean attempt time over its latest loaded or no-data slices (`duration_ms`), and how many; null when it records none. */
    readonly measured: { readonly meanSeconds: number; readonly slices: number } | null;
    readonly concurrency: number;
    readonly connections: number;
    readonly rateLimit: Settings['queue']['rateLimit'] & { readonly applies: boolean };
    /** `backfill`: the estimate is for one worker with this process's `concurrency`; more workers divide it, down to the rate limit's bound. */
    readonly workers: 'this process' | 'one worker';
  };
}

export interface DryRunPlanOptions {
  readonly command: 'run' | 'backfill';
  readonly range: SliceRange;
  readonly selection: SliceSelection;
  /** The ledger, or undefined when there is no warehouse yet. */
  readonly ledger: Ledger | undefined;
  readonly location: string;
  readonly settings: Settings;
  /** `--request-seconds`; undefined: the ledger's measured mean, else {@link ASSUMED_REQUEST_SECONDS}. */
  readonly secondsPerRequest: number | undefined;
}

/**
 * Counts what a sync of the range would request, per portfolio and report type, from the ledger's
 * counts (grouped in SQL: a ten-year range is a few rows per pair, never the ledger itself), and
 * estimates how long it would take. Reads only.
 */
export async function dryRunPlan(options: DryRunPlanOptions): Promise<DryRunPlan> {
  const { range, selection, ledger, settings } = options;
  const days = countIsoDates(range.from, range.to);
  const counts = ledger ? await ledger.countByStatus(range) : [];
  // With --code, the failed slices taken are only some of the failed ones: counted apart.
  const selectedFailures =
    selection.kind === 'failed' && selection.codes?.length && ledger ? slicesByPair(await ledger.countByStatus({ ...range, errorCodes: selection.codes })) : undefined;
  const byPair = slicesByPair(counts);
  const pairs: DryRunPair[] = [];
  for (const portfolioId of range.portfolios) {
    for (const reportType of range.reportTypes) {
      const loaded = byPair.get(pairStatusKey(portfolioId, reportType, 'loaded')) ?? 0;
      const noData = byPair.get(pairStatusKey(portfolioId, reportType, 'no_data')) ?? 0;
      const failed = byPair.get(pairStatusKey(portfolioId, reportType, 'failed')) ?? 0;
      const neverAttempted = days - loaded - noData - failed;
      const toRequest =
        selection.kind === 'all'
          ? days
          : selection.kind === 'missing'
            ? failed + neverAttempted
            : selectedFailures
              ? (selectedFailures.get(pairStatusKey(portfolioId, reportType, 'failed')) ?? 0)
              : failed;
      pairs.push({ portfolioId, reportType, inRange: days, loaded, noData, failed, neverAttempted, toRequest });
    }
  }
  const sum = (key: keyof DryRunPlan['totals']) => pairs.reduce((total, pair) => total + pair[key], 0);
  const totals = {
    inRange: countSlices(range),
    loaded: sum('loaded'),
    noData: sum('noData'),
    failed: sum('failed'),
    neverAttempted: sum('neverAttempted'),
    toRequest: sum('toRequest'),
  };
  const measured = ledger ? await ledger.meanAttemptSeconds() : undefined;
  // A slice faster than a millisecond would make every estimate zero: measured means are at least 1 ms.
  const secondsPerRequest = options.secondsPerRequest ?? (measured ? Math.max(0.001, measured.seconds) : ASSUMED_REQUEST_SECONDS);
  // Only queue workers are rate-limited (BullMQ's limiter and the Redis window); `run` is not.
  const rateApplies = options.command === 'backfill' && settings.queue.rateLimit.max > 0;
  const estimate = estimateDuration({
    requests: totals.toRequest,
    secondsPerRequest,
    concurrency: settings.concurrency,
    connections: settings.http.connections,
    rateLimit: rateApplies ? settings.queue.rateLimit : undefined,
  });
  return {
    dryRun: true,
    command: options.command,
    range: { from: range.from, to: range.to, portfolios: range.portfolios, reportTypes: range.reportTypes, days },
    selection,
    warehouse: { location: options.location, exists: ledger !== undefined },
    pairs,
    totals,
    exportRequests: totals.toRequest,
    retryAttempts: settings.retry.attempts,
    estimate: {
      ...estimate,
      secondsPerRequest,
      secondsPerRequestSource: options.secondsPerRequest !== undefined ? 'given' : measured ? 'measured' : 'assumed',
      measured: measured ? { meanSeconds: measured.seconds, slices: measured.slices } : null,
      concurrency: settings.concurrency,
      connections: settings.http.connections,
      rateLimit: { ...settings.queue.rateLimit, applies: rateApplies },
      workers: options.command === 'run' ? 'this process' : 'one worker',
    },
  };
}

/** The ledger's counts keyed by portfolio, report type and status. */
function slicesByPair(counts: readonly LedgerCount[]): Map<string, number> {
  const byPair = new Map<string, number>();
  for (const count of counts) {
    const key = pairStatusKey(count.portfolioId, count.reportType, count.status);
    byPair.set(key, (byPair.get(key) ?? 0) + count.slices);
  }
  return byPair;
}

function pairStatusKey(portfolioId: number, reportType: string, status: LedgerCount['status']): string {
  return `${portfolioId}\u0000${reportType}\u0000${status}`;
}
