import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { REPORT_TYPES } from '../reports/report-types.js';
import type { SliceOutcome } from '../outcomes/slice-outcome.js';
import { settleWithin } from '../runtime/settle-within.js';

/** How a slice ended, counted once each: a load whose file was the one already loaded is `unchanged`, not `loaded`. */
export type SliceCountOutcome = 'loaded' | 'unchanged' | 'no_data' | 'failed';
/** The class of an export answer; `error` when no HTTP answer came (refused, reset, timed out). */
export type StatusClass = '2xx' | '3xx' | '4xx' | '5xx' | 'error';
/** What the identity provider did with a token request. */
export type TokenRequestResult = 'issued' | 'rejected' | 'unavailable';
/** Why a token was renewed: it was about to expire, or the export endpoint refused it. */
export type TokenRenewalReason = 'expiry' | 'rejection';
/** Whether an alert reached its channel. */
export type AlertResult = 'delivered' | 'failed';
/** The BullMQ job states `report_sync_queue_jobs` is meant to show. */
export type QueueJobState = 'waiting' | 'prioritized' | 'delayed' | 'active' | 'completed' | 'failed';

/**
 * Jobs per state, read when Prometheus scrapes, so that the numbers are the queue's own (shared by
 * every worker) rather than what one process happened to see.
 */
export type QueueDepthSource = () => Promise<Readonly<Record<string, number>>>;
/**
 * Unix seconds at which the last fully successful night finished, as recorded outside the process
 * (the ledger), or undefined when none is known: survives restarts, unlike {@link SyncMetrics.nightSucceeded}.
 */
export type LastSuccessfulNightSource = () => Promise<number | undefined>;
/**
 * Whether each readiness check passes, by check name (`redis`, `warehouse`, `credentials`), as
 * `/readyz` would answer now. It must bound its own checks: one that hangs must come back `false`.
 */
export type ReadinessSource = () => Promise<Readonly<Record<string, boolean>>>;

export interface SyncMetricsOptions {
  /**
   * Add prom-client's process metrics (CPU, memory, event-loop delay, GC) to this instance's registry.
   * Off in tests that build many instances: each one adds a GC observer that prom-client cannot stop.
   * @defaultValue true
   */
  collectDefaults?: boolean;
  /**
   * Longest a scrape waits for a Redis-backed source (queue depths, last night): one that has not
   * answered leaves its gauge without samples, so `/metrics` answers whatever Redis is doing.
   * @defaultValue 1000
   */
  sourceTimeoutMs?: number;
}

/**
 * HTTP exports take from tens of milliseconds (an empty day) to minutes (a large ZIP): buckets
 * spread over that range, so that a slow upstream shows in the quantiles, not just in the sum.
 */
const EXPORT_DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

const SLICE_OUTCOMES: readonly SliceCountOutcome[] = ['loaded', 'unchanged', 'no_data', 'failed'];

/**
 * The Prometheus metrics of one report-sync process, on a registry of its own (never prom-client's
 * global one), so that two instances, as in tests, share no state and the HTTP server shows exactly
 * what this process counted. Counting never throws at the caller: a metric must not fail a sync.
 */
export class SyncMetrics {
  /** What `/metrics` exposes. */
  readonly registry = new Registry();

  readonly #slices: Counter<'outcome' | 'report_type'>;
  readonly #sliceFailures: Counter<'code'>;
  readonly #slicesWarned: Counter<'report_type'>;
  readonly #checkWarnings: Counter<'check'>;
  readonly #rowsLoaded: Counter<'report_type'>;
  readonly #bytesDownloaded: Counter<'report_type'>;
  readonly #sliceRetries: Counter<'code'>;
  readonly #exportDuration: Histogram<'status_class'>;
  readonly #tokenRequests: Counter<'result'>;
  readonly #tokenRenewals: Counter<'reason'>;
  readonly #identityProviderWaits: Counter;
  readonly #stalledJobs: Counter;
  readonly #alerts: Counter<'result'>;
  readonly #queueJobs: Gauge<'state'>;
  readonly #lastNight: Gauge;
  readonly #ready: Gauge<'check'>;
  #queueDepthSource: QueueDepthSource | undefined;
  #lastNightSource: LastSuccessfulNightSource | undefined;
  #readinessSource: ReadinessSource | undefined;
  readonly #queueDepthRead: BoundedRead<Readonly<Record<string, number>>>;
  readonly #lastNightRead: BoundedRead<number>;
  /** Set by {@link nightSucceeded}; kept when the source fails or knows of no night. */
  #lastNightSeconds: number | undefined;

