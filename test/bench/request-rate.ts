/** The rate of a run's requests while it was steady, and the window that holds it. */
export interface SteadyRate {
  /** Requests per second between the two trimmed ends. */
  readonly perSecond: number;
  /** Requests inside the window, and its length in ms. */
  readonly requests: number;
  readonly durationMs: number;
  /** Where the window starts and ends, in ms from the first request. */
  readonly fromMs: number;
  readonly toMs: number;
}

/**
 * The rate of `times` (arrival times in ms, any order) with the first and last `trim` share of
 * the requests left out: the fleet growing to full speed and draining the last slices are not its
 * steady state. Counted from request to request, so the window holds exactly the requests between.
 */
export function steadyRate(times: readonly number[], trim: number): SteadyRate {
  const sorted = [...times].sort((a, b) => a - b);
  if (sorted.length < 2) return { perSecond: 0, requests: sorted.length, durationMs: 0, fromMs: 0, toMs: 0 };
  const first = Math.floor(sorted.length * trim);
  const last = Math.max(first + 1, Math.ceil(sorted.length * (1 - trim)) - 1);
  const durationMs = sorted[last]! - sorted[first]!;
  const requests = last - first;
  return { perSecond: durationMs > 0 ? (requests * 1000) / durationMs : 0, requests, durationMs, fromMs: sorted[first]! - sorted[0]!, toMs: sorted[last]! - sorted[0]! };
}

/**
 * The most requests of `times` (integer ms, any order) inside any window of `windowMs`, over every
 * possible window: a window that starts at a request and ends `windowMs` later (exclusive) holds
 * at least as many as any other, so only those are counted.
 */
export function busiestWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let end = 0;
  for (let start = 0; start < sorted.length; start += 1) {
    while (end < sorted.length && sorted[end]! < sorted[start]! + windowMs) end += 1;
    most = Math.max(most, end - start);
  }
  return most;
}
