import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from './redis-connection.js';
import type { AlertWebhook } from '../alerts/alert-webhook.js';
import { runAlert } from '../alerts/run-alert.js';
import type { Logger } from '../logging/logger.js';
import type { SyncMetrics } from '../metrics/sync-metrics.js';
import type { SliceRange } from '../slice/slice-range.js';
import { retryCommand } from '../outcomes/retry-command.js';
import type { RunReport } from '../runner/run-report.js';
import type { Ledger } from '../warehouse/ledger/ledger.js';
import { tallyOutcomes } from '../warehouse/ledger/tally-outcomes.js';
import { NO_WARNINGS } from '../outcomes/warning-groups.js';
import type { ExportQueue } from './export-queue.js';
import { recordSuccessfulNight } from './night-record.js';

/** A queued night being followed: carried in the fan-out job's data, so another worker can take it over. */
export interface NightInProgress {
  readonly reportDate: string;
  readonly range: SliceRange;
  /** When the fan-out started (ISO time): outcomes checked since then are the night's. */
  readonly since: string;
  /** Slices handed to the queue or already pending there. */
  readonly expected: number;
}

export interface FollowNightOptions {
  readonly night: NightInProgress;
  readonly ledger: Ledger;
  readonly exportQueue: ExportQueue;
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly logger: Logger;
  readonly webhook?: AlertWebhook;
  readonly metrics?: SyncMetrics;
  readonly shutdown: AbortSignal;
  /** @defaultValue 5000 */
  readonly pollMs?: number;
}

/**
 * Follows a queued night until every slice has an outcome or its jobs are lost, then tells it once
 * (a log line, an alert if anything failed, was lost or warned) and, if all loaded or no_data,
 * records the last successful night. Resolves `interrupted` on shutdown, for another worker.
 */
export async function followNight(options: FollowNightOptions): Promise<'told' | 'interrupted'> {
  const { night, ledger, exportQueue, logger } = options;
  const startedMs = Date.now();
  let counts = tallyOutcomes(await ledger.outcomesSince(night.range, night.since));
  let lost = false;
  while (counts.finished < night.expected) {
    // The fan-out job itself is running (active): it is not the night's unfinished work.
    if ((await exportQueue.unfinished()) <= 1) {
      counts = tallyOutcomes(await ledger.outcomesSince(night.range, night.since));
      lost = counts.finished < night.expected;
      break;
    }
    await sleep(options.pollMs ?? 5_000, undefined, { signal: options.shutdown }).catch(() => undefined);
    if (options.shutdown.aborted) return 'interrupted';
    counts = tallyOutcomes(await ledger.outcomesSince(night.range, night.since));
  }
  const failures = await ledger.failureSummary(night.range, { checkedSince: night.since });
  const warnings = counts.warned > 0 ? await ledger.warningSummary(night.range, { loadedSince: night.since }) : NO_WARNINGS;
  const notAttempted = Math.max(0, night.expected - counts.finished);
  const retry = notAttempted > 0 ? night.range : failures.span;
  const report: RunReport = {
    planned: night.expected,
    ...counts,
    notAttempted,
    notAttemptedReason:
      lost && notAttempted > 0
        ? `${notAttempted} slices of the night have no outcome and no job left in the queue: their jobs were lost (Redis restarted without persistence, or flushed)`
        : undefined,
    bytes: 0,
    failures,
    warnings,
    retryCommand: retry && retryCommand('backfill', retry),
    stoppedBy: undefined,
    interrupted: false,
    durationMs: Date.now() - startedMs,
  };
  const fields = {
    reportDate: night.reportDate,
    expected: night.expected,
    loaded: counts.loaded,
    unchanged: counts.unchanged,
    noData: counts.noData,
    failed: counts.failed,
    notAttempted,
    retries: counts.retries,
    warned: counts.warned,
  };
  if (report.failed > 0 || notAttempted > 0) {
    logger.error({ ...fields, retry: report.retryCommand }, 'the night finished with slices failed or not attempted');
  } else {
    // Slices loaded with warnings are loaded: the night succeeded, and its alert tells the warnings.
    const at = new Date();
    await recordSuccessfulNight(options.redis, options.prefix, night.reportDate, at);
    options.metrics?.nightSucceeded(at);
    logger.info(fields, 'the night finished: every slice loaded or no_data');
  }
  const alert = runAlert('night', `report-sync nightly of ${night.reportDate} (queue ${exportQueue.queue.name})`, report);
  if (alert) await options.webhook?.send(alert);
  return 'told';
}