  constructor(options: SyncMetricsOptions = {}) {
    const registers = [this.registry];
    if (options.collectDefaults ?? true) collectDefaultMetrics({ register: this.registry });
    this.#queueDepthRead = new BoundedRead(options.sourceTimeoutMs ?? 1000);
    this.#lastNightRead = new BoundedRead(options.sourceTimeoutMs ?? 1000);

    this.#slices = new Counter({
      name: 'report_sync_slices_total',
      help: 'Slices whose outcome is final, by outcome (loaded, unchanged: the file was the one already loaded, no_data, failed) and report type.',
      labelNames: ['outcome', 'report_type'],
      registers,
    });
    this.#sliceFailures = new Counter({
      name: 'report_sync_slice_failures_total',
      help: 'Slices that failed for good (no retry left), by error code, e.g. EXPORT_FORBIDDEN: see the worker log for which slices.',
      labelNames: ['code'],
      registers,
    });
    this.#slicesWarned = new Counter({
      name: 'report_sync_slices_loaded_with_warnings_total',
      help: 'Of the slices counted loaded: those whose file missed a data-quality check set to warn (loaded, the warning recorded in slice_checks), by report type.',
      labelNames: ['report_type'],
      registers,
    });
    this.#checkWarnings = new Counter({
      name: 'report_sync_check_warnings_total',
      // No series made ahead for each check: the check names are quality's, which sits above metrics in the layering.
      help: 'Data-quality check warnings of loaded files, by check (weightsSum, duplicateIsin, rowCountDrop, effectiveDate, positiveValues; a series appears with its first warning): see report-sync status for which slices.',
      labelNames: ['check'],
      registers,
    });
    this.#rowsLoaded = new Counter({
      name: 'report_sync_rows_loaded_total',
      help: 'Rows written to the warehouse, by report type (slices whose file was unchanged write none).',
      labelNames: ['report_type'],
      registers,
    });
    this.#bytesDownloaded = new Counter({
      name: 'report_sync_downloaded_bytes_total',
      help: 'Bytes of export files downloaded for loaded slices, by report type.',
      labelNames: ['report_type'],
      registers,
    });
    this.#sliceRetries = new Counter({
      name: 'report_sync_slice_retries_total',
      help: 'Slice attempts that failed with retryable trouble and will be tried again, by error code.',
      labelNames: ['code'],
      registers,
    });
    this.#exportDuration = new Histogram({
      name: 'report_sync_export_request_duration_seconds',
      help: 'Time until the export endpoint answered, by status class (2xx, 3xx, 4xx, 5xx, or error when no HTTP answer came).',
      labelNames: ['status_class'],
      buckets: EXPORT_DURATION_BUCKETS,
      registers,
    });
    this.#tokenRequests = new Counter({
      name: 'report_sync_token_requests_total',
      help: 'Token requests to the identity provider, by result (issued; rejected: the credentials were refused; unavailable: no answer or 5xx).',
      labelNames: ['result'],
      registers,
    });
    this.#tokenRenewals = new Counter({
      name: 'report_sync_token_renewals_total',
      help: 'Access tokens renewed, by reason (expiry: about to expire; rejection: the export endpoint answered 401).',
      labelNames: ['reason'],
      registers,
    });
    this.#identityProviderWaits = new Counter({
      name: 'report_sync_identity_provider_waits_total',
      help: 'Times the worker paused to wait for an unavailable identity provider before asking for a token again.',
      registers,
    });
    this.#stalledJobs = new Counter({
      name: 'report_sync_stalled_jobs_total',
      help: 'Queued jobs this process took over because the worker holding them stopped renewing its lock (crashed or blocked).',
      registers,
    });
    this.#alerts = new Counter({
      name: 'report_sync_alerts_total',
      help: 'Alerts (one per run or night that needs attention) sent to the alert webhook, by result (delivered; failed: the webhook did not accept it, so nobody was told).',
      labelNames: ['result'],
      registers,
    });

    this.#queueJobs = new Gauge({
      name: 'report_sync_queue_jobs',
      help: 'Jobs in the export queue by state (waiting, prioritized, delayed, active, completed, failed), read from Redis at scrape time; no samples when Redis does not answer within a second.',
      labelNames: ['state'],
      registers,
      collect: async () => {
        // Read first, then replace every sample at once: a reset before the await would let two
        // overlapping scrapes each see the other's half-written gauge.
        const depths = await this.#queueDepthRead.read(this.#queueDepthSource);
        this.#queueJobs.reset();
        for (const [state, jobs] of Object.entries(depths ?? {})) if (Number.isFinite(jobs)) this.#queueJobs.set({ state }, jobs);
      },
    });
    this.#lastNight = new Gauge({
      name: 'report_sync_last_successful_night_timestamp_seconds',
      help: "Unix time at which the last night whose every slice ended loaded or no_data finished; alert when time() minus this exceeds a day plus the night's grace (schedule.graceHours), as config/prometheus/report-sync-alerts.yml does.",
      registers,
      collect: async () => {
        const seconds = latest(this.#lastNightSeconds, finiteOrUndefined(await this.#lastNightRead.read(this.#lastNightSource)));
        // Without a value there must be no sample at all: prom-client would show 0 (1970), which
        // reads as "failing for 54 years", not "unknown".
        if (seconds === undefined) this.#lastNight.remove();
        else this.#lastNight.set(seconds);
      },
    });
    this.#ready = new Gauge({
      name: 'report_sync_ready',
      help: 'Readiness checks as /readyz answers them at scrape time, by check (redis, warehouse, credentials): 1 passes, 0 fails (/readyz says why); alert on a 0 that lasts minutes.',
      labelNames: ['check'],
      registers,
      collect: async () => {
        // Not bounded by sourceTimeoutMs: the source bounds each check itself and answers a hung one
        // with false, which must show as 0, not as a missing sample that no alert sees.
        const checks = await readOrUndefined(this.#readinessSource);
        this.#ready.reset();
        for (const [check, passes] of Object.entries(checks ?? {})) this.#ready.set({ check }, passes ? 1 : 0);
      },
    });

    // Series of closed label sets start at 0, so that increase() sees their first event.
    for (const reportType of REPORT_TYPES) {
      for (const outcome of SLICE_OUTCOMES) this.#slices.inc({ outcome, report_type: reportType }, 0);
      this.#rowsLoaded.inc({ report_type: reportType }, 0);
      this.#slicesWarned.inc({ report_type: reportType }, 0);
      this.#bytesDownloaded.inc({ report_type: reportType }, 0);
    }
    for (const result of ['issued', 'rejected', 'unavailable'] as const) this.#tokenRequests.inc({ result }, 0);
    for (const reason of ['expiry', 'rejection'] as const) this.#tokenRenewals.inc({ reason }, 0);
    for (const result of ['delivered', 'failed'] as const) this.#alerts.inc({ result }, 0);
  }

  /**
   * Counts a slice once its outcome is final; an attempt that will be retried is ignored here (see
   * {@link sliceRetried}), so a slice that took three attempts is one slice, not three.
   */
  sliceFinished(outcome: SliceOutcome): void {
    if (!outcome.final) return;
    const reportType = outcome.slice.reportType;
    switch (outcome.status) {
      case 'loaded':
        this.#slices.inc({ outcome: outcome.unchanged ? 'unchanged' : 'loaded', report_type: reportType });
        this.#bytesDownloaded.inc({ report_type: reportType }, outcome.bytes);
        if (!outcome.unchanged) this.#rowsLoaded.inc({ report_type: reportType }, outcome.rowCount);
        if (outcome.checkWarnings.length > 0) {
          this.#slicesWarned.inc({ report_type: reportType });
          for (const warning of outcome.checkWarnings) this.#checkWarnings.inc({ check: warning.check });
        }
        return;
      case 'no_data':
        this.#slices.inc({ outcome: 'no_data', report_type: reportType });
        return;
      case 'failed':
        this.#slices.inc({ outcome: 'failed', report_type: reportType });
        this.#sliceFailures.inc({ code: outcome.error.code });
        return;
    }
  }

  /** An attempt failed with retryable trouble and another follows: a rising rate warns before slices fail for good. */
  sliceRetried(code: string): void {
    this.#sliceRetries.inc({ code });
  }

  /**
   * Times one export request. `status` undefined means no HTTP answer came (and so does a status
   * outside 200–599): both are counted as `error`.
   */
  exportAnswered(status: number | undefined, seconds: number): void {
    this.#exportDuration.observe({ status_class: statusClass(status) }, seconds);
  }

  /** One answer (or none) from the identity provider's token endpoint. */
  tokenRequested(result: TokenRequestResult): void {
    this.#tokenRequests.inc({ result });
  }

  /** A token was replaced; `rejection` climbing means tokens die before their stated expiry. */
  tokenRenewed(reason: TokenRenewalReason): void {
    this.#tokenRenewals.inc({ reason });
  }

  /** The worker paused for an unavailable identity provider instead of failing slices. */
  identityProviderWaited(): void {
    this.#identityProviderWaits.inc();
  }

  /** This process took over a job whose worker stopped renewing its lock: another worker crashed or hung. */
  stalledJobTaken(): void {
    this.#stalledJobs.inc();
  }

  /** An alert was sent, or could not be: a failed alert means nobody was told, so this is worth an alert of its own. */
  alertSent(result: AlertResult): void {
    this.#alerts.inc({ result });
  }

  /**
   * Records that a night ended with every slice loaded or no_data, at `at`. Keeps the latest of the
   * times given, so a backfill finishing an old night late cannot move freshness backwards; an
   * invalid Date is ignored rather than thrown at a sync that succeeded.
   */
  nightSucceeded(at: Date): void {
    this.#lastNightSeconds = latest(this.#lastNightSeconds, finiteOrUndefined(at.getTime() / 1000));
  }

  /**
   * Where `report_sync_queue_jobs` is read from at each scrape. A source that throws, or has not
   * answered within `sourceTimeoutMs` (Redis commands wait through an outage), leaves the gauge
   * without samples for that scrape; while one read is still waiting, no other is started.
   */
  setQueueDepthSource(source: QueueDepthSource): void {
    this.#queueDepthSource = source;
  }

  /**
   * Where the last successful night is read from at each scrape (seconds), so that a restarted
   * process still shows it. The later of this and {@link nightSucceeded} is exposed; a source that
   * throws, knows of none or is late (as for {@link setQueueDepthSource}) leaves what was set in-process.
   */
  setLastSuccessfulNightSource(source: LastSuccessfulNightSource): void {
    this.#lastNightSource = source;
  }

  /**
   * Where `report_sync_ready` is read from at each scrape, so that Prometheus sees a worker that is
   * up but cannot work (Redis or the warehouse unreachable, credentials refused) without probing
   * `/readyz`. A source that throws leaves the gauge without samples for that scrape.
   */
  setReadinessSource(source: ReadinessSource): void {
    this.#readinessSource = source;
  }

  /** The exposition text for `/metrics`; runs the scrape-time sources. */
  async metrics(): Promise<string> {
    return this.registry.metrics();
  }

  /** The `Content-Type` that goes with {@link metrics}. */
  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * A scrape-time read that never holds a scrape past `timeoutMs`: late, it counts as no answer (the
 * read goes on, and the next scrape waits on that same read rather than piling up another one).
 * A source that throws is no answer either: the scrape itself must go on.
 */
class BoundedRead<T> {
  readonly #timeoutMs: number;
  #pending: Promise<T | undefined> | undefined;

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
  }

  async read(source: (() => Promise<T | undefined>) | undefined): Promise<T | undefined> {
    if (source === undefined) return undefined;
    const pending = (this.#pending ??= Promise.resolve()
      .then(source)
      .catch(() => undefined)
      .finally(() => {
        this.#pending = undefined;
      }));
    return settleWithin(pending, this.#timeoutMs, () => undefined);
  }
}

async function readOrUndefined<T>(source: (() => Promise<T>) | undefined): Promise<T | undefined> {
  try {
    return await source?.();
  } catch {
    return undefined;
  }
}

function latest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}

function finiteOrUndefined(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function statusClass(status: number | undefined): StatusClass {
  if (status === undefined || !Number.isInteger(status) || status < 200 || status > 599) return 'error';
  return `${Math.floor(status / 100)}xx` as StatusClass;
}
