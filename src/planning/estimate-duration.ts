import type { Settings } from '../config/settings-schema.js';

/**
 * Seconds one export request is assumed to take when nothing better is known: the ledger records
 * when outcomes were reached, not request durations. A guess, said as such; `--request-seconds`
 * replaces it (e.g. the mean of `report_sync_export_request_duration_seconds`).
 */
export const ASSUMED_REQUEST_SECONDS = 2;

export interface DurationEstimateInput {
  /** Export requests to make (first attempts only). */
  readonly requests: number;
  /** Seconds one request takes, end to end (generation, download, load). */
  readonly secondsPerRequest: number;
  /** `concurrency`: downloads at once per process. */
  readonly concurrency: number;
  /** `http.connections`: the keep-alive pool's connections per origin, which caps requests in flight. */
  readonly connections: number;
  /** `queue.rateLimit`, or undefined where it does not apply (an in-process `run` is not rate-limited). */
  readonly rateLimit?: Settings['queue']['rateLimit'];
}

export interface DurationEstimate {
  /** The estimate: the slower of the two bounds below. */
  readonly seconds: number;
  /** Requests in flight at once: the lower of `concurrency` and `http.connections`. */
  readonly parallel: number;
  /** Time in waves of `parallel` requests of `secondsPerRequest` each. */
  readonly parallelSeconds: number;
  /** Least time the rate limit allows (its windows, plus the last request); null when there is no limit. */
  readonly rateLimitSeconds: number | null;
  /** Which bound decided the estimate. */
  readonly boundBy: 'concurrency' | 'rateLimit';
}

/**
 * How long `requests` export requests take in one process: waves of `parallel` requests, but no
 * faster than the rate limit admits them (`max` per `durationMs`, 0 = off). Retries are not
 * counted: a run with failures takes longer.
 */
export function estimateDuration(input: DurationEstimateInput): DurationEstimate {
  const parallel = Math.max(1, Math.min(input.concurrency, input.connections));
  const parallelSeconds = Math.ceil(input.requests / parallel) * input.secondsPerRequest;
  const limit = input.rateLimit && input.rateLimit.max > 0 ? input.rateLimit : undefined;
  // The first window admits `max` at once; the last request starts in window ceil(n/max) and then takes its own time.
  const rateLimitSeconds =
    limit === undefined ? null : input.requests === 0 ? 0 : ((Math.ceil(input.requests / limit.max) - 1) * limit.durationMs) / 1000 + input.secondsPerRequest;
  const boundBy = rateLimitSeconds !== null && rateLimitSeconds > parallelSeconds ? 'rateLimit' : 'concurrency';
  return { seconds: Math.max(parallelSeconds, rateLimitSeconds ?? 0), parallel, parallelSeconds, rateLimitSeconds, boundBy };
}
