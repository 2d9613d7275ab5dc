import type { DryRunPlan } from '../planning/dry-run-plan.js';
import { formatTable } from './format-table.js';
import { countOf } from '../text/count-of.js';

/**
 * `run --dry-run` and `backfill --dry-run` as text: the range, what the ledger already holds, the
 * slices per portfolio and report type that would be requested, the export requests and the
 * estimated duration, with the assumption it rests on said in words.
 */
export function formatDryRun(plan: DryRunPlan): string {
  const { range, totals, selection, estimate } = plan;
  const lines = [
    `Dry run of report-sync ${plan.command}: nothing is requested, ${plan.command === 'backfill' ? 'queued' : 'loaded'} or written, and no token is asked for.`,
    '',
    `Range ${range.from} to ${range.to}: ${countOf(range.portfolios.length, 'portfolio')} × ${countOf(range.reportTypes.length, 'report type')} × ${countOf(range.days, 'day')} = ${countOf(totals.inRange, 'slice')}.`,
  ];
  if (plan.warehouse.exists) {
    lines.push(
      `The ledger (${plan.warehouse.location}) has ${totals.loaded} of them loaded, ${totals.noData} no data and ${totals.failed} failed; ${totals.neverAttempted} were never attempted.`,
    );
  } else {
    lines.push(`There is no warehouse at ${plan.warehouse.location} yet: the ledger holds none of them (0 loaded, 0 no data, 0 failed), so every slice counts as never attempted.`);
  }
  const skipped = totals.inRange - totals.toRequest;
  if (selection.kind === 'missing') {
    lines.push(
      `--only-missing: the ${totals.loaded + totals.noData} already loaded or no data are skipped; the ${totals.failed} failed and ${totals.neverAttempted} never attempted are taken.`,
    );
  } else if (selection.kind === 'failed') {
    const codes = selection.codes?.length ? ` with code ${selection.codes.join(' or ')}` : '';
    lines.push(
      `--failed${codes ? ` --code ${selection.codes!.join(',')}` : ''}: only the ${countOf(totals.toRequest, 'slice')} whose last outcome is failed${codes} ${totals.toRequest === 1 ? 'is' : 'are'} taken; the other ${skipped} are skipped.`,
    );
  } else {
    lines.push(`Every slice of the range is taken, the ${totals.loaded + totals.noData} already loaded or no data too (--only-missing or --failed would narrow it).`);
  }
  lines.push(
    '',
    formatTable(
      ['portfolio', 'report type', 'in range', 'loaded', 'no data', 'failed', 'never attempted', 'to request'],
      [
        ...plan.pairs.map((pair) => [pair.portfolioId, pair.reportType, pair.inRange, pair.loaded, pair.noData, pair.failed, pair.neverAttempted, pair.toRequest]),
        ['total', '', totals.inRange, totals.loaded, totals.noData, totals.failed, totals.neverAttempted, totals.toRequest],
      ],
    ),
    '',
    `Export requests: ${plan.exportRequests} (one per slice taken; each retryable failure adds up to ${plan.retryAttempts - 1} more, retry.attempts ${plan.retryAttempts}).`,
  );
  if (plan.exportRequests === 0) {
    lines.push('Estimated duration: none, there is nothing to request.');
    return `${lines.join('\n')}\n`;
  }
  const who = plan.command === 'run' ? 'this process' : 'one worker';
  lines.push(
    `Estimated duration: about ${formatSeconds(estimate.seconds)} for ${who}: ${countOf(plan.exportRequests, 'request')}, up to ${estimate.parallel} at a time ` +
      `(concurrency ${estimate.concurrency}, http.connections ${estimate.connections}), at ${estimate.secondsPerRequest} s per request.`,
  );
  const measured = estimate.measured
    ? `the mean over the ledger's ${countOf(estimate.measured.slices, 'latest loaded or no-data slice')} is ${estimate.measured.meanSeconds} s`
    : undefined;
  if (estimate.secondsPerRequestSource === 'measured') {
    lines.push(`  The ${estimate.secondsPerRequest} s per request is measured: ${measured} (start of the attempt to its ledger write). --request-seconds replaces it.`);
  } else if (estimate.secondsPerRequestSource === 'assumed') {
    lines.push(
      `  The ${estimate.secondsPerRequest} s per request is an assumption, not a measurement: the ledger records no attempt times yet (they are kept from this version on). ` +
        'For a better one, pass --request-seconds with your mean ' +
        '(report_sync_export_request_duration_seconds _sum / _count on /metrics of a worker, or of run --metrics-port).',
    );
  } else {
    lines.push(`  The ${estimate.secondsPerRequest} s per request is the --request-seconds given${measured ? `; ${measured}` : ''}.`);
  }
  const { rateLimit } = estimate;
  if (plan.command === 'run') {
    lines.push(
      rateLimit.max > 0
        ? `  queue.rateLimit (${rateLimit.max} per ${rateLimit.durationMs} ms) does not apply: run is not rate-limited, only queue workers are.`
        : '  No rate limit: run is not rate-limited (queue.rateLimit applies to queue workers only).',
    );
  } else {
    lines.push(
      rateLimit.applies
        ? `  queue.rateLimit (${rateLimit.max} per ${rateLimit.durationMs} ms, across every worker) allows it no sooner than ${formatSeconds(estimate.rateLimitSeconds ?? 0)}` +
            `${estimate.boundBy === 'rateLimit' ? ', which is what bounds it' : ''}; more workers shorten the rest, never below that.`
        : "  queue.rateLimit is off (max 0): more workers shorten it in proportion (the concurrency is each worker's own setting; this one is this host's).",
    );
  }
  return `${lines.join('\n')}\n`;
}

/** A duration as people say it: `45 s`, `12 min`, `3 h 20 min`, `2 d 5 h`. */
function formatSeconds(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const minutes = Math.round(s / 60);
  if (minutes < 60) return `${minutes} min`;
  if (minutes < 1_440) return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  const hours = Math.round(minutes / 60);
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}
