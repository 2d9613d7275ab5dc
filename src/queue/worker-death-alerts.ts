import type { AlertSummary } from '../alerts/alert-summary.js';
import type { SyncError } from '../errors/sync-error.js';
import { FailureTally } from '../outcomes/failure-groups.js';
import { retryCommand } from '../outcomes/retry-command.js';
import type { Slice } from '../slice/slice.js';

export interface WorkerDeathAlertsOptions {
  /** Sends one alert; never throws (see `AlertWebhook.send`). */
  readonly send: (alert: AlertSummary) => Promise<unknown>;
  /** The queue's name, for the title. */
  readonly queueName: string;
  /**
   * How long failures are gathered after the first before they are told as one alert: a worker
   * killed with several jobs leaves several slices to fail at one stalled check.
   * @defaultValue 2000
   */
  readonly gatherMs?: number;
}

/**
 * Tells the alert webhook about slices failed as `WORKER_DIED` as they happen, even when no night
 * or waited backfill follows them. Failures within `gatherMs` of each other make one alert, grouped
 * by code and portfolio, with the command that retries them.
 */
export class WorkerDeathAlerts {
  readonly #options: WorkerDeathAlertsOptions;
  #tally = new FailureTally();
  #timer: NodeJS.Timeout | undefined;
  #sending: Promise<unknown> = Promise.resolve();

  constructor(options: WorkerDeathAlertsOptions) {
    this.#options = options;
  }

  /** Adds a slice failed as `WORKER_DIED`; the alert follows within `gatherMs`. */
  add(slice: Slice, error: SyncError): void {
    this.#tally.add(slice, error.code, error.message);
    this.#timer ??= setTimeout(() => this.#flush(), this.#options.gatherMs ?? 2_000);
  }

  /** Sends what is gathered now, and waits for every send so far. */
  async close(): Promise<void> {
    this.#flush();
    await this.#sending;
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#tally.total === 0) return;
    const failures = this.#tally.summary();
    this.#tally = new FailureTally();
    const slices = failures.total === 1 ? 'a slice' : `${failures.total} slices`;
    const alert: AlertSummary = {
      kind: 'worker',
      title: `report-sync workers (queue ${this.#options.queueName}) died running ${slices}: failed for good, not handed to another worker`,
      counts: { failed: failures.total },
      failures,
      details: [
        'Each of these jobs stalled more often than queue.maxStalledCount allows: the worker holding it crashed, was killed (out of memory, SIGKILL) or was blocked longer than queue.lockDurationMs, every time. Look for the cause in the workers’ logs before retrying.',
      ],
      retryCommand: failures.span && retryCommand('backfill', failures.span, undefined, ['WORKER_DIED']),
      at: new Date(),
    };
    const send = this.#options.send;
    this.#sending = this.#sending.then(() => send(alert)).catch(() => undefined);
  }
}
