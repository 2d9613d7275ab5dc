import { setTimeout as sleep } from 'node:timers/promises';
import type { Settings } from '../config/settings-schema.js';
import { toSyncError, type SyncError } from '../errors/sync-error.js';
import { FailureTally } from '../outcomes/failure-groups.js';
import { REPORT_REGISTRY } from '../reports/report-registry.js';
import { rowsPerTable } from '../reports/rows-per-table.js';
import type { SliceAttempt, SliceOutcome } from '../outcomes/slice-outcome.js';
import type { Slice } from '../slice/slice.js';
import { RetryPolicy } from '../retry/retry-policy.js';
import { WarningTally } from '../outcomes/warning-groups.js';
import type { RunReport } from './run-report.js';

export interface InProcessRunOptions {
  /** The slices, produced lazily so a long backfill is never held whole (read from the ledger as it goes, for `--only-missing`). */
  readonly slices: Iterable<Slice> | AsyncIterable<Slice>;
  readonly planned: number;
  readonly concurrency: number;
  readonly retry: Settings['retry'];
  /** One attempt at one slice: the export job. */
  readonly attemptSlice: (slice: Slice, attempt: SliceAttempt) => Promise<SliceOutcome>;
  /** Called with every final outcome (progress display). */
  readonly onFinal?: (outcome: SliceOutcome) => void;
  /** Aborting stops new slices and pending retries; slices in flight finish. */
  readonly signal?: AbortSignal;
  readonly random?: () => number;
}

/**
 * Runs slices in this process, `concurrency` at a time, retrying retryable failures with
 * backoff until their attempts run out. A fatal error (refused credentials) stops the run:
 * slices in flight finish, the rest are counted as not attempted.
 */
export async function runInProcess(options: InProcessRunOptions): Promise<RunReport> {
  const startedAt = performance.now();
  const slices = options.slices;
  const policy = new RetryPolicy({ ...options.retry, random: options.random });
  const iterator: Iterator<Slice> | AsyncIterator<Slice> = Symbol.asyncIterator in slices ? slices[Symbol.asyncIterator]() : slices[Symbol.iterator]();
  const tally = {
    loaded: 0,
    unchanged: 0,
    warned: 0,
    noData: 0,
    noDataAgain: 0,
    failed: 0,
    started: 0,
    retries: 0,
    bytes: 0,
    rowsWritten: rowsPerTable(),
    failures: new FailureTally(),
    warnings: new WarningTally(),
  };
  let stoppedBy: SyncError | undefined;
  const stopped = () => stoppedBy !== undefined || options.signal?.aborted === true;

  const runSlice = async (slice: Slice): Promise<void> => {
    for (let number = 1; ; number += 1) {
      const attempt = { number, isLast: number >= options.retry.attempts };
      // The export job reports trouble as an outcome; a throw here is a bug, kept as a final failure.
      const outcome: SliceOutcome = await options.attemptSlice(slice, attempt).catch((error: unknown) => ({
        status: 'failed' as const,
        slice,
        attempt: number,
        durationMs: 0,
        error: toSyncError(error),
        final: true,
      }));
      if (outcome.final) {
        record(outcome);
        return;
      }
      if (outcome.status !== 'failed' || outcome.error.code === 'INTERRUPTED') return;
      tally.retries += 1;
      const delay = policy.delayMs(number, outcome.error.retryAfterMs);
      try {
        await sleep(delay, undefined, { signal: options.signal });
      } catch {
        return; // interrupted while waiting: the slice stays as the ledger had it
      }
    }
  };

  const record = (outcome: SliceOutcome): void => {
    if (outcome.status === 'loaded') {
      tally.loaded += 1;
      tally.bytes += outcome.bytes;
      // Rows written are what this run wrote: an unchanged file wrote none, a warned one all of its rows.
      if (outcome.unchanged) tally.unchanged += 1;
      else tally.rowsWritten[REPORT_REGISTRY[outcome.slice.reportType].table] += outcome.rowCount;
      if (outcome.checkWarnings.length > 0) {
        tally.warned += 1;
        tally.warnings.add(outcome.slice, outcome.checkWarnings);
      }
    } else if (outcome.status === 'no_data') {
      tally.noData += 1;
      if (outcome.unchanged) tally.noDataAgain += 1;
    } else {
      tally.failed += 1;
      tally.failures.add(outcome.slice, outcome.error.code, outcome.error.message);
      if (outcome.error.fatal) stoppedBy ??= outcome.error;
    }
    options.onFinal?.(outcome);
  };

  const lane = async (): Promise<void> => {
    while (!stopped()) {
      const next = await iterator.next();
      if (next.done) return;
      tally.started += 1;
      await runSlice(next.value);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, lane));

  const finished = tally.loaded + tally.noData + tally.failed;
  return {
    planned: options.planned,
    loaded: tally.loaded,
    unchanged: tally.unchanged,
    warned: tally.warned,
    noData: tally.noData,
    noDataAgain: tally.noDataAgain,
    failed: tally.failed,
    notAttempted: Math.max(0, options.planned - finished),
    retries: tally.retries,
    rowsWritten: tally.rowsWritten,
    bytes: tally.bytes,
    failures: tally.failures.summary(),
    warnings: tally.warnings.summary(),
    stoppedBy,
    interrupted: options.signal?.aborted === true,
    durationMs: Math.round(performance.now() - startedAt),
  };
}
