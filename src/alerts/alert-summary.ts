import type { FailureSummary } from '../outcomes/failure-groups.js';
import type { WarningSummary } from '../outcomes/warning-groups.js';

/**
 * How an alert is shaped on the wire: `slack` (a Slack-compatible incoming-webhook message, which
 * Mattermost, Rocket.Chat and most chat tools accept too) or `json` (the summary's own fields, for a
 * receiver of your own or an incident tool that maps JSON).
 */
export type AlertFormat = 'slack' | 'json';

/**
 * Everything a run or a night has to say, gathered so it is sent as ONE message however many
 * slices failed; shaped for a receiver by `alertBody`. Hazard: `title`, `details`, failure
 * messages and even `retryCommand` may hold outside text; whoever renders this escapes all of it.
 */
export interface AlertSummary {
  /**
   * What ran: 'run' | 'nightly' (in-process night) | 'backfill' (backfill --wait) | 'night' (a queued
   * night, summarised by a worker) | 'check' (freshness check) | 'worker' (queue mode: slices failed
   * because the workers running them died, told by the worker that failed them)
   */
  readonly kind: 'run' | 'nightly' | 'backfill' | 'night' | 'check' | 'worker';
  /** One line, e.g. "nightly sync of 2024-03-04: 3 of 24 slices failed" — built by the caller. */
  readonly title: string;
  /** Slices by outcome, from what happened. Keys absent when not applicable. */
  readonly counts: {
    readonly loaded?: number;
    /** Of `loaded`: slices loaded with warnings (their file missed a data-quality check set to `warn`; loaded, the warning recorded). */
    readonly warned?: number;
    readonly unchanged?: number;
    readonly noData?: number;
    readonly failed?: number;
    readonly notAttempted?: number;
    readonly missing?: number;
  };
  /** The failures grouped by error code, then portfolio, with true counts and a few example slices. */
  readonly failures: FailureSummary;
  /** The slices loaded with warnings, grouped by check, then portfolio, with the values measured. */
  readonly warnings?: WarningSummary;
  /** Lines of context (e.g. "warehouse postgres://db/x", "not attempted: their jobs were lost …"); plain text, upstream-derived text already made printable or not — escape it anyway. */
  readonly details?: readonly string[];
  /** The exact command that re-runs what failed, e.g. "report-sync backfill --from … --only-missing". */
  readonly retryCommand?: string;
  /** When it happened. */
  readonly at: Date;
  /** Where it happened; set by the webhook that sends it (see `AlertWebhook`). */
  readonly origin?: AlertOrigin;
}

/** Which machine and which deployment an alert comes from, for an operator who runs several. */
export interface AlertOrigin {
  /** The host name of the machine (or container) that sent it. */
  readonly host: string;
  /** `REPORT_ALERT_DEPLOYMENT`, or the warehouse it loads into when that is unset. */
  readonly deployment: string;
}
