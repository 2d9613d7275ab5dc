import type { Settings } from '../config/settings-schema.js';

/**
 * How long to wait before attempt `attempt + 1`. A Retry-After from the service is honoured
 * (capped at `maxRetryAfterMs`, plus a little jitter so a fleet does not return in step);
 * otherwise exponential backoff with equal jitter: half fixed, half random.
 */
export function backoffDelay(
  attempt: number,
  retry: Settings['retry'],
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined) {
    const asked = Math.min(retryAfterMs, retry.maxRetryAfterMs);
    return Math.round(asked + random() * Math.min(1_000, asked * 0.1));
  }
  const exponential = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(exponential / 2 + (random() * exponential) / 2);
}
